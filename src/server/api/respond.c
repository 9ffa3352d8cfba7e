/* respond.c — the {"error":..} bodies shared by the router and admin handlers. */
#include <stdio.h>
#include <string.h>

#include "server/api/handler.h"
#include "server/api/respond.h"

void rl_respond_append_error_string(rl_buf *buf, rl_status status, const char *status_key) {
    /* "<wire>:<key>" as one JSON string; keys are printable ASCII (validated
     * before they get here), but escape anyway: the buffer decides. */
    char text[64 + RL_KEY_MAX_LEN];
    int len = status_key != NULL
                  ? snprintf(text, sizeof text, "%s:%s", rl_status_wire(status), status_key)
                  : snprintf(text, sizeof text, "%s", rl_status_wire(status));
    if (len < 0) len = 0;
    if ((size_t)len >= sizeof text) len = (int)sizeof text - 1;
    rl__buf_append_json_string(buf, text, (size_t)len);
}

void rl_respond_append_detail(rl_buf *buf, const char *detail) {
    rl__buf_append_str(buf, ",\"detail\":");
    rl__buf_append_json_string(buf, detail, strlen(detail));
}

void rl_respond_error(rl_handler_ctx *ctx, rl_http_response *res, int http_status, rl_status status,
                      const char *status_key, const char *detail) {
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"error\":");
    rl_respond_append_error_string(buf, status, status_key);
    if (detail != NULL) rl_respond_append_detail(buf, detail);
    rl__buf_append_str(buf, "}");
    res->status = http_status;
    res->body = buf;
}

void rl_respond_error_named(rl_handler_ctx *ctx, rl_http_response *res, int http_status, const char *error,
                            const char *detail) {
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"error\":");
    rl__buf_append_json_string(buf, error, strlen(error));
    if (detail != NULL) rl_respond_append_detail(buf, detail);
    rl__buf_append_str(buf, "}");
    res->status = http_status;
    res->body = buf;
}

/* What a detail shows of text (a method, a raw path): printable ASCII, any
 * other byte '?', at most size - 4 bytes and "..." after a cut. */
static void shown(const char *text, size_t len, char *out, size_t size) {
    size_t room = size - 4, n = 0;
    for (; n < len && n < room; n++) {
        unsigned char c = (unsigned char)text[n];
        out[n] = c > 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

#define NO_ROUTE_PATH_SHOWN 200 /* bytes of the path in the detail */

void rl_respond_no_route(rl_handler_ctx *ctx, rl_http_response *res, const rl_http_request *req, const char *why) {
    char method[24], path[NO_ROUTE_PATH_SHOWN + 4], detail[sizeof method + sizeof path + 256];
    shown(req->method, req->method_len, method, sizeof method);
    shown(req->path, req->path_len, path, sizeof path);
    snprintf(detail, sizeof detail, "no route for %s %s: %s", method, path, why);
    rl_respond_error(ctx, res, 404, RL_INVALID_REQUEST, NULL, detail);
}

void rl_respond_decode_failure(rl_handler_ctx *ctx, rl_http_response *res, rl_status status,
                               const char *detail) {
    if (status == RL_INVALID_REQUEST)
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, detail);
    else
        rl_respond_error(ctx, res, 503, RL_BACKEND_ERROR, NULL, NULL);
}

int rl_respond_admin_failure_status(rl_status status) { return status == RL_BACKEND_ERROR ? 503 : 500; }

int rl_respond_backend_http_status(rl_status status) {
    switch (status) {
    case RL_OK:
    case RL_LIMIT_DECREASING:
    case RL_EXCEEDS_CAPACITY:
        return 200; /* a denial is a result, not an error */
    case RL_UNKNOWN_LIMIT_KEY:
        return 404;
    case RL_INVALID_REQUEST:
        return 400;
    case RL_LEASE_ID_CONFLICT:
    case RL_LIMIT_IN_USE:
        return 409;
    case RL_BACKEND_ERROR:
    case RL_NO_MEMORY:
    case RL_IO_ERROR:
    case RL_TIMEOUT:
        break;
    }
    return 503;
}

void rl_respond_append_invalid_reserve(rl_buf *buf, const char *detail) {
    rl__buf_append_str(buf, "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                           "\"error\":\"invalid_request\"");
    rl_respond_append_detail(buf, detail);
    rl__buf_append_str(buf, "}");
}

void rl_respond_append_invalid_complete(rl_buf *buf, const char *detail) {
    rl__buf_append_str(buf, "{\"ok\":false,\"error\":\"invalid_request\"");
    rl_respond_append_detail(buf, detail);
    rl__buf_append_str(buf, "}");
}
