/* handlers_templates.c — PUT and GET /v1/admin/templates, DELETE
 * /v1/admin/templates/{pattern} (api.md "Templates").
 *
 * A template is a limit definition whose "pattern" stands for its key: a
 * reserve naming a key no limit defines that the pattern matches uses the
 * template's definition (service.h: rl_service_put_template). Changes go
 * through the admin writer like a limit's (admin_change.h), answered once
 * durable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/admin_change.h"
#include "server/api/endpoints.h"
#include "server/api/respond.h"
#include "wire/wire.h"

/* Decodes the template (a bad body: 400 now), then puts it. */
bool rl__template_put_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_api_call *call, rl_http_response *res) {
    rl_service_put *put = &call->admin_put.put;
    memset(put, 0, sizeof *put);
    put->op = RL_SERVICE_PUT_TEMPLATE;
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_status decoded = rl__wire_decode_template_def(rl_http_request_body(req), req->body_len, &put->def, detail);
    if (decoded != RL_OK) {
        rl__admin_change_refused(ctx, res, decoded == RL_INVALID_REQUEST ? 400 : 503,
                                 decoded == RL_INVALID_REQUEST ? RL_INVALID_REQUEST : RL_BACKEND_ERROR, NULL,
                                 decoded == RL_INVALID_REQUEST ? detail : NULL);
        return true;
    }
    return rl__admin_change_submit(ctx, route, call, res);
}

/* The pattern from the path (a bad one: 400 now), then the delete. */
bool rl__template_delete_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                               rl_api_call *call, rl_http_response *res) {
    rl_service_put *put = &call->admin_put.put;
    memset(put, 0, sizeof *put);
    put->op = RL_SERVICE_DELETE_TEMPLATE;
    if (!rl__admin_path_key(route, req, put->def.key)) {
        rl__admin_change_refused(ctx, res, 400, RL_INVALID_REQUEST, NULL,
                                 "the pattern in the path must be 1..256 printable ASCII characters without "
                                 "spaces, percent-encoded where needed");
        return true;
    }
    return rl__admin_change_submit(ctx, route, call, res);
}

void rl__template_change_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    const rl_service_put *put = &call->admin_put.put;
    bool putting = put->op == RL_SERVICE_PUT_TEMPLATE;
    if (put->status == RL_UNKNOWN_LIMIT_KEY) {
        /* No such template: the path names nothing, as an unknown path does. */
        char detail[RL_KEY_MAX_LEN + 64];
        snprintf(detail, sizeof detail, "no template has the pattern %s", put->def.key);
        rl__admin_change_refused(ctx, res, 404, RL_INVALID_REQUEST, NULL, detail);
        return;
    }
    if (put->status == RL_INVALID_REQUEST || put->status == RL_LIMIT_IN_USE) {
        rl__admin_change_refused(ctx, res, rl_respond_backend_http_status(put->status), put->status, NULL, put->err);
        return;
    }
    if (put->status != RL_OK) {
        rl__admin_change_failed(ctx, res, putting ? "PUT /v1/admin/templates" : "DELETE /v1/admin/templates", put);
        return;
    }
    rl__admin_change_ok(ctx, res);
}

void rl__templates_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                        rl_http_response *res) {
    (void)route;
    (void)req;
    rl_limit_def *templates = NULL;
    size_t count = 0;
    rl_status status = rl_service_list_templates(ctx->service, &templates, &count);
    if (status != RL_OK) {
        rl_respond_error(ctx, res, rl_respond_admin_failure_status(status), RL_BACKEND_ERROR, NULL, NULL);
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"templates\":[");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) rl__buf_append(buf, ",", 1);
        rl__wire_encode_template_def(buf, &templates[i]);
    }
    rl__buf_append_str(buf, "]}");
    free(templates);
    res->status = 200;
    res->body = buf;
}
