/* redis/redis_args.h — the ARGV of one script call, built without a copy:
 * strings borrowed from the caller (keys, the prefix) or kept in the
 * builder's own storage (numbers, upper-cased lease ids), all valid until
 * the builder is freed, i.e. until the call has returned.
 *
 * Every script starts with the same four (lua/common.lua): the key prefix,
 * then "now" in ms for expiry and in Unix ms, or '' '' for Redis TIME (tests
 * pass a manual clock's), then the audit log's retention in ms. Not
 * thread-safe: one builder per call.
 */
#ifndef RL_REDIS_ARGS_H
#define RL_REDIS_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/redis/budget_periods.h"
#include "core/lease_fingerprint.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/types.h"
#include "ratelimiter/ulid.h"

#define RL_REDIS_NUMBER_SIZE 24 /* a uint64 in decimal and a NUL */

typedef struct rl_redis_args {
    const char **argv;
    size_t *len;
    int count;
    int capacity;
    char (*numbers)[RL_REDIS_NUMBER_SIZE]; /* storage for the numbers among them */
    int number_count;
    char (*ids)[RL_ULID_TEXT_SIZE]; /* upper-cased lease ids, and fingerprints as text */
    int id_count;
} rl_redis_args;

/* Room for capacity arguments (pushes beyond it are the caller's bug). False
 * on allocation failure; free in any case. */
bool rl_redis_args_init(rl_redis_args *a, int capacity);
void rl_redis_args_free(rl_redis_args *a);

void rl_redis_args_push(rl_redis_args *a, const char *text, size_t len);
void rl_redis_args_push_str(rl_redis_args *a, const char *text);
void rl_redis_args_push_u64(rl_redis_args *a, uint64_t value);
/* Lease ids go in upper case: "01j..." and "01J..." are one lease. The one
 * place a lease id is normalized (core/lease_rules.h): Redis keeps it as
 * text; the memory backend keys leases by the ULID's value. */
void rl_redis_args_push_lease_id(rl_redis_args *a, const char *lease_id);
/* A lease's fingerprint as text (core/lease_fingerprint.h). */
void rl_redis_args_push_fingerprint(rl_redis_args *a, uint64_t fingerprint);
/* A lease's flags as reserve.lua takes them: "" for a plain lease, else
 * the number whose bit 0 says a dry run and bit i + 1 that requirement i
 * is optional. */
void rl_redis_args_push_lease_flags(rl_redis_args *a, const rl_reserve_request *request);
/* ARGV[1..4]: prefix, clock's now (or '' '' for Redis TIME when clock is
 * NULL), and audit_retention_ms. */
void rl_redis_args_push_header(rl_redis_args *a, const char *prefix, const rl_clock *clock,
                               uint64_t audit_retention_ms);
/* A budget's bounds as lua/budget.lua takes them: key, cal and the four
 * instants (5 numbers' room: strings borrowed from key and bounds, which
 * must live until the call returns). */
void rl_redis_args_push_bounds(rl_redis_args *a, const char *key, const rl_budget_bounds *bounds);

#endif
