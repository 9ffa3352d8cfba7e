/* server/api/endpoints.h — the rows of the one endpoint table (router.c)
 * and the endpoints they lead to. Private to src/server/api.
 *
 * An endpoint either answers at once (`answer`: the admin GETs, /healthz)
 * or is started (`start`, then `finish` and `end`: the lease endpoints and
 * the admin put and delete, whose answer may come later). Adding an endpoint is one
 * row in router.c and its functions in a file of its own.
 *
 * Threading: every function runs on the request's thread (the ctx's),
 * save rl__api_call_done.
 */
#ifndef RL_SERVER_ENDPOINTS_H
#define RL_SERVER_ENDPOINTS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/api/handler.h"
#include "server/api/outcome.h"

/* ---- lease endpoints (lease_endpoints.c) ---------------------------------
 * Reserve and complete each are a lane (their types, backend call and item
 * encoders); single and batch differ by decoder and by the answer's shape. */
typedef struct rl_lease_lane rl_lease_lane;

/* Decodes body into call->msg and sets call->decoded, count and
 * item_status; a status other than RL_OK leaves nothing to free. */
typedef rl_status (*rl_lease_decode_fn)(const char *body, size_t len, size_t max_batch, rl_lease_call *call,
                                        char detail[RL_WIRE_DETAIL_SIZE]);

typedef struct rl_lease_endpoint {
    rl_lease_decode_fn decode;
    const rl_lease_lane *lane;
    bool batch; /* {"results":[..]} of every item, else the one item's shape */
} rl_lease_endpoint;

extern const rl_lease_endpoint rl__lease_reserve, rl__lease_reserve_batch, rl__lease_complete,
    rl__lease_complete_batch;

/* ---- a row of the table ---------------------------------------------------- */
struct rl_api_route {
    const char *method;
    size_t method_len;
    const char *path; /* exact, or the prefix before a key when path_is_prefix */
    size_t path_len;
    bool path_is_prefix;
    const char *allow; /* the Allow header of a 405 on this path */

    /* Answers now. NULL: the endpoint is started instead. */
    void (*answer)(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                   rl_http_response *res);
    /* true: answered now (*res filled). false: begun; the endpoint calls
     * rl__api_call_done(call) once its answer is ready, then `finish`
     * encodes it. */
    bool (*start)(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req, rl_api_call *call,
                  rl_http_response *res);
    void (*finish)(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
    /* Lets go of what start kept; called once for every start. */
    void (*end)(rl_api_call *call);
    const rl_lease_endpoint *lease; /* the lease endpoint start serves, or NULL */
    rl_api_endpoint endpoint;       /* what metrics and logs call it (outcome.h) */
};

/* router.c: the row of (method, path): NULL with *allow set for a path
 * that takes other methods (405), NULL with *allow NULL for no such path. */
const rl_api_route *rl__api_route_of(const rl_http_request *req, const char **allow);

/* api_call.c: an endpoint's answer is ready (any thread, once). */
void rl__api_call_done(rl_api_call *call);

/* lease_endpoints.c */
bool rl__lease_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req, rl_api_call *call,
                     rl_http_response *res);
void rl__lease_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
void rl__lease_end(rl_api_call *call);
void rl__lease_call_free(rl_lease_call *call);

/* handlers_admin.c */
bool rl__admin_put_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                         rl_api_call *call, rl_http_response *res);
void rl__admin_put_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
void rl__admin_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                    rl_http_response *res);
/* DELETE /v1/admin/limits/{key}, answered as a put is (the admin writer). */
bool rl__admin_delete_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_api_call *call, rl_http_response *res);
void rl__admin_delete_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
/* GET /v1/admin/limits/{key}: the key is the rest of the path after the row's prefix. */
void rl__admin_get(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                   rl_http_response *res);

/* handlers_templates.c: PUT and GET /v1/admin/templates, DELETE
 * /v1/admin/templates/{pattern}; a put and a delete end alike. */
bool rl__template_put_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_api_call *call, rl_http_response *res);
bool rl__template_delete_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                               rl_api_call *call, rl_http_response *res);
void rl__template_change_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
void rl__templates_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                        rl_http_response *res);
/* handlers_presets.c: GET /v1/admin/presets; PUT
 * /v1/admin/presets/{name}/apply, the name the rest of the path, its puts
 * done as one change of the admin writer (their memory let go by end). */
void rl__admin_presets_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_http_response *res);
bool rl__admin_preset_apply_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                                  rl_api_call *call, rl_http_response *res);
void rl__admin_preset_apply_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res);
void rl__admin_preset_apply_end(rl_api_call *call);

/* handlers_audit.c: GET /v1/admin/audit, the query string its parameters. */
void rl__admin_audit(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                     rl_http_response *res);

/* handlers_denials.c: GET /v1/admin/denials, the query string its
 * parameters; ctx->denials the ring it reads. */
void rl__admin_denials(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                       rl_http_response *res);

/* handlers_console.c: GET /console and /console/{file}, the files built
 * in; GET /, a redirect to /console. */
void rl__console_file(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                      rl_http_response *res);
void rl__console_redirect(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                          rl_http_response *res);
/* handlers_metrics.c: GET /metrics (handler.h, rl_metrics_page). */
void rl__metrics_get(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                     rl_http_response *res);

/* handlers_health.c */
void rl__healthz(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                 rl_http_response *res);

#endif
