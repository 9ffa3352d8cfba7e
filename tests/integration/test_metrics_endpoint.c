/* test_metrics_endpoint.c — GET /metrics over real HTTP: every
 * answer counted by endpoint and status, every lease decision by result,
 * latency histograms, the limits' gauges (bounded by
 * metrics.max_limit_series), templates aggregated, the journal's syncs,
 * the connections and the guard's closes; in redis mode the script calls,
 * batches, failures and allotments held. Each
 * page is checked by the real promtool (Debian's prometheus package, at
 * /usr/bin/promtool: make deps-test installs it). The redis tests are skipped
 * when redis-server is not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "support/daemon.h"
#include "support/metrics_page.h"
#include "support/redis_server.h"
#include "support/ulid_gen.h"

#define PROMTOOL "/usr/bin/promtool"

/* ---- helpers ---- */

/* GET /metrics: 200 with the exposition's media type; the body, malloc'd. */
static char *scrape(rl_test_daemon *d) {
    rl_test_response res;
    long status = rl_test_daemon_http(d, "GET", "/metrics", NULL, &res);
    if (status != 200) fail_msg("GET /metrics: %ld %s", status, res.body);
    assert_string_equal(res.content_type, "text/plain; version=0.0.4; charset=utf-8");
    char *body = res.body;
    res.body = NULL;
    rl_test_response_free(&res);
    return body;
}

/* Scrapes until series is at least want (the collector reads the limits
 * every limits_refresh_ms, later on a busy machine), for at most 20 s;
 * the last page either way, for the checks that follow to judge. */
static char *scrape_when(rl_test_daemon *d, const char *series, double want) {
    long deadline = rl_test_now_ms() + 20000;
    for (;;) {
        char *text = scrape(d);
        if (rl_test_metrics_sample(text, series) >= want || rl_test_now_ms() > deadline) return text;
        free(text);
        rl_test_sleep_ms(50);
    }
}

/* promtool check metrics on text: it parses the page and lints names,
 * types, HELP and histograms; any complaint fails the test. */
static void promtool_check(rl_test_daemon *d, const char *text) {
    char path[400], command[1024], report[400];
    snprintf(path, sizeof path, "%s/scrape.txt", d->dir);
    snprintf(report, sizeof report, "%s/promtool.txt", d->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(command, sizeof command, PROMTOOL " check metrics < '%s' > '%s' 2>&1", path, report);
    int rc = system(command);
    char said[4096] = "";
    f = fopen(report, "r");
    if (f != NULL) {
        said[fread(said, 1, sizeof said - 1, f)] = '\0';
        fclose(f);
    }
    if (rc != 0 || said[0] != '\0')
        fail_msg("promtool check metrics (exit %d): %s\n(is the prometheus package installed? make deps-test)", rc, said);
}

#define sample rl_test_metrics_sample

static void expect_sample(const char *text, const char *series, double want) {
    double got = sample(text, series);
    if (got != want) fail_msg("%s: want %g, got %g\n%s", series, want, got, text);
}

static void put_limit(rl_test_daemon *d, const char *json) {
    rl_test_response res;
    long status = rl_test_daemon_http(d, "PUT", "/v1/admin/limits", json, &res);
    if (status != 200) fail_msg("PUT %s: %ld %s", json, status, res.body);
    rl_test_response_free(&res);
}

/* POST /v1/reserve of amount on key under a fresh lease id (written to
 * lease when not NULL); returns the status. */
static long reserve(rl_test_daemon *d, const char *key, unsigned amount, char lease[27]) {
    char id[27], body[512];
    rl_test_ulid_new(id);
    if (lease != NULL) memcpy(lease, id, 27);
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%u}]}", id, key,
             amount);
    rl_test_response res;
    long status = rl_test_daemon_http(d, "POST", "/v1/reserve", body, &res);
    rl_test_response_free(&res);
    return status;
}

static long post(rl_test_daemon *d, const char *path, const char *body) {
    rl_test_response res;
    long status = rl_test_daemon_http(d, "POST", path, body, &res);
    rl_test_response_free(&res);
    return status;
}

/* Each test's daemon (and Redis, for the redis tests), in the state:
 * the teardown kills what a failed test left running and removes its
 * files. */
typedef struct harness {
    rl_test_daemon daemon;
    rl_test_redis *redis; /* NULL: none (or redis-server is not installed) */
} harness;

static int setup(void **state) {
    harness *h = calloc(1, sizeof *h);
    assert_non_null(h);
    rl_test_daemon_init(&h->daemon);
    *state = h;
    return 0;
}

static int teardown(void **state) {
    harness *h = *state;
    rl_test_daemon_cleanup(&h->daemon);
    if (h->redis != NULL) rl_test_redis_cleanup(h->redis);
    free(h->redis);
    free(h);
    return 0;
}

static rl_test_daemon *daemon_of(void **state) { return &((harness *)*state)->daemon; }

static void start(rl_test_daemon *d, const char *config, const char *const *more) {
    rl_test_daemon_write_config(d, config);
    const char *args[16] = {"-c", d->config_path};
    size_t n = 2;
    for (size_t i = 0; more != NULL && more[i] != NULL && n < 15; i++) args[n++] = more[i];
    args[n] = NULL;
    assert_true(rl_test_daemon_start(d, args));
}

/* A clean stop (exit status 0); the teardown removes the rest. */
static void finish(rl_test_daemon *d) { assert_int_equal(rl_test_daemon_stop(d), 0); }

/* ---- memory backend ---- */

static void test_memory_answers_decisions_limits_journal(void **state) {
    rl_test_daemon *d = daemon_of(state);
    start(d, "metrics:\n  limits_refresh_ms: 100\n", NULL);
    put_limit(d, "{\"key\":\"m:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60,\"unit\":\"requests\"}");
    put_limit(d, "{\"key\":\"m:spend\",\"kind\":\"budget\",\"capacity\":1000,\"period\":\"day\","
                  "\"timeout_seconds\":60,\"unit\":\"usd_micros\"}");
    assert_int_equal(reserve(d, "m:rpm", 1, NULL), 200);
    assert_int_equal(reserve(d, "m:rpm", 1, NULL), 200);
    assert_int_equal(reserve(d, "m:rpm", 1, NULL), 200); /* denied: full */
    assert_int_equal(reserve(d, "m:none", 1, NULL), 404);
    assert_int_equal(post(d, "/v1/reserve", "{\"lease_id\":"), 400);
    char lease[27], body[256];
    assert_int_equal(reserve(d, "m:spend", 300, lease), 200);
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"m:spend\",\"actual_amount\":200}]}", lease);
    assert_int_equal(post(d, "/v1/complete", body), 200);
    char *text = scrape_when(d, "ratelimiter_limit_committed{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}", 200);
    promtool_check(d, text);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"allowed\"}", 3);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"denied_capacity\"}", 1);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"unknown_key\"}", 1);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"invalid\"}", 1);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"complete\",result=\"completed\"}", 1);
    expect_sample(text, "ratelimiter_http_responses_total{endpoint=\"reserve\",code=\"200\"}", 4);
    expect_sample(text, "ratelimiter_http_responses_total{endpoint=\"reserve\",code=\"404\"}", 1);
    expect_sample(text, "ratelimiter_http_responses_total{endpoint=\"reserve\",code=\"400\"}", 1);
    expect_sample(text, "ratelimiter_http_responses_total{endpoint=\"admin_limits\",code=\"200\"}", 2);
    expect_sample(text, "ratelimiter_http_request_duration_seconds_count{endpoint=\"reserve\"}", 6);
    expect_sample(text, "ratelimiter_http_request_duration_seconds_bucket{endpoint=\"reserve\",le=\"+Inf\"}", 6);
    expect_sample(text, "ratelimiter_limits", 2);
    expect_sample(text, "ratelimiter_limit_series_omitted", 0);
    expect_sample(text, "ratelimiter_limit_capacity{key=\"m:rpm\",kind=\"rolling\",unit=\"requests\"}", 2);
    expect_sample(text, "ratelimiter_limit_used{key=\"m:rpm\",kind=\"rolling\",unit=\"requests\"}", 2);
    expect_sample(text, "ratelimiter_limit_available{key=\"m:rpm\",kind=\"rolling\",unit=\"requests\"}", 0);
    expect_sample(text, "ratelimiter_limit_committed{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}", 200);
    expect_sample(text, "ratelimiter_limit_reserved{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}", 0);
    expect_sample(text, "ratelimiter_limit_used{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}", 200);
    /* A budget's period, and no budget series for a rolling limit. */
    assert_true(sample(text, "ratelimiter_limit_period_end_seconds{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}") >
                sample(text, "ratelimiter_limit_period_start_seconds{key=\"m:spend\",kind=\"budget\",unit=\"usd_micros\"}"));
    assert_true(sample(text, "ratelimiter_limit_committed{key=\"m:rpm\",kind=\"rolling\",unit=\"requests\"}") < 0);
    /* Every change was synced before its answer (journal_fsync: always). */
    assert_true(sample(text, "ratelimiter_journal_fsync_duration_seconds_count") >= 1);
    assert_true(sample(text, "ratelimiter_journal_written_bytes_total") > 0);
    expect_sample(text, "ratelimiter_backend_info{backend=\"memory\"}", 1);
    expect_sample(text, "ratelimiter_build_info{version=\"" RL_VERSION "\"}", 1);
    expect_sample(text, "ratelimiter_connections_open", 1);
    assert_true(sample(text, "ratelimiter_connections_accepted_total") >= 1);
    assert_true(sample(text, "ratelimiter_redis_script_calls_total") < 0); /* not redis */
    /* The scrape itself is an answer like any other: the next page counts it. */
    const char *scrapes = "ratelimiter_http_responses_total{endpoint=\"metrics\",code=\"200\"}";
    double before = sample(text, scrapes) < 0 ? 0 : sample(text, scrapes);
    free(text);
    text = scrape(d);
    expect_sample(text, scrapes, before + 1);
    free(text);
    finish(d);
}

/* At most max_limit_series limits get gauges, the first in key order; the
 * rest are counted. */
static void test_limit_series_are_bounded(void **state) {
    rl_test_daemon *d = daemon_of(state);
    start(d, "metrics:\n  max_limit_series: 2\n  limits_refresh_ms: 100\n", NULL);
    const char *keys[] = {"b:2", "a:1", "c:3"};
    for (size_t i = 0; i < 3; i++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"key\":\"%s\",\"kind\":\"concurrency\",\"capacity\":%zu,\"timeout_seconds\":30}", keys[i], i + 5);
        put_limit(d, json);
    }
    char *text = scrape_when(d, "ratelimiter_limits", 3);
    promtool_check(d, text);
    expect_sample(text, "ratelimiter_limits", 3);
    expect_sample(text, "ratelimiter_limit_series_omitted", 1);
    expect_sample(text, "ratelimiter_limit_capacity{key=\"a:1\",kind=\"concurrency\",unit=\"\"}", 6);
    expect_sample(text, "ratelimiter_limit_capacity{key=\"b:2\",kind=\"concurrency\",unit=\"\"}", 5);
    assert_true(sample(text, "ratelimiter_limit_capacity{key=\"c:3\",kind=\"concurrency\",unit=\"\"}") < 0);
    free(text);
    finish(d);
}

/* A template gives one line per family however many keys it made: its
 * capacity, the live limits made from it with their usage summed, and
 * whether the sums are of them all; on a daemon started with extra. */
static void check_templates_aggregated(rl_test_daemon *d, const char *const *extra) {
    start(d, "metrics:\n  limits_refresh_ms: 100\n", extra);
    rl_test_response res;
    long status = rl_test_daemon_http(d, "PUT", "/v1/admin/templates",
                                      "{\"pattern\":\"tenant:{t}:tpm\",\"kind\":\"rolling\",\"capacity\":10,"
                                      "\"window_seconds\":60,\"unit\":\"tokens\"}",
                                      &res);
    if (status != 200) fail_msg("PUT template: %ld %s", status, res.body);
    rl_test_response_free(&res);
    assert_int_equal(reserve(d, "tenant:a:tpm", 3, NULL), 200);
    assert_int_equal(reserve(d, "tenant:b:tpm", 4, NULL), 200);
    assert_int_equal(reserve(d, "tenant:c:tpm", 9, NULL), 200);
    char *text = scrape_when(
        d, "ratelimiter_template_limits{template=\"tenant:{t}:tpm\",kind=\"rolling\",unit=\"tokens\"}", 3);
    promtool_check(d, text);
    const char *labels = "{template=\"tenant:{t}:tpm\",kind=\"rolling\",unit=\"tokens\"}";
    char series[256];
    const struct {
        const char *family;
        double want;
    } expected[] = {
        {"ratelimiter_template_capacity", 10}, {"ratelimiter_template_limits", 3},
        {"ratelimiter_template_used", 16},     {"ratelimiter_template_available", 14},
        {"ratelimiter_template_debt", 0},      {"ratelimiter_template_sums_partial", 0},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        snprintf(series, sizeof series, "%s%s", expected[i].family, labels);
        expect_sample(text, series, expected[i].want);
    }
    /* No series of their own for the keys made from it. */
    expect_sample(text, "ratelimiter_limits", 0);
    assert_null(strstr(text, "tenant:a:tpm"));
    free(text);
    finish(d);
}

static void test_templates_are_aggregated(void **state) { check_templates_aggregated(daemon_of(state), NULL); }

/* A key with a quote and a backslash is escaped as the format says, and
 * promtool reads it back. */
static void test_label_values_are_escaped(void **state) {
    rl_test_daemon *d = daemon_of(state);
    start(d, "metrics:\n  limits_refresh_ms: 100\n", NULL);
    put_limit(d, "{\"key\":\"odd\\\"key\\\\x\",\"kind\":\"concurrency\",\"capacity\":7,\"timeout_seconds\":30}");
    char *text = scrape_when(d, "ratelimiter_limits", 1);
    promtool_check(d, text);
    expect_sample(text, "ratelimiter_limit_capacity{key=\"odd\\\"key\\\\x\",kind=\"concurrency\",unit=\"\"}", 7);
    free(text);
    finish(d);
}

/* The connection guard's counters: a connection that sends nothing is
 * closed at idle_timeout_ms, and counted so. */
static void test_guard_closes_are_counted(void **state) {
    rl_test_daemon *d = daemon_of(state);
    start(d, "server:\n  idle_timeout_ms: 100\n", NULL);
    char said[256];
    long got = rl_test_raw_exchange(d->port, "", 0, 5000, said, sizeof said); /* until the daemon closes it */
    assert_int_equal(got, 0);
    char *text = scrape_when(d, "ratelimiter_connections_closed_total{reason=\"idle_timeout\"}", 1);
    promtool_check(d, text);
    assert_true(sample(text, "ratelimiter_connections_closed_total{reason=\"idle_timeout\"}") >= 1);
    assert_true(sample(text, "ratelimiter_connections_accepted_total") >= 2);
    expect_sample(text, "ratelimiter_connections_refused_total", 0);
    free(text);
    finish(d);
}

/* With the access log on, its lines written (and dropped: none here) are
 * on the page. */
static void test_access_log_lines_are_counted(void **state) {
    rl_test_daemon *d = daemon_of(state);
    char config[600];
    snprintf(config, sizeof config, "log:\n  access: json\n  access_path: %s/access.log\n", d->dir);
    start(d, config, NULL);
    for (int i = 0; i < 3; i++) {
        rl_test_response res;
        assert_int_equal(rl_test_daemon_http(d, "GET", "/healthz", NULL, &res), 200);
        rl_test_response_free(&res);
    }
    char *text = scrape_when(d, "ratelimiter_access_log_lines_total{outcome=\"written\"}", 3);
    promtool_check(d, text);
    assert_true(sample(text, "ratelimiter_access_log_lines_total{outcome=\"written\"}") >= 3);
    expect_sample(text, "ratelimiter_access_log_lines_total{outcome=\"dropped\"}", 0);
    free(text);
    finish(d);
    /* and none without it */
    start(d, "", NULL);
    text = scrape(d);
    assert_null(strstr(text, "ratelimiter_access_log_lines_total"));
    free(text);
    finish(d);
}

static void test_disabled_is_not_found(void **state) {
    rl_test_daemon *d = daemon_of(state);
    start(d, "metrics:\n  enabled: false\n", NULL);
    rl_test_response res;
    assert_int_equal(rl_test_daemon_http(d, "GET", "/metrics", NULL, &res), 404);
    assert_string_equal(res.body, "{\"error\":\"invalid_request\",\"detail\":\"no route for GET /metrics: this "
                                  "daemon keeps no metrics (metrics.enabled: false)\"}");
    rl_test_response_free(&res);
    assert_int_equal(rl_test_daemon_http(d, "POST", "/metrics", "", &res), 405);
    rl_test_response_free(&res);
    finish(d);
}

static void test_bad_setting_stops_start_up(void **state) {
    rl_test_daemon *d = daemon_of(state);
    rl_test_daemon_write_config(d, "metrics:\n  limits_refresh_ms: 5\n");
    const char *args[] = {"-c", d->config_path, NULL};
    char said[4096];
    assert_int_equal(rl_test_daemon_run_to_exit(d, args, 20000, said, sizeof said), 1);
    if (strstr(said, "config.yaml:2:") == NULL || strstr(said, "limits_refresh_ms") == NULL)
        fail_msg("%s", said);
    rl_test_daemon_cleanup(d);
}

/* ---- redis backend ---- */

/* The harness with a redis-server of the test's own. */
static int redis_setup(void **state) {
    setup(state);
    harness *h = *state;
    h->redis = calloc(1, sizeof *h->redis);
    assert_non_null(h->redis);
    switch (rl_test_redis_start(h->redis)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(h->redis); h->redis = NULL; break;
    case RL_TEST_REDIS_FAILED: fail_msg("redis-server did not start");
    }
    return 0;
}

/* Script calls, batches of leases, and once Redis is gone the failures. */
static void test_redis_calls_batches_errors(void **state) {
    rl_test_redis *redis = ((harness *)*state)->redis;
    if (redis == NULL) skip();
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)redis->port);
    rl_test_daemon *d = daemon_of(state);
    const char *args[] = {"--backend", "redis", "--redis", address, NULL};
    start(d, "metrics:\n  limits_refresh_ms: 100\nredis:\n  command_timeout_ms: 200\n", args);
    put_limit(d, "{\"key\":\"r:rpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}");
    for (int i = 0; i < 5; i++) assert_int_equal(reserve(d, "r:rpm", 1, NULL), 200);
    char *text = scrape_when(d, "ratelimiter_limit_used{key=\"r:rpm\",kind=\"rolling\",unit=\"\"}", 5);
    promtool_check(d, text);
    expect_sample(text, "ratelimiter_backend_info{backend=\"redis\"}", 1);
    double calls = sample(text, "ratelimiter_redis_script_calls_total");
    assert_true(calls >= 5); /* each reserve alone: a batch of one */
    expect_sample(text, "ratelimiter_redis_errors_total", 0);
    assert_true(sample(text, "ratelimiter_redis_batch_leases_count") >= 5);
    assert_true(sample(text, "ratelimiter_redis_batch_leases_sum") >= 5);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"allowed\"}", 5);
    expect_sample(text, "ratelimiter_limit_used{key=\"r:rpm\",kind=\"rolling\",unit=\"\"}", 5);
    assert_true(sample(text, "ratelimiter_journal_written_bytes_total") < 0); /* no journal in redis mode */
    free(text);

    assert_true(rl_test_redis_stop(redis));
    assert_int_equal(reserve(d, "r:rpm", 1, NULL), 503);
    text = scrape(d); /* answered without Redis: no call on the loop */
    promtool_check(d, text);
    assert_true(sample(text, "ratelimiter_redis_errors_total") >= 1);
    expect_sample(text, "ratelimiter_decisions_total{endpoint=\"reserve\",result=\"backend_error\"}", 1);
    expect_sample(text, "ratelimiter_http_responses_total{endpoint=\"reserve\",code=\"503\"}", 1);
    free(text);
    finish(d);
}

/* On Redis the made limits live in the store: summed from there, with
 * allotments on too (made keys are never allotted). */
static void test_redis_templates_are_aggregated(void **state) {
    rl_test_redis *redis = ((harness *)*state)->redis;
    if (redis == NULL) skip();
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)redis->port);
    const char *args[] = {"--backend", "redis", "--redis", address, "--allotments", NULL};
    check_templates_aggregated(daemon_of(state), args);
}

/* With allotments the daemon says how many it holds, and how much. */
static void test_redis_allotments_held(void **state) {
    rl_test_redis *redis = ((harness *)*state)->redis;
    if (redis == NULL) skip();
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)redis->port);
    rl_test_daemon *d = daemon_of(state);
    const char *args[] = {"--backend", "redis", "--redis", address, "--allotments", NULL};
    start(d, "metrics:\n  limits_refresh_ms: 100\n", args);
    put_limit(d, "{\"key\":\"a:rpm\",\"kind\":\"rolling\",\"capacity\":100000,\"window_seconds\":60}");
    char *text = NULL;
    long deadline = rl_test_now_ms() + 20000;
    for (;;) { /* the keeper carves once demand shows: keep asking */
        for (int i = 0; i < 20; i++) assert_int_equal(reserve(d, "a:rpm", 1, NULL), 200);
        text = scrape(d);
        if (sample(text, "ratelimiter_allotments_held") >= 1 || rl_test_now_ms() > deadline) break;
        free(text);
        rl_test_sleep_ms(100);
    }
    promtool_check(d, text);
    expect_sample(text, "ratelimiter_allotments_held", 1);
    assert_true(sample(text, "ratelimiter_allotment_amount_held") >= 1);
    assert_true(sample(text, "ratelimiter_redis_script_calls_total") >= 1);
    free(text);
    finish(d);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memory_answers_decisions_limits_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_series_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_templates_are_aggregated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_values_are_escaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_guard_closes_are_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_access_log_lines_are_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_is_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_setting_stops_start_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_calls_batches_errors, redis_setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_allotments_held, redis_setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_templates_are_aggregated, redis_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
