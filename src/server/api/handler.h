/* server/api/handler.h — the endpoints of spec/api.md, free of any HTTP library.
 *
 * A request is (method, path without query, body); a response is an HTTP
 * status and a JSON body. The h2o glue (http_server.c) only translates; so
 * the handlers and the router are unit-tested without sockets.
 *
 * Threading: one rl_handler_ctx per event-loop thread. It owns the scratch
 * memory every request reuses (response body, batch arrays), so the hot path
 * allocates nothing of its own; the service it points to is shared.
 */
#ifndef RL_SERVER_HANDLER_H
#define RL_SERVER_HANDLER_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"
#include "server/service.h"
#include "wire/buf.h"

typedef struct rl_http_request {
    const char *method; /* not NUL-terminated */
    size_t method_len;
    const char *path; /* raw (still percent-encoded), without the query; not NUL-terminated */
    size_t path_len;
    const char *body; /* may be NULL when body_len is 0 */
    size_t body_len;
} rl_http_request;

typedef struct rl_http_response {
    int status;        /* HTTP status code */
    const char *allow; /* the Allow header of a 405, else NULL; static */
    rl_buf *body;      /* JSON; points to the context's buffer: copy it before the next request */
} rl_http_response;

typedef struct rl_handler_ctx {
    rl_service *service; /* borrowed, shared between threads */
    rl_backend *backend; /* rl_service_backend(service), cached */
    /* Where admin puts go off the loop (admin_writer.h), or NULL: done on
     * the calling thread. Borrowed, shared. */
    struct rl_admin_writer *admin_writer;
    size_t max_batch;    /* items per batch request */
    rl_buf body;         /* the response being built */
    /* Batch scratch, max_batch items each: the valid items of a batch are
     * packed here so that the backend sees them in one call. */
    rl_reserve_request *reserves;
    rl_reserve_result *reserve_results;
    rl_complete_request *completes;
    rl_status *complete_statuses;
} rl_handler_ctx;

/* Prepares ctx for one thread. Returns false if out of memory (ctx is then
 * freed). service must outlive ctx. */
bool rl_handler_ctx_init(rl_handler_ctx *ctx, rl_service *service, size_t max_batch);
void rl_handler_ctx_free(rl_handler_ctx *ctx);

/* The response buffer grows to the largest answer (a list of 100,000 limits
 * is tens of MB); call once that answer is sent to give such memory back
 * instead of keeping it per thread for good. Cheap when there is nothing to do. */
#define RL_HANDLER_BODY_KEEP_BYTES (256u * 1024u)
void rl_handler_ctx_trim(rl_handler_ctx *ctx);

/* Dispatches by path and method, runs the endpoint, fills *res (status 404 or
 * 405 with {"error":"invalid_request"} when nothing matches). Never fails:
 * every outcome is a response. res->body stays valid until the next call
 * with the same ctx. */
void rl_handle_request(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);

/* The endpoints (router.c picks one). Same contract as rl_handle_request. */
void rl_handle_reserve(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
void rl_handle_reserve_batch(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
void rl_handle_complete(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
void rl_handle_complete_batch(rl_handler_ctx *ctx, const rl_http_request *req,
                              rl_http_response *res);
/* Done here, on the calling thread, unless ctx has an admin writer and the
 * request goes through rl_handle_request_async. */
void rl_handle_admin_put(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
/* Its halves: the body's definition into *def (false: *res holds the 400),
 * and the answer to a put once done. */
bool rl_admin_put_decode(rl_handler_ctx *ctx, const rl_http_request *req, rl_limit_def *def, rl_http_response *res);
void rl_admin_put_respond(rl_handler_ctx *ctx, const rl_service_put *put, rl_http_response *res);
void rl_handle_admin_list(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
/* key_path: the still percent-encoded rest of the path after "/v1/admin/limits/". */
void rl_handle_admin_get(rl_handler_ctx *ctx, const char *key_path, size_t key_path_len,
                         rl_http_response *res);
void rl_handle_healthz(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);

/* ---- answering later (a backend with reserve_batch_async; admin puts) -----
 *
 * POST /v1/reserve, /v1/reserve/batch, /v1/complete and /v1/complete/batch
 * can leave the backend's answer to come later, so that the event loop serves
 * other requests while a flush is under way; PUT /v1/admin/limits, when ctx
 * has an admin writer, leaves its put to the writer thread (the registry's
 * file write). The glue allocates an
 * rl_async_request (usually inside an object of its own, malloc'd: the
 * connection may go away meanwhile) and sets `done`; the rest is the
 * handlers'. */
typedef struct rl_async_request rl_async_request;
struct rl_async_request {
    /* The glue's: called exactly once, from any thread (the backend's
     * flusher, or this thread before rl_handle_request_async returns), when
     * the answer is ready. It must only hand the request back to its thread. */
    void (*done)(rl_async_request *areq);

    /* The handlers' (router.c, handlers_async.c). */
    int kind;
    void *msg;           /* the decoded body: rl_wire_reserves or rl_wire_completes, malloc'd;
                            an admin put's rl_admin_job */
    size_t valid;        /* items passed to the backend */
    void *requests;      /* the valid items, packed (malloc'd, or into msg for one item) */
    void *results;       /* valid results (malloc'd, or `one` for one item) */
    unsigned char one[64]; /* room for one result */
};

/* Like rl_handle_request, but when the backend can answer asynchronously and
 * the request is a reserve or complete that reaches it, the backend call is
 * started and true is returned with *res untouched: areq->done(areq) follows
 * once (possibly before this returns); then, on ctx's thread, call
 * rl_async_request_finish to fill *res, and rl_async_request_release in any
 * case (also when the client has gone). false: *res is filled now, areq
 * is not used (and needs no release). */
bool rl_handle_request_async(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res,
                             rl_async_request *areq);
/* Encodes the answer into ctx's buffer (same contract as rl_handle_request). */
void rl_async_request_finish(rl_handler_ctx *ctx, rl_async_request *areq, rl_http_response *res);
/* Frees what the handler kept in areq (not areq itself). */
void rl_async_request_release(rl_async_request *areq);

#endif
