/* client/scheduler_internal.h — the scheduler's private state, shared by
 * scheduler.c (lifecycle, submit, shutdown), scheduler_job.c (a job's owned
 * copy), scheduler_queue.c (work-class queues) and scheduler_worker.c.
 *
 * One mutex guards everything below; it is never held while the limiter or a
 * callback runs, so a slow model call or a slow daemon never blocks submit or
 * other workers.
 */
#ifndef RL_CLIENT_SCHEDULER_INTERNAL_H
#define RL_CLIENT_SCHEDULER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ratelimiter/scheduler.h"

typedef struct rl_sched_queue rl_sched_queue;

/* A job as the scheduler owns it: every string copied, requirements built
 * once at submit (items point into this struct, which is never moved). */
typedef struct rl_sched_job {
    struct rl_sched_job *next; /* in its queue's ready or blocked list */
    rl_sched_queue *queue;
    uint64_t not_before_ms;    /* monotonic; meaningful while blocked */
    uint32_t attempts, denials, errors;
    uint32_t error_streak;     /* consecutive operational errors: the backoff exponent */
    uint32_t max_attempts;
    rl_status last_status;
    char last_status_key[RL_KEY_MAX_LEN + 1]; /* "" when none */
    char job_id[RL_JOB_ID_MAX_LEN + 1];
    char lease_id[RL_ULID_TEXT_SIZE];         /* the current attempt's */
    char provider[RL_KEY_MAX_LEN + 1];
    char model[RL_KEY_MAX_LEN + 1];
    char tenant_id[RL_KEY_MAX_LEN + 1];
    char *prompt;                             /* owned, NULL when the call had none */
    rl_llm_call call;                         /* points at the copies above */
    rl_llm_requirements requirements;
    rl_job_execute_fn execute;
    rl_job_result_fn on_result;
    void *user_data;
} rl_sched_job;

/* A singly linked FIFO. */
typedef struct rl_sched_list {
    rl_sched_job *head, *tail;
    uint64_t count;
} rl_sched_list;

/* One work class: (provider, model). */
struct rl_sched_queue {
    rl_sched_queue *next_class;  /* every queue, for lookup and shutdown */
    rl_sched_queue *next_active; /* in the round-robin ring while ready is not empty */
    bool active;
    rl_sched_list ready;         /* runnable now, FIFO */
    rl_sched_list blocked;       /* ascending not_before_ms */
    char provider[RL_KEY_MAX_LEN + 1];
    char model[RL_KEY_MAX_LEN + 1];
};

/* All queues, and the ring of those with ready work (round-robin order). */
typedef struct rl_sched_queues {
    rl_sched_queue *classes;
    uint64_t class_count;
    rl_sched_queue *active_head, *active_tail;
    uint64_t ready_count, blocked_count;
} rl_sched_queues;

struct rl_scheduler {
    rl_limiter *limiter;
    rl_scheduler_options options;

    pthread_mutex_t mutex;
    pthread_cond_t work_cond; /* workers: a job became ready, or stop (CLOCK_MONOTONIC) */
    pthread_cond_t idle_cond; /* shutdown: a job finished (CLOCK_MONOTONIC) */
    rl_sched_queues queues;
    uint64_t jobs_held;       /* submitted and not finished: queued + running */
    bool accepting;           /* false once shutdown began */
    bool stopping;            /* true: workers take no more jobs */
    bool shut_down;           /* rl_scheduler_shutdown has run */
    rl_scheduler_stats stats; /* ready/blocked/running filled in by stats_get */
    uint64_t running;

    pthread_t *threads;
    uint32_t thread_count;
};

/* ---- scheduler_job.c ---- */

/* Validates and copies job into a new rl_sched_job. NULL on error (err says why, *status the code). */
rl_sched_job *rl__sched_job_new(const rl_job *job, rl_status *status, char *err, size_t err_size);
void rl__sched_job_free(rl_sched_job *job);

/* Calls the job's on_result (if any) with outcome and its counters; then the job may be freed. */
void rl__sched_job_report(const rl_sched_job *job, rl_job_outcome outcome, const rl_execute_result *execute,
                          rl_status complete_status);

/* ---- scheduler_queue.c (caller holds the mutex) ---- */

void rl__sched_queues_init(rl_sched_queues *queues);
/* Frees every queue; they must hold no job. */
void rl__sched_queues_free(rl_sched_queues *queues);
/* The queue of (provider, model), created when missing; NULL if max_classes are taken or no memory. */
rl_sched_queue *rl__sched_queues_find(rl_sched_queues *queues, const char *provider, const char *model,
                                      uint64_t max_classes);
void rl__sched_queues_push_ready(rl_sched_queues *queues, rl_sched_queue *queue, rl_sched_job *job);
void rl__sched_queues_push_blocked(rl_sched_queues *queues, rl_sched_queue *queue, rl_sched_job *job);
/* Moves every blocked job with not_before_ms <= now_ms to its queue's ready list. */
void rl__sched_queues_promote_due(rl_sched_queues *queues, uint64_t now_ms);
/* The earliest not_before_ms of a blocked job, UINT64_MAX when none. */
uint64_t rl__sched_queues_earliest_ms(const rl_sched_queues *queues);
/* The next job round-robin across queues with ready work, or NULL. */
rl_sched_job *rl__sched_queues_pop_ready(rl_sched_queues *queues);
/* Unlinks every queued job (ready and blocked) into one list, for shutdown. */
rl_sched_job *rl__sched_queues_take_all(rl_sched_queues *queues);

/* ---- scheduler_worker.c ---- */

/* The worker thread's body; arg is the rl_scheduler. */
void *rl__sched_worker_main(void *arg);

/* ---- scheduler.c ---- */

/* CLOCK_MONOTONIC in ms: the clock of not_before_ms and of the condition variables. */
uint64_t rl__sched_now_ms(void);
/* Waits on cond until woken or until the monotonic deadline_ms (UINT64_MAX: no deadline). */
void rl__sched_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline_ms);
/* Bookkeeping of a finished job (caller holds the mutex): counts the outcome, wakes shutdown. */
void rl__sched_job_finished_locked(rl_scheduler *scheduler, rl_job_outcome outcome);

#endif
