/* ratelimiter/batcher.h — client-side batching: a Limiter that coalesces the
 * reserve and complete calls of many threads into few batch calls on another
 * Limiter (the client side of micro-batching: many callers, one request).
 *
 * The batcher is a decorator: it returns an rl_limiter whose calls queue up
 * and are sent together through inner->reserve_batch / inner->complete_batch
 * (for the http limiter: one POST /v1/reserve/batch or /v1/complete/batch per
 * flush). It trades a little latency (at most max_delay_us per call, plus
 * the wait for the flush in flight) for far fewer round trips.
 *
 * Guarantees:
 *   - a flush goes out when the waiting leases reach max_batch, or when the
 *     oldest waiting call has waited max_delay_us, whichever comes first;
 *   - each caller blocks until its own results are back and gets exactly its
 *     results; one call's leases are never split across flushes, and calls
 *     are sent (and answered) in the order they arrived;
 *   - every call is checked on its own first (rl_reserve_request_check,
 *     rl_complete_request_check): an invalid call gets RL_INVALID_REQUEST and
 *     never joins a flush, so it cannot fail the others;
 *   - when the inner call returns an error (RL_TIMEOUT, RL_BACKEND_ERROR,
 *     RL_NO_MEMORY...), every call in that flush returns that error;
 *   - a call of more than max_batch leases is not batched: it goes to inner
 *     on its own, from the caller's thread (still never split).
 * Reserves and completes queue separately, each with its own flusher thread,
 * so that a slow reserve flush never holds back the completes.
 * No busy waiting: the flushers sleep on condition variables with timed
 * waits on CLOCK_MONOTONIC.
 *
 * Thread-safe, like every rl_limiter. rl_limiter_destroy on a batcher sends
 * whatever calls are still waiting (and answers them), joins the flusher
 * threads, waits for those callers to return, and then destroys inner only
 * if options->owns_inner. No call may start once destroy has begun.
 */
#ifndef RATELIMITER_BATCHER_H
#define RATELIMITER_BATCHER_H

#include "ratelimiter/export.h"

#include "ratelimiter/batch_stats.h"
#include "ratelimiter/limiter.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_BATCHER_DEFAULT_MAX_BATCH RL_LIMITER_MAX_BATCH
#define RL_BATCHER_DEFAULT_MAX_DELAY_US 200u
#define RL_BATCHER_MAX_DELAY_US_LIMIT 10000000u /* 10 s: a longer wait is a bug, not a tuning */

typedef struct rl_batcher_options {
    uint32_t max_batch;    /* leases per inner call, 1..RL_LIMITER_MAX_BATCH; default 256.
                              Set it to the server's batch limit if that is lower. */
    uint32_t max_delay_us; /* longest wait for a flush, 0..RL_BATCHER_MAX_DELAY_US_LIMIT;
                              0 sends at once (calls still coalesce while a flush is in
                              flight); default 200 */
    bool owns_inner;       /* true: destroying the batcher destroys inner; default false */
} rl_batcher_options;

/* Fills options with the defaults above. */
RL_API void rl_batcher_options_default(rl_batcher_options *options);

/* Opens a batching limiter over inner (borrowed unless options->owns_inner:
 * inner must then outlive the batcher). options may be NULL for the
 * defaults. Returns RL_OK with *out set; RL_INVALID_REQUEST if inner is NULL
 * or an option is out of range; RL_NO_MEMORY if memory or threads ran out.
 * On error *out is NULL and inner is left alone (not destroyed, whatever
 * owns_inner says). */
RL_API rl_status rl_limiter_batching_open(rl_limiter *inner, const rl_batcher_options *options,
                                          rl_limiter **out);

typedef struct rl_batcher_stats {
    rl_batcher_lane_stats reserve;
    rl_batcher_lane_stats complete;
} rl_batcher_stats;

/* A snapshot of the counters (for benchmarks and logs). Returns false, with
 * *out zeroed, if limiter is not a batcher. Thread-safe. */
RL_API bool rl_limiter_batching_stats(rl_limiter *limiter, rl_batcher_stats *out);

#ifdef __cplusplus
}
#endif
#endif
