/* ratelimiter/status.h — the machine-readable outcomes shared by every layer.
 *
 * One X-macro table gives each status its wire string (docs/api.md "Error
 * strings"). A denial is a result, not an error: an allowed=false reserve
 * carries RL_OK, or one of the statuses that name a key (limit_decreasing,
 * exceeds_capacity) so that callers know why.
 *
 * RL_LEASE_ID_CONFLICT: a reserve reuses a remembered lease id with other
 * requirements (keys or amounts): a retry must be the same request (409).
 * RL_LIMIT_IN_USE: a definition would change a limit's kind while it holds
 * reservations of the old kind (409).
 *
 * RL_TIMEOUT is the client's own: no answer came before the call's deadline,
 * so the outcome is unknown (retry with the same lease id: it is idempotent).
 */
#ifndef RATELIMITER_STATUS_H
#define RATELIMITER_STATUS_H

#include "ratelimiter/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_STATUS_MAP(X)                                   \
    X(OK, "")                                              \
    X(INVALID_REQUEST, "invalid_request")                  \
    X(UNKNOWN_LIMIT_KEY, "unknown_limit_key")              \
    X(BACKEND_ERROR, "backend_error")                      \
    X(LIMIT_DECREASING, "limit_decreasing")                \
    X(EXCEEDS_CAPACITY, "exceeds_capacity")                \
    X(NO_MEMORY, "backend_error")                          \
    X(IO_ERROR, "backend_error")                           \
    X(TIMEOUT, "backend_error")                            \
    X(LEASE_ID_CONFLICT, "lease_id_conflict")              \
    X(LIMIT_IN_USE, "limit_in_use")

typedef enum rl_status {
#define RL_STATUS_ENUM(name, wire) RL_##name,
    RL_STATUS_MAP(RL_STATUS_ENUM)
#undef RL_STATUS_ENUM
} rl_status;

/* The wire string of a status ("" for RL_OK). Statuses that name a key are
 * written as "<string>:<key>" by the encoders. Never NULL; thread-safe. */
RL_API const char *rl_status_wire(rl_status status);

/* A short constant identifier for logs ("OK", "INVALID_REQUEST", ...). */
RL_API const char *rl_status_name(rl_status status);

#ifdef __cplusplus
}
#endif
#endif
