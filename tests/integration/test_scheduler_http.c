/* test_scheduler_http.c — the Scheduler over the http limiter, against a
 * ratelimiterd that is stopped mid-run and started again on the same port.
 *
 * With a limiter deadline longer than the outage, the limiter rides it out
 * with the same lease ids. With a deadline shorter than the outage, Reserves
 * end in RL_TIMEOUT and the scheduler retries them later under new lease ids.
 * Either way no job is lost (each gets exactly one result) and none runs
 * twice. The outage length is a scenario, never an asserted duration.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "ratelimiter/scheduler.h"
#include "support/daemon.h"
#include "support/scheduler_harness.h"

#define SAFETY_MS 120000u

static const char limits_json[] =
    "[{\"key\":\"global:llm:fast:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60,"
    "\"timeout_seconds\":0,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"},"
    "{\"key\":\"global:llm:fast:m:tpm\",\"kind\":\"rolling\",\"capacity\":1000000000,\"window_seconds\":60,"
    "\"timeout_seconds\":0,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"},"
    "{\"key\":\"global:llm:fast:m:concurrency\",\"kind\":\"concurrency\",\"capacity\":1000,\"window_seconds\":0,"
    "\"timeout_seconds\":300,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"}]\n";

static rl_limiter *open_limiter(uint16_t port, uint32_t deadline_ms) {
    char url[64], err[RL_LIMITER_ERR_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)port);
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = url;
    options.deadline_ms = deadline_ms;
    options.call_timeout_ms = 1000;
    options.backoff_initial_ms = 5;
    options.backoff_max_ms = 100;
    rl_limiter *limiter = NULL;
    if (rl_limiter_http_open(&options, &limiter, err) != RL_OK) fail_msg("http limiter: %s", err);
    return limiter;
}

/* Runs JOBS jobs through a scheduler on a daemon that goes away for
 * outage_ms once a tenth of them are done; returns the final stats. */
enum { JOBS = 600 };

static void run_with_restart(uint32_t limiter_deadline_ms, long outage_ms, board *b, spy_limiter **spy_out,
                             rl_scheduler_stats *stats) {
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    rl_test_daemon_write_registry(&d, limits_json);
    assert_true(rl_test_daemon_start(&d, NULL));
    uint16_t port = d.port;

    spy_limiter *spy = spy_new(open_limiter(port, limiter_deadline_ms));
    rl_scheduler_options options;
    rl_scheduler_options_default(&options);
    options.worker_count = 4;
    options.error_backoff_initial_ms = 20;
    options.error_backoff_max_ms = 200;
    rl_scheduler *s = NULL;
    char err[RL_SCHEDULER_ERR_SIZE];
    if (rl_scheduler_create(&spy->base, &options, &s, err) != RL_OK) fail_msg("scheduler: %s", err);
    for (int i = 0; i < JOBS; i++) {
        b->jobs[i].execute_sleep_us = 10000; /* so that the run spans the outage */
        assert_int_equal(harness_submit(s, b, i, 0, "fast", "m", MODE_OK_KNOWN, 20, 0), RL_OK);
    }

    assert_true(board_wait_at_least(b, &b->outcomes[RL_JOB_DONE][0], JOBS / 10, SAFETY_MS));
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    pthread_mutex_lock(&b->mutex);
    int done_at_stop = b->outcomes[RL_JOB_DONE][0];
    pthread_mutex_unlock(&b->mutex);
    assert_true(done_at_stop < JOBS); /* else the outage was not mid-run */
    rl_test_sleep_ms(outage_ms);
    char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned)port);
    const char *args[] = {"--listen", listen, NULL};
    assert_true(rl_test_daemon_start(&d, args));
    assert_int_equal(d.port, port);

    assert_int_equal(rl_scheduler_shutdown(s, SAFETY_MS, stats), 0);
    rl_scheduler_destroy(s);
    *spy_out = spy;
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

static void assert_each_job_once(const board *b, const spy_limiter *spy) {
    for (int i = 0; i < JOBS; i++) {
        assert_int_equal(atomic_load(&b->jobs[i].results), 1);
        assert_int_equal(atomic_load(&b->jobs[i].executes), 1);
        assert_int_equal(b->jobs[i].outcome, RL_JOB_DONE);
        const spy_job_log *log = &spy->jobs[i];
        assert_int_equal(log->completes, 1);
        for (int a = 1; a < log->reserves && a < HARNESS_MAX_ATTEMPTS; a++)
            assert_string_not_equal(log->lease_ids[a], log->lease_ids[a - 1]);
        /* The lease that ran is the last one reserved, and it was completed. */
        int last = log->reserves < HARNESS_MAX_ATTEMPTS ? log->reserves - 1 : HARNESS_MAX_ATTEMPTS - 1;
        if (log->reserves <= HARNESS_MAX_ATTEMPTS) assert_string_equal(b->jobs[i].exec_lease_id, log->lease_ids[last]);
        assert_string_equal(log->complete_lease_id, b->jobs[i].exec_lease_id);
    }
}

/* The limiter's deadline outlasts the outage: it retries each call with the
 * same lease id, and the scheduler sees no error at all. */
static void restart_within_the_limiter_deadline(void **state) {
    (void)state;
    board *b = board_new();
    spy_limiter *spy = NULL;
    rl_scheduler_stats stats;
    run_with_restart(30000, 300, b, &spy, &stats);
    assert_int_equal(stats.submitted, JOBS);
    assert_int_equal(stats.outcomes[RL_JOB_DONE], JOBS);
    assert_int_equal(stats.errors, 0);
    assert_each_job_once(b, spy);
    for (int i = 0; i < JOBS; i++) assert_int_equal(b->jobs[i].complete_status, RL_OK);
    rl_limiter_destroy(&spy->base);
    board_free(b);
}

/* The outage outlasts the limiter's deadline: Reserves time out, the
 * scheduler retries them under new lease ids, and still every job runs once.
 * (A Complete caught in the outage may report RL_TIMEOUT: the job ran and is
 * not run again; its lease expires on the daemon.) */
static void restart_beyond_the_limiter_deadline(void **state) {
    (void)state;
    board *b = board_new();
    spy_limiter *spy = NULL;
    rl_scheduler_stats stats;
    run_with_restart(200, 1500, b, &spy, &stats);
    assert_int_equal(stats.submitted, JOBS);
    assert_int_equal(stats.outcomes[RL_JOB_DONE], JOBS);
    assert_true(stats.errors >= 1);
    assert_each_job_once(b, spy);
    rl_limiter_destroy(&spy->base);
    board_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(restart_within_the_limiter_deadline),
        cmocka_unit_test(restart_beyond_the_limiter_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
