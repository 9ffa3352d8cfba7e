/* support/counting_limiter.h — a Limiter decorator for tests: passes every
 * call to inner and counts them, so that a test can see how callers were
 * batched; it can fail the next call with a chosen error, and report every
 * reserve outcome to a callback (to match results to callers by lease id).
 * Thread-safe. Header-only.
 */
#ifndef RL_TEST_COUNTING_LIMITER_H
#define RL_TEST_COUNTING_LIMITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ratelimiter/limiter.h"

/* Sees every reserve call's outcome after inner answered RL_OK; it may
 * change results (to fake per-lease outcomes inner cannot produce). */
typedef void (*rl_test_reserve_observer)(void *context, const rl_reserve_request *requests, size_t count,
                                         rl_reserve_result *results);

typedef struct rl_test_counts {
    uint64_t reserve_calls, reserve_leases, largest_reserve_batch;
    uint64_t complete_calls, complete_leases, largest_complete_batch;
} rl_test_counts;

typedef struct rl_test_counting_limiter {
    rl_limiter base; /* first */
    rl_limiter *inner;
    bool owns_inner;
    pthread_mutex_t mutex;
    /* Under mutex: */
    rl_test_counts counts;
    rl_status fail_next_reserve;  /* != RL_OK: the next reserve call returns it, inner untouched */
    rl_status fail_next_complete;
    /* Set before use, then read only: */
    rl_test_reserve_observer observe_reserve;
    void *observer_context;
    bool *destroyed; /* if set, *destroyed = true on destroy */
} rl_test_counting_limiter;

static inline rl_status rl_test_counting_reserve(rl_limiter *limiter, const rl_reserve_request *requests,
                                                 size_t count, rl_reserve_result *results) {
    rl_test_counting_limiter *c = (rl_test_counting_limiter *)limiter;
    pthread_mutex_lock(&c->mutex);
    c->counts.reserve_calls++;
    c->counts.reserve_leases += count;
    if (count > c->counts.largest_reserve_batch) c->counts.largest_reserve_batch = count;
    rl_status fail = c->fail_next_reserve;
    c->fail_next_reserve = RL_OK;
    pthread_mutex_unlock(&c->mutex);
    if (fail != RL_OK) return fail;
    rl_status status = rl_limiter_reserve_batch(c->inner, requests, count, results);
    if (status == RL_OK && c->observe_reserve != NULL)
        c->observe_reserve(c->observer_context, requests, count, results);
    return status;
}

static inline rl_status rl_test_counting_complete(rl_limiter *limiter, const rl_complete_request *requests,
                                                  size_t count, rl_status *statuses) {
    rl_test_counting_limiter *c = (rl_test_counting_limiter *)limiter;
    pthread_mutex_lock(&c->mutex);
    c->counts.complete_calls++;
    c->counts.complete_leases += count;
    if (count > c->counts.largest_complete_batch) c->counts.largest_complete_batch = count;
    rl_status fail = c->fail_next_complete;
    c->fail_next_complete = RL_OK;
    pthread_mutex_unlock(&c->mutex);
    if (fail != RL_OK) return fail;
    return rl_limiter_complete_batch(c->inner, requests, count, statuses);
}

static inline void rl_test_counting_destroy(rl_limiter *limiter) {
    rl_test_counting_limiter *c = (rl_test_counting_limiter *)limiter;
    if (c->destroyed != NULL) *c->destroyed = true;
    if (c->owns_inner) rl_limiter_destroy(c->inner);
    pthread_mutex_destroy(&c->mutex);
    free(c);
}

static const rl_limiter_ops rl_test_counting_ops = {
    .abi_version = RL_LIMITER_ABI_VERSION,
    .name = "counting",
    .reserve_batch = rl_test_counting_reserve,
    .complete_batch = rl_test_counting_complete,
    .destroy = rl_test_counting_destroy,
};

/* A counting limiter over inner (owned if owns_inner); NULL if out of memory. */
static inline rl_test_counting_limiter *rl_test_counting_new(rl_limiter *inner, bool owns_inner) {
    rl_test_counting_limiter *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->base.ops = &rl_test_counting_ops;
    c->inner = inner;
    c->owns_inner = owns_inner;
    pthread_mutex_init(&c->mutex, NULL);
    return c;
}

/* A snapshot of the counters, taken under the mutex. */
static inline rl_test_counts rl_test_counting_snapshot(rl_test_counting_limiter *c) {
    pthread_mutex_lock(&c->mutex);
    rl_test_counts copy = c->counts;
    pthread_mutex_unlock(&c->mutex);
    return copy;
}

/* The next reserve (complete) call fails with this status without reaching
 * inner; RL_OK leaves that side alone. */
static inline void rl_test_counting_fail_next(rl_test_counting_limiter *c, rl_status reserve, rl_status complete) {
    pthread_mutex_lock(&c->mutex);
    if (reserve != RL_OK) c->fail_next_reserve = reserve;
    if (complete != RL_OK) c->fail_next_complete = complete;
    pthread_mutex_unlock(&c->mutex);
}

#endif
