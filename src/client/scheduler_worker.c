/* scheduler_worker.c — the worker loop: take the next ready job
 * round-robin, Reserve under a new lease id, then execute and Complete, or
 * block the job until its not_before_ms and move on.
 *
 * An idle worker sleeps on the condition variable until the earliest
 * not_before_ms of any blocked job, or until a submit or a newly blocked
 * earlier job wakes it: no polling.
 */
#include <stdio.h>
#include <string.h>

#include "client/scheduler_internal.h"

/* What one turn on a job decided. */
typedef struct turn {
    bool final;                /* false: block the job until not_before_ms */
    rl_job_outcome outcome;    /* when final */
    bool executed;
    rl_execute_result execute;
    rl_status complete_status;
    uint64_t not_before_ms;    /* when not final */
} turn;

/* splitmix64: a small per-worker generator for jitter; quality hardly
 * matters, only that workers and jobs do not retry in lockstep. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* delay_ms plus a random jitter of up to jitter_percent of it, at most jitter_max_ms. */
static uint64_t with_jitter(const rl_scheduler_options *o, uint64_t delay_ms, uint64_t *rng) {
    uint64_t span = delay_ms / 100u * o->jitter_percent + delay_ms % 100u * o->jitter_percent / 100u;
    if (span > o->jitter_max_ms) span = o->jitter_max_ms;
    return delay_ms + (span == 0 ? 0 : next_random(rng) % (span + 1));
}

static uint64_t error_backoff_ms(const rl_scheduler_options *o, uint32_t streak) {
    uint64_t delay = o->error_backoff_initial_ms;
    for (uint32_t i = 1; i < streak && delay < o->error_backoff_max_ms; i++) delay *= 2;
    return delay > o->error_backoff_max_ms ? o->error_backoff_max_ms : delay;
}

/* Allowed: run the call, then Complete whatever happened (a lease left open would hold its slot until its timeout). */
static void execute_and_complete(rl_scheduler *s, rl_sched_job *job, turn *t) {
    rl_job_attempt attempt = {
        .job_id = job->job_id,
        .lease_id = job->lease_id,
        .attempt = job->attempts,
        .call = &job->call,
        .token_upper_bound = job->requirements.token_upper_bound,
    };
    t->executed = true;
    t->execute = job->execute(job->user_data, &attempt);
    if (t->execute.actual_tokens > RL_AMOUNT_MAX) t->execute.actual_tokens = RL_AMOUNT_MAX;

    rl_actual actuals[2];
    size_t actual_count = 0;
    if (t->execute.actual_tokens_known) {
        actual_count = rl_llm_actuals(&job->requirements, t->execute.actual_tokens, actuals);
    }
    rl_complete_request request = {
        .lease_id = job->lease_id,
        .job_id = job->job_id[0] != '\0' ? job->job_id : NULL,
        .actuals = actuals,
        .actual_count = actual_count,
    };
    /* A failed Complete is reported, not retried here: the http limiter
     * already retried it until its deadline, and the lease expires anyway.
     * The job is not run again (it ran). */
    t->complete_status = rl_limiter_complete(s->limiter, &request);
    t->final = true;
    t->outcome = t->execute.succeeded ? RL_JOB_DONE : RL_JOB_EXECUTE_FAILED;
}

static void block_for(rl_sched_job *job, turn *t, uint64_t delay_ms) {
    t->final = false;
    t->not_before_ms = rl__sched_now_ms() + delay_ms;
    job->not_before_ms = t->not_before_ms;
}

/* An operational error: the outcome is unknown. The limiter has already
 * retried with the same lease id; the next attempt gets a new one and the old
 * lease, if it was reserved, expires on its own (see scheduler.h). */
static void after_error(rl_scheduler *s, rl_sched_job *job, turn *t, rl_status status, uint64_t *rng) {
    job->errors++;
    job->error_streak++;
    job->last_status = status;
    job->last_status_key[0] = '\0';
    block_for(job, t, with_jitter(&s->options, error_backoff_ms(&s->options, job->error_streak), rng));
}

static void after_denial(rl_scheduler *s, rl_sched_job *job, turn *t, const rl_reserve_result *result,
                         uint64_t *rng) {
    job->denials++;
    job->error_streak = 0;
    uint64_t wait_ms = result->retry_after_ms;
    if (result->status == RL_LIMIT_DECREASING && wait_ms == 0) wait_ms = RL_DECREASING_RETRY_AFTER_MS;
    if (wait_ms < s->options.min_retry_ms) wait_ms = s->options.min_retry_ms;
    block_for(job, t, with_jitter(&s->options, wait_ms, rng));
}

static void run_turn(rl_scheduler *s, rl_sched_job *job, turn *t, uint64_t *rng) {
    memset(t, 0, sizeof *t);
    job->attempts++;
    if (rl_ulid_new(job->lease_id) == NULL) { /* no randomness: count it as an error and retry later */
        after_error(s, job, t, RL_IO_ERROR, rng);
        return;
    }
    rl_reserve_request request = {
        .lease_id = job->lease_id,
        .job_id = job->job_id[0] != '\0' ? job->job_id : NULL,
        .requirements = job->requirements.items,
        .requirement_count = job->requirements.count,
    };
    rl_reserve_result result;
    memset(&result, 0, sizeof result);
    rl_status call = rl_limiter_reserve(s->limiter, &request, &result);
    if (call == RL_INVALID_REQUEST) { /* the request itself is wrong: no retry can fix it */
        job->last_status = call;
        job->last_status_key[0] = '\0';
        t->final = true;
        t->outcome = RL_JOB_REJECTED;
        return;
    }
    if (call != RL_OK) {
        after_error(s, job, t, call, rng);
        return;
    }
    /* Copy the key now: it is valid only until this thread's next limiter call. */
    job->last_status = result.status;
    snprintf(job->last_status_key, sizeof job->last_status_key, "%s",
             result.status_key != NULL ? result.status_key : "");
    if (result.allowed) {
        job->error_streak = 0;
        execute_and_complete(s, job, t);
        return;
    }
    switch (result.status) {
    case RL_OK:               /* a plain deny */
    case RL_LIMIT_DECREASING: /* wait for the decrease to take effect (docs/api.md, limit_decreasing) */
        after_denial(s, job, t, &result, rng);
        return;
    case RL_EXCEEDS_CAPACITY: /* the call can never fit */
    case RL_UNKNOWN_LIMIT_KEY:/* nobody defined the limit */
    case RL_INVALID_REQUEST:
        t->final = true;
        t->outcome = RL_JOB_REJECTED;
        return;
    case RL_LEASE_ID_CONFLICT: /* this turn's new lease id was taken: the next turn makes another */
    default: /* a per-lease backend error: unknown, like a failed call */
        after_error(s, job, t, result.status, rng);
        return;
    }
}

/* Reports a finished job and drops it; the caller holds the mutex, which is
 * released around the callback (jobs_held drops only after it returned). */
static void finish_locked(rl_scheduler *s, rl_sched_job *job, rl_job_outcome outcome, const turn *t) {
    pthread_mutex_unlock(&s->mutex);
    rl__sched_job_report(job, outcome, t != NULL && t->executed ? &t->execute : NULL,
                         t != NULL && t->executed ? t->complete_status : RL_OK);
    rl__sched_job_free(job);
    pthread_mutex_lock(&s->mutex);
    rl__sched_job_finished_locked(s, outcome);
}

/* Back under the mutex after a turn: count it, then finish or block the job. */
static void settle_locked(rl_scheduler *s, rl_sched_job *job, const turn *t, bool was_error, bool was_denial) {
    s->running--;
    s->stats.attempts++;
    if (was_error) s->stats.errors++;
    if (was_denial) s->stats.denials++;
    if (t->final) {
        finish_locked(s, job, t->outcome, t);
        return;
    }
    if (job->max_attempts != 0 && job->attempts >= job->max_attempts) {
        finish_locked(s, job, RL_JOB_GAVE_UP, t);
        return;
    }
    if (s->stopping) { /* shutdown already reported the queues: this one is ours to report */
        finish_locked(s, job, RL_JOB_NOT_RUN, t);
        return;
    }
    uint64_t earliest_ms = rl__sched_queues_earliest_ms(&s->queues);
    rl__sched_queues_push_blocked(&s->queues, job->queue, job);
    /* Idle workers may sleep toward a later time (or none): wake them to
     * recompute, so that this job is not late by another job's whole call. */
    if (job->not_before_ms < earliest_ms) pthread_cond_broadcast(&s->work_cond);
}

static uint64_t seed_for(const rl_scheduler *s) {
    uint64_t seed = rl__sched_now_ms();
    const void *self = &seed; /* each thread's stack differs */
    seed ^= (uint64_t)(uintptr_t)self * UINT64_C(0x9E3779B97F4A7C15);
    seed ^= (uint64_t)(uintptr_t)s;
    return seed;
}

void *rl__sched_worker_main(void *arg) {
    rl_scheduler *s = arg;
    uint64_t rng = seed_for(s);
    pthread_mutex_lock(&s->mutex);
    while (!s->stopping) {
        rl__sched_queues_promote_due(&s->queues, rl__sched_now_ms());
        rl_sched_job *job = rl__sched_queues_pop_ready(&s->queues);
        if (job == NULL) {
            rl__sched_cond_wait_until(&s->work_cond, &s->mutex, rl__sched_queues_earliest_ms(&s->queues));
            continue;
        }
        s->running++;
        /* A promotion may have made several jobs ready: let another worker help. */
        if (s->queues.ready_count > 0) pthread_cond_signal(&s->work_cond);
        pthread_mutex_unlock(&s->mutex);

        uint32_t errors_before = job->errors, denials_before = job->denials;
        turn t;
        run_turn(s, job, &t, &rng);

        pthread_mutex_lock(&s->mutex);
        settle_locked(s, job, &t, job->errors != errors_before, job->denials != denials_before);
    }
    pthread_mutex_unlock(&s->mutex);
    return NULL;
}
