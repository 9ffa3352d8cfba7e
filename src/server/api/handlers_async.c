/* handlers_async.c — the reserve and complete endpoints when the backend
 * answers later (rl_backend_has_async: the submitter in front of redis), and
 * admin puts handed to the admin writer (admin_writer.h).
 *
 * Only the call that reaches the backend is made asynchronous: every answer
 * that does not need the backend (a malformed body, a batch without a valid
 * item, out of memory while decoding) is left to the synchronous handlers,
 * which decode again and answer exactly as without this file. The decoded
 * message and the packed arrays are malloc'd and live in the rl_async_request
 * until it is released; results may point into the message (status_key).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/admin_writer.h"
#include "server/api/handler.h"
#include "server/api/respond.h"
#include "wire/wire.h"

enum { KIND_RESERVE = 1, KIND_RESERVE_BATCH, KIND_COMPLETE, KIND_COMPLETE_BATCH, KIND_ADMIN_PUT };

_Static_assert(sizeof(rl_reserve_result) <= sizeof(((rl_async_request *)0)->one), "one result fits");
_Static_assert(sizeof(rl_status) <= sizeof(((rl_async_request *)0)->one), "one status fits");

static const char *body_of(const rl_http_request *req) { return req->body != NULL ? req->body : ""; }

static bool path_is(const rl_http_request *req, const char *literal, size_t literal_len) {
    return req->path_len == literal_len && memcmp(req->path, literal, literal_len) == 0;
}
#define PATH_IS(req, literal) path_is(req, literal, sizeof(literal) - 1)

static int kind_of(const rl_http_request *req) {
    if (req->method_len == 3 && memcmp(req->method, "PUT", 3) == 0 && PATH_IS(req, "/v1/admin/limits"))
        return KIND_ADMIN_PUT;
    if (req->method_len != 4 || memcmp(req->method, "POST", 4) != 0) return 0;
    if (PATH_IS(req, "/v1/reserve")) return KIND_RESERVE;
    if (PATH_IS(req, "/v1/complete")) return KIND_COMPLETE;
    if (PATH_IS(req, "/v1/reserve/batch")) return KIND_RESERVE_BATCH;
    if (PATH_IS(req, "/v1/complete/batch")) return KIND_COMPLETE_BATCH;
    return 0;
}

/* The backend's callback: context is the rl_async_request. */
static void backend_done(void *context) {
    rl_async_request *areq = context;
    areq->done(areq);
}

/* Packs the valid items of a batch (count items, item_status[i] RL_OK
 * marks the valid ones) into a new array; NULL if out of memory. */
static void *pack_valid(const void *items, const rl_status *item_status, size_t count, size_t size,
                        size_t *valid) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (item_status[i] == RL_OK) n++;
    *valid = n;
    if (n == 0) return NULL;
    unsigned char *packed = malloc(n * size);
    if (packed == NULL) return NULL;
    n = 0;
    for (size_t i = 0; i < count; i++)
        if (item_status[i] == RL_OK) memcpy(packed + size * n++, (const unsigned char *)items + size * i, size);
    return packed;
}

/* Decodes and starts the backend call; false (nothing kept) when the
 * synchronous handler must answer instead. */
static bool start_reserve(rl_handler_ctx *ctx, const rl_http_request *req, rl_async_request *areq) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_reserves *msg = calloc(1, sizeof *msg);
    if (msg == NULL) return false;
    rl_status decoded = areq->kind == KIND_RESERVE
                            ? rl_wire_decode_reserve(body_of(req), req->body_len, msg, detail)
                            : rl_wire_decode_reserve_batch(body_of(req), req->body_len, ctx->max_batch, msg, detail);
    if (decoded != RL_OK || msg->count > ctx->max_batch) goto fallback;
    if (areq->kind == KIND_RESERVE) {
        areq->valid = 1;
        areq->requests = NULL; /* msg->requests[0] */
        areq->results = areq->one;
    } else {
        areq->requests = pack_valid(msg->requests, msg->item_status, msg->count, sizeof *msg->requests, &areq->valid);
        if (areq->requests == NULL) goto fallback;
        areq->results = calloc(areq->valid, sizeof(rl_reserve_result));
        if (areq->results == NULL) goto fallback;
    }
    areq->msg = msg;
    const rl_reserve_request *requests = areq->requests != NULL ? areq->requests : msg->requests;
    rl_backend_reserve_batch_async(ctx->backend, requests, areq->valid, areq->results, backend_done, areq);
    return true;

fallback:
    if (areq->results != areq->one) free(areq->results);
    free(areq->requests);
    areq->results = areq->requests = NULL;
    rl_wire_reserves_free(msg);
    free(msg);
    return false;
}

static bool start_complete(rl_handler_ctx *ctx, const rl_http_request *req, rl_async_request *areq) {
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl_wire_completes *msg = calloc(1, sizeof *msg);
    if (msg == NULL) return false;
    rl_status decoded = areq->kind == KIND_COMPLETE
                            ? rl_wire_decode_complete(body_of(req), req->body_len, msg, detail)
                            : rl_wire_decode_complete_batch(body_of(req), req->body_len, ctx->max_batch, msg, detail);
    if (decoded != RL_OK || msg->count > ctx->max_batch) goto fallback;
    if (areq->kind == KIND_COMPLETE) {
        areq->valid = 1;
        areq->requests = NULL;
        areq->results = areq->one;
    } else {
        areq->requests = pack_valid(msg->requests, msg->item_status, msg->count, sizeof *msg->requests, &areq->valid);
        if (areq->requests == NULL) goto fallback;
        areq->results = calloc(areq->valid, sizeof(rl_status));
        if (areq->results == NULL) goto fallback;
    }
    areq->msg = msg;
    const rl_complete_request *requests = areq->requests != NULL ? areq->requests : msg->requests;
    rl_backend_complete_batch_async(ctx->backend, requests, areq->valid, areq->results, backend_done, areq);
    return true;

fallback:
    if (areq->results != areq->one) free(areq->results);
    free(areq->requests);
    areq->results = areq->requests = NULL;
    rl_wire_completes_free(msg);
    free(msg);
    return false;
}

/* The writer's callback, on its thread: the put is durable (or failed). */
static void admin_done(rl_admin_job *job) {
    rl_async_request *areq = job->context;
    areq->done(areq);
}

/* Decodes the definition and hands it to the writer: true when handed
 * (answered later), false with *res filled now (a bad body: 400; no memory,
 * or the daemon stopping: backend_error). */
static bool start_admin_put(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res,
                            rl_async_request *areq) {
    rl_admin_job *job = calloc(1, sizeof *job);
    rl_service_put refused = {.status = RL_NO_MEMORY};
    snprintf(refused.err, sizeof refused.err, "out of memory");
    if (job != NULL) {
        if (!rl_admin_put_decode(ctx, req, &job->put.def, res)) {
            free(job);
            return false;
        }
        job->done = admin_done;
        job->context = areq;
        areq->msg = job;
        if (rl_admin_writer_submit(ctx->admin_writer, job)) return true;
        areq->msg = NULL;
        refused.def = job->put.def;
        refused.status = RL_BACKEND_ERROR;
        snprintf(refused.err, sizeof refused.err, "the daemon is stopping");
        free(job);
    }
    rl_admin_put_respond(ctx, &refused, res);
    return false;
}

bool rl_handle_request_async(rl_handler_ctx *ctx, const rl_http_request *req, rl_http_response *res,
                             rl_async_request *areq) {
    int kind = kind_of(req);
    areq->kind = kind;
    areq->msg = areq->requests = areq->results = NULL;
    areq->valid = 0;
    if (kind == KIND_ADMIN_PUT && ctx->admin_writer != NULL) return start_admin_put(ctx, req, res, areq);
    if (kind != 0 && kind != KIND_ADMIN_PUT && rl_backend_has_async(ctx->backend)) {
        bool started = kind == KIND_RESERVE || kind == KIND_RESERVE_BATCH ? start_reserve(ctx, req, areq)
                                                                          : start_complete(ctx, req, areq);
        if (started) return true;
    }
    rl_handle_request(ctx, req, res);
    return false;
}

static void finish_reserve_batch(rl_handler_ctx *ctx, const rl_wire_reserves *msg,
                                 const rl_reserve_result *results, rl_http_response *res) {
    rl_buf *buf = &ctx->body;
    rl_buf_append_str(buf, "{\"results\":[");
    size_t next_valid = 0;
    for (size_t i = 0; i < msg->count; i++) {
        if (i > 0) rl_buf_append(buf, ",", 1);
        if (msg->item_status[i] == RL_OK)
            rl_wire_encode_reserve_result(buf, &results[next_valid++]);
        else
            rl_respond_append_invalid_reserve(buf, rl_wire_reserves_item_detail(msg, i));
    }
    rl_buf_append_str(buf, "]}");
    res->status = 200;
}

static void finish_complete_batch(rl_handler_ctx *ctx, const rl_wire_completes *msg,
                                  const rl_status *statuses, rl_http_response *res) {
    rl_buf *buf = &ctx->body;
    rl_buf_append_str(buf, "{\"results\":[");
    size_t next_valid = 0;
    for (size_t i = 0; i < msg->count; i++) {
        if (i > 0) rl_buf_append(buf, ",", 1);
        if (msg->item_status[i] == RL_OK)
            rl_wire_encode_complete_result(buf, statuses[next_valid++]);
        else
            rl_respond_append_invalid_complete(buf, rl_wire_completes_item_detail(msg, i));
    }
    rl_buf_append_str(buf, "]}");
    res->status = 200;
}

void rl_async_request_finish(rl_handler_ctx *ctx, rl_async_request *areq, rl_http_response *res) {
    res->allow = NULL;
    res->body = &ctx->body;
    rl_buf_reset(&ctx->body);
    switch (areq->kind) {
    case KIND_RESERVE: {
        const rl_reserve_result *result = (const rl_reserve_result *)areq->results;
        rl_wire_encode_reserve_result(&ctx->body, result);
        res->status = rl_respond_backend_http_status(result->status);
        break;
    }
    case KIND_RESERVE_BATCH: finish_reserve_batch(ctx, areq->msg, areq->results, res); break;
    case KIND_ADMIN_PUT: rl_admin_put_respond(ctx, &((const rl_admin_job *)areq->msg)->put, res); break;
    case KIND_COMPLETE: {
        rl_status status = *(const rl_status *)areq->results;
        rl_wire_encode_complete_result(&ctx->body, status);
        res->status = status == RL_OK ? 200 : rl_respond_backend_http_status(status);
        break;
    }
    default: finish_complete_batch(ctx, areq->msg, areq->results, res); break;
    }
}

void rl_async_request_release(rl_async_request *areq) {
    if (areq->msg != NULL) {
        if (areq->kind == KIND_RESERVE || areq->kind == KIND_RESERVE_BATCH)
            rl_wire_reserves_free(areq->msg);
        else if (areq->kind != KIND_ADMIN_PUT) /* a job has nothing inside to free */
            rl_wire_completes_free(areq->msg);
        free(areq->msg);
    }
    if (areq->results != areq->one) free(areq->results);
    free(areq->requests);
    areq->msg = areq->requests = areq->results = NULL;
}
