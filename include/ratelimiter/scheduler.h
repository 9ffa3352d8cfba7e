/* ratelimiter/scheduler.h — a client-side job scheduler without head-of-line
 * blocking (docs/library.md).
 *
 * Jobs are LLM calls. Each (provider, model) pair is a work class with its own
 * queue of ready jobs and of blocked jobs ordered by not_before_ms. N worker
 * threads take jobs round-robin from the queues that have ready work:
 *
 *   1. a new lease id (rl_ulid_new) for this attempt, then Reserve;
 *   2. allowed: run the job's execute callback, then Complete with the actual
 *      tokens it returned (empty actuals when it does not know them).
 *      Complete always runs, also when the callback failed;
 *   3. denied (or limit_decreasing): not_before_ms = now + retry_after_ms +
 *      jitter, the job moves to its queue's blocked list and the worker moves
 *      on, so a blocked work class never holds up another one;
 *   4. exceeds_capacity, unknown_limit_key, invalid_request: final, the job
 *      fails without another attempt (retrying cannot help).
 *
 * A Reserve that ends in an operational error (RL_TIMEOUT, RL_BACKEND_ERROR,
 * RL_IO_ERROR, RL_NO_MEMORY) has an unknown outcome. The limiter itself has
 * already retried it with the same lease id until its deadline (idempotent);
 * the scheduler then counts a failed attempt and tries again later, with
 * backoff, under a NEW lease id. The old lease may have been reserved after
 * all: it is never completed and holds its amounts until it expires (its
 * window, or the concurrency timeout). That is the price of not waiting
 * forever; the job itself still runs at most once.
 *
 * Every job submitted with RL_OK gets exactly one result callback, with one of
 * the outcomes below, before rl_scheduler_shutdown returns.
 *
 * Callbacks (execute, on_result) run on a worker thread, or for NOT_RUN jobs
 * on the thread that calls rl_scheduler_shutdown, never with a scheduler lock
 * held: they may call rl_scheduler_submit and rl_scheduler_stats, not
 * rl_scheduler_shutdown or rl_scheduler_destroy.
 */
#ifndef RATELIMITER_SCHEDULER_H
#define RATELIMITER_SCHEDULER_H

#include "ratelimiter/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/limiter.h"
#include "ratelimiter/llm.h"
#include "ratelimiter/ulid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_SCHEDULER_MAX_WORKERS 256u
#define RL_SCHEDULER_ERR_SIZE 256

typedef struct rl_scheduler rl_scheduler;

/* What the execute callback reports about the model call it made. */
typedef struct rl_execute_result {
    bool succeeded;           /* false: the call failed (the job ends RL_JOB_EXECUTE_FAILED) */
    bool actual_tokens_known; /* false: Complete sends empty actuals and the reservation is charged */
    uint64_t actual_tokens;   /* used when known; clamped to RL_AMOUNT_MAX */
} rl_execute_result;

/* The attempt a job's execute callback runs under. Everything points into the
 * scheduler's copy of the job: valid for the duration of the callback. */
typedef struct rl_job_attempt {
    const char *job_id;        /* "" when the job had none */
    const char *lease_id;      /* the lease this attempt holds */
    uint32_t attempt;          /* 1 for the first Reserve of the job */
    const rl_llm_call *call;   /* the job's call, strings copied at submit */
    uint64_t token_upper_bound;/* tokens reserved for the call: prompt + max output */
} rl_job_attempt;

/* Runs the model call. Called at most once per job, on a worker thread,
 * after a Reserve was allowed. It should bound its own duration:
 * rl_scheduler_shutdown waits for calls in flight. */
typedef rl_execute_result (*rl_job_execute_fn)(void *user_data, const rl_job_attempt *attempt);

typedef enum rl_job_outcome {
    RL_JOB_DONE = 0,           /* reserved, executed with success, completed */
    RL_JOB_EXECUTE_FAILED = 1, /* reserved, execute reported failure, completed */
    RL_JOB_REJECTED = 2,       /* a final Reserve result (status says which): never executed */
    RL_JOB_GAVE_UP = 3,        /* max_attempts Reserves without an allow: never executed */
    RL_JOB_NOT_RUN = 4,        /* still queued when shutdown stopped the scheduler */
} rl_job_outcome;

#define RL_JOB_OUTCOME_COUNT 5

/* "done", "execute_failed", "rejected", "gave_up", "not_run". Thread-safe. */
RL_API const char *rl_job_outcome_name(rl_job_outcome outcome);

/* The final word on one job. Pointers are valid during the callback only. */
typedef struct rl_job_report {
    const char *job_id;        /* "" when the job had none */
    rl_job_outcome outcome;
    uint32_t attempts;         /* Reserve calls made (0 if it never got one) */
    uint32_t denials;          /* of which denied (allowed=false) */
    uint32_t errors;           /* of which ended in an operational error */
    rl_status status;          /* the last Reserve's status: why REJECTED, or RL_OK */
    const char *status_key;    /* the key status names, or NULL */
    const char *lease_id;      /* the last attempt's lease id, "" if none */
    rl_execute_result execute; /* DONE / EXECUTE_FAILED only */
    rl_status complete_status; /* Complete's status (DONE / EXECUTE_FAILED), else RL_OK */
} rl_job_report;

typedef void (*rl_job_result_fn)(void *user_data, const rl_job_report *report);

/* A job to submit. The scheduler copies every string (the prompt included)
 * at submit: the caller may free or reuse them as soon as submit returns. */
typedef struct rl_job {
    const char *job_id;        /* optional (NULL), up to RL_JOB_ID_MAX_LEN bytes, logs only */
    rl_llm_call call;          /* provider and model name the work class */
    uint32_t max_attempts;     /* Reserve attempts before RL_JOB_GAVE_UP; 0: no limit */
    rl_job_execute_fn execute; /* required */
    rl_job_result_fn on_result;/* optional */
    void *user_data;           /* passed to both callbacks, never touched */
} rl_job;

typedef struct rl_scheduler_options {
    uint32_t worker_count;          /* threads, 1..RL_SCHEDULER_MAX_WORKERS; default 4 */
    uint32_t jitter_percent;        /* a deny waits up to this % of retry_after more; default 10 */
    uint32_t jitter_max_ms;         /* and at most this much more; default 1000 */
    uint32_t min_retry_ms;          /* floor of a deny's wait (retry_after 0); default 10 */
    uint32_t error_backoff_initial_ms; /* wait after an operational error, doubled per error; default 100 */
    uint32_t error_backoff_max_ms;  /* default 5000 */
    uint32_t max_jobs;              /* jobs held (queued, blocked, running); default 1000000 */
    uint32_t max_work_classes;      /* distinct (provider, model) pairs; default 1024 */
} rl_scheduler_options;

/* Fills options with the defaults above. Pure, thread-safe. */
RL_API void rl_scheduler_options_default(rl_scheduler_options *options);

/* Starts a scheduler and its worker threads over limiter (borrowed: it must
 * outlive the scheduler; every worker calls it concurrently, which limiters
 * allow). options may be NULL for the defaults. On success *out is owned by
 * the caller (free with rl_scheduler_destroy). On error *out is NULL, err says
 * why, and the status is RL_INVALID_REQUEST (bad options) or RL_NO_MEMORY (no
 * memory or no threads). */
RL_API rl_status rl_scheduler_create(rl_limiter *limiter, const rl_scheduler_options *options,
                                     rl_scheduler **out, char err[RL_SCHEDULER_ERR_SIZE]);

/* Queues a job (copied). Thread-safe, callable from any thread including the
 * callbacks. Returns RL_OK (the job will get exactly one result callback),
 * RL_INVALID_REQUEST (no execute, a job_id too long, a call whose
 * requirements cannot be built, or the scheduler is shutting down) or
 * RL_NO_MEMORY (out of memory, max_jobs or max_work_classes reached); on an
 * error the job was not taken, no callback will run, and err (may be NULL)
 * says why. */
RL_API rl_status rl_scheduler_submit(rl_scheduler *scheduler, const rl_job *job, char err[RL_SCHEDULER_ERR_SIZE]);

/* A snapshot of the scheduler's counters. Thread-safe. */
typedef struct rl_scheduler_stats {
    uint64_t submitted;                        /* jobs taken by submit */
    uint64_t ready;                            /* queued, runnable now */
    uint64_t blocked;                          /* queued, waiting for their not_before_ms */
    uint64_t running;                          /* taken by a worker (Reserve, execute or Complete) */
    uint64_t attempts;                         /* Reserve calls */
    uint64_t denials;                          /* of which denied */
    uint64_t errors;                           /* of which ended in an operational error */
    uint64_t outcomes[RL_JOB_OUTCOME_COUNT];   /* finished jobs by outcome */
    uint64_t work_classes;                     /* queues created */
} rl_scheduler_stats;

RL_API void rl_scheduler_stats_get(rl_scheduler *scheduler, rl_scheduler_stats *out);

/* Stops the scheduler. Submit fails from now on. Workers keep running queued
 * jobs (blocked ones too, as they come due) until none is left or deadline_ms
 * has passed (0: stop at once). Then every job still queued gets its
 * RL_JOB_NOT_RUN result callback on this thread; jobs already running finish
 * (execute, Complete, result callback; a job denied after this point is
 * reported RL_JOB_NOT_RUN by its worker) and the workers are joined.
 * Returns how many jobs were reported RL_JOB_NOT_RUN; *stats (may be NULL)
 * receives the final counters. Waits longer than deadline_ms only for execute
 * callbacks and limiter calls in flight, which bound their own time. Call it
 * from one thread, once; later calls return 0 at once. Not from a callback. */
RL_API uint64_t rl_scheduler_shutdown(rl_scheduler *scheduler, uint32_t deadline_ms, rl_scheduler_stats *stats);

/* Frees the scheduler, after rl_scheduler_shutdown(scheduler, 0, NULL) if it
 * was not shut down yet. NULL is allowed. Not from a callback; no other call
 * may be in flight or follow. */
RL_API void rl_scheduler_destroy(rl_scheduler *scheduler);

#ifdef __cplusplus
}
#endif
#endif
