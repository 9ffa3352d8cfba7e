/* handlers_health.c — GET /healthz: is the daemon up, on which backend, with
 * how many limits; 503 when the backend cannot serve (redis unreachable, or
 * refusing writes at its maxmemory), so that a load balancer takes the
 * daemon out of rotation; 200 with "degraded":true and a detail when it
 * serves but needs an operator (redis close to its maxmemory). Cheap for the
 * memory backend; for redis one INFO memory and one SCARD of the
 * definitions. */
#include "server/api/endpoints.h"
#include "server/api/respond.h"

void rl__healthz(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                 rl_http_response *res) {
    (void)route;
    (void)req;
    size_t limits = 0;
    char detail[512] = "";
    rl_status status = rl_service_health(ctx->service, &limits, detail, sizeof detail);
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, status == RL_OK ? "{\"ok\":true,\"backend\":\"" : "{\"ok\":false,\"backend\":\"");
    rl__buf_append_str(buf, rl_service_backend_name(ctx->service));
    if (status == RL_OK) {
        rl__buf_append_str(buf, "\",\"limits\":");
        rl__buf_append_u64(buf, (uint64_t)limits);
        if (detail[0] != '\0') {
            rl__buf_append_str(buf, ",\"degraded\":true");
            rl_respond_append_detail(buf, detail);
        }
        rl__buf_append_str(buf, "}");
        res->status = 200;
    } else {
        rl__buf_append_str(buf, "\",\"error\":");
        rl_respond_append_error_string(buf, RL_BACKEND_ERROR, NULL);
        rl_respond_append_detail(buf, detail);
        rl__buf_append_str(buf, "}");
        res->status = 503;
    }
    res->body = buf;
}
