/* handlers_reserve.c — POST /v1/reserve and POST /v1/reserve/batch.
 *
 * The hot path: decode, one backend call, encode into the thread's buffer.
 * Nothing here allocates; the decoded message is the wire layer's.
 */
#include <string.h>

#include "server/api/handler.h"
#include "server/api/respond.h"
#include "wire/wire.h"

/* A reserve body that could not be decoded: api.md's reserve shape, plus
 * the detail a human needs. */
static void reserve_invalid(rl_handler_ctx *ctx, rl_http_response *res, const char *detail) {
    rl_buf_reset(&ctx->body);
    rl_respond_append_invalid_reserve(&ctx->body, detail);
    res->status = 400;
    res->body = &ctx->body;
}

static const char *body_of(const rl_http_request *req) { return req->body != NULL ? req->body : ""; }

void rl_handle_reserve(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_reserves msg;
    memset(&msg, 0, sizeof msg);
    rl_status decoded = rl_wire_decode_reserve(body_of(req), req->body_len, &msg, detail);
    if (decoded != RL_OK) {
        if (decoded == RL_INVALID_REQUEST) {
            reserve_invalid(ctx, res, detail);
        } else {
            static const rl_reserve_result failed = {false, 0, 0, RL_BACKEND_ERROR, NULL};
            rl_buf_reset(&ctx->body);
            rl_wire_encode_reserve_result(&ctx->body, &failed);
            res->status = 503;
            res->body = &ctx->body;
        }
        return;
    }
    rl_reserve_result result;
    rl_backend_reserve(ctx->backend, &msg.requests[0], &result);
    /* result.status_key may point into msg: encode before freeing it. */
    rl_buf_reset(&ctx->body);
    rl_wire_encode_reserve_result(&ctx->body, &result);
    rl_wire_reserves_free(&msg);
    res->status = rl_respond_backend_http_status(result.status);
    res->body = &ctx->body;
}

void rl_handle_reserve_batch(rl_handler_ctx *ctx, const rl_http_request *req,
                             rl_http_response *res) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_reserves msg;
    memset(&msg, 0, sizeof msg);
    rl_status decoded =
        rl_wire_decode_reserve_batch(body_of(req), req->body_len, ctx->max_batch, &msg, detail);
    if (decoded != RL_OK) {
        rl_respond_decode_failure(ctx, res, decoded, detail);
        return;
    }
    if (msg.count > ctx->max_batch) { /* the decoder promises not; the scratch depends on it */
        rl_wire_reserves_free(&msg);
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, "too many requests in the batch");
        return;
    }
    /* Only valid items reach the backend, packed, in one call. */
    size_t valid = 0;
    for (size_t i = 0; i < msg.count; i++)
        if (msg.item_status[i] == RL_OK) ctx->reserves[valid++] = msg.requests[i];
    if (valid > 0) rl_backend_reserve_batch(ctx->backend, ctx->reserves, valid, ctx->reserve_results);

    rl_buf *buf = &ctx->body;
    rl_buf_reset(buf);
    rl_buf_append_str(buf, "{\"results\":[");
    size_t next_valid = 0;
    for (size_t i = 0; i < msg.count; i++) {
        if (i > 0) rl_buf_append(buf, ",", 1);
        if (msg.item_status[i] == RL_OK)
            rl_wire_encode_reserve_result(buf, &ctx->reserve_results[next_valid++]);
        else
            rl_respond_append_invalid_reserve(buf, rl_wire_reserves_item_detail(&msg, i));
    }
    rl_buf_append_str(buf, "]}");
    rl_wire_reserves_free(&msg);
    res->status = 200;
    res->body = buf;
}
