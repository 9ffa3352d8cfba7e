/* redis/complete_retry.h — Completes that could not reach Redis, kept and
 * retried by a background thread until a deadline; the same thread does the
 * backend's periodic work (following the definitions, sweeping expired
 * state) every periodic_interval_ms.
 *
 * A Complete that is lost only costs capacity (holds stay until their
 * timeout, reservations keep their full amount for the window): never an
 * over-admission. Retrying is safe because Complete is idempotent. The queue
 * is bounded; requests are deep-copied in. Thread-safe.
 */
#ifndef RL_REDIS_COMPLETE_RETRY_H
#define RL_REDIS_COMPLETE_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

typedef struct rl_complete_retry rl_complete_retry;

/* Sends count completes; returns false if the store did not take them. */
typedef bool (*rl_complete_send_fn)(void *context, const rl_complete_request *requests, size_t count);
/* The periodic work (may fail silently: the next step tries again). */
typedef void (*rl_periodic_fn)(void *context);

/* periodic_interval_ms >= 1. */
rl_status rl_complete_retry_start(void *context, rl_complete_send_fn send, rl_periodic_fn periodic,
                                  uint32_t deadline_ms, uint32_t max_pending, uint32_t periodic_interval_ms,
                                  rl_complete_retry **out);

/* Keeps copies of the requests for retrying. False if the queue is full (or
 * out of memory): then none of them was kept. */
bool rl_complete_retry_add(rl_complete_retry *retry, const rl_complete_request *requests, size_t count);

/* Completes waiting now (for tests and health details). */
size_t rl_complete_retry_pending(rl_complete_retry *retry);

/* Stops the thread (one last try for what waits), frees everything. */
void rl_complete_retry_stop(rl_complete_retry *retry);

#endif
