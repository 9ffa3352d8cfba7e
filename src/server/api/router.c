/* router.c — which endpoint answers a (method, path), and the per-thread
 * handler context. Routing is a handful of length-then-memcmp checks: cheaper
 * than h2o's path table and it keeps the raw path, which a limit key inside
 * GET /v1/admin/limits/{key} needs (h2o's normalised path would fold "..").
 */
#include <stdlib.h>
#include <string.h>

#include "server/api/handler.h"
#include "server/api/respond.h"

#define ADMIN_LIMITS_PATH "/v1/admin/limits"

bool rl_handler_ctx_init(rl_handler_ctx *ctx, rl_service *service, size_t max_batch) {
    memset(ctx, 0, sizeof *ctx);
    ctx->service = service;
    ctx->backend = rl_service_backend(service);
    ctx->max_batch = max_batch;
    rl_buf_init(&ctx->body);
    ctx->reserves = calloc(max_batch, sizeof *ctx->reserves);
    ctx->reserve_results = calloc(max_batch, sizeof *ctx->reserve_results);
    ctx->completes = calloc(max_batch, sizeof *ctx->completes);
    ctx->complete_statuses = calloc(max_batch, sizeof *ctx->complete_statuses);
    if (ctx->reserves == NULL || ctx->reserve_results == NULL || ctx->completes == NULL ||
        ctx->complete_statuses == NULL) {
        rl_handler_ctx_free(ctx);
        return false;
    }
    return true;
}

void rl_handler_ctx_free(rl_handler_ctx *ctx) {
    rl_buf_free(&ctx->body);
    free(ctx->reserves);
    free(ctx->reserve_results);
    free(ctx->completes);
    free(ctx->complete_statuses);
    ctx->reserves = NULL;
    ctx->reserve_results = NULL;
    ctx->completes = NULL;
    ctx->complete_statuses = NULL;
}

void rl_handler_ctx_trim(rl_handler_ctx *ctx) {
    if (ctx->body.cap <= RL_HANDLER_BODY_KEEP_BYTES) return;
    rl_buf_free(&ctx->body);
    rl_buf_init(&ctx->body);
}

/* One exact path and the handler of each method it accepts (NULL: not
 * accepted). The hot paths come first. */
typedef void (*handler_fn)(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res);
typedef struct route {
    const char *path;
    size_t path_len;
    handler_fn on_get, on_post, on_put;
    const char *allow; /* the Allow header when the method does not match */
} route;

#define ROUTE(path, get, post, put, allow) {path, sizeof(path) - 1, get, post, put, allow}
static const route routes[] = {
    ROUTE("/v1/reserve", NULL, rl_handle_reserve, NULL, "POST"),
    ROUTE("/v1/complete", NULL, rl_handle_complete, NULL, "POST"),
    ROUTE("/v1/reserve/batch", NULL, rl_handle_reserve_batch, NULL, "POST"),
    ROUTE("/v1/complete/batch", NULL, rl_handle_complete_batch, NULL, "POST"),
    ROUTE(ADMIN_LIMITS_PATH, rl_handle_admin_list, NULL, rl_handle_admin_put, "GET, PUT"),
    ROUTE("/healthz", rl_handle_healthz, NULL, NULL, "GET"),
};
#undef ROUTE

static bool method_is(const rl_http_request *req, const char *literal, size_t literal_len) {
    return req->method_len == literal_len && memcmp(req->method, literal, literal_len) == 0;
}
#define METHOD_IS(req, literal) method_is(req, literal, sizeof(literal) - 1)

static void method_not_allowed(rl_handler_ctx *ctx, rl_http_response *res, const char *allow) {
    rl_respond_error(ctx, res, 405, RL_INVALID_REQUEST, NULL, NULL);
    res->allow = allow;
}

void rl_handle_request(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res) {
    res->allow = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const route *r = &routes[i];
        if (req->path_len != r->path_len || memcmp(req->path, r->path, r->path_len) != 0) continue;
        handler_fn fn = NULL;
        if (METHOD_IS(req, "POST"))
            fn = r->on_post;
        else if (METHOD_IS(req, "GET"))
            fn = r->on_get;
        else if (METHOD_IS(req, "PUT"))
            fn = r->on_put;
        if (fn != NULL)
            fn(ctx, req, res);
        else
            method_not_allowed(ctx, res, r->allow);
        return;
    }
    /* GET /v1/admin/limits/{key}: the key may itself hold '/' and ':'. */
    const size_t prefix_len = sizeof(ADMIN_LIMITS_PATH "/") - 1;
    if (req->path_len >= prefix_len && memcmp(req->path, ADMIN_LIMITS_PATH "/", prefix_len) == 0) {
        if (METHOD_IS(req, "GET"))
            rl_handle_admin_get(ctx, req->path + prefix_len, req->path_len - prefix_len, res);
        else
            method_not_allowed(ctx, res, "GET");
        return;
    }
    rl_respond_error(ctx, res, 404, RL_INVALID_REQUEST, NULL, NULL);
}
