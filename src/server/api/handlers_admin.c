/* handlers_admin.c — PUT/GET /v1/admin/limits, GET and DELETE
 * /v1/admin/limits/{key}.
 *
 * Rare, so clarity over speed: admin calls take the service's admin mutex
 * and may allocate. A put or a delete goes to the admin writer
 * (admin_writer.h) when the context has one, in order with the others, and
 * is answered once durable. A backend that cannot be reached (redis)
 * answers 503 backend_error; any other failure 500 backend_error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/admin_change.h"
#include "server/api/endpoints.h"
#include "server/api/respond.h"
#include "wire/wire.h"

/* Decodes the definition (a bad body: 400 now), then puts it (change). */
bool rl__admin_put_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                         rl_api_call *call, rl_http_response *res) {
    rl_service_put *put = &call->admin_put.put;
    memset(put, 0, sizeof *put);
    put->op = RL_SERVICE_PUT;
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_status decoded = rl__wire_decode_limit_def(rl_http_request_body(req), req->body_len, &put->def, detail);
    if (decoded != RL_OK) {
        if (decoded == RL_INVALID_REQUEST)
            rl__admin_change_refused(ctx, res, 400, RL_INVALID_REQUEST, NULL, detail);
        else
            rl__admin_change_refused(ctx, res, 503, RL_BACKEND_ERROR, NULL, NULL);
        return true;
    }
    return rl__admin_change_submit(ctx, route, call, res);
}

void rl__admin_put_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    const rl_service_put *put = &call->admin_put.put;
    if (put->status == RL_INVALID_REQUEST || put->status == RL_LIMIT_IN_USE) {
        rl__admin_change_refused(ctx, res, rl_respond_backend_http_status(put->status), put->status, NULL, put->err);
        return;
    }
    if (put->status != RL_OK) {
        rl__admin_change_failed(ctx, res, "PUT /v1/admin/limits", put);
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"ok\":true,\"status\":\"");
    rl__buf_append_str(buf, rl_limit_status_name(put->limit_status));
    rl__buf_append_str(buf, "\"}");
    res->status = 200;
    res->body = buf;
}

void rl__admin_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                    rl_http_response *res) {
    (void)route;
    (void)req;
    rl_service_limit *limits = NULL;
    size_t count = 0;
    rl_status status = rl_service_list_limits(ctx->service, &limits, &count);
    if (status != RL_OK) {
        rl_respond_error(ctx, res, rl_respond_admin_failure_status(status), RL_BACKEND_ERROR, NULL, NULL);
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"limits\":[");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) rl__buf_append(buf, ",", 1);
        rl__wire_encode_limit_info_from(buf, &limits[i].def, &limits[i].usage,
                                        &(rl_wire_limit_source){limits[i].template_pattern, limits[i].preset});
    }
    rl__buf_append_str(buf, "]}");
    free(limits);
    res->status = 200;
    res->body = buf;
}

/* The detail of a GET or DELETE of a key no limit has (nor any template makes). */
#define UNKNOWN_KEY_DETAIL_SIZE (RL_KEY_MAX_LEN + 32)
static const char *unknown_key_detail(const char *key, char detail[UNKNOWN_KEY_DETAIL_SIZE]) {
    snprintf(detail, UNKNOWN_KEY_DETAIL_SIZE, "no limit has the key %s", key);
    return detail;
}

#define BAD_PATH_KEY                                                                                             \
    "the key in the path must be 1..256 printable ASCII characters without spaces, percent-encoded where needed"

/* The key from the path (a bad one: 400 now), then the delete (change). */
bool rl__admin_delete_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_api_call *call, rl_http_response *res) {
    rl_service_put *put = &call->admin_put.put;
    memset(put, 0, sizeof *put);
    put->op = RL_SERVICE_DELETE;
    if (!rl__admin_path_key(route, req, put->def.key)) {
        rl__admin_change_refused(ctx, res, 400, RL_INVALID_REQUEST, NULL, BAD_PATH_KEY);
        return true;
    }
    return rl__admin_change_submit(ctx, route, call, res);
}

void rl__admin_delete_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    const rl_service_put *put = &call->admin_put.put;
    if (put->status == RL_UNKNOWN_LIMIT_KEY) {
        char detail[UNKNOWN_KEY_DETAIL_SIZE];
        rl__admin_change_refused(ctx, res, 404, RL_UNKNOWN_LIMIT_KEY, put->def.key,
                                 unknown_key_detail(put->def.key, detail));
        return;
    }
    if (put->status == RL_INVALID_REQUEST) {
        rl__admin_change_refused(ctx, res, 400, RL_INVALID_REQUEST, NULL, put->err);
        return;
    }
    if (put->status != RL_OK) {
        rl__admin_change_failed(ctx, res, "DELETE /v1/admin/limits", put);
        return;
    }
    rl__admin_change_ok(ctx, res);
}

void rl__admin_get(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                   rl_http_response *res) {
    char key[RL_KEY_MAX_LEN + 1];
    if (!rl__admin_path_key(route, req, key)) {
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, BAD_PATH_KEY);
        return;
    }
    rl_service_limit limit;
    rl_status status = rl_service_get_limit(ctx->service, key, &limit);
    if (status == RL_UNKNOWN_LIMIT_KEY) {
        char detail[UNKNOWN_KEY_DETAIL_SIZE];
        rl_respond_error(ctx, res, 404, RL_UNKNOWN_LIMIT_KEY, key, unknown_key_detail(key, detail));
        return;
    }
    if (status != RL_OK) {
        rl_respond_error(ctx, res, rl_respond_admin_failure_status(status), RL_BACKEND_ERROR, NULL, NULL);
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"limit\":");
    rl__wire_encode_limit_info_from(buf, &limit.def, &limit.usage,
                                    &(rl_wire_limit_source){limit.template_pattern, limit.preset});
    rl__buf_append_str(buf, "}");
    res->status = 200;
    res->body = buf;
}
