/* test_scheduler.c — the Scheduler on the local limiter: no
 * head-of-line blocking, a new lease id per attempt, Complete after every
 * execute with the callback's tokens, final rejections, shutdown with jobs
 * running and queued, many submitting threads, no job run twice.
 *
 * No assertion measures a duration: waits have generous safety limits only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/scheduler.h"
#include "support/scheduler_harness.h"

#define SAFETY_MS 60000u

/* Every work class of the tests: rpm, tpm and concurrency each. */
static const char limits_json[] =
    "["
    /* fast: room for everything */
    "{\"key\":\"global:llm:fast:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:fast:m:tpm\",\"kind\":\"rolling\",\"capacity\":1000000000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:fast:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":1000,\"timeout_seconds\":300},"
    "{\"key\":\"global:llm:fast2:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:fast2:m:tpm\",\"kind\":\"rolling\",\"capacity\":1000000000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:fast2:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":1000,\"timeout_seconds\":300},"
    /* slow: 100 tokens an hour, so one 60-token call exhausts it */
    "{\"key\":\"global:llm:slow:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:slow:m:tpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":3600},"
    "{\"key\":\"global:llm:slow:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":1000,\"timeout_seconds\":300},"
    /* tick: one request a second, so jobs are really denied and retried */
    "{\"key\":\"global:llm:tick:m:rpm\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1},"
    "{\"key\":\"global:llm:tick:m:tpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:tick:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":1000,\"timeout_seconds\":300},"
    /* small: a call above 10 tokens can never fit */
    "{\"key\":\"global:llm:small:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":60},"
    "{\"key\":\"global:llm:small:m:tpm\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60},"
    "{\"key\":\"global:llm:small:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":10,\"timeout_seconds\":300}"
    "]";

typedef struct fixture {
    char dir[64];
    char limits_path[128];
    spy_limiter *spy;
    board *board;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_sched_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->limits_path, sizeof f->limits_path, "%s/limits.json", f->dir);
    FILE *file = fopen(f->limits_path, "w");
    assert_non_null(file);
    fputs(limits_json, file);
    fclose(file);
    rl_limiter *local = NULL;
    char err[RL_LIMITER_ERR_SIZE];
    rl_status status = rl_limiter_local_open(f->limits_path, NULL, &local, err);
    if (status != RL_OK) fail_msg("local limiter: %s", err);
    f->spy = spy_new(local);
    f->board = board_new();
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_limiter_destroy(&f->spy->base);
    board_free(f->board);
    unlink(f->limits_path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static rl_scheduler *start(fixture *f, uint32_t workers) {
    rl_scheduler_options options;
    rl_scheduler_options_default(&options);
    options.worker_count = workers;
    options.error_backoff_initial_ms = 5;
    rl_scheduler *s = NULL;
    char err[RL_SCHEDULER_ERR_SIZE];
    if (rl_scheduler_create(&f->spy->base, &options, &s, err) != RL_OK) fail_msg("create: %s", err);
    return s;
}

static void assert_one_result_each(const board *b, int count) {
    for (int i = 0; i < count; i++) {
        assert_int_equal(atomic_load(&b->jobs[i].results), 1);
        assert_true(atomic_load(&b->jobs[i].executes) <= 1);
    }
}

/* Provider slow's TPM is exhausted by its first job; the other nine wait an
 * hour. Submitted after them, every fast job still finishes while the slow
 * ones stay blocked: no fast job waited behind a slow one. */
static void test_head_of_line(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 2);
    enum { SLOW = 10, FAST = 200 };
    for (int i = 0; i < SLOW; i++) {
        b->jobs[i].actual_tokens = 60; /* all it reserved: the 40 left never fit another */
        assert_int_equal(harness_submit(s, b, i, 0, "slow", "m", MODE_OK_KNOWN, 59, 0), RL_OK);
    }
    for (int i = SLOW; i < SLOW + FAST; i++)
        assert_int_equal(harness_submit(s, b, i, 1, "fast", "m", MODE_OK_KNOWN, 100, 0), RL_OK);

    assert_true(board_wait_at_least(b, &b->outcomes[RL_JOB_DONE][1], FAST, SAFETY_MS));
    assert_true(board_wait_at_least(b, &b->outcomes[RL_JOB_DONE][0], 1, SAFETY_MS));
    rl_scheduler_stats stats;
    rl_scheduler_stats_get(s, &stats);
    for (int polls = 0; stats.blocked < SLOW - 1 && polls < 6000; polls++) { /* a safety limit, not a timing */
        usleep(10000);
        rl_scheduler_stats_get(s, &stats);
    }
    assert_int_equal(stats.blocked, SLOW - 1); /* the slow ones wait; none ran */
    assert_int_equal(stats.work_classes, 2);
    pthread_mutex_lock(&b->mutex);
    assert_int_equal(b->outcomes[RL_JOB_DONE][0], 1);
    pthread_mutex_unlock(&b->mutex);

    uint64_t not_run = rl_scheduler_shutdown(s, 0, &stats);
    assert_int_equal(not_run, SLOW - 1);
    assert_int_equal(b->outcomes[RL_JOB_NOT_RUN][0], SLOW - 1);
    assert_int_equal(stats.outcomes[RL_JOB_DONE], FAST + 1);
    assert_one_result_each(b, SLOW + FAST);
    for (int i = 0; i < SLOW; i++) {
        if (b->jobs[i].outcome != RL_JOB_NOT_RUN) continue;
        assert_int_equal(atomic_load(&b->jobs[i].executes), 0);
        assert_true(b->jobs[i].denials >= 1);
    }
    rl_scheduler_destroy(s);
}

/* Every denied attempt is retried under a new lease id; Complete uses the
 * lease of the allowed attempt. */
static void test_denied_job_gets_new_lease_id(void **state) {
    fixture *f = *state;
    board *b = f->board;
    f->spy->fake_denials_per_job = 2;
    rl_scheduler *s = start(f, 2);
    enum { JOBS = 5 };
    for (int i = 0; i < JOBS; i++) assert_int_equal(harness_submit(s, b, i, 0, "fast", "m", MODE_OK_KNOWN, 10, 0), RL_OK);
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_one_result_each(b, JOBS);
    for (int i = 0; i < JOBS; i++) {
        const spy_job_log *log = &f->spy->jobs[i];
        assert_int_equal(b->jobs[i].outcome, RL_JOB_DONE);
        assert_int_equal(b->jobs[i].attempts, 3);
        assert_int_equal(b->jobs[i].denials, 2);
        assert_int_equal(log->reserves, 3);
        for (int a = 0; a < 3; a++) {
            assert_true(rl_ulid_is_valid(log->lease_ids[a], strlen(log->lease_ids[a])));
            for (int c = 0; c < a; c++) assert_string_not_equal(log->lease_ids[a], log->lease_ids[c]);
        }
        assert_int_equal(log->completes, 1);
        assert_string_equal(log->complete_lease_id, log->lease_ids[2]);
        assert_string_equal(b->jobs[i].exec_lease_id, log->lease_ids[2]);
        assert_string_equal(b->jobs[i].lease_id, log->lease_ids[2]);
    }
    rl_scheduler_destroy(s);
}

/* A real deny from the memory backend (one request a second): the job waits
 * out retry_after and gets through under another lease id. */
static void test_real_denial_is_retried(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 1);
    enum { JOBS = 3 };
    for (int i = 0; i < JOBS; i++) assert_int_equal(harness_submit(s, b, i, 0, "tick", "m", MODE_OK_KNOWN, 10, 0), RL_OK);
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_one_result_each(b, JOBS);
    int retried = 0;
    for (int i = 0; i < JOBS; i++) {
        assert_int_equal(b->jobs[i].outcome, RL_JOB_DONE);
        const spy_job_log *log = &f->spy->jobs[i];
        if (log->reserves > 1) retried++;
        for (int a = 1; a < log->reserves && a < HARNESS_MAX_ATTEMPTS; a++)
            assert_string_not_equal(log->lease_ids[a], log->lease_ids[a - 1]);
    }
    assert_true(retried >= 1); /* three jobs cannot all fit in one second's one request */
    rl_scheduler_destroy(s);
}

/* Complete runs after every execute: with the tokens the callback returned,
 * with no actuals when it did not know them, and when it failed. */
static void test_complete_always_runs_with_actuals(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 2);
    const job_mode modes[4] = {MODE_OK_KNOWN, MODE_OK_UNKNOWN, MODE_FAIL_KNOWN, MODE_FAIL_UNKNOWN};
    for (int i = 0; i < 4; i++) {
        b->jobs[i].actual_tokens = 40 + (uint64_t)i;
        assert_int_equal(harness_submit(s, b, i, 0, "fast", "m", modes[i], 100, 0), RL_OK);
    }
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_one_result_each(b, 4);
    const rl_job_outcome want[4] = {RL_JOB_DONE, RL_JOB_DONE, RL_JOB_EXECUTE_FAILED, RL_JOB_EXECUTE_FAILED};
    for (int i = 0; i < 4; i++) {
        const spy_job_log *log = &f->spy->jobs[i];
        assert_int_equal(b->jobs[i].outcome, want[i]);
        assert_int_equal(b->jobs[i].complete_status, RL_OK);
        assert_int_equal(log->completes, 1);
        assert_string_equal(log->complete_lease_id, log->lease_ids[0]);
        bool known = modes[i] == MODE_OK_KNOWN || modes[i] == MODE_FAIL_KNOWN;
        if (known) {
            assert_int_equal(log->actual_count, 1);
            assert_string_equal(log->actual_keys[0], "global:llm:fast:m:tpm");
            assert_int_equal(log->actual_amounts[0], 40 + (uint64_t)i);
        } else {
            assert_int_equal(log->actual_count, 0);
        }
    }
    rl_scheduler_destroy(s);
}

/* A job of the tenant's (its daily budget reserved, required). */
static rl_status submit_for_tenant(rl_scheduler *s, board *b, int index, const char *tenant) {
    rl_llm_call call = {.tenant_id = tenant, .provider = "fast", .model = "m", .prompt_tokens = 1,
                        .max_output_tokens = 5, .want_daily_budget = true};
    return harness_submit_call(s, b, index, 0, call, MODE_OK_KNOWN, 0);
}

/* exceeds_capacity and unknown_limit_key are final: one attempt, no
 * execute. A tenant without a budget is the unknown key, and so is a model
 * without an rpm (llm.h); a model said to have no limits of its own is not
 * limited. */
static void test_final_rejections(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 2);
    assert_int_equal(harness_submit(s, b, 0, 0, "small", "m", MODE_OK_KNOWN, 50, 0), RL_OK);
    assert_int_equal(submit_for_tenant(s, b, 1, "nobody"), RL_OK);
    assert_int_equal(harness_submit(s, b, 2, 0, "nobody", "m", MODE_OK_KNOWN, 5, 0), RL_OK);
    rl_llm_call local = {.provider = "nobody", .model = "m", .prompt_tokens = 1, .max_output_tokens = 5,
                         .model_limits_optional = true};
    assert_int_equal(harness_submit_call(s, b, 3, 0, local, MODE_OK_KNOWN, 0), RL_OK);
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_one_result_each(b, 4);
    assert_int_equal(b->jobs[0].outcome, RL_JOB_REJECTED);
    assert_int_equal(b->jobs[0].status, RL_EXCEEDS_CAPACITY);
    assert_string_equal(b->jobs[0].status_key, "global:llm:small:m:tpm");
    assert_int_equal(b->jobs[1].outcome, RL_JOB_REJECTED);
    assert_int_equal(b->jobs[1].status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(b->jobs[1].status_key, "tenant:nobody:llm:daily_tokens");
    assert_int_equal(b->jobs[2].outcome, RL_JOB_REJECTED);
    assert_int_equal(b->jobs[2].status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(b->jobs[2].status_key, "global:llm:nobody:m:rpm");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(b->jobs[i].attempts, 1);
        assert_int_equal(atomic_load(&b->jobs[i].executes), 0);
        assert_int_equal(f->spy->jobs[i].completes, 0);
    }
    assert_int_equal(b->jobs[3].outcome, RL_JOB_DONE);
    assert_int_equal(b->jobs[3].attempts, 1);
    rl_scheduler_destroy(s);
}

/* RL_TIMEOUT (unknown outcome, the limiter gave up retrying the same id): a
 * failed attempt, retried later under a new lease id. */
static void test_timeout_is_retried_with_new_id(void **state) {
    fixture *f = *state;
    board *b = f->board;
    f->spy->fake_timeouts_per_job = 2;
    rl_scheduler *s = start(f, 1);
    assert_int_equal(harness_submit(s, b, 0, 0, "fast", "m", MODE_OK_KNOWN, 10, 0), RL_OK);
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_one_result_each(b, 1);
    assert_int_equal(b->jobs[0].outcome, RL_JOB_DONE);
    assert_int_equal(b->jobs[0].attempts, 3);
    assert_int_equal(b->jobs[0].errors, 2);
    const spy_job_log *log = &f->spy->jobs[0];
    assert_string_not_equal(log->lease_ids[0], log->lease_ids[1]);
    assert_string_not_equal(log->lease_ids[1], log->lease_ids[2]);
    assert_string_equal(log->complete_lease_id, log->lease_ids[2]);
    rl_scheduler_destroy(s);
}

static void test_max_attempts(void **state) {
    fixture *f = *state;
    board *b = f->board;
    f->spy->fake_denials_per_job = 1000;
    rl_scheduler *s = start(f, 2);
    assert_int_equal(harness_submit(s, b, 0, 0, "fast", "m", MODE_OK_KNOWN, 10, 3), RL_OK);
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, NULL), 0);
    assert_int_equal(atomic_load(&b->jobs[0].results), 1);
    assert_int_equal(b->jobs[0].outcome, RL_JOB_GAVE_UP);
    assert_int_equal(b->jobs[0].attempts, 3);
    assert_int_equal(f->spy->jobs[0].reserves, 3);
    assert_int_equal(atomic_load(&b->jobs[0].executes), 0);
    rl_scheduler_destroy(s);
}

typedef struct shutdown_call {
    rl_scheduler *scheduler;
    uint32_t deadline_ms;
    uint64_t not_run;
    rl_scheduler_stats stats;
} shutdown_call;

static void *shutdown_thread(void *arg) {
    shutdown_call *call = arg;
    call->not_run = rl_scheduler_shutdown(call->scheduler, call->deadline_ms, &call->stats);
    return NULL;
}

/* Two jobs inside execute, eight queued: shutdown reports the eight at once,
 * waits for the two, and every job gets exactly one result. */
static void test_shutdown_with_jobs_running_and_queued(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 2);
    enum { JOBS = 10 };
    for (int i = 0; i < JOBS; i++) assert_int_equal(harness_submit(s, b, i, 0, "fast", "m", MODE_GATED, 10, 0), RL_OK);
    assert_true(board_wait_at_least(b, &b->executing, 2, SAFETY_MS));

    shutdown_call call = {.scheduler = s, .deadline_ms = 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, shutdown_thread, &call), 0);
    assert_true(board_wait_at_least(b, &b->outcomes[RL_JOB_NOT_RUN][0], JOBS - 2, SAFETY_MS));
    char err[RL_SCHEDULER_ERR_SIZE];
    rl_job late = {.call = {.provider = "fast", .model = "m", .max_output_tokens = 1}, .execute = harness_execute};
    assert_int_equal(rl_scheduler_submit(s, &late, err), RL_INVALID_REQUEST); /* no longer accepting */
    board_open_gate(b);
    pthread_join(thread, NULL);

    assert_int_equal(call.not_run, JOBS - 2);
    assert_int_equal(call.stats.outcomes[RL_JOB_DONE], 2);
    assert_int_equal(call.stats.running, 0);
    assert_int_equal(call.stats.ready + call.stats.blocked, 0);
    assert_one_result_each(b, JOBS);
    int executed = 0;
    for (int i = 0; i < JOBS; i++) {
        executed += atomic_load(&b->jobs[i].executes);
        if (b->jobs[i].outcome == RL_JOB_DONE) assert_int_equal(f->spy->jobs[i].completes, 1);
        else assert_int_equal(f->spy->jobs[i].reserves, 0);
    }
    assert_int_equal(executed, 2);
    assert_int_equal(rl_scheduler_shutdown(s, 0, NULL), 0); /* a second call is a no-op */
    rl_scheduler_destroy(s);
}

/* With time to spare, shutdown drains the queues: nothing is left unrun. */
static void test_shutdown_drains(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 3);
    enum { JOBS = 300 };
    for (int i = 0; i < JOBS; i++)
        assert_int_equal(harness_submit(s, b, i, i % 2, i % 2 ? "fast2" : "fast", "m", MODE_OK_KNOWN, 10, 0), RL_OK);
    rl_scheduler_stats stats;
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, &stats), 0);
    assert_int_equal(stats.submitted, JOBS);
    assert_int_equal(stats.outcomes[RL_JOB_DONE], JOBS);
    assert_one_result_each(b, JOBS);
    rl_scheduler_destroy(s);
}

typedef struct submitter {
    rl_scheduler *scheduler;
    board *board;
    int first, count;
} submitter;

static void *submit_thread(void *arg) {
    submitter *sub = arg;
    for (int i = sub->first; i < sub->first + sub->count; i++) {
        const char *provider = i % 2 == 0 ? "fast" : "fast2";
        job_mode mode = (job_mode)(i % 4); /* the four execute modes */
        if (harness_submit(sub->scheduler, sub->board, i, i % 2, provider, "m", mode, 20, 0) != RL_OK) abort();
    }
    return NULL;
}

static int compare_ids(const void *a, const void *b) { return strcmp(a, b); }

/* Eight threads submit 2000 jobs over two work classes while workers run
 * them, some denied first: each job runs at most once (exactly once here),
 * gets exactly one result, and no lease id is ever used twice. */
static void test_many_submitters_no_job_twice(void **state) {
    fixture *f = *state;
    board *b = f->board;
    f->spy->fake_denials_per_job = 1;
    rl_scheduler *s = start(f, 4);
    enum { THREADS = 8, PER_THREAD = 250, JOBS = THREADS * PER_THREAD };
    pthread_t threads[THREADS];
    submitter subs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        subs[t] = (submitter){.scheduler = s, .board = b, .first = t * PER_THREAD, .count = PER_THREAD};
        assert_int_equal(pthread_create(&threads[t], NULL, submit_thread, &subs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    rl_scheduler_stats stats;
    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, &stats), 0);
    assert_int_equal(stats.submitted, JOBS);
    assert_one_result_each(b, JOBS);
    for (int i = 0; i < JOBS; i++) {
        assert_int_equal(atomic_load(&b->jobs[i].executes), 1);
        assert_int_equal(f->spy->jobs[i].completes, 1);
        assert_int_equal(b->jobs[i].outcome, (i % 4) < 2 ? RL_JOB_DONE : RL_JOB_EXECUTE_FAILED);
    }
    /* All lease ids distinct: sort them and compare neighbours. */
    size_t total = 0;
    for (int i = 0; i < JOBS; i++) total += (size_t)f->spy->jobs[i].reserves;
    char (*ids)[RL_ULID_TEXT_SIZE] = calloc(total, RL_ULID_TEXT_SIZE);
    size_t n = 0;
    for (int i = 0; i < JOBS; i++)
        for (int a = 0; a < f->spy->jobs[i].reserves && a < HARNESS_MAX_ATTEMPTS; a++)
            memcpy(ids[n++], f->spy->jobs[i].lease_ids[a], RL_ULID_TEXT_SIZE);
    qsort(ids, n, RL_ULID_TEXT_SIZE, compare_ids);
    for (size_t i = 1; i < n; i++) assert_string_not_equal(ids[i - 1], ids[i]);
    free(ids);
    rl_scheduler_destroy(s);
}

static rl_execute_result never_called(void *user_data, const rl_job_attempt *attempt) {
    (void)user_data;
    (void)attempt;
    fail_msg("execute of a refused job");
    return (rl_execute_result){0};
}

static void test_submit_and_create_refusals(void **state) {
    fixture *f = *state;
    char err[RL_SCHEDULER_ERR_SIZE];
    rl_scheduler *s = NULL;
    rl_scheduler_options options;
    rl_scheduler_options_default(&options);
    options.worker_count = 0;
    assert_int_equal(rl_scheduler_create(&f->spy->base, &options, &s, err), RL_INVALID_REQUEST);
    assert_null(s);
    assert_int_equal(rl_scheduler_create(NULL, NULL, &s, err), RL_INVALID_REQUEST);

    s = start(f, 1);
    rl_job job = {.call = {.provider = "fast", .model = "m", .max_output_tokens = 1}};
    assert_int_equal(rl_scheduler_submit(s, &job, err), RL_INVALID_REQUEST); /* no execute */
    job.execute = never_called;
    job.call.provider = "has space";
    assert_int_equal(rl_scheduler_submit(s, &job, err), RL_INVALID_REQUEST);
    job.call.provider = "fast";
    job.call.max_output_tokens = 0; /* a bound of 0 */
    assert_int_equal(rl_scheduler_submit(s, &job, NULL), RL_INVALID_REQUEST);
    char long_id[RL_JOB_ID_MAX_LEN + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    job.call.max_output_tokens = 1;
    job.job_id = long_id;
    assert_int_equal(rl_scheduler_submit(s, &job, err), RL_INVALID_REQUEST);
    rl_scheduler_stats stats;
    assert_int_equal(rl_scheduler_shutdown(s, 0, &stats), 0);
    assert_int_equal(stats.submitted, 0);
    job.job_id = NULL;
    assert_int_equal(rl_scheduler_submit(s, &job, err), RL_INVALID_REQUEST); /* after shutdown */
    rl_scheduler_destroy(s);
    rl_scheduler_destroy(NULL);
}

/* Destroy without shutdown: queued jobs are still reported, nothing leaks. */
static void test_destroy_reports_queued(void **state) {
    fixture *f = *state;
    board *b = f->board;
    rl_scheduler *s = start(f, 1);
    for (int i = 0; i < 5; i++) assert_int_equal(harness_submit(s, b, i, 0, "slow", "m", MODE_OK_KNOWN, 59, 0), RL_OK);
    rl_scheduler_destroy(s);
    assert_one_result_each(b, 5);
    assert_int_equal(b->results, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_head_of_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_denied_job_gets_new_lease_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_denial_is_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_complete_always_runs_with_actuals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_final_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_is_retried_with_new_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_attempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_with_jobs_running_and_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_drains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_submitters_no_job_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_and_create_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_reports_queued, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
