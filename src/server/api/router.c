/* router.c — the one table of endpoints, which row answers a (method, path),
 * and the per-thread handler context. Routing is a handful of
 * length-then-memcmp checks: cheaper than h2o's path table, and it keeps the
 * raw path, which a limit key inside GET /v1/admin/limits/{key} needs (h2o's
 * normalised path would fold "..").
 */
#include <stdlib.h>
#include <string.h>

#include "server/api/endpoints.h"

bool rl_handler_ctx_init(rl_handler_ctx *ctx, rl_service *service, size_t max_batch) {
    memset(ctx, 0, sizeof *ctx);
    ctx->service = service;
    ctx->backend = rl_service_backend(service);
    ctx->max_batch = max_batch;
    rl__buf_init(&ctx->body);
    return true;
}

void rl_handler_ctx_free(rl_handler_ctx *ctx) { rl__buf_free(&ctx->body); }

void rl_handler_ctx_trim(rl_handler_ctx *ctx) {
    if (ctx->body.cap <= RL_HANDLER_BODY_KEEP_BYTES) return;
    rl__buf_free(&ctx->body);
    rl__buf_init(&ctx->body);
}

#define ADMIN_LIMITS_PATH "/v1/admin/limits"
#define ADMIN_TEMPLATES_PATH "/v1/admin/templates"
#define ADMIN_PRESETS_PATH "/v1/admin/presets"

#define ANSWER(method, path, allow, fn, id) \
    {method, sizeof(method) - 1, path, sizeof(path) - 1, false, allow, fn, NULL, NULL, NULL, NULL, RL_API_##id}
#define LEASE(path, endpoint, id)                                                                                  \
    {"POST", 4, path, sizeof(path) - 1, false, "POST", NULL, rl__lease_start, rl__lease_finish, rl__lease_end, \
     &endpoint, RL_API_##id}
/* The hot paths first. */
static const rl_api_route routes[] = {
    LEASE("/v1/reserve", rl__lease_reserve, RESERVE),
    LEASE("/v1/complete", rl__lease_complete, COMPLETE),
    LEASE("/v1/reserve/batch", rl__lease_reserve_batch, RESERVE_BATCH),
    LEASE("/v1/complete/batch", rl__lease_complete_batch, COMPLETE_BATCH),
    ANSWER("GET", ADMIN_LIMITS_PATH, "GET, PUT", rl__admin_list, ADMIN_LIMITS),
    {"PUT", 3, ADMIN_LIMITS_PATH, sizeof(ADMIN_LIMITS_PATH) - 1, false, "GET, PUT", NULL, rl__admin_put_start,
     rl__admin_put_finish, NULL, NULL, RL_API_ADMIN_LIMITS},
    /* The key may itself hold '/' and ':'. */
    {"GET", 3, ADMIN_LIMITS_PATH "/", sizeof(ADMIN_LIMITS_PATH "/") - 1, true, "GET, DELETE", rl__admin_get, NULL,
     NULL, NULL, NULL, RL_API_ADMIN_LIMITS},
    {"DELETE", 6, ADMIN_LIMITS_PATH "/", sizeof(ADMIN_LIMITS_PATH "/") - 1, true, "GET, DELETE", NULL,
     rl__admin_delete_start, rl__admin_delete_finish, NULL, NULL, RL_API_ADMIN_LIMITS},
    ANSWER("GET", ADMIN_TEMPLATES_PATH, "GET, PUT", rl__templates_list, ADMIN_TEMPLATES),
    {"PUT", 3, ADMIN_TEMPLATES_PATH, sizeof(ADMIN_TEMPLATES_PATH) - 1, false, "GET, PUT", NULL, rl__template_put_start,
     rl__template_change_finish, NULL, NULL, RL_API_ADMIN_TEMPLATES},
    /* The pattern, percent-encoded where needed ('{' and '}' may be sent as is). */
    {"DELETE", 6, ADMIN_TEMPLATES_PATH "/", sizeof(ADMIN_TEMPLATES_PATH "/") - 1, true, "DELETE", NULL,
     rl__template_delete_start, rl__template_change_finish, NULL, NULL, RL_API_ADMIN_TEMPLATES},
    ANSWER("GET", ADMIN_PRESETS_PATH, "GET", rl__admin_presets_list, ADMIN_PRESETS),
    /* The name, then "/apply". */
    {"PUT", 3, ADMIN_PRESETS_PATH "/", sizeof(ADMIN_PRESETS_PATH "/") - 1, true, "PUT", NULL,
     rl__admin_preset_apply_start, rl__admin_preset_apply_finish, rl__admin_preset_apply_end, NULL,
     RL_API_ADMIN_PRESETS},
    ANSWER("GET", "/v1/admin/audit", "GET", rl__admin_audit, ADMIN_AUDIT),
    ANSWER("GET", "/v1/admin/denials", "GET", rl__admin_denials, ADMIN_DENIALS),
    ANSWER("GET", "/healthz", "GET", rl__healthz, HEALTHZ),
    ANSWER("GET", "/console", "GET", rl__console_file, CONSOLE),
    /* A file of the console: its name the rest of the path. */
    {"GET", 3, "/console/", sizeof("/console/") - 1, true, "GET", rl__console_file, NULL, NULL, NULL, NULL,
     RL_API_CONSOLE},
    ANSWER("GET", "/metrics", "GET", rl__metrics_get, METRICS),
    /* The daemon's address, opened in a browser: on to the console. */
    ANSWER("GET", "/", "GET", rl__console_redirect, CONSOLE),
};
#undef ANSWER
#undef LEASE

static bool path_matches(const rl_api_route *route, const rl_http_request *req) {
    if (route->path_is_prefix ? req->path_len < route->path_len : req->path_len != route->path_len) return false;
    return memcmp(req->path, route->path, route->path_len) == 0;
}

static bool is_method(const char *method, size_t method_len, const char *name) {
    return method_len == strlen(name) && memcmp(method, name, method_len) == 0;
}

/* HEAD is a GET whose answer goes without its body (RFC 9110, 9.3.2): a
 * GET row answers it, and the HTTP layer leaves the body out. */
static bool method_matches(const rl_api_route *route, const rl_http_request *req) {
    if (req->method_len == route->method_len && memcmp(req->method, route->method, route->method_len) == 0)
        return true;
    return is_method(req->method, req->method_len, "HEAD") && is_method(route->method, route->method_len, "GET");
}

const rl_api_route *rl__api_route_of(const rl_http_request *req, const char **allow) {
    *allow = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const rl_api_route *route = &routes[i];
        if (!path_matches(route, req)) continue;
        if (method_matches(route, req)) return route;
        *allow = route->allow;
    }
    return NULL;
}
