/* support/scheduler_harness.h — what the scheduler tests share (unit and
 * integration): a spy rl_limiter that delegates to a real one and logs every
 * lease id and Complete per job (and can fake denials and timeouts), and a
 * board of per-job records filled by the job callbacks.
 *
 * Jobs are named "job-<index>" so that the spy can file calls by index.
 * Header-only (static inline) so that both test trees use it without a build
 * change.
 */
#ifndef RL_TEST_SCHEDULER_HARNESS_H
#define RL_TEST_SCHEDULER_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ratelimiter/scheduler.h"

#define HARNESS_MAX_JOBS 4096
#define HARNESS_MAX_ATTEMPTS 16

/* ---- the spy limiter ---- */

typedef struct spy_job_log {
    int reserves;                                        /* calls seen */
    char lease_ids[HARNESS_MAX_ATTEMPTS][RL_ULID_TEXT_SIZE];
    int completes;
    char complete_lease_id[RL_ULID_TEXT_SIZE];
    size_t actual_count;
    uint64_t actual_amounts[2];
    char actual_keys[2][RL_KEY_MAX_LEN + 1];
} spy_job_log;

typedef struct spy_limiter {
    rl_limiter base; /* first */
    rl_limiter *inner;
    pthread_mutex_t mutex;
    int fake_timeouts_per_job;  /* the first n Reserves of a job return RL_TIMEOUT */
    int fake_denials_per_job;   /* the next n are denied with retry_after 5 ms */
    spy_job_log jobs[HARNESS_MAX_JOBS];
} spy_limiter;

static inline int harness_job_index(const char *job_id) {
    int index = -1;
    if (job_id == NULL || sscanf(job_id, "job-%d", &index) != 1 || index < 0 || index >= HARNESS_MAX_JOBS) return -1;
    return index;
}

static inline rl_status spy_reserve_batch(rl_limiter *limiter, const rl_reserve_request *requests, size_t count,
                                          rl_reserve_result *results) {
    spy_limiter *spy = (spy_limiter *)limiter;
    if (count != 1) return rl_limiter_reserve_batch(spy->inner, requests, count, results); /* not used */
    int index = harness_job_index(requests[0].job_id);
    int seen = 0;
    pthread_mutex_lock(&spy->mutex);
    if (index >= 0) {
        spy_job_log *log = &spy->jobs[index];
        seen = log->reserves++;
        if (seen < HARNESS_MAX_ATTEMPTS) snprintf(log->lease_ids[seen], RL_ULID_TEXT_SIZE, "%s", requests[0].lease_id);
    }
    int timeouts = spy->fake_timeouts_per_job, denials = spy->fake_denials_per_job;
    pthread_mutex_unlock(&spy->mutex);
    if (seen < timeouts) return RL_TIMEOUT;
    if (seen < timeouts + denials) {
        memset(&results[0], 0, sizeof results[0]);
        results[0].allowed = false;
        results[0].retry_after_ms = 5;
        return RL_OK;
    }
    return rl_limiter_reserve_batch(spy->inner, requests, count, results);
}

static inline rl_status spy_complete_batch(rl_limiter *limiter, const rl_complete_request *requests, size_t count,
                                           rl_status *statuses) {
    spy_limiter *spy = (spy_limiter *)limiter;
    pthread_mutex_lock(&spy->mutex);
    for (size_t i = 0; i < count; i++) {
        int index = harness_job_index(requests[i].job_id);
        if (index < 0) continue;
        spy_job_log *log = &spy->jobs[index];
        log->completes++;
        snprintf(log->complete_lease_id, sizeof log->complete_lease_id, "%s", requests[i].lease_id);
        log->actual_count = requests[i].actual_count;
        for (size_t a = 0; a < requests[i].actual_count && a < 2; a++) {
            log->actual_amounts[a] = requests[i].actuals[a].actual_amount;
            snprintf(log->actual_keys[a], sizeof log->actual_keys[a], "%s", requests[i].actuals[a].key);
        }
    }
    pthread_mutex_unlock(&spy->mutex);
    return rl_limiter_complete_batch(spy->inner, requests, count, statuses);
}

static inline void spy_destroy(rl_limiter *limiter) {
    spy_limiter *spy = (spy_limiter *)limiter;
    rl_limiter_destroy(spy->inner);
    pthread_mutex_destroy(&spy->mutex);
    free(spy);
}

static const rl_limiter_ops spy_ops = {
    .abi_version = RL_LIMITER_ABI_VERSION,
    .name = "spy",
    .reserve_batch = spy_reserve_batch,
    .complete_batch = spy_complete_batch,
    .destroy = spy_destroy,
};

/* Wraps inner (owned from now on: destroyed with the spy). */
static inline spy_limiter *spy_new(rl_limiter *inner) {
    spy_limiter *spy = calloc(1, sizeof *spy);
    if (spy == NULL) abort();
    spy->base.ops = &spy_ops;
    spy->inner = inner;
    pthread_mutex_init(&spy->mutex, NULL);
    return spy;
}

/* ---- the board: what the callbacks saw ---- */

typedef enum job_mode {
    MODE_OK_KNOWN = 0, /* succeeds, actual tokens known */
    MODE_OK_UNKNOWN,   /* succeeds, tokens unknown */
    MODE_FAIL_KNOWN,   /* fails, tokens known */
    MODE_FAIL_UNKNOWN, /* fails, tokens unknown */
    MODE_GATED,        /* succeeds once the board's gate opens */
} job_mode;

struct board;

typedef struct job_record {
    struct board *board;
    int index;
    int group;            /* the test's own tag (a provider) */
    job_mode mode;
    uint64_t actual_tokens;
    unsigned execute_sleep_us; /* how long the "model call" takes */
    atomic_int executes;
    atomic_int results;
    /* Written by the one result callback, read after it (under the board's mutex). */
    rl_job_outcome outcome;
    uint32_t attempts, denials, errors;
    rl_status status;
    char status_key[RL_KEY_MAX_LEN + 1];
    char lease_id[RL_ULID_TEXT_SIZE];
    char exec_lease_id[RL_ULID_TEXT_SIZE];
    rl_status complete_status;
} job_record;

typedef struct board {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool gate_open;
    int executing;                          /* gated jobs inside execute */
    int results;                            /* result callbacks so far */
    int outcomes[RL_JOB_OUTCOME_COUNT][4];  /* by outcome and group 0..3 */
    job_record jobs[HARNESS_MAX_JOBS];
} board;

static inline board *board_new(void) {
    board *b = calloc(1, sizeof *b);
    if (b == NULL) abort();
    pthread_mutex_init(&b->mutex, NULL);
    pthread_cond_init(&b->cond, NULL);
    for (int i = 0; i < HARNESS_MAX_JOBS; i++) {
        b->jobs[i].board = b;
        b->jobs[i].index = i;
    }
    return b;
}

static inline void board_free(board *b) {
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->mutex);
    free(b);
}

static inline rl_execute_result harness_execute(void *user_data, const rl_job_attempt *attempt) {
    job_record *job = user_data;
    board *b = job->board;
    atomic_fetch_add(&job->executes, 1);
    pthread_mutex_lock(&b->mutex);
    snprintf(job->exec_lease_id, sizeof job->exec_lease_id, "%s", attempt->lease_id);
    if (job->mode == MODE_GATED) {
        b->executing++;
        pthread_cond_broadcast(&b->cond);
        while (!b->gate_open) pthread_cond_wait(&b->cond, &b->mutex);
    }
    pthread_mutex_unlock(&b->mutex);
    if (job->execute_sleep_us > 0) {
        struct timespec pause = {0, (long)job->execute_sleep_us * 1000L};
        nanosleep(&pause, NULL);
    }
    rl_execute_result result = {.succeeded = true, .actual_tokens_known = true, .actual_tokens = job->actual_tokens};
    if (job->mode == MODE_OK_UNKNOWN || job->mode == MODE_FAIL_UNKNOWN) result.actual_tokens_known = false;
    if (job->mode == MODE_FAIL_KNOWN || job->mode == MODE_FAIL_UNKNOWN) result.succeeded = false;
    return result;
}

static inline void harness_on_result(void *user_data, const rl_job_report *report) {
    job_record *job = user_data;
    board *b = job->board;
    atomic_fetch_add(&job->results, 1);
    pthread_mutex_lock(&b->mutex);
    job->outcome = report->outcome;
    job->attempts = report->attempts;
    job->denials = report->denials;
    job->errors = report->errors;
    job->status = report->status;
    snprintf(job->status_key, sizeof job->status_key, "%s", report->status_key != NULL ? report->status_key : "");
    snprintf(job->lease_id, sizeof job->lease_id, "%s", report->lease_id);
    job->complete_status = report->complete_status;
    b->results++;
    b->outcomes[report->outcome][job->group & 3]++;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mutex);
}

/* Submits board job index for call; returns what submit said. */
static inline rl_status harness_submit_call(rl_scheduler *s, board *b, int index, int group, rl_llm_call call,
                                            job_mode mode, uint32_t max_attempts) {
    job_record *record = &b->jobs[index];
    record->group = group;
    record->mode = mode;
    if (record->actual_tokens == 0) record->actual_tokens = call.max_output_tokens / 2 + 1;
    char job_id[32];
    snprintf(job_id, sizeof job_id, "job-%d", index);
    rl_job job = {
        .job_id = job_id,
        .call = call,
        .max_attempts = max_attempts,
        .execute = harness_execute,
        .on_result = harness_on_result,
        .user_data = record,
    };
    char err[RL_SCHEDULER_ERR_SIZE];
    return rl_scheduler_submit(s, &job, err);
}

/* Submits board job index for provider:model; returns what submit said. */
static inline rl_status harness_submit(rl_scheduler *s, board *b, int index, int group, const char *provider,
                                       const char *model, job_mode mode, uint64_t max_output_tokens,
                                       uint32_t max_attempts) {
    rl_llm_call call = {.provider = provider, .model = model, .prompt_tokens = 1, .max_output_tokens = max_output_tokens};
    return harness_submit_call(s, b, index, group, call, mode, max_attempts);
}

static inline uint64_t harness_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits (a safety limit only, never a measured duration) until *counter >= target. */
static inline bool board_wait_at_least(board *b, const int *counter, int target, uint64_t limit_ms) {
    uint64_t until_ms = harness_now_ms() + limit_ms;
    pthread_mutex_lock(&b->mutex);
    while (*counter < target && harness_now_ms() < until_ms) {
        struct timespec ts = {.tv_sec = (time_t)((harness_now_ms() + 50) / 1000u),
                              .tv_nsec = (long)((harness_now_ms() + 50) % 1000u) * 1000000L};
        pthread_cond_timedwait(&b->cond, &b->mutex, &ts);
    }
    bool reached = *counter >= target;
    pthread_mutex_unlock(&b->mutex);
    return reached;
}

static inline void board_open_gate(board *b) {
    pthread_mutex_lock(&b->mutex);
    b->gate_open = true;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mutex);
}

#endif
