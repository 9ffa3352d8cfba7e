/* ratelimiter/batch_stats.h — the counters of one batching queue.
 *
 * The client's batcher (batcher.h: rl_limiter_batching_stats) reports them
 * per queue; the lanes that count them are the same code for the batcher
 * and the daemon's submitter, so the type stands on its own. Plain data.
 */
#ifndef RATELIMITER_BATCH_STATS_H
#define RATELIMITER_BATCH_STATS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters of one queue (reserve or complete) since open. */
typedef struct rl_batcher_lane_stats {
    uint64_t calls;              /* calls answered through a flush */
    uint64_t flushes;            /* inner batch calls made by the flusher */
    uint64_t leases;             /* leases sent in those flushes */
    uint64_t failed_flushes;     /* flushes whose inner call returned an error */
    uint64_t direct_calls;       /* calls over max_batch, sent alone by their caller */
    uint64_t largest_flush_leases;
    uint64_t waiting_calls;      /* calls queued now, not yet taken by a flush */
} rl_batcher_lane_stats;

#ifdef __cplusplus
}
#endif
#endif
