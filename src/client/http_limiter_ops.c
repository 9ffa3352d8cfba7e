/* http_limiter_ops.c — reserve and complete over HTTP: check, encode, send
 * through the retry loop (http_limiter.c), read the answer into the
 * caller's results.
 *
 * One lease goes to /v1/reserve (/v1/complete), 2..RL_LIMITER_MAX_BATCH
 * (the daemon's default max_batch) to the batch endpoint in one exchange.
 * More than that is refused like the local limiter refuses it (limiter.h:
 * both behave identically); no chunking, so a call is one atomic exchange
 * and never half-done. A request that breaks api.md's rules fails the whole
 * call before anything is sent.
 */
#include <stdlib.h>
#include <string.h>

#include "client/call_check.h"
#include "client/http_limiter.h"
#include "client/last_error.h"
#include "wire/wire.h"

/* limiter.h promises status_key points into the caller's own request: find
 * the key the daemon named there (NULL if the daemon named another). */
static const char *own_key(const rl_reserve_request *request, const char *key) {
    if (key == NULL) return NULL;
    for (size_t i = 0; i < request->requirement_count; i++)
        if (strcmp(request->requirements[i].key, key) == 0) return request->requirements[i].key;
    return NULL;
}

typedef struct reserve_call {
    const rl_reserve_request *requests;
    rl_reserve_result *results;
    size_t count;
    rl_wire_reserve_answer *answers; /* scratch, count of them */
    size_t reserved_for_real;        /* a dry run the daemon answered as a reserve, or count if none */
} reserve_call;

static rl__http_verdict read_reserve(void *ctx, long http_status, rl_buf *body, rl_status *status) {
    reserve_call *c = ctx;
    bool single = c->count == 1;
    /* A single reserve naming an unknown key is a 404 with a result body, a
     * reused lease id with other requirements a 409 with one. */
    if (http_status != 200 && !(single && (http_status == 404 || http_status == 409)))
        return rl__http_verdict_of_failure(http_status, status);
    rl_status decoded = RL_INVALID_REQUEST;
    if (body->len > 0)
        decoded = single ? rl__wire_decode_reserve_answer(body->data, body->len, &c->answers[0])
                         : rl__wire_decode_reserve_batch_answer(body->data, body->len, c->answers,
                                                                c->count);
    if (decoded != RL_OK) {
        if (http_status == 200) return RL__HTTP_RETRY; /* cut short or garbled on the way */
        *status = RL_BACKEND_ERROR; /* a 404 or 409 that is no reserve answer: not a ratelimiterd path */
        return RL__HTTP_DONE;
    }
    for (size_t i = 0; i < c->count; i++) {
        const rl_wire_reserve_answer *a = &c->answers[i];
        rl_reserve_result *r = &c->results[i];
        /* A daemon that does not know dry runs ignores the member, and
         * reserves; its answer says nothing of a dry run. A lease it did
         * not decide (an unknown key, a bad item, an id taken) holds nothing. */
        if (c->requests[i].dry_run && !a->dry_run && a->status != RL_UNKNOWN_LIMIT_KEY &&
            a->status != RL_INVALID_REQUEST && a->status != RL_LEASE_ID_CONFLICT && c->reserved_for_real == c->count)
            c->reserved_for_real = i;
        r->allowed = a->allowed;
        r->retry_after_ms = a->retry_after_ms;
        r->reserved_at_unix_ms = a->reserved_at_unix_ms;
        r->status = a->status;
        r->status_key = own_key(&c->requests[i], a->status_key); /* before the body is reused */
        r->denied_by = a->denied_by;
        r->denied_by.key = own_key(&c->requests[i], a->denied_by.key);
        if (r->denied_by.key == NULL) memset(&r->denied_by, 0, sizeof r->denied_by);
    }
    *status = RL_OK;
    return RL__HTTP_DONE;
}

static rl_status reserve_batch(rl_limiter *base, const rl_reserve_request *requests, size_t count,
                               rl_reserve_result *results) {
    rl__http_limiter *limiter = (rl__http_limiter *)base;
    rl_status checked = rl__check_reserve_call(requests, count, results);
    if (checked != RL_OK) return checked;
    memset(results, 0, count * sizeof *results);

    uint64_t deadline_ms = rl__http_monotonic_ms() + limiter->options.deadline_ms;
    rl_wire_reserve_answer *answers = malloc(count * sizeof *answers);
    rl_buf request, response;
    rl__buf_init(&request);
    rl__buf_init(&response);
    if (count == 1)
        rl__wire_encode_reserve_request(&request, &requests[0]);
    else
        rl__wire_encode_reserve_batch_request(&request, requests, count);
    rl_status status = RL_NO_MEMORY;
    if (answers != NULL && !request.failed) {
        reserve_call call = {requests, results, count, answers, count};
        status = rl__http_call(limiter, count == 1 ? "/v1/reserve" : "/v1/reserve/batch", &request,
                               deadline_ms, &response, read_reserve, &call);
        if (status == RL_OK && call.reserved_for_real < count)
            status = rl__last_error_set(RL_BACKEND_ERROR,
                                        "the daemon does not know dry runs: lease %s was reserved for real (%s); "
                                        "complete it to give back what it holds",
                                        requests[call.reserved_for_real].lease_id,
                                        results[call.reserved_for_real].allowed ? "allowed" : "denied");
    }
    rl__buf_free(&request);
    rl__buf_free(&response);
    free(answers);
    return status;
}

typedef struct complete_call {
    rl_status *statuses;
    size_t count;
} complete_call;

static rl__http_verdict read_complete(void *ctx, long http_status, rl_buf *body, rl_status *status) {
    complete_call *c = ctx;
    if (http_status != 200) return rl__http_verdict_of_failure(http_status, status);
    rl_status decoded = RL_INVALID_REQUEST;
    if (body->len > 0)
        decoded = c->count == 1
                      ? rl__wire_decode_complete_answer(body->data, body->len, &c->statuses[0])
                      : rl__wire_decode_complete_batch_answer(body->data, body->len, c->statuses,
                                                              c->count);
    if (decoded != RL_OK) return RL__HTTP_RETRY;
    *status = RL_OK;
    return RL__HTTP_DONE;
}

static rl_status complete_batch(rl_limiter *base, const rl_complete_request *requests, size_t count,
                                rl_status *statuses) {
    rl__http_limiter *limiter = (rl__http_limiter *)base;
    rl_status checked = rl__check_complete_call(requests, count, statuses);
    if (checked != RL_OK) return checked;
    for (size_t i = 0; i < count; i++) statuses[i] = RL_TIMEOUT; /* until answered */

    uint64_t deadline_ms = rl__http_monotonic_ms() + limiter->options.deadline_ms;
    rl_buf request, response;
    rl__buf_init(&request);
    rl__buf_init(&response);
    if (count == 1)
        rl__wire_encode_complete_request(&request, &requests[0]);
    else
        rl__wire_encode_complete_batch_request(&request, requests, count);
    rl_status status = RL_NO_MEMORY;
    if (!request.failed) {
        complete_call call = {statuses, count};
        status = rl__http_call(limiter, count == 1 ? "/v1/complete" : "/v1/complete/batch",
                               &request, deadline_ms, &response, read_complete, &call);
    }
    rl__buf_free(&request);
    rl__buf_free(&response);
    return status;
}

static void destroy(rl_limiter *base) {
    rl__http_limiter *limiter = (rl__http_limiter *)base;
    rl__http_transport_destroy(limiter->transport);
    free(limiter);
}

const rl_limiter_ops rl__http_limiter_ops = {
    .abi_version = RL_LIMITER_ABI_VERSION,
    .name = "http",
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .destroy = destroy,
    .audit = rl__http_limiter_audit,
};
