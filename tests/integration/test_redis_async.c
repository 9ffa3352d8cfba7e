/* test_redis_async.c — one event loop, many clients, answers that come later.
 *
 * On redis the daemon's submitter answers reserves and completes from its
 * flusher thread, and the HTTP loop does not wait for it: while one client's
 * lease waits for its flush, the same loop takes the other clients' requests
 * (that is how many leases share one script call with --threads 1). This
 * checks that every client still gets exactly its own answers: 32 clients on
 * one loop, each with a limit of its own (so a mixed-up answer shows as a
 * wrong count), single and batch reserves (a batch also carrying a key only
 * that client names, and an invalid item), completes and batch completes;
 * then that the daemon stops cleanly right after such a load.
 *
 * Threads do not call cmocka asserts: they record failures, the main thread
 * checks. Skipped when redis-server is not installed.
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
#include "support/redis_server.h"
#include "support/ulid_gen.h"

#define CLIENTS 32
#define ROUNDS 24        /* reserves per client on its own limit */
#define CAPACITY 10      /* of each client's limit: fewer than ROUNDS */

typedef struct fixture {
    rl_test_redis redis;
    rl_test_daemon daemon;
    char redis_address[32];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    switch (rl_test_redis_start_with(&f->redis, false)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(f); skip(); break;
    case RL_TEST_REDIS_FAILED: free(f); fail_msg("redis-server did not start"); break;
    }
    snprintf(f->redis_address, sizeof f->redis_address, "127.0.0.1:%u", (unsigned)f->redis.port);
    rl_test_daemon_init(&f->daemon);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f == NULL) return 0;
    rl_test_daemon_cleanup(&f->daemon);
    rl_test_redis_cleanup(&f->redis);
    free(f);
    return 0;
}

typedef struct client_run {
    pthread_t thread;
    uint16_t port;
    int index;
    int allowed;  /* on its own limit */
    int failures; /* wrong answers or transport errors */
    char first_failure[512];
} client_run;

static void failed(client_run *run, const char *what, long status, const char *body) {
    if (run->failures++ == 0)
        snprintf(run->first_failure, sizeof run->first_failure, "client %d: %s -> %ld %s", run->index, what,
                 status, body != NULL ? body : "");
}

/* The "allowed" of one result object and its "error" string. */
static bool read_result(const cJSON *result, bool *allowed, const char **error) {
    const cJSON *a = cJSON_GetObjectItem(result, "allowed");
    const cJSON *e = cJSON_GetObjectItem(result, "error");
    if (!cJSON_IsBool(a) || !cJSON_IsString(e)) return false;
    *allowed = cJSON_IsTrue(a);
    *error = e->valuestring;
    return true;
}

static void *client_main(void *arg) {
    client_run *run = arg;
    rl_test_client client;
    if (!rl_test_client_init(&client, run->port)) {
        failed(run, "connect", 0, NULL);
        return NULL;
    }
    char key[32], missing[48], body[1024], completes[1024] = "{\"requests\":[";
    size_t completes_len = strlen(completes);
    int completes_count = 0;
    snprintf(key, sizeof key, "async:%d", run->index);
    for (int round = 0; round < ROUNDS; round++) {
        char id[27], other[27], invalid[27];
        rl_test_ulid_new(id);
        rl_test_response r;
        if (round % 2 == 0) {
            snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]}", id,
                     key);
            long status = rl_test_client_request(&client, "POST", "/v1/reserve", body, &r);
            bool allowed = false;
            cJSON *root = status != 0 ? cJSON_Parse(r.body) : NULL;
            const char *error = NULL;
            if (root == NULL || !read_result(root, &allowed, &error) || status != 200 || error[0] != '\0')
                failed(run, "reserve", status, r.status != 0 ? r.body : r.error);
            else if (allowed)
                run->allowed++;
            cJSON_Delete(root);
            rl_test_response_free(&r);
        } else {
            /* Its own limit, a key only this client names, an invalid amount. */
            snprintf(missing, sizeof missing, "missing:%d:%d", run->index, round);
            rl_test_ulid_new(other);
            rl_test_ulid_new(invalid);
            snprintf(body, sizeof body,
                     "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]},"
                     "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]},"
                     "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":0}]}]}",
                     id, key, other, missing, invalid, key);
            long status = rl_test_client_request(&client, "POST", "/v1/reserve/batch", body, &r);
            cJSON *root = status == 200 ? cJSON_Parse(r.body) : NULL;
            const cJSON *results = cJSON_GetObjectItem(root, "results");
            bool a0 = false, a1 = true, a2 = true;
            const char *e0 = NULL, *e1 = NULL, *e2 = NULL;
            char want_missing[80];
            snprintf(want_missing, sizeof want_missing, "unknown_limit_key:%s", missing);
            if (cJSON_GetArraySize(results) != 3 || !read_result(cJSON_GetArrayItem(results, 0), &a0, &e0) ||
                !read_result(cJSON_GetArrayItem(results, 1), &a1, &e1) ||
                !read_result(cJSON_GetArrayItem(results, 2), &a2, &e2))
                failed(run, "reserve/batch", status, r.status != 0 ? r.body : r.error);
            else if (a1 || strcmp(e1, want_missing) != 0 || a2 || strcmp(e2, "invalid_request") != 0 ||
                     (a0 && e0[0] != '\0'))
                failed(run, "reserve/batch answers", status, r.body);
            else if (a0)
                run->allowed++;
            cJSON_Delete(root);
            rl_test_response_free(&r);
        }
        /* Complete every other lease at once, the rest in one batch at the end. */
        if (round % 4 < 2) {
            snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[]}", id);
            long status = rl_test_client_request(&client, "POST", "/v1/complete", body, &r);
            if (status != 200 || strcmp(r.body, "{\"ok\":true,\"error\":\"\"}") != 0)
                failed(run, "complete", status, r.status != 0 ? r.body : r.error);
            rl_test_response_free(&r);
        } else {
            completes_len += (size_t)snprintf(completes + completes_len, sizeof completes - completes_len,
                                              "%s{\"lease_id\":\"%s\",\"actuals\":[]}",
                                              completes_count > 0 ? "," : "", id);
            completes_count++;
        }
    }
    snprintf(completes + completes_len, sizeof completes - completes_len, "]}");
    rl_test_response r;
    long status = rl_test_client_request(&client, "POST", "/v1/complete/batch", completes, &r);
    cJSON *root = status == 200 ? cJSON_Parse(r.body) : NULL;
    const cJSON *results = cJSON_GetObjectItem(root, "results");
    int ok = 0;
    for (int i = 0; i < cJSON_GetArraySize(results); i++)
        if (cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(results, i), "ok"))) ok++;
    if (ok != completes_count) failed(run, "complete/batch", status, r.status != 0 ? r.body : r.error);
    cJSON_Delete(root);
    rl_test_response_free(&r);
    rl_test_client_cleanup(&client);
    return NULL;
}

static void run_clients(fixture *f, client_run *runs) {
    for (int i = 0; i < CLIENTS; i++) {
        runs[i] = (client_run){.port = f->daemon.port, .index = i};
        assert_int_equal(pthread_create(&runs[i].thread, NULL, client_main, &runs[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++) pthread_join(runs[i].thread, NULL);
}

static void test_one_loop_many_clients_own_answers(void **state) {
    fixture *f = *state;
    const char *args[] = {"--backend", "redis", "--redis", f->redis_address, "--threads", "1", NULL};
    if (!rl_test_daemon_start(&f->daemon, args)) {
        char text[8192];
        rl_test_daemon_read_stderr(&f->daemon, text, sizeof text);
        fail_msg("ratelimiterd did not start: %s", text);
    }
    for (int i = 0; i < CLIENTS; i++) {
        char json[160];
        snprintf(json, sizeof json,
                 "{\"key\":\"async:%d\",\"kind\":\"rolling\",\"capacity\":%d,\"window_seconds\":600}", i, CAPACITY);
        rl_test_response r;
        long status = rl_test_daemon_http(&f->daemon, "PUT", "/v1/admin/limits", json, &r);
        if (status != 200) fail_msg("PUT %s -> %ld %s", json, status, r.status != 0 ? r.body : r.error);
        rl_test_response_free(&r);
    }
    client_run *runs = calloc(CLIENTS, sizeof *runs);
    assert_non_null(runs);
    run_clients(f, runs);
    int failures = 0;
    for (int i = 0; i < CLIENTS; i++) {
        if (runs[i].failures > 0) {
            if (failures == 0) print_error("%s\n", runs[i].first_failure);
            failures += runs[i].failures;
        }
        if (runs[i].allowed != CAPACITY && runs[i].failures == 0)
            fail_msg("client %d: %d admitted on its own limit, wanted exactly %d", i, runs[i].allowed, CAPACITY);
    }
    free(runs);
    assert_int_equal(failures, 0);
    /* Stopping right after: nothing in flight is lost, the exit is clean. */
    assert_int_equal(rl_test_daemon_stop(&f->daemon), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_loop_many_clients_own_answers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
