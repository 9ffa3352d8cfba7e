/* server/api/outcome.h — what one answered request was, for whoever watches
 * the daemon answer (metrics, the access log, the console's recent
 * denials): its endpoint, its HTTP status, and for the lease endpoints what
 * each item came to, the lease and job ids, and which limit refused it.
 *
 * Read from the request's rl_api_call after its answer is encoded and
 * before rl_api_call_end: nothing is copied on the hot path but the
 * denying key.
 *
 * Threading: the request's thread (the call's); the tables are constant.
 */
#ifndef RL_SERVER_OUTCOME_H
#define RL_SERVER_OUTCOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"
#include "server/api/handler.h"

/* Every endpoint, as the route table knows it (router.c); a path no row
 * takes is RL_API_UNROUTED. */
#define RL_API_ENDPOINT_MAP(X)                      \
    X(RESERVE, "reserve")                           \
    X(RESERVE_BATCH, "reserve_batch")               \
    X(COMPLETE, "complete")                         \
    X(COMPLETE_BATCH, "complete_batch")             \
    X(ADMIN_LIMITS, "admin_limits")                 \
    X(ADMIN_TEMPLATES, "admin_templates")           \
    X(ADMIN_PRESETS, "admin_presets")               \
    X(ADMIN_AUDIT, "admin_audit")                   \
    X(ADMIN_DENIALS, "admin_denials")               \
    X(HEALTHZ, "healthz")                           \
    X(METRICS, "metrics")                           \
    X(CONSOLE, "console")                           \
    X(UNROUTED, "unrouted")

typedef enum rl_api_endpoint {
#define RL_API_ENDPOINT_ENUM(name, text) RL_API_##name,
    RL_API_ENDPOINT_MAP(RL_API_ENDPOINT_ENUM)
#undef RL_API_ENDPOINT_ENUM
    RL_API_ENDPOINT_COUNT
} rl_api_endpoint;

/* What one item of a lease endpoint came to. */
#define RL_API_RESULT_MAP(X)                                \
    X(ALLOWED, "allowed")                                   \
    X(DENIED_CAPACITY, "denied_capacity")                   \
    X(DENIED_DECREASING, "denied_decreasing")               \
    X(DENIED_EXCEEDS_CAPACITY, "denied_exceeds_capacity")   \
    X(COMPLETED, "completed")                               \
    X(INVALID, "invalid")                                   \
    X(UNKNOWN_KEY, "unknown_key")                           \
    X(LEASE_ID_CONFLICT, "lease_id_conflict")               \
    X(BACKEND_ERROR, "backend_error")

typedef enum rl_api_result {
#define RL_API_RESULT_ENUM(name, text) RL_API_RESULT_##name,
    RL_API_RESULT_MAP(RL_API_RESULT_ENUM)
#undef RL_API_RESULT_ENUM
    RL_API_RESULT_COUNT
} rl_api_result;

/* "reserve", "denied_capacity", ...: constant, never NULL. */
const char *rl_api_endpoint_name(rl_api_endpoint endpoint);
const char *rl_api_result_name(rl_api_result result);

typedef struct rl_api_outcome {
    rl_api_endpoint endpoint;
    int http_status;
    /* Lease endpoints: how many items, and how many came to each result
     * (a body that did not decode is one invalid item, or one backend
     * error when memory ran out). All 0 for the other endpoints. */
    uint32_t items;
    uint32_t results[RL_API_RESULT_COUNT];
    /* The first item's result (the only one of a single call); only when
     * items > 0. */
    rl_api_result first_result;
    bool dry_run; /* some reserve item was a dry run */
    /* The first item's lease id and job id, or NULL (none, or the body did
     * not decode); borrowed from the call: valid until rl_api_call_end. */
    const char *lease_id;
    const char *job_id;
    /* The first denied item's: the limit that refused it and why, its
     * figures; denied_by_key "" when no item was denied. A lease id
     * (first_denied_lease_id, borrowed as above) says whose. */
    char denied_by_key[RL_KEY_MAX_LEN + 1];
    rl_denial denied_by; /* its key NULL: read denied_by_key */
    const char *first_denied_lease_id;
    const char *first_denied_job_id;
    uint64_t first_denied_retry_after_ms;
} rl_api_outcome;

/* The outcome of the request call answered with res (call's road: its
 * route, its lease call). call may be NULL for an answer given before any
 * road (a refused Host or Origin, no memory): endpoint from req's path. */
void rl_api_outcome_of(const rl_api_call *call, const rl_http_request *req, const rl_http_response *res,
                       rl_api_outcome *out);

#endif
