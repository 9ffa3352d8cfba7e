/* lease_endpoints.c — POST /v1/reserve, /v1/complete and their /batch
 * forms: one pipeline for the four, whatever the backend.
 *
 *   decode the body once (the endpoint's decoder)
 *   -> the valid items, packed only when some are not
 *   -> one backend call through backend.h's async wrapper: a synchronous
 *      backend (memory) answers inside it, and api_call.c then answers at
 *      once, on this thread; an async one (the submitter in front of redis)
 *      answers from its flusher
 *   -> each item's answer: its result, or the sentence that refused it.
 *
 * What differs between reserve and complete is a lane: the message type,
 * the backend op, the encoders of one item. A single call answers in the
 * item's own shape with the item's HTTP status; a batch answers 200 with
 * {"results":[..]}, invalid items in place.
 */
#include <stdlib.h>
#include <string.h>

#include "server/api/endpoints.h"
#include "server/api/respond.h"

struct rl_lease_lane {
    size_t request_size, result_size;
    const void *(*items)(const rl_lease_call *call); /* the message's requests */
    const char *(*item_detail)(const rl_lease_call *call, size_t index);
    void (*free_msg)(rl_lease_call *call);
    /* Points the call's typed requests and results at these arrays. */
    void (*use)(rl_lease_call *call, const void *requests, void *results);
    void (*call_backend)(rl_backend *backend, rl_lease_call *call, void (*done)(void *context), void *context);
    void (*encode_result)(rl_buf *buf, const rl_lease_call *call, size_t valid_index);
    int (*result_http_status)(const rl_lease_call *call, size_t valid_index);
    void (*encode_invalid)(rl_buf *buf, const char *detail);
    /* A single call that could not be decoded for want of memory (503). */
    void (*encode_failure)(rl_buf *buf);
};

/* ---- the reserve lane ------------------------------------------------------ */

static const void *reserve_items(const rl_lease_call *call) { return call->msg.reserves.requests; }
static const char *reserve_item_detail(const rl_lease_call *call, size_t index) {
    return rl__wire_reserves_item_detail(&call->msg.reserves, index);
}
static void reserve_free_msg(rl_lease_call *call) { rl__wire_reserves_free(&call->msg.reserves); }
static void reserve_use(rl_lease_call *call, const void *requests, void *results) {
    call->requests.reserves = requests;
    call->results.reserves = results;
}
static void reserve_call_backend(rl_backend *backend, rl_lease_call *call, void (*done)(void *context),
                                 void *context) {
    rl_backend_reserve_batch_async(backend, call->requests.reserves, call->valid, call->results.reserves, done,
                                   context);
}
static void reserve_encode_result(rl_buf *buf, const rl_lease_call *call, size_t valid_index) {
    rl__wire_encode_reserve_result(buf, &call->results.reserves[valid_index],
                                   call->requests.reserves[valid_index].dry_run);
}
static int reserve_result_http_status(const rl_lease_call *call, size_t valid_index) {
    return rl_respond_backend_http_status(call->results.reserves[valid_index].status);
}
static void reserve_encode_failure(rl_buf *buf) {
    static const rl_reserve_result failed = {.allowed = false, .status = RL_BACKEND_ERROR};
    rl__wire_encode_reserve_result(buf, &failed, false);
}

static const rl_lease_lane reserve_lane = {
    sizeof(rl_reserve_request), sizeof(rl_reserve_result), reserve_items, reserve_item_detail, reserve_free_msg,
    reserve_use, reserve_call_backend, reserve_encode_result, reserve_result_http_status,
    rl_respond_append_invalid_reserve, reserve_encode_failure,
};

/* ---- the complete lane ----------------------------------------------------- */

static const void *complete_items(const rl_lease_call *call) { return call->msg.completes.requests; }
static const char *complete_item_detail(const rl_lease_call *call, size_t index) {
    return rl__wire_completes_item_detail(&call->msg.completes, index);
}
static void complete_free_msg(rl_lease_call *call) { rl__wire_completes_free(&call->msg.completes); }
static void complete_use(rl_lease_call *call, const void *requests, void *results) {
    call->requests.completes = requests;
    call->results.completes = results;
}
static void complete_call_backend(rl_backend *backend, rl_lease_call *call, void (*done)(void *context),
                                  void *context) {
    rl_backend_complete_batch_async(backend, call->requests.completes, call->valid, call->results.completes, done,
                                    context);
}
static void complete_encode_result(rl_buf *buf, const rl_lease_call *call, size_t valid_index) {
    rl__wire_encode_complete_result(buf, call->results.completes[valid_index]);
}
static int complete_result_http_status(const rl_lease_call *call, size_t valid_index) {
    return rl_respond_backend_http_status(call->results.completes[valid_index]);
}
static void complete_encode_failure(rl_buf *buf) { rl__wire_encode_complete_result(buf, RL_BACKEND_ERROR); }

static const rl_lease_lane complete_lane = {
    sizeof(rl_complete_request), sizeof(rl_status), complete_items, complete_item_detail, complete_free_msg,
    complete_use, complete_call_backend, complete_encode_result, complete_result_http_status,
    rl_respond_append_invalid_complete, complete_encode_failure,
};

/* ---- the four endpoints: a decoder and a lane each -------------------------- */

/* Once a decoder returned: the message seen whatever its lane. */
static rl_status reserves_decoded(rl_lease_call *call, rl_status status) {
    if (status != RL_OK) return status;
    call->decoded = true;
    call->count = call->msg.reserves.count;
    call->item_status = call->msg.reserves.item_status;
    return RL_OK;
}
static rl_status completes_decoded(rl_lease_call *call, rl_status status) {
    if (status != RL_OK) return status;
    call->decoded = true;
    call->count = call->msg.completes.count;
    call->item_status = call->msg.completes.item_status;
    return RL_OK;
}

static rl_status decode_reserve(const char *body, size_t len, size_t max_batch, rl_lease_call *call,
                                char detail[RL_WIRE_DETAIL_SIZE]) {
    (void)max_batch;
    return reserves_decoded(call, rl__wire_decode_reserve(body, len, &call->msg.reserves, detail));
}
static rl_status decode_reserve_batch(const char *body, size_t len, size_t max_batch, rl_lease_call *call,
                                      char detail[RL_WIRE_DETAIL_SIZE]) {
    return reserves_decoded(call, rl__wire_decode_reserve_batch(body, len, max_batch, &call->msg.reserves, detail));
}
static rl_status decode_complete(const char *body, size_t len, size_t max_batch, rl_lease_call *call,
                                 char detail[RL_WIRE_DETAIL_SIZE]) {
    (void)max_batch;
    return completes_decoded(call, rl__wire_decode_complete(body, len, &call->msg.completes, detail));
}
static rl_status decode_complete_batch(const char *body, size_t len, size_t max_batch, rl_lease_call *call,
                                       char detail[RL_WIRE_DETAIL_SIZE]) {
    return completes_decoded(call,
                             rl__wire_decode_complete_batch(body, len, max_batch, &call->msg.completes, detail));
}

const rl_lease_endpoint rl__lease_reserve = {decode_reserve, &reserve_lane, false};
const rl_lease_endpoint rl__lease_reserve_batch = {decode_reserve_batch, &reserve_lane, true};
const rl_lease_endpoint rl__lease_complete = {decode_complete, &complete_lane, false};
const rl_lease_endpoint rl__lease_complete_batch = {decode_complete_batch, &complete_lane, true};

/* ---- the pipeline ------------------------------------------------------------ */

/* *array holds at least bytes (kept between calls); false if out of memory. */
static bool reserve_room(void **array, size_t *array_bytes, size_t bytes) {
    if (*array_bytes >= bytes) return true;
    void *grown = realloc(*array, bytes);
    if (grown == NULL) return false;
    *array = grown;
    *array_bytes = bytes;
    return true;
}

/* The backend's items and results: the message's own requests when every
 * item is valid, else the valid ones packed; false if out of memory. */
static bool prepare_items(rl_lease_call *call) {
    const rl_lease_lane *lane = call->endpoint->lane;
    size_t valid = 0;
    for (size_t i = 0; i < call->count; i++)
        if (call->item_status[i] == RL_OK) valid++;
    call->valid = valid;
    if (!call->endpoint->batch) {
        lane->use(call, lane->items(call), &call->one);
        return true;
    }
    if (!reserve_room(&call->kept_results, &call->kept_results_bytes, valid * lane->result_size)) return false;
    if (valid == call->count) {
        lane->use(call, lane->items(call), call->kept_results);
        return true;
    }
    if (!reserve_room(&call->packed, &call->packed_bytes, valid * lane->request_size)) return false;
    const unsigned char *items = lane->items(call);
    unsigned char *packed = call->packed;
    for (size_t i = 0, n = 0; i < call->count; i++)
        if (call->item_status[i] == RL_OK) memcpy(packed + lane->request_size * n++, items + lane->request_size * i,
                                                  lane->request_size);
    lane->use(call, call->packed, call->kept_results);
    return true;
}

/* The answer to a body that did not decode, in the endpoint's shape. */
static void answer_undecoded(rl_handler_ctx *ctx, const rl_lease_endpoint *endpoint, rl_status status,
                             const char *detail, rl_http_response *res) {
    if (endpoint->batch) {
        rl_respond_decode_failure(ctx, res, status, detail);
        return;
    }
    rl__buf_reset(&ctx->body);
    if (status == RL_INVALID_REQUEST) {
        endpoint->lane->encode_invalid(&ctx->body, detail);
        res->status = 400;
    } else {
        endpoint->lane->encode_failure(&ctx->body);
        res->status = 503;
    }
    res->body = &ctx->body;
}

static void backend_done(void *context) { rl__api_call_done(context); }

bool rl__lease_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req, rl_api_call *call,
                     rl_http_response *res) {
    rl_lease_call *lease = &call->lease;
    const rl_lease_endpoint *endpoint = route->lease;
    lease->endpoint = endpoint;
    lease->decoded = false;
    lease->finished = false;
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_status status = endpoint->decode(rl_http_request_body(req), req->body_len, ctx->max_batch, lease, detail);
    if (status != RL_OK) {
        answer_undecoded(ctx, endpoint, status, detail, res);
        return true;
    }
    if (lease->count > ctx->max_batch) { /* the decoder promises not */
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, "too many requests in the batch");
        return true;
    }
    if (!prepare_items(lease)) {
        rl_respond_error(ctx, res, 503, RL_BACKEND_ERROR, NULL, NULL);
        return true;
    }
    if (lease->valid == 0) { /* a batch of invalid items: nothing to ask */
        rl__lease_finish(ctx, call, res);
        return true;
    }
    endpoint->lane->call_backend(ctx->backend, lease, backend_done, call);
    return false;
}

void rl__lease_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    const rl_lease_call *lease = &call->lease;
    const rl_lease_lane *lane = lease->endpoint->lane;
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    res->body = buf;
    call->lease.finished = true;
    if (!lease->endpoint->batch) {
        /* A result's status_key may point into the message: encoded before
         * rl__lease_end frees it. */
        lane->encode_result(buf, lease, 0);
        res->status = lane->result_http_status(lease, 0);
        return;
    }
    rl__buf_append_str(buf, "{\"results\":[");
    for (size_t i = 0, next_valid = 0; i < lease->count; i++) {
        if (i > 0) rl__buf_append(buf, ",", 1);
        if (lease->item_status[i] == RL_OK)
            lane->encode_result(buf, lease, next_valid++);
        else
            lane->encode_invalid(buf, lane->item_detail(lease, i));
    }
    rl__buf_append_str(buf, "]}");
    res->status = 200;
}

void rl__lease_end(rl_api_call *call) {
    rl_lease_call *lease = &call->lease;
    if (lease->decoded) lease->endpoint->lane->free_msg(lease);
    lease->decoded = false;
    /* A rare huge batch does not keep its arrays for good. */
    if (lease->packed_bytes + lease->kept_results_bytes > RL_LEASE_CALL_KEEP_BYTES) rl__lease_call_free(lease);
}

void rl__lease_call_free(rl_lease_call *lease) {
    free(lease->packed);
    free(lease->kept_results);
    lease->packed = lease->kept_results = NULL;
    lease->packed_bytes = lease->kept_results_bytes = 0;
}
