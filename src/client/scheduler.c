/* scheduler.c — the scheduler's lifecycle: create, submit, stats, shutdown,
 * destroy. The worker loop is in scheduler_worker.c, the queues in
 * scheduler_queue.c.
 *
 * Shutdown's promise is that every job taken by submit gets exactly one
 * result callback: jobs still queued are reported NOT_RUN here, jobs running
 * are finished by their worker (which reports NOT_RUN itself for a job that
 * comes back denied after the stop), and jobs_held reaches 0 only after the
 * last callback returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/scheduler_internal.h"

uint64_t rl__sched_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rl__sched_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t deadline_ms) {
    if (deadline_ms == UINT64_MAX) {
        pthread_cond_wait(cond, mutex);
        return;
    }
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ms / 1000u);
    ts.tv_nsec = (long)(deadline_ms % 1000u) * 1000000L;
    (void)pthread_cond_timedwait(cond, mutex, &ts); /* ETIMEDOUT is the normal way out */
}

void rl_scheduler_options_default(rl_scheduler_options *options) {
    memset(options, 0, sizeof *options);
    options->worker_count = 4;
    options->jitter_percent = 10;
    options->jitter_max_ms = 1000;
    options->min_retry_ms = 10;
    options->error_backoff_initial_ms = 100;
    options->error_backoff_max_ms = 5000;
    options->max_jobs = 1000000;
    options->max_work_classes = 1024;
}

static void set_err(char *err, const char *why) {
    if (err != NULL) snprintf(err, RL_SCHEDULER_ERR_SIZE, "%s", why);
}

static bool init_monotonic_cond(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0) return false;
    bool ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    return ok;
}

static const char *check_options(const rl_scheduler_options *o) {
    if (o->worker_count == 0 || o->worker_count > RL_SCHEDULER_MAX_WORKERS) return "worker_count must be 1..256";
    if (o->jitter_percent > 100) return "jitter_percent must be 0..100";
    if (o->max_jobs == 0) return "max_jobs must be at least 1";
    if (o->max_work_classes == 0) return "max_work_classes must be at least 1";
    if (o->error_backoff_max_ms < o->error_backoff_initial_ms) return "error_backoff_max_ms is below the initial backoff";
    return NULL;
}

/* Stops and joins the first count workers (creation failed part way). */
static void stop_workers(rl_scheduler *s, uint32_t count) {
    pthread_mutex_lock(&s->mutex);
    s->accepting = false;
    s->stopping = true;
    pthread_cond_broadcast(&s->work_cond);
    pthread_mutex_unlock(&s->mutex);
    for (uint32_t i = 0; i < count; i++) pthread_join(s->threads[i], NULL);
}

static void free_scheduler(rl_scheduler *s) {
    rl__sched_queues_free(&s->queues);
    pthread_cond_destroy(&s->idle_cond);
    pthread_cond_destroy(&s->work_cond);
    pthread_mutex_destroy(&s->mutex);
    free(s->threads);
    free(s);
}

rl_status rl_scheduler_create(rl_limiter *limiter, const rl_scheduler_options *options, rl_scheduler **out,
                              char err[RL_SCHEDULER_ERR_SIZE]) {
    *out = NULL;
    rl_scheduler_options defaults;
    if (options == NULL) {
        rl_scheduler_options_default(&defaults);
        options = &defaults;
    }
    if (limiter == NULL) {
        set_err(err, "limiter is NULL");
        return RL_INVALID_REQUEST;
    }
    const char *bad = check_options(options);
    if (bad != NULL) {
        set_err(err, bad);
        return RL_INVALID_REQUEST;
    }
    rl_scheduler *s = calloc(1, sizeof *s);
    if (s == NULL) goto no_memory;
    s->threads = calloc(options->worker_count, sizeof *s->threads);
    if (s->threads == NULL) {
        free(s);
        goto no_memory;
    }
    if (pthread_mutex_init(&s->mutex, NULL) != 0) {
        free(s->threads);
        free(s);
        goto no_memory;
    }
    if (!init_monotonic_cond(&s->work_cond)) {
        pthread_mutex_destroy(&s->mutex);
        free(s->threads);
        free(s);
        goto no_memory;
    }
    if (!init_monotonic_cond(&s->idle_cond)) {
        pthread_cond_destroy(&s->work_cond);
        pthread_mutex_destroy(&s->mutex);
        free(s->threads);
        free(s);
        goto no_memory;
    }
    s->limiter = limiter;
    s->options = *options;
    rl__sched_queues_init(&s->queues);
    s->accepting = true;
    for (uint32_t i = 0; i < options->worker_count; i++) {
        if (pthread_create(&s->threads[i], NULL, rl__sched_worker_main, s) != 0) {
            stop_workers(s, i);
            free_scheduler(s);
            set_err(err, "cannot start a worker thread");
            return RL_NO_MEMORY;
        }
        s->thread_count = i + 1;
    }
    *out = s;
    return RL_OK;

no_memory:
    set_err(err, "out of memory");
    return RL_NO_MEMORY;
}

rl_status rl_scheduler_submit(rl_scheduler *s, const rl_job *job, char err[RL_SCHEDULER_ERR_SIZE]) {
    rl_status status;
    char why[RL_SCHEDULER_ERR_SIZE];
    /* Copy and build outside the lock: submit from many threads stays parallel. */
    rl_sched_job *copy = rl__sched_job_new(job, &status, why, sizeof why);
    if (copy == NULL) {
        set_err(err, why);
        return status;
    }
    pthread_mutex_lock(&s->mutex);
    const char *refused = NULL;
    status = RL_OK;
    rl_sched_queue *queue = NULL;
    if (!s->accepting) {
        refused = "the scheduler is shutting down";
        status = RL_INVALID_REQUEST;
    } else if (s->jobs_held >= s->options.max_jobs) {
        refused = "max_jobs reached";
        status = RL_NO_MEMORY;
    } else {
        queue = rl__sched_queues_find(&s->queues, copy->provider, copy->model, s->options.max_work_classes);
        if (queue == NULL) {
            refused = "max_work_classes reached, or out of memory";
            status = RL_NO_MEMORY;
        }
    }
    if (refused == NULL) {
        rl__sched_queues_push_ready(&s->queues, queue, copy);
        s->jobs_held++;
        s->stats.submitted++;
        s->stats.work_classes = s->queues.class_count;
        pthread_cond_signal(&s->work_cond);
    }
    pthread_mutex_unlock(&s->mutex);
    if (refused != NULL) {
        rl__sched_job_free(copy);
        set_err(err, refused);
    }
    return status;
}

static void stats_locked(const rl_scheduler *s, rl_scheduler_stats *out) {
    *out = s->stats;
    out->ready = s->queues.ready_count;
    out->blocked = s->queues.blocked_count;
    out->running = s->running;
    out->work_classes = s->queues.class_count;
}

void rl_scheduler_stats_get(rl_scheduler *s, rl_scheduler_stats *out) {
    pthread_mutex_lock(&s->mutex);
    stats_locked(s, out);
    pthread_mutex_unlock(&s->mutex);
}

void rl__sched_job_finished_locked(rl_scheduler *s, rl_job_outcome outcome) {
    s->stats.outcomes[outcome]++;
    s->jobs_held--;
    if (s->jobs_held == 0) pthread_cond_broadcast(&s->idle_cond);
}

uint64_t rl_scheduler_shutdown(rl_scheduler *s, uint32_t deadline_ms, rl_scheduler_stats *stats) {
    pthread_mutex_lock(&s->mutex);
    if (s->shut_down) {
        if (stats != NULL) stats_locked(s, stats);
        pthread_mutex_unlock(&s->mutex);
        return 0;
    }
    s->shut_down = true;
    s->accepting = false;
    /* Drain: workers go on as usual until nothing is held or the deadline. */
    uint64_t drain_until_ms = rl__sched_now_ms() + deadline_ms;
    while (s->jobs_held > 0 && rl__sched_now_ms() < drain_until_ms) {
        rl__sched_cond_wait_until(&s->idle_cond, &s->mutex, drain_until_ms);
    }
    s->stopping = true;
    rl_sched_job *left = rl__sched_queues_take_all(&s->queues);
    pthread_cond_broadcast(&s->work_cond);
    pthread_mutex_unlock(&s->mutex);

    /* Report outside the lock: a callback may call stats_get. */
    while (left != NULL) {
        rl_sched_job *job = left;
        left = job->next;
        rl__sched_job_report(job, RL_JOB_NOT_RUN, NULL, RL_OK);
        rl__sched_job_free(job);
        pthread_mutex_lock(&s->mutex);
        rl__sched_job_finished_locked(s, RL_JOB_NOT_RUN);
        pthread_mutex_unlock(&s->mutex);
    }
    /* Running jobs finish on their workers; a worker exits once it holds none. */
    for (uint32_t i = 0; i < s->thread_count; i++) pthread_join(s->threads[i], NULL);
    s->thread_count = 0;

    pthread_mutex_lock(&s->mutex);
    if (stats != NULL) stats_locked(s, stats);
    /* NOT_RUN jobs reported by workers (denied after the stop) count too. */
    uint64_t not_run = s->stats.outcomes[RL_JOB_NOT_RUN];
    pthread_mutex_unlock(&s->mutex);
    return not_run;
}

void rl_scheduler_destroy(rl_scheduler *s) {
    if (s == NULL) return;
    rl_scheduler_shutdown(s, 0, NULL);
    free_scheduler(s);
}
