/* client/call_check.h — the checks every Limiter call starts with, shared
 * by the local, HTTP and batching limiters so that all three refuse the same
 * calls in the same words. Private to src/client. */
#ifndef RL_CLIENT_CALL_CHECK_H
#define RL_CLIENT_CALL_CHECK_H

#include "ratelimiter/limiter.h"

/* Clears this thread's last error, then checks the call: 1..RL_LIMITER_MAX_BATCH
 * requests, each following api.md's rules, and somewhere to put the results.
 * Returns RL_OK, or RL_INVALID_REQUEST with the reason as the last error. */
rl_status rl__check_reserve_call(const rl_reserve_request *requests, size_t count, const void *results);
rl_status rl__check_complete_call(const rl_complete_request *requests, size_t count, const void *statuses);

/* Clears this thread's last error, then checks an audit call: a valid key,
 * a limit 1..RL_AUDIT_QUERY_MAX, since_unix_ms at most 2^53 (what the
 * daemon takes), and a page with its array. Returns RL_OK, or
 * RL_INVALID_REQUEST with the reason as the last error. */
rl_status rl__check_audit_call(const rl_audit_query *query, const rl_audit_page *page);

#endif
