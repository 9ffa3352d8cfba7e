/* core/lease_rules.h — private: api.md's rules for a reserve or complete,
 * in their one place (request_check.c).
 *
 * Two readers ask them, each saying why in its own words: the wire
 * decoders (their sentence names the JSON path: "requests[3].
 * requirements[1].amount must be ...") and rl_reserve_request_check /
 * rl_complete_request_check (ratelimiter/limiter.h: the limiters, rlctl).
 * Backends trust a request that passed (backend.h) and only assert it in
 * debug builds (rl__reserve_request_is_valid).
 *
 * A lease id is a ULID in any case: the same ULID in lower or upper case is
 * the same lease. Nothing upper-cases it on the way; a backend keys leases
 * by the ULID's value (memory), or normalizes the text once where it keeps
 * it (redis_args.c). All functions are pure and thread-safe.
 */
#ifndef RL_CORE_LEASE_RULES_H
#define RL_CORE_LEASE_RULES_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

/* The list of a reserve (requirements) and of a complete (actuals): how
 * many items, and the smallest amount; the largest amount is RL_AMOUNT_MAX
 * and the most items RL_MAX_REQUIREMENTS for both. */
#define RL__REQUIREMENTS_MIN_COUNT 1u
#define RL__REQUIREMENT_AMOUNT_MIN UINT64_C(1)
#define RL__ACTUALS_MIN_COUNT 0u
#define RL__ACTUAL_AMOUNT_MIN UINT64_C(0)

/* text[0..len) is a ULID (rl_ulid_is_valid). */
bool rl__lease_id_ok(const char *text, size_t len);
/* At most RL_JOB_ID_MAX_LEN bytes of UTF-8 without control characters. */
bool rl__job_id_ok(const char *text, size_t len);
/* A limit key (rl_key_is_valid). */
bool rl__lease_key_ok(const char *text, size_t len);
/* min..RL_AMOUNT_MAX, min one of the _AMOUNT_MIN above. */
static inline bool rl__lease_amount_ok(uint64_t amount, uint64_t min) {
    return amount >= min && amount <= RL_AMOUNT_MAX;
}
/* min..RL_MAX_REQUIREMENTS items, min one of the _MIN_COUNT above. */
static inline bool rl__lease_count_ok(size_t count, size_t min) {
    return count >= min && count <= RL_MAX_REQUIREMENTS;
}
/* A lease names each key once (a repeat is most likely a client bug, and
 * summing would hide it): the index of an earlier key equal to keys[i],
 * or i when there is none. keys are NUL-terminated. */
size_t rl__lease_key_repeats(const char *const *keys, size_t i);

/* The whole request by these rules, without a sentence: for the backends'
 * debug assertions. */
bool rl__reserve_request_is_valid(const rl_reserve_request *request);
bool rl__complete_request_is_valid(const rl_complete_request *request);

/* A backend's assertion that a request it was given is valid, in debug
 * builds only: compiled where nothing is optimized (Debug, what the
 * sanitizer presets build) and left out of optimized builds, which keep
 * assert() on (RelWithDebInfo). Checking every key of every request again
 * was a third of the memory backend's instructions per lease. */
#ifdef __OPTIMIZE__
#define RL__ASSERT_REQUEST_VALID(valid) ((void)0)
#else
#define RL__ASSERT_REQUEST_VALID(valid) assert(valid)
#endif

#endif
