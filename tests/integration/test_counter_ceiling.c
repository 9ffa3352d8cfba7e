/* test_counter_ceiling.c — overage is the client's word, so a holder of a
 * data token can say it used 2^53 on each of 2,048 leases of 1: reserved
 * through /v1/reserve/batch, completed through /v1/complete/batch, on a
 * rolling limit of an hour and a monthly budget, both of capacity 2^53.
 * Their counters wrapped past 2^64 (used, committed and debt_total read 0,
 * a reserve of 2^53 was allowed again, and the journal kept it so across a
 * restart); on Redis, debt_total read 0 past 2^63 and the budget said
 * available 2^53 while it denied. Now every counter stops at the ceiling,
 * 2^53 (docs/api.md "Counters"): the limits read full and admit nothing,
 * not even 1, before and after the daemon restarts, on the memory backend
 * and on Redis (skipped when redis-server is not installed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/daemon.h"
#include "support/redis_server.h"
#include "support/ulid_gen.h"

#define CEILING "9007199254740992" /* 2^53 */
#define LEASES 2048
#define BATCH 256 /* server.max_batch's default */

static const char *const rolling_def =
    "{\"key\":\"tenant:acme:tph\",\"kind\":\"rolling\",\"capacity\":" CEILING ",\"window_seconds\":3600,"
    "\"overage\":\"debt\"}";
static const char *const budget_def =
    "{\"key\":\"tenant:acme:monthly\",\"kind\":\"budget\",\"capacity\":" CEILING ",\"period\":\"month\","
    "\"timezone\":\"UTC\",\"timeout_seconds\":600,\"overage\":\"debt\",\"unit\":\"tokens\"}";

typedef struct ceiling_case {
    rl_test_redis redis;
    bool with_redis;
    char redis_address[32];
    rl_test_daemon daemon;
} ceiling_case;

static int setup_memory(void **state) {
    ceiling_case *c = calloc(1, sizeof *c);
    assert_non_null(c);
    rl_test_daemon_init(&c->daemon);
    *state = c;
    return 0;
}

static int setup_redis(void **state) {
    ceiling_case *c = calloc(1, sizeof *c);
    assert_non_null(c);
    switch (rl_test_redis_start(&c->redis)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(c); skip(); break;
    case RL_TEST_REDIS_FAILED: free(c); fail_msg("redis-server did not start"); break;
    }
    c->with_redis = true;
    snprintf(c->redis_address, sizeof c->redis_address, "127.0.0.1:%u", (unsigned)c->redis.port);
    rl_test_daemon_init(&c->daemon);
    *state = c;
    return 0;
}

static int teardown(void **state) {
    ceiling_case *c = *state;
    if (c == NULL) return 0;
    rl_test_daemon_cleanup(&c->daemon);
    if (c->with_redis) rl_test_redis_cleanup(&c->redis);
    free(c);
    return 0;
}

static void start(ceiling_case *c) {
    const char *redis_args[] = {"--backend", "redis", "--redis", c->redis_address, NULL};
    if (!rl_test_daemon_start(&c->daemon, c->with_redis ? redis_args : NULL)) {
        char text[8192];
        rl_test_daemon_read_stderr(&c->daemon, text, sizeof text);
        fail_msg("ratelimiterd did not start: %s", text);
    }
}

/* method path body answers status, its body holding each of fragments
 * (NULL-terminated) `times` times. */
static void expect(ceiling_case *c, const char *method, const char *path, const char *body, long status,
                   size_t times, const char *const *fragments) {
    rl_test_response r;
    long got = rl_test_daemon_http(&c->daemon, method, path, body, &r);
    if (got == 0) fail_msg("%s %s: transfer failed: %s", method, path, r.error);
    if (got != status) fail_msg("%s %s -> %ld (wanted %ld): %.2000s", method, path, got, status, r.body);
    for (size_t f = 0; fragments != NULL && fragments[f] != NULL; f++) {
        size_t found = 0;
        for (const char *at = r.body; (at = strstr(at, fragments[f])) != NULL; at += strlen(fragments[f])) found++;
        if (found != times)
            fail_msg("%s %s: \"%s\" %zu times (wanted %zu) in %.2000s", method, path, fragments[f], found, times, r.body);
    }
    rl_test_response_free(&r);
}

/* Every lease of ids, one item_format (its one %s the lease id) each, sent
 * to path BATCH items a request; each answer holds wanted once an item. */
static void send_in_batches(ceiling_case *c, char ids[][27], const char *path, const char *item_format,
                            const char *wanted) {
    static char body[BATCH * 256 + 64];
    const char *fragments[] = {wanted, NULL};
    for (size_t first = 0; first < LEASES; first += BATCH) {
        size_t at = (size_t)snprintf(body, sizeof body, "{\"requests\":[");
        for (size_t i = first; i < first + BATCH; i++) {
            if (i > first) body[at++] = ',';
            at += (size_t)snprintf(body + at, sizeof body - at, item_format, ids[i]);
        }
        snprintf(body + at, sizeof body - at, "]}");
        expect(c, "POST", path, body, 200, BATCH, fragments);
    }
}

/* LEASES leases of 1 on both limits, all reserved, then all completed
 * with 2^53 on both. */
static void overrun(ceiling_case *c) {
    static char ids[LEASES][27];
    for (size_t i = 0; i < LEASES; i++) rl_test_ulid_new(ids[i]);
    send_in_batches(c, ids, "/v1/reserve/batch",
                    "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:tph\",\"amount\":1},"
                    "{\"key\":\"tenant:acme:monthly\",\"amount\":1}]}",
                    "\"allowed\":true");
    send_in_batches(c, ids, "/v1/complete/batch",
                    "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"tenant:acme:tph\",\"actual_amount\":" CEILING
                    "},{\"key\":\"tenant:acme:monthly\",\"actual_amount\":" CEILING "}]}",
                    "{\"ok\":true,\"error\":\"\"}");
}

/* Both limits read full at the ceiling and deny 2^53 and 1 alike. */
static void expect_full(ceiling_case *c) {
    const char *rolling[] = {"\"used\":" CEILING ",", "\"available\":0,", "\"debt_total\":" CEILING ",", NULL};
    expect(c, "GET", "/v1/admin/limits/tenant:acme:tph", NULL, 200, 1, rolling);
    const char *budget[] = {"\"used\":" CEILING ",", "\"available\":0,", "\"debt_total\":" CEILING ",",
                            "\"committed\":" CEILING ",", "\"reserved\":0", NULL};
    expect(c, "GET", "/v1/admin/limits/tenant:acme:monthly", NULL, 200, 1, budget);
    const char *denied[] = {"\"allowed\":false", NULL};
    const char *keys[] = {"tenant:acme:tph", "tenant:acme:monthly"};
    const char *amounts[] = {CEILING, "1"};
    for (size_t k = 0; k < 2; k++) {
        for (size_t a = 0; a < 2; a++) {
            char lease_id[27], json[512];
            snprintf(json, sizeof json, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%s}]}",
                     rl_test_ulid_new(lease_id), keys[k], amounts[a]);
            expect(c, "POST", "/v1/reserve", json, 200, 1, denied);
        }
    }
}

static void a_limit_overrun_past_2_to_the_64_stays_full(void **state) {
    ceiling_case *c = *state;
    start(c);
    const char *ok[] = {"{\"ok\":true,\"status\":\"active\"}", NULL};
    expect(c, "PUT", "/v1/admin/limits", rolling_def, 200, 1, ok);
    expect(c, "PUT", "/v1/admin/limits", budget_def, 200, 1, ok);
    overrun(c);
    expect_full(c);
    assert_int_equal(rl_test_daemon_stop(&c->daemon), 0);
    start(c); /* the memory backend replays its journal; Redis kept the state */
    expect_full(c);
    assert_int_equal(rl_test_daemon_stop(&c->daemon), 0);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_limit_overrun_past_2_to_the_64_stays_full, setup_memory, teardown),
    };
    const struct CMUnitTest redis_tests[] = {
        cmocka_unit_test_setup_teardown(a_limit_overrun_past_2_to_the_64_stays_full, setup_redis, teardown),
    };
    int failed = cmocka_run_group_tests_name("memory", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("redis", redis_tests, NULL, NULL);
    return failed;
}
