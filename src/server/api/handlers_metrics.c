/* handlers_metrics.c — GET /metrics: the Prometheus exposition the daemon's
 * metrics write (server/observe/metrics.h), as text. A daemon that keeps
 * no metrics (metrics.enabled: false) answers 404 as for any unknown path. */
#include "server/api/endpoints.h"
#include "server/api/respond.h"
#include "server/observe/metrics.h"

void rl__metrics_get(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                     rl_http_response *res) {
    (void)route;
    if (ctx->metrics.write == NULL) {
        rl_respond_no_route(ctx, res, req, "this daemon keeps no metrics (metrics.enabled: false)");
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    ctx->metrics.write(ctx->metrics.context, buf);
    if (buf->failed) {
        rl_respond_error(ctx, res, 500, RL_NO_MEMORY, NULL, "out of memory while writing the metrics");
        return;
    }
    res->status = 200;
    res->body = buf;
    res->content_type = RL_METRICS_CONTENT_TYPE;
}
