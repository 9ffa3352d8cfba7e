/* complete_retry.c — see complete_retry.h. */
#include "backend/redis/complete_retry.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_INTERVAL_MS 100u
#define SEND_CHUNK 256u

/* One kept Complete, with its strings in one block after it. */
typedef struct kept {
    struct kept *next;
    uint64_t give_up_at_ms;
    rl_complete_request request;
    rl_actual actuals[]; /* then the lease id, job id and keys */
} kept;

struct rl_complete_retry {
    void *context;
    rl_complete_send_fn send;
    rl_periodic_fn periodic;
    uint32_t deadline_ms, max_pending, periodic_interval_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    kept *head, *tail;
    size_t pending;
    bool stopping;
    pthread_t thread;
};

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static char *copy_into(char **cursor, const char *text) {
    size_t len = strlen(text) + 1;
    char *at = memcpy(*cursor, text, len);
    *cursor += len;
    return at;
}

static kept *keep(const rl_complete_request *r, uint64_t give_up_at_ms) {
    size_t bytes = sizeof(kept) + r->actual_count * sizeof(rl_actual) + strlen(r->lease_id) + 1 +
                   (r->job_id != NULL ? strlen(r->job_id) + 1 : 0);
    for (size_t i = 0; i < r->actual_count; i++) bytes += strlen(r->actuals[i].key) + 1;
    kept *k = malloc(bytes);
    if (k == NULL) return NULL;
    char *cursor = (char *)(k->actuals + r->actual_count);
    k->next = NULL;
    k->give_up_at_ms = give_up_at_ms;
    k->request.lease_id = copy_into(&cursor, r->lease_id);
    k->request.job_id = r->job_id != NULL ? copy_into(&cursor, r->job_id) : NULL;
    for (size_t i = 0; i < r->actual_count; i++) {
        k->actuals[i].key = copy_into(&cursor, r->actuals[i].key);
        k->actuals[i].actual_amount = r->actuals[i].actual_amount;
    }
    k->request.actuals = k->actuals;
    k->request.actual_count = r->actual_count;
    return k;
}

bool rl_complete_retry_add(rl_complete_retry *retry, const rl_complete_request *requests, size_t count) {
    uint64_t give_up_at_ms = now_ms() + retry->deadline_ms;
    kept *first = NULL, *last = NULL;
    for (size_t i = 0; i < count; i++) {
        kept *k = keep(&requests[i], give_up_at_ms);
        if (k == NULL) {
            while (first != NULL) {
                kept *next = first->next;
                free(first);
                first = next;
            }
            return false;
        }
        if (last != NULL) last->next = k;
        else first = k;
        last = k;
    }
    pthread_mutex_lock(&retry->lock);
    bool taken = retry->pending + count <= retry->max_pending && !retry->stopping;
    if (taken && first != NULL) {
        if (retry->tail != NULL) retry->tail->next = first;
        else retry->head = first;
        retry->tail = last;
        retry->pending += count;
        pthread_cond_signal(&retry->wake);
    }
    pthread_mutex_unlock(&retry->lock);
    if (!taken) {
        while (first != NULL) {
            kept *next = first->next;
            free(first);
            first = next;
        }
    }
    return taken;
}

size_t rl_complete_retry_pending(rl_complete_retry *retry) {
    pthread_mutex_lock(&retry->lock);
    size_t pending = retry->pending;
    pthread_mutex_unlock(&retry->lock);
    return pending;
}

/* One pass: takes the whole queue, sends it in chunks, puts back what the
 * store did not take and is not past its deadline. Called without the lock. */
static void retry_pass(rl_complete_retry *retry) {
    pthread_mutex_lock(&retry->lock);
    kept *list = retry->head;
    retry->head = retry->tail = NULL;
    size_t taken = retry->pending;
    retry->pending = 0;
    pthread_mutex_unlock(&retry->lock);
    if (list == NULL) return;

    kept *again_head = NULL, *again_tail = NULL;
    size_t again = 0;
    rl_complete_request chunk[SEND_CHUNK];
    kept *members[SEND_CHUNK];
    while (list != NULL) {
        size_t n = 0;
        while (list != NULL && n < SEND_CHUNK) {
            members[n] = list;
            chunk[n++] = list->request;
            list = list->next;
        }
        bool sent = retry->send(retry->context, chunk, n);
        uint64_t now = now_ms();
        for (size_t i = 0; i < n; i++) {
            kept *k = members[i];
            if (sent || now >= k->give_up_at_ms) { /* done, or given up: its holds time out */
                free(k);
                continue;
            }
            k->next = NULL;
            if (again_tail != NULL) again_tail->next = k;
            else again_head = k;
            again_tail = k;
            again++;
        }
    }
    (void)taken;
    if (again_head == NULL) return;
    pthread_mutex_lock(&retry->lock);
    again_tail->next = retry->head; /* the older ones first */
    retry->head = again_head;
    if (retry->tail == NULL) retry->tail = again_tail;
    retry->pending += again;
    pthread_mutex_unlock(&retry->lock);
}

static void *run(void *arg) {
    rl_complete_retry *retry = arg;
    uint64_t next_periodic_ms = now_ms() + retry->periodic_interval_ms;
    pthread_mutex_lock(&retry->lock);
    while (!retry->stopping) {
        uint64_t now = now_ms();
        uint64_t until_periodic_ms = next_periodic_ms > now ? next_periodic_ms - now : 0;
        uint64_t wait_ms = retry->head != NULL && RETRY_INTERVAL_MS < until_periodic_ms ? RETRY_INTERVAL_MS
                                                                                         : until_periodic_ms;
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        uint64_t ns = (uint64_t)deadline.tv_nsec + wait_ms * 1000000u;
        deadline.tv_sec += (time_t)(ns / 1000000000u);
        deadline.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&retry->wake, &retry->lock, &deadline);
        if (retry->stopping) break;
        pthread_mutex_unlock(&retry->lock);
        retry_pass(retry);
        if (now_ms() >= next_periodic_ms) {
            retry->periodic(retry->context);
            next_periodic_ms = now_ms() + retry->periodic_interval_ms;
        }
        pthread_mutex_lock(&retry->lock);
    }
    pthread_mutex_unlock(&retry->lock);
    retry_pass(retry); /* one last try */
    return NULL;
}

rl_status rl_complete_retry_start(void *context, rl_complete_send_fn send, rl_periodic_fn periodic,
                                  uint32_t deadline_ms, uint32_t max_pending, uint32_t periodic_interval_ms,
                                  rl_complete_retry **out) {
    *out = NULL;
    rl_complete_retry *retry = calloc(1, sizeof *retry);
    if (retry == NULL) return RL_NO_MEMORY;
    retry->context = context;
    retry->send = send;
    retry->periodic = periodic;
    retry->deadline_ms = deadline_ms;
    retry->max_pending = max_pending;
    retry->periodic_interval_ms = periodic_interval_ms > 0 ? periodic_interval_ms : 1;
    pthread_mutex_init(&retry->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&retry->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&retry->thread, NULL, run, retry) != 0) {
        pthread_cond_destroy(&retry->wake);
        pthread_mutex_destroy(&retry->lock);
        free(retry);
        return RL_NO_MEMORY;
    }
    *out = retry;
    return RL_OK;
}

void rl_complete_retry_stop(rl_complete_retry *retry) {
    if (retry == NULL) return;
    pthread_mutex_lock(&retry->lock);
    retry->stopping = true;
    pthread_cond_signal(&retry->wake);
    pthread_mutex_unlock(&retry->lock);
    pthread_join(retry->thread, NULL);
    while (retry->head != NULL) {
        kept *next = retry->head->next;
        free(retry->head);
        retry->head = next;
    }
    pthread_cond_destroy(&retry->wake);
    pthread_mutex_destroy(&retry->lock);
    free(retry);
}
