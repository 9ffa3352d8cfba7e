/* ratelimiter/limiter.h — the Limiter: how an application reserves and
 * completes (docs/library.md).
 *
 * One interface, two implementations that behave identically:
 *   - local: the memory backend in this process, limits from a limits.json
 *     file (single-binary mode: no daemon, no network);
 *   - http: a ratelimiterd reached over HTTP with libcurl, keep-alive
 *     connections reused across calls.
 *
 * Operational errors are kept apart from per-lease results (TigerBeetle's
 * tb_client style): a call returns RL_OK when every lease got a result, and a
 * denial, an unknown key, a decreasing limit, a lease id reused with other
 * requirements (RL_LEASE_ID_CONFLICT) are results, not errors. A call
 * returns an error only when it could not get results: RL_INVALID_REQUEST (the
 * request breaks api.md's rules; nothing was sent or changed), RL_TIMEOUT (no
 * answer before the deadline: the outcome is unknown, retry with the SAME
 * lease id), RL_BACKEND_ERROR (the server said backend_error), RL_NO_MEMORY.
 *
 * Every function is thread-safe: one limiter serves many threads.
 */
#ifndef RATELIMITER_LIMITER_H
#define RATELIMITER_LIMITER_H

#include "ratelimiter/export.h"

#include "ratelimiter/memory.h"
#include "ratelimiter/presets.h"
#include "ratelimiter/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_LIMITER_ABI_VERSION 4 /* 2: rl_reserve_result.denied_by; 3: audit; 4: optional requirements, dry runs (rl_requirement, rl_reserve_request grew) */
#define RL_LIMITER_ERR_SIZE 256

typedef struct rl_limiter rl_limiter;

typedef struct rl_limiter_ops {
    int abi_version; /* RL_LIMITER_ABI_VERSION */
    const char *name; /* "local", "http" */
    rl_status (*reserve_batch)(rl_limiter *limiter, const rl_reserve_request *requests, size_t count,
                               rl_reserve_result *results);
    rl_status (*complete_batch)(rl_limiter *limiter, const rl_complete_request *requests, size_t count,
                                rl_status *statuses);
    void (*destroy)(rl_limiter *limiter);
    /* ABI 3: the audit log of spend, as rl_backend_audit_query (types.h). */
    rl_status (*audit)(rl_limiter *limiter, const rl_audit_query *query, rl_audit_page *page);
} rl_limiter_ops;

struct rl_limiter {
    const rl_limiter_ops *ops;
};

/* Decides count leases (1..RL_LIMITER_MAX_BATCH), results[i] for requests[i].
 * A result's status_key and denied_by.key point to one of the request's own
 * keys (or to memory the limiter keeps for its life): valid at least as long
 * as the request. */
#define RL_LIMITER_MAX_BATCH 256u

static inline rl_status rl_limiter_reserve_batch(rl_limiter *l, const rl_reserve_request *requests,
                                                 size_t count, rl_reserve_result *results) {
    return l->ops->reserve_batch(l, requests, count, results);
}
static inline rl_status rl_limiter_reserve(rl_limiter *l, const rl_reserve_request *request,
                                           rl_reserve_result *result) {
    return l->ops->reserve_batch(l, request, 1, result);
}
/* Completes count leases; statuses[i] is RL_OK for every lease the server
 * took (Complete is idempotent, unknown leases included). */
static inline rl_status rl_limiter_complete_batch(rl_limiter *l, const rl_complete_request *requests,
                                                  size_t count, rl_status *statuses) {
    return l->ops->complete_batch(l, requests, count, statuses);
}
static inline rl_status rl_limiter_complete(rl_limiter *l, const rl_complete_request *request) {
    rl_status status;
    rl_status call = l->ops->complete_batch(l, request, 1, &status);
    return call != RL_OK ? call : status;
}
/* The audit log's entries of query->key (GET /v1/admin/audit): RL_OK,
 * RL_INVALID_REQUEST (a bad query, or a limiter without it, such as the
 * batcher: rl_limiter_last_error says which),
 * RL_BACKEND_ERROR, RL_TIMEOUT. */
RL_API rl_status rl_limiter_audit(rl_limiter *l, const rl_audit_query *query, rl_audit_page *page);
/* Frees the limiter. No call may be in flight or follow. NULL is allowed. */
static inline void rl_limiter_destroy(rl_limiter *l) {
    if (l != NULL) l->ops->destroy(l);
}

/* ---- local: the memory backend in this process ---- */

/* Opens a local limiter with the limits of the limits.json file at path (the
 * registry's format; read once, never written). options may be NULL
 * for rl_memory_options_default. On error *out is NULL and err says why. */
RL_API rl_status rl_limiter_local_open(const char *limits_path, const rl_memory_options *options,
                                       rl_limiter **out, char err[RL_LIMITER_ERR_SIZE]);

/* Defines or changes a limit of a local limiter at run time, as PUT
 * /v1/admin/limits does for the daemon: validated alike (rl_limit_def_validate),
 * a capacity decrease goes through the decreasing state. The limits file is
 * not rewritten. *out_status (may be NULL) is the limit's state after the
 * call. Returns RL_OK, RL_INVALID_REQUEST (an invalid definition, or not a
 * local limiter; rl_limiter_last_error says which) or RL_NO_MEMORY.
 * Thread-safe. */
RL_API rl_status rl_limiter_local_define(rl_limiter *limiter, const rl_limit_def *def, rl_limit_status *out_status);

/* Deletes a limit of a local limiter at run time, as DELETE
 * /v1/admin/limits/{key} does for the daemon: its open reservations and
 * holds are dropped, nothing charged or audited; a lease that held some
 * keeps its other keys (its Complete still charges them); a reserve naming
 * key is then answered RL_UNKNOWN_LIMIT_KEY until it is defined again, as
 * a new limit that starts empty. With a journal the delete survives a
 * restart; the limits file is not rewritten, so a key it holds is defined
 * again by the next rl_limiter_local_open, as rl_limiter_local_define's
 * changes are. Returns RL_OK, RL_UNKNOWN_LIMIT_KEY (no such limit),
 * RL_INVALID_REQUEST (not a valid key, or not a local limiter;
 * rl_limiter_last_error says which), RL_NO_MEMORY or RL_IO_ERROR (the
 * journal could not take it). Thread-safe. */
RL_API rl_status rl_limiter_local_delete(rl_limiter *limiter, const char *key);

/* Defines or changes a template of a local limiter at run time, as PUT
 * /v1/admin/templates does for the daemon: def->key is its pattern (a key
 * with 1..8 placeholders such as "tenant:{tenant}:llm:daily_tokens"), the
 * rest a definition validated as for a limit. A reserve naming a key that
 * no limit defines and that the pattern matches (the most specific
 * template of those that do) uses the template's definition: the limit is
 * made on first use and forgotten once it holds nothing. The limits
 * already made from the pattern take the new definition. Returns RL_OK,
 * RL_INVALID_REQUEST (not a pattern, an invalid definition, too many
 * templates, or not a local limiter; rl_limiter_last_error says which),
 * RL_LIMIT_IN_USE (a change of kind while a limit made from it holds
 * reservations), RL_NO_MEMORY or RL_IO_ERROR. Thread-safe. */
RL_API rl_status rl_limiter_local_define_template(rl_limiter *limiter, const rl_limit_def *def);

/* Deletes the template of pattern and the limits made from it (their open
 * reservations dropped, as rl_limiter_local_delete drops a limit's).
 * Returns RL_OK, RL_UNKNOWN_LIMIT_KEY (no such template),
 * RL_INVALID_REQUEST, RL_NO_MEMORY or RL_IO_ERROR. Thread-safe. */
RL_API rl_status rl_limiter_local_delete_template(rl_limiter *limiter, const char *pattern);

/* Applies the provider preset named name (ratelimiter/presets.h) to a local
 * limiter at run time, as PUT /v1/admin/presets/{name}/apply does for the
 * daemon: for each of its limits, a key without a definition is defined, a
 * key a preset made takes this preset's definition, and a key the operator
 * defined (the limits file, rl_limiter_local_define) keeps it. A limit a
 * preset made becomes the operator's once rl_limiter_local_define defines
 * it; rl_limiter_local_delete deletes it whoever made it. Who made what is
 * remembered while the limiter is open, and read from the file when it
 * opens (a daemon's limits.json keeps it); with a journal, a limit an
 * earlier run's apply made comes back as the preset's when its definition
 * is still exactly the preset's (else it counts as the operator's). The
 * limits file is not rewritten, as for rl_limiter_local_define.
 *
 * results (NULL, or room for RL_PRESET_MAX_LIMITS) gets one result per
 * limit of the preset, in rl_preset_limit order; *count (may be NULL) how
 * many. Returns RL_OK (each result says what happened to its key),
 * RL_INVALID_REQUEST (no preset has that name, or not a local limiter;
 * rl_limiter_last_error says which), or the first failure of the backend
 * (RL_NO_MEMORY, RL_IO_ERROR: the journal could not take it), that key's
 * result RL_PRESET_REFUSED; the others are still applied. Thread-safe. */
RL_API rl_status rl_limiter_local_apply_preset(rl_limiter *limiter, const char *name, rl_preset_result *results,
                                               size_t *count);

/* ---- http: a ratelimiterd ---- */

typedef struct rl_http_limiter_options {
    const char *base_url;       /* "http://127.0.0.1:8080"; copied */
    uint32_t call_timeout_ms;   /* one HTTP exchange; default 1000 */
    uint32_t deadline_ms;       /* retries of a transport failure stop after this; default 10000 */
    uint32_t backoff_initial_ms;/* first wait before a retry, doubled each time; default 10 */
    uint32_t backoff_max_ms;    /* default 1000 */
    uint32_t max_connections;   /* keep-alive connections kept for reuse; default 16 */
    /* Sent as "Authorization: Bearer <token>" on every call, for a daemon
     * with data.tokens_file (or admin.tokens_file, for the audit call) set;
     * NULL: none. 1..512 printable ASCII characters without spaces; copied. */
    const char *bearer_token;
    /* PEM file of the certificate authorities that an https:// daemon's
     * certificate is checked against (e.g. its self-signed certificate);
     * NULL: the system's. Copied; read when a connection is made. */
    const char *ca_file;
} rl_http_limiter_options;

/* Fills options with the defaults above (base_url, bearer_token and ca_file
 * NULL). */
RL_API void rl_http_limiter_options_default(rl_http_limiter_options *options);

/* Opens a limiter that talks to the ratelimiterd at options->base_url. It
 * connects lazily: a daemon that is not up yet is not an error here. On a
 * transport error or timeout a call is retried with the same lease ids, with
 * backoff, until deadline_ms; it never invents an outcome. A daemon that
 * answers 401 (no token) or 403 (a token it does not take) makes the call
 * fail with RL_INVALID_REQUEST, not retried: rl_limiter_last_error says
 * "HTTP 401 unauthorized: ...". */
RL_API rl_status rl_limiter_http_open(const rl_http_limiter_options *options, rl_limiter **out,
                                      char err[RL_LIMITER_ERR_SIZE]);

/* Why the last call on this thread that returned an error failed, in words:
 * the rule a request broke ("requirements[1].amount must be ..."), the
 * server's answer with its HTTP status, error string and detail ("HTTP 503
 * backend_error"), or the deadline that passed. "" after a call that
 * returned RL_OK. Thread-local, like errno: valid until this thread's next
 * Limiter call. */
RL_API const char *rl_limiter_last_error(void);

/* ---- checks shared by both ---- */

/* True if a request follows api.md's rules (ULID lease id, 1..32
 * requirements with valid keys, amounts 1..2^53, no key twice; for Complete
 * 0..32 actuals, actual amounts 0..2^53). Otherwise false and err says which
 * field. Pure, thread-safe. */
RL_API bool rl_reserve_request_check(const rl_reserve_request *request, char err[RL_LIMITER_ERR_SIZE]);
RL_API bool rl_complete_request_check(const rl_complete_request *request, char err[RL_LIMITER_ERR_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
