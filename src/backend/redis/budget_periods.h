/* redis/budget_periods.h — the calendars of the budgets this daemon knows,
 * for the period bounds the scripts need.
 *
 * Lua in Redis knows no time zones, so the daemon computes a budget's
 * periods (core/calendar.h) and passes them with every script call that may
 * start a new one (lua/budget.lua): the period before the one holding the
 * daemon's now, that one, and the next, so that the script can pick the one
 * holding Redis's now although the two clocks differ near a boundary. They
 * go with their calendar's name ("month UTC"), which the script compares
 * with the one the stored definition has: bounds of a definition the daemon
 * has not caught up with are taken as none, and the script asks for them
 * (ST_BOUNDS), so that the daemon reads the definition and calls again.
 *
 * Learned from every definition the daemon reads from Redis or puts there.
 * A budget's bounds are computed once a period. Thread-safe.
 */
#ifndef RL_REDIS_BUDGET_PERIODS_H
#define RL_REDIS_BUDGET_PERIODS_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelimiter/types.h"

/* "<period> <zone>": "month America/Argentina/ComodRivadavia" and a NUL. */
#define RL_BUDGET_CAL_SIZE (sizeof "month " + RL_TIMEZONE_MAX_LEN)

typedef struct rl_budget_bounds {
    char cal[RL_BUDGET_CAL_SIZE];
    /* Unix ms: the previous period's start, the start and end of the one
     * holding the instant asked about, the next one's end. */
    uint64_t at_unix_ms[4];
} rl_budget_bounds;

typedef struct rl_budget_periods rl_budget_periods;

/* NULL if out of memory. */
rl_budget_periods *rl__budget_periods_create(void);
void rl__budget_periods_destroy(rl_budget_periods *periods);

/* Learns def: a budget's calendar is kept (its zone read from tzdata once,
 * when it is new or changed); a definition of another kind forgets its key.
 * False if out of memory or if the zone cannot be read: then the key is
 * forgotten, and the scripts ask again. */
bool rl__budget_periods_learn(rl_budget_periods *periods, const rl_limit_def *def);

/* Forgets key (a limit deleted). */
void rl__budget_periods_forget(rl_budget_periods *periods, const char *key);

/* True while some budget is known: callers skip the lookups otherwise. */
bool rl__budget_periods_any(rl_budget_periods *periods);

/* key's bounds around unix_ms into *out; false if key is not a budget this
 * daemon knows. */
bool rl__budget_periods_bounds(rl_budget_periods *periods, const char *key, uint64_t unix_ms,
                               rl_budget_bounds *out);

/* The bounds of def (a budget) around unix_ms, without learning it: RL_OK,
 * RL_INVALID_REQUEST for a zone tzdata does not know (or an instant outside
 * the calendar's years), RL_NO_MEMORY. */
rl_status rl__budget_bounds_of_def(const rl_limit_def *def, uint64_t unix_ms, rl_budget_bounds *out);

#endif
