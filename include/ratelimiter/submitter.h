/* ratelimiter/submitter.h — micro-batching in front of a backend: one round trip for many leases.
 *
 * The daemon's HTTP threads each decide a few leases at a time; a backend
 * whose every call is a round trip (redis: one EVALSHA) is fastest when many
 * leases share one call. The submitter is a backend over another backend:
 * reserve and complete calls from all threads wait in a queue, and a
 * flusher thread sends them as one inner call when max_leases are waiting or
 * flush_interval_us after the oldest arrived. Up to flushes_in_flight
 * flushers per queue send at once, so that the store works on one batch
 * while the daemon sends or answers another: worth it when the round trip
 * (Redis across a network), not the store, bounds a single flusher. A caller's leases are never
 * split across flushes, and each caller gets exactly its own results.
 * Everything else (definitions, usage, sweep, health) goes straight through.
 * It always has reserve_batch_async and complete_batch_async: the caller
 * returns at once and its callback runs on the flusher thread after the flush
 * (an event loop keeps serving meanwhile). Thread-safe.
 */
#ifndef RATELIMITER_SUBMITTER_H
#define RATELIMITER_SUBMITTER_H

#include "ratelimiter/export.h"

#include "ratelimiter/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_submitter_options {
    uint32_t max_leases;        /* leases per flush; default 1024 */
    uint32_t flush_interval_us; /* default 200 */
    uint32_t flushes_in_flight; /* inner calls at once, per queue (reserve, complete); default 2 */
} rl_submitter_options;

RL_API void rl_submitter_options_default(rl_submitter_options *options);

/* Wraps inner, which the submitter then owns (destroying the submitter
 * flushes what waits, then destroys inner). On error *out is NULL and inner
 * is untouched. RL_OK, RL_INVALID_REQUEST (max_leases or flushes_in_flight 0)
 * or RL_NO_MEMORY. */
RL_API rl_status rl_submitter_create(rl_backend *inner, const rl_submitter_options *options, rl_backend **out);

#ifdef __cplusplus
}
#endif
#endif
