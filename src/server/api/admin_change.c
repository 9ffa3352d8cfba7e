/* admin_change.c — what every admin change does the same way (admin_change.h). */
#include "server/api/admin_change.h"

#include <stdio.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "server/api/percent_decode.h"
#include "server/api/respond.h"

void rl__admin_change_refused(rl_handler_ctx *ctx, rl_http_response *res, int http_status, rl_status status,
                              const char *key, const char *detail) {
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"ok\":false,\"error\":");
    rl_respond_append_error_string(buf, status, key);
    if (detail != NULL) rl_respond_append_detail(buf, detail);
    rl__buf_append_str(buf, "}");
    res->status = http_status;
    res->body = buf;
}

void rl__admin_change_failed(rl_handler_ctx *ctx, rl_http_response *res, const char *what,
                             const rl_service_put *put) {
    fprintf(stderr, "ratelimiterd: %s \"%s\" failed: %s\n", what, put->def.key, put->err);
    rl__admin_change_refused(ctx, res, rl_respond_admin_failure_status(put->status), RL_BACKEND_ERROR, NULL, NULL);
}

void rl__admin_change_ok(rl_handler_ctx *ctx, rl_http_response *res) {
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"ok\":true}");
    res->status = 200;
    res->body = buf;
}

/* The writer's callback, on its thread: the change is durable (or failed). */
static void writer_done(rl_admin_job *job) { rl__api_call_done(job->context); }

bool rl__admin_change_submit(rl_handler_ctx *ctx, const rl_api_route *route, rl_api_call *call,
                             rl_http_response *res) {
    rl_admin_job *job = &call->admin_put;
    rl_service_put *puts = job->puts != NULL ? job->puts : &job->put;
    size_t count = job->puts != NULL ? job->count : 1;
    if (ctx->admin_writer != NULL) {
        job->done = writer_done;
        job->context = call;
        if (rl_admin_writer_submit(ctx->admin_writer, job)) return false;
        for (size_t i = 0; i < count; i++) {
            puts[i].status = RL_BACKEND_ERROR;
            snprintf(puts[i].err, sizeof puts[i].err, "the daemon is stopping");
        }
    } else {
        rl_service_put_limits(ctx->service, puts, count);
    }
    route->finish(ctx, call, res);
    return true;
}

bool rl__admin_path_key(const rl_api_route *route, const rl_http_request *req, char *key) {
    int key_len = rl_percent_decode(req->path + route->path_len, req->path_len - route->path_len, key,
                                    RL_KEY_MAX_LEN + 1);
    return key_len >= 0 && rl_key_is_valid(key, (size_t)key_len);
}
