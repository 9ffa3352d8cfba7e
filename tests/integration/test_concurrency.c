/* test_concurrency.c — 16 client threads, each with its own keep-alive
 * connection, hammer one limit through the daemon's event loops with fresh
 * lease ids. However the requests interleave, the total admitted never
 * exceeds the capacity, and the admin usage agrees with what clients saw.
 *
 * Threads do not call cmocka asserts (they longjmp): they record what they
 * saw, and the main thread checks.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/daemon.h"
#include "support/ulid_gen.h"

#define CLIENTS 16
#define REQUESTS_PER_CLIENT 150

static rl_test_daemon daemon_;

typedef struct shared {
    const char *mode; /* "concurrency", "rolling" or "mixed" */
    atomic_int holding;      /* concurrency holds the clients believe they have */
    atomic_int max_holding;  /* the most seen at once */
    atomic_long admitted;    /* allowed reserves */
    atomic_long denied;
    atomic_long failures;    /* transport errors or unexpected answers */
    char first_failure[512];
    pthread_mutex_t failure_mutex;
} shared;

typedef struct worker {
    pthread_t thread;
    shared *shared;
} worker;

static void record_failure(shared *s, const char *what) {
    if (atomic_fetch_add(&s->failures, 1) == 0) {
        pthread_mutex_lock(&s->failure_mutex);
        snprintf(s->first_failure, sizeof s->first_failure, "%s", what);
        pthread_mutex_unlock(&s->failure_mutex);
    }
}

static bool json_allowed(const char *body, bool *allowed) {
    cJSON *root = cJSON_Parse(body);
    const cJSON *value = cJSON_GetObjectItem(root, "allowed");
    bool ok = cJSON_IsBool(value);
    if (ok) *allowed = cJSON_IsTrue(value);
    cJSON_Delete(root);
    return ok;
}

static void *hammer(void *arg) {
    worker *w = arg;
    shared *s = w->shared;
    rl_test_client client;
    if (!rl_test_client_init(&client, daemon_.port)) {
        record_failure(s, "curl init");
        return NULL;
    }
    for (int i = 0; i < REQUESTS_PER_CLIENT; i++) {
        char id[27], body[1024];
        rl_test_ulid_new(id);
        if (strcmp(s->mode, "concurrency") == 0)
            snprintf(body, sizeof body,
                     "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"c:concurrency\",\"amount\":1}]}", id);
        else if (strcmp(s->mode, "rolling") == 0)
            snprintf(body, sizeof body,
                     "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"c:rpm\",\"amount\":1}]}", id);
        else
            snprintf(body, sizeof body,
                     "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"m:rpm\",\"amount\":1},"
                     "{\"key\":\"m:tpm\",\"amount\":7},{\"key\":\"m:concurrency\",\"amount\":1}]}",
                     id);
        rl_test_response r;
        long status = rl_test_client_request(&client, "POST", "/v1/reserve", body, &r);
        bool allowed = false;
        if (status != 200 || !json_allowed(r.body, &allowed)) {
            char what[512];
            snprintf(what, sizeof what, "reserve -> %ld %s %s", status, r.error, r.body);
            record_failure(s, what);
            rl_test_response_free(&r);
            continue;
        }
        rl_test_response_free(&r);
        if (!allowed) {
            atomic_fetch_add(&s->denied, 1);
            continue;
        }
        atomic_fetch_add(&s->admitted, 1);
        if (strcmp(s->mode, "rolling") == 0) continue; /* rolling: nothing to give back */

        /* Counted after the server granted, uncounted before releasing: the
         * clients' count can only lag the server's, never lead it. */
        int now = atomic_fetch_add(&s->holding, 1) + 1;
        int seen = atomic_load(&s->max_holding);
        while (now > seen && !atomic_compare_exchange_weak(&s->max_holding, &seen, now)) {
        }
        atomic_fetch_sub(&s->holding, 1);
        snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[]}", id);
        status = rl_test_client_request(&client, "POST", "/v1/complete", body, &r);
        if (status != 200 || strcmp(r.body, "{\"ok\":true,\"error\":\"\"}") != 0) {
            char what[512];
            snprintf(what, sizeof what, "complete -> %ld %s %s", status, r.error, r.body);
            record_failure(s, what);
        }
        rl_test_response_free(&r);
    }
    rl_test_client_cleanup(&client);
    return NULL;
}

static void run_clients(shared *s, const char *mode) {
    memset(s, 0, sizeof *s);
    s->mode = mode;
    pthread_mutex_init(&s->failure_mutex, NULL);
    worker workers[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        workers[i].shared = s;
        assert_int_equal(pthread_create(&workers[i].thread, NULL, hammer, &workers[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++) pthread_join(workers[i].thread, NULL);
    pthread_mutex_destroy(&s->failure_mutex);
    if (atomic_load(&s->failures) != 0)
        fail_msg("%ld failures, first: %s", atomic_load(&s->failures), s->first_failure);
    assert_int_equal(atomic_load(&s->admitted) + atomic_load(&s->denied),
                     CLIENTS * REQUESTS_PER_CLIENT);
}

static double usage_of(const char *key, const char *field) {
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(&daemon_, "GET", path, NULL, &r), 200);
    cJSON *root = cJSON_Parse(r.body);
    const cJSON *value =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "limit"), "usage"), field);
    assert_true(cJSON_IsNumber(value));
    double number = value->valuedouble;
    cJSON_Delete(root);
    rl_test_response_free(&r);
    return number;
}

static int group_setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_,
        "[{\"key\":\"c:concurrency\",\"kind\":\"concurrency\",\"capacity\":5,\"timeout_seconds\":300},"
        " {\"key\":\"c:rpm\",\"kind\":\"rolling\",\"capacity\":700,\"window_seconds\":3600},"
        " {\"key\":\"m:rpm\",\"kind\":\"rolling\",\"capacity\":900,\"window_seconds\":3600},"
        " {\"key\":\"m:tpm\",\"kind\":\"rolling\",\"capacity\":100000,\"window_seconds\":3600},"
        " {\"key\":\"m:concurrency\",\"kind\":\"concurrency\",\"capacity\":3,\"timeout_seconds\":300}]");
    const char *args[] = {"--threads", "4", NULL}; /* several loops even on a small machine */
    return rl_test_daemon_start(&daemon_, args) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    int code = rl_test_daemon_stop(&daemon_);
    rl_test_daemon_cleanup(&daemon_);
    return code == 0 ? 0 : -1;
}

/* Concurrency cap 5: never more than 5 held at once; all released at the end. */
static void test_concurrency_cap(void **state) {
    (void)state;
    shared s;
    run_clients(&s, "concurrency");
    assert_true(atomic_load(&s.max_holding) <= 5);
    assert_true(atomic_load(&s.admitted) >= 5);
    assert_int_equal(usage_of("c:concurrency", "used"), 0);
    assert_int_equal(usage_of("c:concurrency", "active"), 0);
}

/* Rolling cap 700 over 2400 attempts: exactly 700 admitted, never more. */
static void test_rolling_cap(void **state) {
    (void)state;
    shared s;
    run_clients(&s, "rolling");
    assert_int_equal(atomic_load(&s.admitted), 700);
    assert_int_equal(usage_of("c:rpm", "used"), 700);
    assert_int_equal(usage_of("c:rpm", "available"), 0);
}

/* Three requirements at once, all or nothing, across threads. */
static void test_mixed_all_or_nothing(void **state) {
    (void)state;
    shared s;
    run_clients(&s, "mixed");
    long admitted = atomic_load(&s.admitted);
    assert_true(admitted <= 900);
    assert_true(atomic_load(&s.max_holding) <= 3);
    /* Every admitted lease charged every key, and nothing else was charged. */
    assert_int_equal(usage_of("m:rpm", "used"), admitted);
    assert_int_equal(usage_of("m:tpm", "used"), admitted * 7);
    assert_int_equal(usage_of("m:concurrency", "used"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrency_cap),
        cmocka_unit_test(test_rolling_cap),
        cmocka_unit_test(test_mixed_all_or_nothing),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
