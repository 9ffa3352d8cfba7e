/* client/batcher.c — the batching Limiter: checks each call on its own, then
 * hands it to the reserve or the complete lane (core/batch_lane.h). */
#include "ratelimiter/batcher.h"

#include <stdlib.h>
#include <string.h>

#include "core/batch_lane.h"
#include "client/call_check.h"
#include "client/last_error.h"

typedef struct batcher {
    rl_limiter base; /* first: the rl_limiter * we hand out points here */
    rl_limiter *inner;
    bool owns_inner;
    rl__batcher_lane reserve;
    rl__batcher_lane complete;
} batcher;

static const rl_limiter_ops batcher_ops;

void rl_batcher_options_default(rl_batcher_options *options) {
    options->max_batch = RL_BATCHER_DEFAULT_MAX_BATCH;
    options->max_delay_us = RL_BATCHER_DEFAULT_MAX_DELAY_US;
    options->owns_inner = false;
}

static rl_status send_reserve(void *inner, const void *requests, size_t count, void *results) {
    return rl_limiter_reserve_batch(inner, requests, count, results);
}

static rl_status send_complete(void *inner, const void *requests, size_t count, void *results) {
    return rl_limiter_complete_batch(inner, requests, count, results);
}

/* The inner call ran on the flusher's thread, whose last error this caller
 * cannot see: say at least what came back. */
static rl_status failed_flush(rl_status status) {
    if (status == RL_OK) return status;
    return rl__last_error_set(status, "the batched call failed: %s", rl_status_name(status));
}

/* Checked here, per caller, so that one bad call is refused alone instead of
 * making the inner limiter refuse a whole flush of other callers' leases. */
static rl_status batcher_reserve_batch(rl_limiter *limiter, const rl_reserve_request *requests,
                                       size_t count, rl_reserve_result *results) {
    batcher *b = (batcher *)limiter;
    rl_status checked = rl__check_reserve_call(requests, count, results);
    if (checked != RL_OK) return checked;
    rl_status status = rl__batcher_lane_call(&b->reserve, requests, count, results);
    /* A lone reserve the backend could not decide is a failed call (503 over
     * HTTP, RL_BACKEND_ERROR from the local limiter); inside a flush it came
     * back as that lease's result. Keep the lone caller's view unbatched. */
    if (status == RL_OK && count == 1 && results[0].status == RL_BACKEND_ERROR) status = RL_BACKEND_ERROR;
    return failed_flush(status);
}

static rl_status batcher_complete_batch(rl_limiter *limiter, const rl_complete_request *requests,
                                        size_t count, rl_status *statuses) {
    batcher *b = (batcher *)limiter;
    rl_status checked = rl__check_complete_call(requests, count, statuses);
    if (checked != RL_OK) return checked;
    return failed_flush(rl__batcher_lane_call(&b->complete, requests, count, statuses));
}

static void batcher_destroy(rl_limiter *limiter) {
    batcher *b = (batcher *)limiter;
    /* Lanes first: their last flushes still use inner. */
    rl__batcher_lane_destroy(&b->reserve);
    rl__batcher_lane_destroy(&b->complete);
    if (b->owns_inner) rl_limiter_destroy(b->inner);
    free(b);
}

static const rl_limiter_ops batcher_ops = {
    .abi_version = RL_LIMITER_ABI_VERSION,
    .name = "batching",
    .reserve_batch = batcher_reserve_batch,
    .complete_batch = batcher_complete_batch,
    .destroy = batcher_destroy,
};

rl_status rl_limiter_batching_open(rl_limiter *inner, const rl_batcher_options *options,
                                   rl_limiter **out) {
    *out = NULL;
    rl_batcher_options defaults;
    if (options == NULL) {
        rl_batcher_options_default(&defaults);
        options = &defaults;
    }
    if (inner == NULL || options->max_batch == 0 || options->max_batch > RL_LIMITER_MAX_BATCH ||
        options->max_delay_us > RL_BATCHER_MAX_DELAY_US_LIMIT)
        return RL_INVALID_REQUEST;

    batcher *b = calloc(1, sizeof *b);
    if (b == NULL) return RL_NO_MEMORY;
    b->base.ops = &batcher_ops;
    b->inner = inner;
    b->owns_inner = options->owns_inner;
    uint64_t max_delay_ns = (uint64_t)options->max_delay_us * 1000u;
    if (rl__batcher_lane_init(&b->reserve, inner, send_reserve, sizeof(rl_reserve_request),
                              sizeof(rl_reserve_result), options->max_batch, max_delay_ns, 1) != RL_OK) {
        free(b);
        return RL_NO_MEMORY;
    }
    if (rl__batcher_lane_init(&b->complete, inner, send_complete, sizeof(rl_complete_request),
                              sizeof(rl_status), options->max_batch, max_delay_ns, 1) != RL_OK) {
        rl__batcher_lane_destroy(&b->reserve);
        free(b);
        return RL_NO_MEMORY;
    }
    *out = &b->base;
    return RL_OK;
}

bool rl_limiter_batching_stats(rl_limiter *limiter, rl_batcher_stats *out) {
    memset(out, 0, sizeof *out);
    if (limiter == NULL || limiter->ops != &batcher_ops) return false;
    batcher *b = (batcher *)limiter;
    rl__batcher_lane_stats(&b->reserve, &out->reserve);
    rl__batcher_lane_stats(&b->complete, &out->complete);
    return true;
}
