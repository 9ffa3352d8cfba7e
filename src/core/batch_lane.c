/* core/batch_lane.c — a queue of waiting calls and its flusher threads.
 *
 * Why dedicated flushers rather than leader-follower (the first waiter
 * flushes): with threads owning the inner calls, callers only ever wait for
 * their own answer, "who flushes next" is whichever flusher is idle when a
 * batch is due, and destroy has a known set of threads to join. The cost is
 * a thread per flusher.
 */
#include "core/batch_lane.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/call_wait.h"

struct rl__lane_waiter {
    const void *requests;
    void *results;
    size_t count;
    uint64_t deadline_ns; /* enqueue time + max_delay_ns, CLOCK_MONOTONIC */
    rl_status status;     /* set by the flusher with done */
    bool done;
    pthread_cond_t answered; /* sync: signalled once, under the lane mutex, when done */
    rl__lane_done_fn on_done; /* async (else NULL): called once, without the mutex */
    void *context;
    rl_status *status_out;
    rl__lane_waiter *next;
};

static uint64_t monotonic_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static struct timespec timespec_from_ns(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    return ts;
}

/* True when the queue should go out now: it holds a full batch (or more),
 * the oldest call's deadline has passed, or the lane is closing. Otherwise
 * *wake_ns is when to look again. Called with the mutex held, head != NULL. */
static bool flush_due(const rl__batcher_lane *lane, uint64_t *wake_ns) {
    if (lane->closing || lane->waiting_leases >= lane->max_batch) return true;
    uint64_t now_ns = monotonic_now_ns();
    if (now_ns >= lane->head->deadline_ns) return true;
    *wake_ns = lane->head->deadline_ns;
    return false;
}

/* Takes the longest prefix of the queue that fits in max_batch leases (the
 * head always fits: longer calls never queue). Mutex held. */
static rl__lane_waiter *take_batch(rl__batcher_lane *lane, size_t *out_leases) {
    rl__lane_waiter *first = lane->head, *last = NULL, *w = lane->head;
    size_t leases = 0;
    while (w != NULL && leases + w->count <= lane->max_batch) {
        leases += w->count;
        lane->stats.waiting_calls--;
        last = w;
        w = w->next;
    }
    last->next = NULL;
    lane->head = w;
    if (w == NULL) lane->tail = NULL;
    lane->waiting_leases -= leases;
    *out_leases = leases;
    return first;
}

/* One inner call for the taken waiters; their callers are blocked (or, async,
 * wait for their callback), so their requests and result buffers are stable.
 * Runs without the mutex, in the flusher's own buffers. */
static rl_status send_batch(rl__lane_flusher *flusher, rl__lane_waiter *batch, size_t leases) {
    rl__batcher_lane *lane = flusher->lane;
    size_t offset = 0;
    for (rl__lane_waiter *w = batch; w != NULL; w = w->next) {
        memcpy(flusher->gathered_requests + offset * lane->request_size, w->requests,
               w->count * lane->request_size);
        offset += w->count;
    }
    /* The batch's callers have waited since the oldest of them arrived: a
     * backend bounding each caller's whole wait (core/call_wait.h) counts
     * from there, not from now. */
    rl__call_wait_since_set((batch->deadline_ns - lane->max_delay_ns) / 1000000u);
    rl_status status = lane->send(lane->inner, flusher->gathered_requests, leases, flusher->gathered_results);
    rl__call_wait_since_set(0);
    if (status != RL_OK) return status; /* results are undefined: write none */
    offset = 0;
    for (rl__lane_waiter *w = batch; w != NULL; w = w->next) {
        memcpy(w->results, flusher->gathered_results + offset * lane->result_size,
               w->count * lane->result_size);
        offset += w->count;
    }
    return RL_OK;
}

/* Mutex held. After the signal a sync waiter may return (once we unlock) and
 * its memory go away: read next before signalling. Async waiters are not
 * answered here but returned, in order, for answer_async. */
static rl__lane_waiter *answer_batch(rl__batcher_lane *lane, rl__lane_waiter *batch, size_t leases,
                                     rl_status status) {
    uint64_t calls = 0;
    rl__lane_waiter *w = batch, *async_head = NULL, **async_tail = &async_head;
    while (w != NULL) {
        rl__lane_waiter *next = w->next;
        w->status = status;
        if (w->on_done != NULL) {
            w->next = NULL;
            *async_tail = w;
            async_tail = &w->next;
        } else {
            w->done = true;
            pthread_cond_signal(&w->answered);
        }
        calls++;
        w = next;
    }
    lane->stats.calls += calls;
    lane->stats.flushes++;
    lane->stats.leases += leases;
    if (status != RL_OK) lane->stats.failed_flushes++;
    if (leases > lane->stats.largest_flush_leases) lane->stats.largest_flush_leases = leases;
    lane->flush_sizes[rl_backend_stats_bucket(rl_backend_stats_batch_bounds, RL_BACKEND_STATS_BATCH_BUCKETS,
                                              leases)]++;
    return async_head;
}

/* Without the mutex: the callbacks may take locks of their own (an event
 * loop's message queue) and must not delay the lane's callers. */
static void answer_async(rl__lane_waiter *w) {
    while (w != NULL) {
        rl__lane_waiter *next = w->next;
        if (w->status_out != NULL) *w->status_out = w->status;
        w->on_done(w->context);
        free(w);
        w = next;
    }
}

static void *flusher_main(void *arg) {
    rl__lane_flusher *flusher = arg;
    rl__batcher_lane *lane = flusher->lane;
    pthread_mutex_lock(&lane->mutex);
    for (;;) {
        if (lane->head == NULL) {
            if (lane->closing) break;
            pthread_cond_wait(&lane->work, &lane->mutex);
            continue;
        }
        uint64_t wake_ns = 0;
        if (!flush_due(lane, &wake_ns)) {
            struct timespec wake = timespec_from_ns(wake_ns);
            pthread_cond_timedwait(&lane->work, &lane->mutex, &wake);
            continue; /* woken, timed out or spurious: look again */
        }
        size_t leases = 0;
        rl__lane_waiter *batch = take_batch(lane, &leases);
        /* What is left may be due too (a second full batch): an idle
         * flusher, if there is one, should look. */
        if (lane->head != NULL && lane->flusher_count > 1) pthread_cond_signal(&lane->work);
        pthread_mutex_unlock(&lane->mutex);
        rl_status status = send_batch(flusher, batch, leases);
        pthread_mutex_lock(&lane->mutex);
        rl__lane_waiter *async = answer_batch(lane, batch, leases, status);
        if (async != NULL) {
            pthread_mutex_unlock(&lane->mutex);
            answer_async(async);
            pthread_mutex_lock(&lane->mutex);
        }
    }
    pthread_mutex_unlock(&lane->mutex);
    return NULL;
}

static void free_flushers(rl__batcher_lane *lane) {
    for (size_t i = 0; i < lane->flusher_count; i++) {
        free(lane->flushers[i].gathered_requests);
        free(lane->flushers[i].gathered_results);
    }
    free(lane->flushers);
    lane->flushers = NULL;
}

/* Closing: every flusher sends what is queued without waiting, then exits. */
static void stop_flushers(rl__batcher_lane *lane) {
    pthread_mutex_lock(&lane->mutex);
    lane->closing = true;
    pthread_cond_broadcast(&lane->work);
    pthread_mutex_unlock(&lane->mutex);
    for (size_t i = 0; i < lane->flusher_count; i++)
        if (lane->flushers[i].started) pthread_join(lane->flushers[i].thread, NULL);
}

rl_status rl__batcher_lane_init(rl__batcher_lane *lane, void *inner, rl__lane_send_fn send,
                                size_t request_size, size_t result_size, size_t max_batch,
                                uint64_t max_delay_ns, size_t flusher_count) {
    memset(lane, 0, sizeof *lane);
    if (flusher_count == 0) flusher_count = 1;
    lane->inner = inner;
    lane->send = send;
    lane->request_size = request_size;
    lane->result_size = result_size;
    lane->max_batch = max_batch;
    lane->max_delay_ns = max_delay_ns;
    lane->flushers = calloc(flusher_count, sizeof *lane->flushers);
    if (lane->flushers == NULL) return RL_NO_MEMORY;
    lane->flusher_count = flusher_count;
    for (size_t i = 0; i < flusher_count; i++) {
        rl__lane_flusher *f = &lane->flushers[i];
        f->lane = lane;
        f->gathered_requests = malloc(max_batch * request_size);
        f->gathered_results = malloc(max_batch * result_size);
        if (f->gathered_requests == NULL || f->gathered_results == NULL) goto fail_buffers;
    }

    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) goto fail_buffers;
    /* Deadlines are monotonic: a wall-clock step must not stall or rush a flush. */
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&lane->work, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0) goto fail_buffers;
    if (pthread_cond_init(&lane->idle, NULL) != 0) goto fail_work;
    if (pthread_mutex_init(&lane->mutex, NULL) != 0) goto fail_idle;
    for (size_t i = 0; i < flusher_count; i++) {
        if (pthread_create(&lane->flushers[i].thread, NULL, flusher_main, &lane->flushers[i]) != 0) goto fail_threads;
        lane->flushers[i].started = true;
    }
    lane->started = true;
    return RL_OK;

fail_threads:
    stop_flushers(lane); /* nothing is queued yet: they exit at once */
    pthread_mutex_destroy(&lane->mutex);
fail_idle:
    pthread_cond_destroy(&lane->idle);
fail_work:
    pthread_cond_destroy(&lane->work);
fail_buffers:
    free_flushers(lane);
    memset(lane, 0, sizeof *lane);
    return RL_NO_MEMORY;
}

/* Mutex held. The last caller out wakes a destroy that waits for it. */
static void leave(rl__batcher_lane *lane) {
    lane->callers_inside--;
    if (lane->closing && lane->callers_inside == 0) pthread_cond_broadcast(&lane->idle);
}

/* A call the flusher cannot take (over max_batch, or the lane is closing)
 * goes to inner from the caller's own thread; it still counts as inside so
 * that destroy waits for it. */
static rl_status call_direct(rl__batcher_lane *lane, const void *requests, size_t count, void *results) {
    lane->callers_inside++;
    lane->stats.direct_calls++;
    pthread_mutex_unlock(&lane->mutex);
    rl_status status = lane->send(lane->inner, requests, count, results);
    pthread_mutex_lock(&lane->mutex);
    leave(lane);
    pthread_mutex_unlock(&lane->mutex);
    return status;
}

rl_status rl__batcher_lane_call(rl__batcher_lane *lane, const void *requests, size_t count,
                                void *results) {
    pthread_mutex_lock(&lane->mutex);
    if (count > lane->max_batch || lane->closing) return call_direct(lane, requests, count, results);

    rl__lane_waiter waiter = {.requests = requests, .results = results, .count = count};
    pthread_cond_init(&waiter.answered, NULL);
    waiter.deadline_ns = monotonic_now_ns() + lane->max_delay_ns;
    bool was_empty = lane->head == NULL;
    if (was_empty) lane->head = &waiter;
    else lane->tail->next = &waiter;
    lane->tail = &waiter;
    lane->waiting_leases += count;
    lane->callers_inside++;
    lane->stats.waiting_calls++;
    /* The flusher needs a nudge only if this changes when it must act: it
     * waits untimed on an empty queue, and a full batch is due at once.
     * Otherwise it already sleeps until the head's deadline. */
    if (was_empty || lane->waiting_leases >= lane->max_batch) pthread_cond_signal(&lane->work);

    while (!waiter.done) pthread_cond_wait(&waiter.answered, &lane->mutex);
    rl_status status = waiter.status;
    leave(lane);
    pthread_mutex_unlock(&lane->mutex);
    pthread_cond_destroy(&waiter.answered);
    return status;
}

void rl__batcher_lane_call_async(rl__batcher_lane *lane, const void *requests, size_t count,
                                 void *results, rl_status *status_out, rl__lane_done_fn done,
                                 void *context) {
    rl__lane_waiter *waiter = malloc(sizeof *waiter);
    pthread_mutex_lock(&lane->mutex);
    if (waiter == NULL || count > lane->max_batch || lane->closing) {
        free(waiter);
        rl_status status = call_direct(lane, requests, count, results);
        if (status_out != NULL) *status_out = status;
        done(context);
        return;
    }
    /* Not counted in callers_inside: only the flusher answers it, and
     * destroy joins the flusher after it has emptied the queue. */
    *waiter = (rl__lane_waiter){.requests = requests, .results = results, .count = count,
                                .on_done = done, .context = context, .status_out = status_out};
    waiter->deadline_ns = monotonic_now_ns() + lane->max_delay_ns;
    bool was_empty = lane->head == NULL;
    if (was_empty) lane->head = waiter;
    else lane->tail->next = waiter;
    lane->tail = waiter;
    lane->waiting_leases += count;
    lane->stats.waiting_calls++;
    if (was_empty || lane->waiting_leases >= lane->max_batch) pthread_cond_signal(&lane->work);
    pthread_mutex_unlock(&lane->mutex);
}

void rl__batcher_lane_destroy(rl__batcher_lane *lane) {
    if (!lane->started) return;
    stop_flushers(lane);

    /* Answered callers may not have woken yet; they still use the mutex. */
    pthread_mutex_lock(&lane->mutex);
    while (lane->callers_inside > 0) pthread_cond_wait(&lane->idle, &lane->mutex);
    pthread_mutex_unlock(&lane->mutex);

    pthread_mutex_destroy(&lane->mutex);
    pthread_cond_destroy(&lane->idle);
    pthread_cond_destroy(&lane->work);
    free_flushers(lane);
    lane->started = false;
}

void rl__batcher_lane_stats(rl__batcher_lane *lane, rl_batcher_lane_stats *out) {
    pthread_mutex_lock(&lane->mutex);
    *out = lane->stats;
    pthread_mutex_unlock(&lane->mutex);
}

void rl__batcher_lane_batch_stats(rl__batcher_lane *lane, rl_backend_stats *out) {
    out->batches = 1;
    pthread_mutex_lock(&lane->mutex);
    out->batch_count += lane->stats.flushes;
    out->batch_leases += lane->stats.leases;
    for (unsigned i = 0; i <= RL_BACKEND_STATS_BATCH_BUCKETS; i++) out->batch_size[i] += lane->flush_sizes[i];
    pthread_mutex_unlock(&lane->mutex);
}
