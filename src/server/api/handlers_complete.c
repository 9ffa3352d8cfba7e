/* handlers_complete.c — POST /v1/complete and POST /v1/complete/batch.
 *
 * Complete is idempotent and answers ok for unknown or expired leases (the
 * backend's contract), so the only non-200 answers are a malformed body and
 * a failing backend.
 */
#include <string.h>

#include "server/api/handler.h"
#include "server/api/respond.h"
#include "wire/wire.h"

static const char *body_of(const rl_http_request *req) { return req->body != NULL ? req->body : ""; }

void rl_handle_complete(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_completes msg;
    memset(&msg, 0, sizeof msg);
    rl_buf *buf = &ctx->body;
    rl_buf_reset(buf);
    res->body = buf;
    rl_status decoded = rl_wire_decode_complete(body_of(req), req->body_len, &msg, detail);
    if (decoded == RL_INVALID_REQUEST) {
        rl_respond_append_invalid_complete(buf, detail);
        res->status = 400;
        return;
    }
    if (decoded != RL_OK) { /* out of memory */
        rl_wire_encode_complete_result(buf, RL_BACKEND_ERROR);
        res->status = 503;
        return;
    }
    rl_status status = rl_backend_complete(ctx->backend, &msg.requests[0]);
    rl_wire_completes_free(&msg);
    rl_wire_encode_complete_result(buf, status);
    res->status = status == RL_OK ? 200 : rl_respond_backend_http_status(status);
}

void rl_handle_complete_batch(rl_handler_ctx *ctx, const rl_http_request *req,
                              rl_http_response *res) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_completes msg;
    memset(&msg, 0, sizeof msg);
    rl_status decoded =
        rl_wire_decode_complete_batch(body_of(req), req->body_len, ctx->max_batch, &msg, detail);
    if (decoded != RL_OK) {
        rl_respond_decode_failure(ctx, res, decoded, detail);
        return;
    }
    if (msg.count > ctx->max_batch) { /* the decoder promises not; the scratch depends on it */
        rl_wire_completes_free(&msg);
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, "too many requests in the batch");
        return;
    }
    size_t valid = 0;
    for (size_t i = 0; i < msg.count; i++)
        if (msg.item_status[i] == RL_OK) ctx->completes[valid++] = msg.requests[i];
    if (valid > 0)
        rl_backend_complete_batch(ctx->backend, ctx->completes, valid, ctx->complete_statuses);

    rl_buf *buf = &ctx->body;
    rl_buf_reset(buf);
    rl_buf_append_str(buf, "{\"results\":[");
    size_t next_valid = 0;
    for (size_t i = 0; i < msg.count; i++) {
        if (i > 0) rl_buf_append(buf, ",", 1);
        if (msg.item_status[i] == RL_OK)
            rl_wire_encode_complete_result(buf, ctx->complete_statuses[next_valid++]);
        else
            rl_respond_append_invalid_complete(buf, rl_wire_completes_item_detail(&msg, i));
    }
    rl_buf_append_str(buf, "]}");
    rl_wire_completes_free(&msg);
    res->status = 200;
    res->body = buf;
}
