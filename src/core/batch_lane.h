/* core/batch_lane.h — private: one queue of waiting calls and the thread
 * that flushes them as one call. The client-side batcher has a lane for
 * reserves and one for completes over a Limiter; the daemon's submitter has
 * the same over a backend.
 *
 * The lane knows nothing about reserve or complete: a call is `count`
 * requests of request_size bytes and `count` results of result_size bytes,
 * and a flush is one `send` of the concatenated requests. Synchronous callers
 * wait on a condition variable of their own (no thundering herd); async
 * callers leave a callback instead, which the flusher calls (without the
 * mutex) after scattering the results. The flushers sleep on `work`, timed
 * on CLOCK_MONOTONIC for the oldest caller's deadline.
 *
 * A lane may have several flushers: while one waits for its inner call (a
 * round trip to Redis), another can take the next batch, so the store is not
 * idle while the daemon encodes, sends and answers. With one, flushes go out
 * strictly one after the other (the client batcher's choice).
 *
 * Locking: everything under `mutex` except a flusher's gather/send/scatter
 * and its async callbacks, which touch only waiters it has already taken off
 * the queue (sync callers are blocked, async callers promised not to touch
 * their buffers until called back, so that memory is stable and no one else
 * reads it).
 */
#ifndef RL_CORE_BATCH_LANE_H
#define RL_CORE_BATCH_LANE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/batch_stats.h"
#include "ratelimiter/types.h"

/* Sends count requests to inner, writing count results: a Limiter's or a
 * backend's reserve_batch or complete_batch. */
typedef rl_status (*rl__lane_send_fn)(void *inner, const void *requests, size_t count,
                                      void *results);

typedef struct rl__lane_waiter rl__lane_waiter; /* on its caller's stack (sync) or malloc'd (async) */
typedef struct rl__batcher_lane rl__batcher_lane;

/* One flusher thread and its gather buffers (its own: flushers send at once). */
typedef struct rl__lane_flusher {
    rl__batcher_lane *lane;
    pthread_t thread;
    bool started;
    unsigned char *gathered_requests; /* max_batch requests */
    unsigned char *gathered_results;  /* max_batch results */
} rl__lane_flusher;

struct rl__batcher_lane {
    /* Fixed at init. */
    void *inner; /* what send() is given: a Limiter, a backend */
    rl__lane_send_fn send;
    size_t request_size, result_size;
    size_t max_batch;      /* leases per flush */
    uint64_t max_delay_ns; /* longest wait of the oldest caller */
    rl__lane_flusher *flushers;
    size_t flusher_count;

    pthread_mutex_t mutex;
    pthread_cond_t work; /* flushers: the queue changed, or closing (CLOCK_MONOTONIC) */
    pthread_cond_t idle; /* destroy: the last caller left */
    rl__lane_waiter *head, *tail; /* FIFO of calls not yet taken by a flush */
    size_t waiting_leases;
    size_t callers_inside; /* callers between entry and return, queued or not */
    bool closing;
    bool started;
    rl_batcher_lane_stats stats;
    /* How many flushes sent how many leases (rl_backend_stats_batch_bounds). */
    uint64_t flush_sizes[RL_BACKEND_STATS_BATCH_BUCKETS + 1];
};

/* Sets the lane up and starts flusher_count (>= 1) flushers: at most that
 * many inner calls at once. RL_OK or RL_NO_MEMORY (then nothing is left to
 * free). */
rl_status rl__batcher_lane_init(rl__batcher_lane *lane, void *inner, rl__lane_send_fn send,
                                size_t request_size, size_t result_size, size_t max_batch,
                                uint64_t max_delay_ns, size_t flusher_count);

/* Sends count (1..RL_LIMITER_MAX_BATCH, already valid) requests through the
 * lane and blocks until their results are written. Returns what the inner
 * call of their flush returned. Thread-safe. */
rl_status rl__batcher_lane_call(rl__batcher_lane *lane, const void *requests, size_t count,
                                void *results);

/* Called once per async call, after its results (and *status_out) are
 * written; from the flusher's thread, or from the caller's own thread
 * before rl__batcher_lane_call_async returns (a call over max_batch, the
 * lane closing, or out of memory for the waiter). */
typedef void (*rl__lane_done_fn)(void *context);

/* rl__batcher_lane_call that does not wait: the lane keeps its own waiter
 * (malloc'd, freed after done), the caller keeps requests and results valid
 * and untouched until done(context). status_out (may be NULL) gets what the
 * inner call returned, before done; on failure the results are not written.
 * Every async call is answered before rl__batcher_lane_destroy returns.
 * Thread-safe. */
void rl__batcher_lane_call_async(rl__batcher_lane *lane, const void *requests, size_t count,
                                 void *results, rl_status *status_out, rl__lane_done_fn done,
                                 void *context);

/* Flushes what is queued, joins the flushers, waits for every caller to
 * return, frees the lane. inner is not touched. */
void rl__batcher_lane_destroy(rl__batcher_lane *lane);

/* Snapshot of the counters. Thread-safe. */
void rl__batcher_lane_stats(rl__batcher_lane *lane, rl_batcher_lane_stats *out);

/* Adds the lane's flushes, their leases and their sizes by bucket into
 * out's batch counters, and sets out->batches. Thread-safe (the lane's
 * mutex, held for a copy). */
void rl__batcher_lane_batch_stats(rl__batcher_lane *lane, rl_backend_stats *out);

#endif
