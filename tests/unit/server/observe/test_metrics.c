/* test_metrics.c — the counters of server/observe/metrics.h on a real
 * service (memory backend, registry in a temp directory): answers counted
 * by two loops at once add up at scrape time, decisions by result,
 * latencies into their buckets, the fan-out reaches the metrics, the
 * limits' gauges come from the collector, bounded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/observe/observe.h"
#include "support/memory_service.h"
#include "support/metrics_page.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    rl_service *service;
    rl_metrics *metrics;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->service = rl_test_memory_service_open("rl_test_metrics", f->dir, f->path);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_metrics_destroy(f->metrics);
    rl_service_close(f->service);
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

static char *scrape(rl_metrics *metrics) {
    rl_buf out;
    rl__buf_init(&out);
    rl_metrics_write(metrics, &out);
    assert_false(out.failed);
    return out.data; /* the caller frees */
}

#define sample rl_test_metrics_sample

#define ANSWERS_PER_LOOP 20000u

typedef struct loop_arg {
    rl_observe *observe;
    uint32_t loop;
} loop_arg;

/* A loop answering: a single reserve allowed, a batch of three with one
 * denied and one unknown key, a 404 on no route. */
static void *answer_loop(void *arg) {
    loop_arg *a = arg;
    rl_api_outcome reserve = {.endpoint = RL_API_RESERVE, .http_status = 200, .items = 1};
    reserve.results[RL_API_RESULT_ALLOWED] = 1;
    rl_api_outcome batch = {.endpoint = RL_API_RESERVE_BATCH, .http_status = 200, .items = 3};
    batch.results[RL_API_RESULT_ALLOWED] = 1;
    batch.results[RL_API_RESULT_DENIED_CAPACITY] = 1;
    batch.results[RL_API_RESULT_UNKNOWN_KEY] = 1;
    rl_api_outcome unrouted = {.endpoint = RL_API_UNROUTED, .http_status = 404};
    for (uint32_t i = 0; i < ANSWERS_PER_LOOP; i++) {
        rl_observe_answered(a->observe, a->loop, &reserve, 40);      /* <= 50 us */
        rl_observe_answered(a->observe, a->loop, &batch, 3000000);   /* above every bound */
        rl_observe_answered(a->observe, a->loop, &unrouted, 1000);   /* <= 1 ms */
    }
    return NULL;
}

static void test_two_loops_add_up(void **state) {
    fixture *f = *state;
    rl_metrics_options options = {.loops = 2, .max_limit_series = 10, .limits_refresh_ms = 100};
    f->metrics = rl_metrics_create(&options, f->service);
    assert_non_null(f->metrics);
    rl_observe observe = {.metrics = f->metrics};
    pthread_t threads[2];
    loop_arg args[2] = {{&observe, 0}, {&observe, 1}};
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&threads[i], NULL, answer_loop, &args[i]), 0);
    char *during = scrape(f->metrics); /* while they count: still a valid page */
    assert_non_null(strstr(during, "# TYPE ratelimiter_decisions_total counter"));
    free(during);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);

    char *text = scrape(f->metrics);
    const double n = 2.0 * ANSWERS_PER_LOOP;
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"allowed\"}") == n);
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"reserve_batch\",result=\"allowed\"}") == n);
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"reserve_batch\",result=\"denied_capacity\"}") ==
                n);
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"reserve_batch\",result=\"unknown_key\"}") == n);
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"denied_decreasing\"}") == 0);
    /* A complete is never allowed or denied: no such series. */
    assert_true(sample(text, "ratelimiter_decisions_total{endpoint=\"complete\",result=\"allowed\"}") < 0);
    assert_true(sample(text, "ratelimiter_http_responses_total{endpoint=\"unrouted\",code=\"404\"}") == n);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"reserve\",le=\"0.000025\"}") ==
                0);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"reserve\",le=\"0.00005\"}") ==
                n);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"reserve_batch\",le=\"2.5\"}") ==
                0);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"reserve_batch\",le=\"+Inf\"}") ==
                n);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_sum{endpoint=\"reserve_batch\"}") == n * 3.0);
    assert_true(sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"unrouted\",le=\"0.001\"}") ==
                n);
    /* Without a server, no connection series; the memory backend here
     * keeps no journal (no path given): no journal series either. */
    assert_true(sample(text, "ratelimiter_connections_open") < 0);
    assert_true(sample(text, "ratelimiter_journal_written_bytes_total") < 0);
    assert_true(sample(text, "ratelimiter_backend_info{backend=\"memory\"}") == 1);
    free(text);
}

/* A loop number past the count is ignored, not written out of bounds. */
static void test_unknown_loop_is_ignored(void **state) {
    fixture *f = *state;
    rl_metrics_options options = {.loops = 1, .max_limit_series = 10, .limits_refresh_ms = 100};
    f->metrics = rl_metrics_create(&options, f->service);
    rl_api_outcome healthz = {.endpoint = RL_API_HEALTHZ, .http_status = 200};
    rl_metrics_answered(f->metrics, 1, &healthz, 5);
    rl_metrics_answered(f->metrics, 0, &healthz, 5);
    char *text = scrape(f->metrics);
    assert_true(sample(text, "ratelimiter_http_responses_total{endpoint=\"healthz\",code=\"200\"}") == 1);
    free(text);
}

static void put(rl_service *service, const char *key, uint64_t capacity) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = RL_KIND_CONCURRENCY;
    def.capacity = capacity;
    def.timeout_seconds = 30;
    rl_limit_status status;
    char err[256];
    if (rl_service_put_limit(service, &def, &status, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

/* The collector's first read happens at start; later ones every
 * limits_refresh_ms; at most max_limit_series limits, in key order. */
static void test_limits_are_collected_and_bounded(void **state) {
    fixture *f = *state;
    put(f->service, "k:b", 2);
    put(f->service, "k:a", 1);
    rl_metrics_options options = {.loops = 1, .max_limit_series = 1, .limits_refresh_ms = 100};
    f->metrics = rl_metrics_create(&options, f->service);
    char err[256];
    assert_true(rl_metrics_start(f->metrics, err, sizeof err));
    char *text = scrape(f->metrics);
    assert_true(sample(text, "ratelimiter_limits") == 2);
    assert_true(sample(text, "ratelimiter_limit_series_omitted") == 1);
    assert_true(sample(text, "ratelimiter_limit_capacity{key=\"k:a\",kind=\"concurrency\",unit=\"\"}") == 1);
    assert_true(sample(text, "ratelimiter_limit_capacity{key=\"k:b\",kind=\"concurrency\",unit=\"\"}") < 0);
    free(text);
    put(f->service, "k:0", 9); /* first in key order from the next read on */
    usleep(400 * 1000);
    text = scrape(f->metrics);
    assert_true(sample(text, "ratelimiter_limits") == 3);
    assert_true(sample(text, "ratelimiter_limit_capacity{key=\"k:0\",kind=\"concurrency\",unit=\"\"}") == 9);
    assert_true(sample(text, "ratelimiter_limit_capacity{key=\"k:a\",kind=\"concurrency\",unit=\"\"}") < 0);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_loops_add_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_loop_is_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_are_collected_and_bounded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
