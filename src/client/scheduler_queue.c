/* scheduler_queue.c — work-class queues: one per (provider, model), each with
 * a FIFO of ready jobs and a list of blocked jobs ordered by not_before_ms,
 * and a ring of the queues that have ready work so that workers take from
 * them round-robin, so that no tenant's backlog starves another's. The caller holds the scheduler's mutex.
 *
 * Work classes are few (a handful of models), so lookup and the earliest
 * not_before are linear scans over the queues; max_work_classes bounds them.
 */
#include <stdlib.h>
#include <string.h>

#include "client/scheduler_internal.h"

static void list_push_tail(rl_sched_list *list, rl_sched_job *job) {
    job->next = NULL;
    if (list->tail == NULL) list->head = job;
    else list->tail->next = job;
    list->tail = job;
    list->count++;
}

static rl_sched_job *list_pop_head(rl_sched_list *list) {
    rl_sched_job *job = list->head;
    if (job == NULL) return NULL;
    list->head = job->next;
    if (list->head == NULL) list->tail = NULL;
    job->next = NULL;
    list->count--;
    return job;
}

/* Inserts in ascending not_before_ms, after jobs with the same time (FIFO
 * among equals). New waits are usually the latest (now + retry_after), so the
 * tail check makes the common case O(1). */
static void list_insert_sorted(rl_sched_list *list, rl_sched_job *job) {
    if (list->tail == NULL || list->tail->not_before_ms <= job->not_before_ms) {
        list_push_tail(list, job);
        return;
    }
    rl_sched_job **link = &list->head;
    while (*link != NULL && (*link)->not_before_ms <= job->not_before_ms) link = &(*link)->next;
    job->next = *link;
    *link = job;
    list->count++;
}

static void activate(rl_sched_queues *queues, rl_sched_queue *queue) {
    if (queue->active) return;
    queue->active = true;
    queue->next_active = NULL;
    if (queues->active_tail == NULL) queues->active_head = queue;
    else queues->active_tail->next_active = queue;
    queues->active_tail = queue;
}

void rl__sched_queues_init(rl_sched_queues *queues) { memset(queues, 0, sizeof *queues); }

void rl__sched_queues_free(rl_sched_queues *queues) {
    rl_sched_queue *queue = queues->classes;
    while (queue != NULL) {
        rl_sched_queue *next = queue->next_class;
        free(queue);
        queue = next;
    }
    rl__sched_queues_init(queues);
}

rl_sched_queue *rl__sched_queues_find(rl_sched_queues *queues, const char *provider, const char *model,
                                      uint64_t max_classes) {
    for (rl_sched_queue *queue = queues->classes; queue != NULL; queue = queue->next_class) {
        if (strcmp(queue->provider, provider) == 0 && strcmp(queue->model, model) == 0) return queue;
    }
    if (queues->class_count >= max_classes) return NULL;
    rl_sched_queue *queue = calloc(1, sizeof *queue);
    if (queue == NULL) return NULL;
    /* The job copied both with a length check, so they fit. */
    memcpy(queue->provider, provider, strlen(provider) + 1);
    memcpy(queue->model, model, strlen(model) + 1);
    queue->next_class = queues->classes;
    queues->classes = queue;
    queues->class_count++;
    return queue;
}

void rl__sched_queues_push_ready(rl_sched_queues *queues, rl_sched_queue *queue, rl_sched_job *job) {
    job->queue = queue;
    list_push_tail(&queue->ready, job);
    queues->ready_count++;
    activate(queues, queue);
}

void rl__sched_queues_push_blocked(rl_sched_queues *queues, rl_sched_queue *queue, rl_sched_job *job) {
    job->queue = queue;
    list_insert_sorted(&queue->blocked, job);
    queues->blocked_count++;
}

void rl__sched_queues_promote_due(rl_sched_queues *queues, uint64_t now_ms) {
    if (queues->blocked_count == 0) return;
    for (rl_sched_queue *queue = queues->classes; queue != NULL; queue = queue->next_class) {
        while (queue->blocked.head != NULL && queue->blocked.head->not_before_ms <= now_ms) {
            rl_sched_job *job = list_pop_head(&queue->blocked);
            queues->blocked_count--;
            rl__sched_queues_push_ready(queues, queue, job);
        }
    }
}

uint64_t rl__sched_queues_earliest_ms(const rl_sched_queues *queues) {
    uint64_t earliest = UINT64_MAX;
    if (queues->blocked_count == 0) return earliest;
    for (const rl_sched_queue *queue = queues->classes; queue != NULL; queue = queue->next_class) {
        if (queue->blocked.head != NULL && queue->blocked.head->not_before_ms < earliest) {
            earliest = queue->blocked.head->not_before_ms;
        }
    }
    return earliest;
}

/* Takes the head job of the first queue in the ring, then sends that queue to
 * the back of the ring if it still has ready work: each work class gets one
 * job per turn, however many it has queued. */
rl_sched_job *rl__sched_queues_pop_ready(rl_sched_queues *queues) {
    rl_sched_queue *queue = queues->active_head;
    if (queue == NULL) return NULL;
    queues->active_head = queue->next_active;
    if (queues->active_head == NULL) queues->active_tail = NULL;
    queue->active = false;
    queue->next_active = NULL;
    rl_sched_job *job = list_pop_head(&queue->ready);
    queues->ready_count--;
    if (queue->ready.head != NULL) activate(queues, queue);
    return job;
}

rl_sched_job *rl__sched_queues_take_all(rl_sched_queues *queues) {
    rl_sched_job *all = NULL;
    for (rl_sched_queue *queue = queues->classes; queue != NULL; queue = queue->next_class) {
        rl_sched_list *lists[2] = {&queue->ready, &queue->blocked};
        for (int i = 0; i < 2; i++) {
            rl_sched_job *job;
            while ((job = list_pop_head(lists[i])) != NULL) {
                job->next = all;
                all = job;
            }
        }
        queue->active = false;
        queue->next_active = NULL;
    }
    queues->active_head = queues->active_tail = NULL;
    queues->ready_count = queues->blocked_count = 0;
    return all;
}
