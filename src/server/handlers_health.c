/* handlers_health.c — GET /healthz: is the daemon up, on which backend, with
 * how many limits. Cheap enough for a load balancer to call often. */
#include "server/handler.h"

void rl_handle_healthz(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res) {
    (void)req;
    rl_buf *buf = &ctx->body;
    rl_buf_reset(buf);
    rl_buf_append_str(buf, "{\"ok\":true,\"backend\":\"");
    rl_buf_append_str(buf, rl_service_backend_name(ctx->service));
    rl_buf_append_str(buf, "\",\"limits\":");
    rl_buf_append_u64(buf, (uint64_t)rl_service_limit_count(ctx->service));
    rl_buf_append_str(buf, "}");
    res->status = 200;
    res->body = buf;
}
