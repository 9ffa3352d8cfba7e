/* server/api/handler.h — the endpoints of docs/api.md, free of any HTTP library.
 *
 * A request is (method, path, query, body); a response is an HTTP
 * status and a JSON body. The h2o glue (server/http/) only translates; so
 * the endpoints and the router are unit-tested without sockets.
 *
 * Threading: one rl_handler_ctx per event-loop thread. It owns the response
 * buffer every request reuses; each request in flight has its rl_api_call,
 * whose arrays are kept between requests, so the hot path allocates nothing
 * but the decoded body. The service ctx points to is shared.
 */
#ifndef RL_SERVER_HANDLER_H
#define RL_SERVER_HANDLER_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"
#include "server/api/admin_writer.h"
#include "server/api/lease_call.h"
#include "server/service.h"
#include "wire/buf.h"

typedef struct rl_http_request {
    const char *method; /* not NUL-terminated */
    size_t method_len;
    const char *path; /* raw (still percent-encoded), without the query; not NUL-terminated */
    size_t path_len;
    const char *body; /* may be NULL when body_len is 0 */
    size_t body_len;
    /* The raw query after the '?' (not NUL-terminated), or NULL with 0 for
     * none: only GET /v1/admin/audit reads one, routing never does. */
    const char *query;
    size_t query_len;
} rl_http_request;

/* The body as the decoders take it: never NULL. */
static inline const char *rl_http_request_body(const rl_http_request *req) {
    return req->body != NULL ? req->body : "";
}

typedef struct rl_http_response {
    int status;           /* HTTP status code */
    const char *allow;    /* the Allow header of a 405, else NULL; static */
    const char *location; /* the Location header of a redirect, else NULL; static */
    rl_buf *body;      /* points to the context's buffer: copy it before the next request */
    /* The body's media type (static), or NULL for application/json: the
     * API's answers are JSON; /metrics and the console's files are not. */
    const char *content_type;
    /* A page a browser renders (the console's files): sent with headers that
     * keep it from being framed by another site or read as another type. */
    bool browser_page;
} rl_http_response;

typedef struct rl_denial_ring rl_denial_ring; /* server/observe/denial_ring.h */
/* What GET /metrics answers (server/observe/metrics.h): write appends the
 * exposition to out, on the request's thread, without blocking; context is
 * shared by every loop. write NULL: the daemon keeps no metrics (404). */
typedef struct rl_metrics_page {
    void (*write)(void *context, rl_buf *out);
    void *context;
} rl_metrics_page;

typedef struct rl_handler_ctx {
    rl_service *service; /* borrowed, shared between threads */
    rl_backend *backend; /* rl_service_backend(service), cached */
    /* Where admin puts go off the loop (admin_writer.h), or NULL: done on
     * the calling thread. Borrowed, shared. */
    rl_admin_writer *admin_writer;
    size_t max_batch; /* items per batch request */
    /* The recent denials GET /v1/admin/denials reads, or NULL (none kept:
     * an empty list). Borrowed, shared. */
    const rl_denial_ring *denials;
    rl_metrics_page metrics; /* GET /metrics; borrowed, shared */
    rl_buf body;      /* the response being built */
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

/* ---- one request: begin, (done), finish, end ------------------------------
 *
 * Every request takes the same road (router.c finds its endpoint in the one
 * table). rl_api_begin decodes the body once and starts the endpoint. Most
 * answers are ready before it returns: an admin GET, a malformed body, and
 * every reserve and complete on a backend that answers synchronously
 * (memory), whose done runs inside the call. Others come later: a backend
 * with async ops (the submitter in front of redis) answers from its flusher
 * thread, an admin put from the admin writer once durable; the event loop
 * serves other requests meanwhile.
 *
 * The caller owns an rl_api_call (usually inside an object of its own: the
 * connection may go away meanwhile), sets `done`, and may reuse it after
 * rl_api_call_init for any number of requests, one at a time. */
typedef struct rl_api_route rl_api_route;
typedef struct rl_api_call rl_api_call;
struct rl_api_call {
    /* The caller's: called exactly once per request answered later, from
     * any thread (the backend's flusher, the admin writer), when the answer
     * is ready. It must only hand the call back to its thread. Never called
     * for a request rl_api_begin answered. */
    void (*done)(rl_api_call *call);

    /* The router's and the endpoints'. */
    const rl_api_route *route; /* the endpoint this request went to, or NULL */
    _Atomic int state;         /* begun, waiting or answered: see api_call.c */
    /* Each endpoint's state (not a union: the lease arrays are kept
     * between requests, whichever endpoint comes next). */
    rl_lease_call lease;    /* the four lease endpoints */
    rl_admin_job admin_put; /* PUT /v1/admin/limits, DELETE /v1/admin/limits/{key}, a preset's puts */
    const rl_preset *preset; /* PUT /v1/admin/presets/{name}/apply */
};

/* A new call: nothing held. */
void rl_api_call_init(rl_api_call *call);
/* Frees what a call keeps between requests; after rl_api_call_end. */
void rl_api_call_free(rl_api_call *call);

/* Starts req on ctx's thread. true: answered now, *res filled. false: the
 * answer comes later: call->done(call) follows exactly once (possibly
 * before this returns, from another thread); then, on ctx's thread, call
 * rl_api_finish to fill *res. In both cases rl_api_call_end follows (also
 * when the client has gone and nothing is finished). */
bool rl_api_begin(rl_handler_ctx *ctx, const rl_http_request *req, rl_api_call *call, rl_http_response *res);
/* Encodes the answer of a request begun and done into ctx's buffer. */
void rl_api_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
/* Lets go of what the request held (its decoded body); the call can be
 * begun again. */
void rl_api_call_end(rl_api_call *call);

/* The whole road on the calling thread, waiting for an answer that comes
 * later: for tests and tools without an event loop. Same answers as
 * rl_api_begin/rl_api_finish; res->body stays valid until the next call
 * with the same ctx. */
void rl_handle_request(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);

#endif
