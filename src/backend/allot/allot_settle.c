/* allot_settle.c — local Completes' spends to Redis (allotted_backend.h):
 * the audit entries of the rolling keys they charged and their overage,
 * through settle.lua, many Completes to a call (a batch lane, as the
 * submitter batches reserves). What Redis does not take is kept, bounded,
 * and sent again by the keeper: a Complete is answered once its spends are
 * in Redis or kept, as the synchronous path keeps a Complete it could not
 * send (complete_retry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/allot/allotted_backend.h"
#include "backend/redis/redis_allot.h"

#define SETTLE_MAX_SPENDS 4096u     /* per script call */
#define SETTLE_FLUSH_NS 200000u     /* the oldest waits at most this long for others */
#define SETTLE_FLUSHERS 2u

static rl_status send_to_redis(allotted_backend *backend, const rl__local_spend *spends, size_t count) {
    rl__allot_spend *wire = malloc((count > 0 ? count : 1) * sizeof *wire);
    if (wire == NULL) return RL_NO_MEMORY;
    for (size_t i = 0; i < count; i++) {
        const rl__local_spend *s = &spends[i];
        wire[i] = (rl__allot_spend){s->key, s->lease_id, s->job_id, s->reserved, s->actual, s->overage,
                                    s->overage_for_ms, s->incarnation};
    }
    rl_status status = rl__redis_settle(backend->redis, wire, count);
    free(wire);
    return status;
}

/* Keeps what Redis did not take, for the keeper to send again (beyond
 * RL__ALLOT_UNSETTLED_MAX they are lost, and said so). */
static void keep_unsettled(allotted_backend *backend, const rl__local_spend *spends, size_t count) {
    pthread_mutex_lock(&backend->unsettled_lock);
    size_t room = RL__ALLOT_UNSETTLED_MAX - backend->unsettled_count;
    size_t kept = count < room ? count : room;
    if (backend->unsettled == NULL)
        backend->unsettled = malloc(RL__ALLOT_UNSETTLED_MAX * sizeof *backend->unsettled);
    if (backend->unsettled == NULL) kept = 0;
    if (kept > 0) memcpy(backend->unsettled + backend->unsettled_count, spends, kept * sizeof *spends);
    backend->unsettled_count += kept;
    pthread_mutex_unlock(&backend->unsettled_lock);
    if (kept < count)
        fprintf(stderr,
                "ratelimiterd: %zu audit entries of local Completes lost: Redis does not take them and %u wait "
                "already\n",
                count - kept, RL__ALLOT_UNSETTLED_MAX);
}

/* The lane's send: one script call for what it gathered. Never fails for
 * the callers: what Redis did not take is kept. */
static rl_status lane_send(void *inner, const void *requests, size_t count, void *results) {
    allotted_backend *backend = inner;
    rl_status status = send_to_redis(backend, requests, count);
    if (status != RL_OK) keep_unsettled(backend, requests, count);
    rl_status *statuses = results;
    for (size_t i = 0; i < count; i++) statuses[i] = RL_OK;
    return RL_OK;
}

rl_status rl__allot_settle_start(allotted_backend *backend) {
    pthread_mutex_init(&backend->unsettled_lock, NULL);
    return rl__batcher_lane_init(&backend->settle, backend, lane_send, sizeof(rl__local_spend), sizeof(rl_status),
                                 SETTLE_MAX_SPENDS, SETTLE_FLUSH_NS, SETTLE_FLUSHERS);
}

void rl__allot_settle_stop(allotted_backend *backend) {
    rl__batcher_lane_destroy(&backend->settle);
    rl__allot_settle_retry(backend); /* one last try */
    if (backend->unsettled_count > 0)
        fprintf(stderr, "ratelimiterd: %zu audit entries of local Completes not written: Redis did not take them\n",
                backend->unsettled_count);
    free(backend->unsettled);
    pthread_mutex_destroy(&backend->unsettled_lock);
}

typedef struct settle_wait {
    rl_status *statuses;
    void (*done)(void *context);
    void *context;
} settle_wait;

static void settled(void *context) {
    settle_wait *wait = context;
    wait->done(wait->context);
    free(wait->statuses);
    free(wait);
}

void rl__allot_settle_async(allotted_backend *backend, const rl__local_spend *spends, size_t count,
                            void (*done)(void *context), void *context) {
    settle_wait *wait = malloc(sizeof *wait);
    rl_status *statuses = malloc(count * sizeof *statuses);
    if (wait == NULL || statuses == NULL) {
        free(wait);
        free(statuses);
        rl__allot_settle(backend, spends, count);
        done(context);
        return;
    }
    *wait = (settle_wait){statuses, done, context};
    rl__batcher_lane_call_async(&backend->settle, spends, count, statuses, NULL, settled, wait);
}

void rl__allot_settle(allotted_backend *backend, const rl__local_spend *spends, size_t count) {
    rl_status *statuses = malloc(count * sizeof *statuses);
    if (statuses == NULL) {
        if (send_to_redis(backend, spends, count) != RL_OK) keep_unsettled(backend, spends, count);
        return;
    }
    (void)rl__batcher_lane_call(&backend->settle, spends, count, statuses);
    free(statuses);
}

void rl__allot_settle_retry(allotted_backend *backend) {
    pthread_mutex_lock(&backend->unsettled_lock);
    rl__local_spend *waiting = backend->unsettled;
    size_t count = backend->unsettled_count;
    backend->unsettled = NULL;
    backend->unsettled_count = 0;
    pthread_mutex_unlock(&backend->unsettled_lock);
    for (size_t at = 0; at < count; at += SETTLE_MAX_SPENDS) {
        size_t n = count - at < SETTLE_MAX_SPENDS ? count - at : SETTLE_MAX_SPENDS;
        if (send_to_redis(backend, waiting + at, n) != RL_OK) {
            keep_unsettled(backend, waiting + at, count - at);
            break;
        }
    }
    free(waiting);
}
