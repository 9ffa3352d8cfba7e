/* core/calendar.h — private: calendar periods in a time zone, for budgets
 * (an hour, a day, a week from Monday, a month from the 1st, each from local
 * 00:00 of its zone).
 *
 * The zones are Debian's tzdata (/usr/share/zoneinfo, or $TZDIR), read by
 * GLib's GTimeZone: a real time-zone library whose zones are immutable
 * values, so nothing here touches the process's TZ or any global state, and
 * boundaries follow local midnight across DST changes (a day is then 23 or
 * 25 hours long). A day, week or month starts at the first instant the clock
 * reads its local midnight or later (zone_clock.h): a midnight the clock
 * skips at the instant it jumps past it, one it repeats at its first
 * reading; an hour where the clock reads hh:00 or jumps past it. So the
 * periods of a kind follow each other without gap or overlap and every
 * instant is in exactly one. All instants are Unix milliseconds; every
 * computation is in integers.
 *
 * The periods are rl_period (ratelimiter/types.h, with their names).
 *
 * Threading: an rl__calendar is immutable once opened: any thread may use
 * it at once. Open and close are the owner's.
 */
#ifndef RL_CORE_CALENDAR_H
#define RL_CORE_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"
#include "ratelimiter/types.h"

typedef struct rl__calendar rl__calendar;

/* The calendar of an IANA zone ("UTC", "America/New_York"). RL_OK, or
 * RL_INVALID_REQUEST (err says so) for a name tzdata does not know, or
 * RL_NO_MEMORY. */
rl_status rl__calendar_open(const char *zone, rl__calendar **out, char *err, size_t err_size);
void rl__calendar_close(rl__calendar *calendar);

/* The zone's name as opened. */
const char *rl__calendar_zone(const rl__calendar *calendar);

/* The period that holds unix_ms: [*start_ms, *end_ms). false only for an
 * instant outside the years 1..9998, and then *start_ms and *end_ms are untouched. */
bool rl__calendar_period_of(const rl__calendar *calendar, rl_period period, uint64_t unix_ms, uint64_t *start_ms,
                            uint64_t *end_ms);

#endif
