/* test_redis_cluster.c — two ratelimiterd on one redis-server under load
 * (distributed mode):
 *
 *  - 16 client threads (8 per daemon, each with its own keep-alive
 *    connections) never get more than the capacity admitted in total: a
 *    rolling limit admits exactly its capacity; a concurrency limit never has
 *    more holds than its capacity at once, even when half of the leases are
 *    completed on the other daemon, and ends with nothing held; a budget
 *    admits exactly its capacity, each lease completed (on either daemon)
 *    with what it reserved, and ends with all of it committed;
 *  - a Complete on daemon B releases a hold taken on daemon A;
 *  - Redis SIGKILLed and restarted mid-load (AOF, fsync always, so that what
 *    it acknowledged survives): every reserve answers within a bound, either
 *    normally or 503 backend_error; /healthz is 503 while it is down; both
 *    daemons recover by themselves; the total admitted never exceeds the
 *    capacity across the crash.
 *
 * Threads do not call cmocka asserts (they longjmp): they record what they
 * saw, and the main thread checks once they are joined. Skipped when
 * redis-server is not installed.
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
#include <time.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/daemon.h"
#include "support/redis_server.h"
#include "support/ulid_gen.h"

#define CLIENTS_PER_DAEMON 8
#define CLIENTS (2 * CLIENTS_PER_DAEMON)
#define REQUESTS_PER_CLIENT 100

#define ROLLING_CAPACITY 300
#define CONCURRENCY_CAPACITY 8
#define BUDGET_CAPACITY 300
#define FAULT_CAPACITY 600       /* the fault test's rolling limit */
#define FAULT_KILL_AFTER 150     /* admitted before Redis is killed: well under the capacity */
#define FAULT_DOWN_MS 1000       /* how long Redis stays down */
#define FAULT_PACE_US 2000       /* between two requests of one client in the fault test */
#define ANSWER_BOUND_MS 3000     /* every answer, Redis down or not */
#define RECOVERY_DEADLINE_MS 10000
#define WAIT_DEADLINE_MS 10000

typedef struct cluster {
    rl_test_redis redis;
    rl_test_daemon a, b;
    char redis_address[32];
    char body[65536]; /* the last answer (main thread) */
} cluster;

/* ---- set-up ---------------------------------------------------------- */

static int setup_with(void **state, bool persistent) {
    cluster *c = calloc(1, sizeof *c);
    assert_non_null(c);
    switch (rl_test_redis_start_with(&c->redis, persistent)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(c); skip(); break;
    case RL_TEST_REDIS_FAILED: free(c); fail_msg("redis-server did not start"); break;
    }
    snprintf(c->redis_address, sizeof c->redis_address, "127.0.0.1:%u", (unsigned)c->redis.port);
    rl_test_daemon_init(&c->a);
    rl_test_daemon_init(&c->b);
    *state = c;
    return 0;
}

static int setup(void **state) { return setup_with(state, false); }
static int setup_persistent(void **state) { return setup_with(state, true); }

static int teardown(void **state) {
    cluster *c = *state;
    if (c == NULL) return 0;
    rl_test_daemon_cleanup(&c->a);
    rl_test_daemon_cleanup(&c->b);
    rl_test_redis_cleanup(&c->redis);
    free(c);
    return 0;
}

static void start(cluster *c, rl_test_daemon *d) {
    const char *args[] = {"--backend", "redis", "--redis", c->redis_address, NULL};
    if (!rl_test_daemon_start(d, args)) {
        char text[8192];
        rl_test_daemon_read_stderr(d, text, sizeof text);
        fail_msg("ratelimiterd did not start: %s", text);
    }
}

static void start_both(cluster *c) {
    start(c, &c->a);
    start(c, &c->b);
}

/* One request over the daemon's own client (main thread); 0 if the transfer failed. */
static long call(cluster *c, rl_test_daemon *d, const char *method, const char *path,
                 const char *body) {
    rl_test_response r;
    rl_test_daemon_http(d, method, path, body, &r);
    snprintf(c->body, sizeof c->body, "%s", r.status != 0 ? r.body : r.error);
    long status = r.status;
    rl_test_response_free(&r);
    return status;
}

static void expect(cluster *c, rl_test_daemon *d, const char *method, const char *path,
                   const char *body, long status, const char *fragment) {
    long got = call(c, d, method, path, body);
    if (got != status) fail_msg("%s %s -> %ld (wanted %ld): %s", method, path, got, status, c->body);
    if (fragment != NULL && strstr(c->body, fragment) == NULL)
        fail_msg("%s %s: \"%s\" not in %s", method, path, fragment, c->body);
}

static void define(cluster *c, const char *json) {
    expect(c, &c->a, "PUT", "/v1/admin/limits", json, 200, "{\"ok\":true,\"status\":\"active\"}");
}

/* A usage field of a limit as seen through daemon d, or -1 if it cannot be read. */
static double usage_of(cluster *c, rl_test_daemon *d, const char *key, const char *field) {
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    if (call(c, d, "GET", path, NULL) != 200) return -1;
    cJSON *root = cJSON_Parse(c->body);
    const cJSON *value =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "limit"), "usage"), field);
    double number = cJSON_IsNumber(value) ? value->valuedouble : -1;
    cJSON_Delete(root);
    return number;
}

static bool json_allowed(const char *body, bool *allowed) {
    cJSON *root = cJSON_Parse(body);
    const cJSON *value = cJSON_GetObjectItem(root, "allowed");
    bool ok = cJSON_IsBool(value);
    if (ok) *allowed = cJSON_IsTrue(value);
    cJSON_Delete(root);
    return ok;
}

/* ---- the load -------------------------------------------------------- */

typedef enum mode { MODE_ROLLING, MODE_CONCURRENCY, MODE_BUDGET, MODE_FAULT } mode;

typedef enum phase { PHASE_UP = 0, PHASE_DOWN, PHASE_RESTARTED } phase;

typedef struct load {
    cluster *c;
    mode mode;
    const char *key;
    atomic_bool stop;           /* MODE_FAULT runs until the main thread says stop */
    atomic_int phase;           /* MODE_FAULT: enum phase */
    atomic_int holding;         /* concurrency holds the clients believe they have */
    atomic_int max_holding;     /* the most seen at once */
    atomic_long admitted;       /* allowed reserves */
    atomic_long denied;
    atomic_long unavailable;    /* 503 backend_error (MODE_FAULT only) */
    atomic_long completed_elsewhere;
    atomic_long admitted_after_restart; /* of requests sent in PHASE_RESTARTED */
    atomic_long denied_after_restart;
    atomic_long answered_after_restart[2]; /* 200s per daemon (0: A, 1: B) */
    atomic_long slowest_ms;     /* the slowest answer */
    char slowest_what[160];
    atomic_long failures;       /* transport errors or unexpected answers */
    char first_failure[768];
    pthread_mutex_t mutex;
} load;

typedef struct worker {
    pthread_t thread;
    load *load;
    int index; /* < CLIENTS_PER_DAEMON: on A, else on B */
} worker;

static void record_failure(load *l, const char *what) {
    if (atomic_fetch_add(&l->failures, 1) == 0) {
        pthread_mutex_lock(&l->mutex);
        snprintf(l->first_failure, sizeof l->first_failure, "%s", what);
        pthread_mutex_unlock(&l->mutex);
    }
}

/* One timed request; records the slowest. */
static long timed_request(load *l, rl_test_client *client, const char *daemon_name,
                          const char *path, const char *body, rl_test_response *r) {
    long began = rl_test_now_ms();
    long status = rl_test_client_request(client, "POST", path, body, r);
    long took = rl_test_now_ms() - began;
    long slowest = atomic_load(&l->slowest_ms);
    while (took > slowest && !atomic_compare_exchange_weak(&l->slowest_ms, &slowest, took)) {
    }
    if (took > slowest) {
        pthread_mutex_lock(&l->mutex);
        snprintf(l->slowest_what, sizeof l->slowest_what, "%s on %s -> %ld in %ld ms", path,
                 daemon_name, status, took);
        pthread_mutex_unlock(&l->mutex);
    }
    return status;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void *hammer(void *arg) {
    worker *w = arg;
    load *l = w->load;
    bool on_a = w->index < CLIENTS_PER_DAEMON;
    const char *home_name = on_a ? "A" : "B", *other_name = on_a ? "B" : "A";
    rl_test_client home, other;
    if (!rl_test_client_init(&home, on_a ? l->c->a.port : l->c->b.port)) {
        record_failure(l, "curl init");
        return NULL;
    }
    if (!rl_test_client_init(&other, on_a ? l->c->b.port : l->c->a.port)) {
        record_failure(l, "curl init");
        rl_test_client_cleanup(&home);
        return NULL;
    }
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)(w->index * 2654435761u);

    for (int i = 0; l->mode == MODE_FAULT ? !atomic_load(&l->stop) : i < REQUESTS_PER_CLIENT; i++) {
        char id[27], body[512], what[768];
        rl_test_ulid_new(id);
        snprintf(body, sizeof body,
                 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]}", id, l->key);
        int sent_in = atomic_load(&l->phase);
        rl_test_response r;
        long status = timed_request(l, &home, home_name, "/v1/reserve", body, &r);
        bool allowed = false;
        if (l->mode == MODE_FAULT && status == 503 && strstr(r.body, "backend_error") != NULL) {
            atomic_fetch_add(&l->unavailable, 1);
            rl_test_response_free(&r);
            sleep_us(FAULT_PACE_US);
            continue;
        }
        if (status != 200 || !json_allowed(r.body, &allowed)) {
            snprintf(what, sizeof what, "reserve on %s (phase %d) -> %ld %s %s", home_name, sent_in,
                     status, r.error, r.body);
            record_failure(l, what);
            rl_test_response_free(&r);
            if (l->mode == MODE_FAULT) sleep_us(FAULT_PACE_US);
            continue;
        }
        rl_test_response_free(&r);
        atomic_fetch_add(allowed ? &l->admitted : &l->denied, 1);
        if (sent_in == PHASE_RESTARTED) {
            atomic_fetch_add(&l->answered_after_restart[on_a ? 0 : 1], 1);
            atomic_fetch_add(allowed ? &l->admitted_after_restart : &l->denied_after_restart, 1);
        }
        if (l->mode == MODE_FAULT) {
            sleep_us(FAULT_PACE_US);
            continue;
        }
        if (!allowed || l->mode == MODE_ROLLING) continue; /* rolling: nothing to give back */

        /* Counted after the server granted, uncounted before releasing: the
         * clients' count can only lag the store's, never lead it. */
        int now = atomic_fetch_add(&l->holding, 1) + 1;
        int seen = atomic_load(&l->max_holding);
        while (now > seen && !atomic_compare_exchange_weak(&l->max_holding, &seen, now)) {
        }
        atomic_fetch_sub(&l->holding, 1);
        bool elsewhere = rand_r(&seed) % 2 == 0;
        if (elsewhere) atomic_fetch_add(&l->completed_elsewhere, 1);
        snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[]}", id);
        status = timed_request(l, elsewhere ? &other : &home, elsewhere ? other_name : home_name,
                               "/v1/complete", body, &r);
        if (status != 200 || strcmp(r.body, "{\"ok\":true,\"error\":\"\"}") != 0) {
            snprintf(what, sizeof what, "complete on %s -> %ld %s %s",
                     elsewhere ? other_name : home_name, status, r.error, r.body);
            record_failure(l, what);
        }
        rl_test_response_free(&r);
    }
    rl_test_client_cleanup(&other);
    rl_test_client_cleanup(&home);
    return NULL;
}

static void load_init(load *l, cluster *c, mode m, const char *key) {
    memset(l, 0, sizeof *l);
    l->c = c;
    l->mode = m;
    l->key = key;
    pthread_mutex_init(&l->mutex, NULL);
}

static void load_start(load *l, worker *workers) {
    for (int i = 0; i < CLIENTS; i++) {
        workers[i].load = l;
        workers[i].index = i;
        assert_int_equal(pthread_create(&workers[i].thread, NULL, hammer, &workers[i]), 0);
    }
}

static void load_join(load *l, worker *workers) {
    atomic_store(&l->stop, true);
    for (int i = 0; i < CLIENTS; i++) pthread_join(workers[i].thread, NULL);
}

static void load_check_failures(load *l) {
    if (atomic_load(&l->failures) != 0)
        fail_msg("%ld failures, first: %s", atomic_load(&l->failures), l->first_failure);
    if (atomic_load(&l->slowest_ms) >= ANSWER_BOUND_MS)
        fail_msg("an answer took %ld ms (bound %d): %s", atomic_load(&l->slowest_ms),
                 ANSWER_BOUND_MS, l->slowest_what);
}

/* ---- 1. two daemons under load never admit more than capacity --------- */

/* Every client's requests on key, to their end: all answered, none failed. */
static void run_load(cluster *c, load *l, mode m, const char *key) {
    worker workers[CLIENTS];
    load_init(l, c, m, key);
    load_start(l, workers);
    load_join(l, workers);
    load_check_failures(l);
    assert_int_equal(atomic_load(&l->admitted) + atomic_load(&l->denied), CLIENTS * REQUESTS_PER_CLIENT);
}

static void test_rolling_total_is_capacity(void **state) {
    cluster *c = *state;
    start_both(c);
    char json[256];
    snprintf(json, sizeof json,
             "{\"key\":\"r:rpm\",\"kind\":\"rolling\",\"capacity\":%d,\"window_seconds\":60}",
             ROLLING_CAPACITY);
    define(c, json);

    load l;
    run_load(c, &l, MODE_ROLLING, "r:rpm");
    /* 1600 requests of 1 on a capacity of 300 in a 60 s window: exactly 300 admitted. */
    assert_int_equal(atomic_load(&l.admitted), ROLLING_CAPACITY);
    assert_int_equal((long)usage_of(c, &c->a, "r:rpm", "used"), ROLLING_CAPACITY);
    assert_int_equal((long)usage_of(c, &c->b, "r:rpm", "used"), ROLLING_CAPACITY);

    pthread_mutex_destroy(&l.mutex);
    assert_int_equal(rl_test_daemon_stop(&c->a), 0);
    assert_int_equal(rl_test_daemon_stop(&c->b), 0);
}

/* used and active reach 0 on both daemons (Completes answered 200 may still
 * be on their way to the store: a generous deadline). */
static void wait_released(cluster *c, const char *key) {
    long until = rl_test_now_ms() + WAIT_DEADLINE_MS;
    double used_a, active_a, used_b, active_b;
    for (;;) {
        used_a = usage_of(c, &c->a, key, "used");
        active_a = usage_of(c, &c->a, key, "active");
        used_b = usage_of(c, &c->b, key, "used");
        active_b = usage_of(c, &c->b, key, "active");
        if (used_a == 0 && active_a == 0 && used_b == 0 && active_b == 0) return;
        if (rl_test_now_ms() >= until) break;
        rl_test_redis_sleep_ms(50);
    }
    fail_msg("%s still held after every Complete: A used %g active %g, B used %g active %g (%s)",
             key, used_a, active_a, used_b, active_b, c->body);
}

static void test_concurrency_never_over_capacity(void **state) {
    cluster *c = *state;
    start_both(c);
    char json[256];
    snprintf(json, sizeof json,
             "{\"key\":\"c:concurrency\",\"kind\":\"concurrency\",\"capacity\":%d,\"timeout_seconds\":60}",
             CONCURRENCY_CAPACITY);
    define(c, json);

    load l;
    run_load(c, &l, MODE_CONCURRENCY, "c:concurrency");
    if (atomic_load(&l.max_holding) > CONCURRENCY_CAPACITY)
        fail_msg("%d holds at once (capacity %d)", atomic_load(&l.max_holding), CONCURRENCY_CAPACITY);
    /* The load did go through both daemons, crossing over. */
    assert_true(atomic_load(&l.admitted) > CONCURRENCY_CAPACITY);
    assert_true(atomic_load(&l.completed_elsewhere) > 0);
    assert_int_equal(atomic_load(&l.holding), 0);
    wait_released(c, "c:concurrency");

    pthread_mutex_destroy(&l.mutex);
    assert_int_equal(rl_test_daemon_stop(&c->a), 0);
    assert_int_equal(rl_test_daemon_stop(&c->b), 0);
}

/* Leases of 1 completed without actuals: each charges what it reserved, so
 * the month's budget admits exactly its capacity, all of it committed in
 * the end (Completes answered 200 may still be on their way to the store). */
static void test_budget_total_is_capacity(void **state) {
    cluster *c = *state;
    start_both(c);
    char json[256];
    snprintf(json, sizeof json,
             "{\"key\":\"b:usd\",\"kind\":\"budget\",\"capacity\":%d,\"period\":\"month\",\"timeout_seconds\":60}",
             BUDGET_CAPACITY);
    define(c, json);

    load l;
    run_load(c, &l, MODE_BUDGET, "b:usd");
    assert_int_equal(atomic_load(&l.admitted), BUDGET_CAPACITY);
    assert_true(atomic_load(&l.completed_elsewhere) > 0);
    long until = rl_test_now_ms() + WAIT_DEADLINE_MS;
    while (usage_of(c, &c->b, "b:usd", "committed") != BUDGET_CAPACITY && rl_test_now_ms() < until)
        rl_test_redis_sleep_ms(50);
    assert_int_equal((long)usage_of(c, &c->a, "b:usd", "committed"), BUDGET_CAPACITY);
    assert_int_equal((long)usage_of(c, &c->b, "b:usd", "reserved"), 0);
    assert_int_equal((long)usage_of(c, &c->b, "b:usd", "active"), 0);

    pthread_mutex_destroy(&l.mutex);
    assert_int_equal(rl_test_daemon_stop(&c->a), 0);
    assert_int_equal(rl_test_daemon_stop(&c->b), 0);
}

/* ---- 2. a Complete on B releases a hold taken on A -------------------- */

static void reserve_one(cluster *c, rl_test_daemon *d, const char *key, char lease_id[27],
                        bool want_allowed) {
    char json[512];
    rl_test_ulid_new(lease_id);
    snprintf(json, sizeof json,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]}", lease_id, key);
    expect(c, d, "POST", "/v1/reserve", json, 200,
           want_allowed ? "\"allowed\":true" : "\"allowed\":false");
}

static void test_complete_on_b_releases_hold_on_a(void **state) {
    cluster *c = *state;
    start_both(c);
    define(c, "{\"key\":\"one:concurrency\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":60}");

    char held[27], other[27], json[256];
    reserve_one(c, &c->a, "one:concurrency", held, true);
    reserve_one(c, &c->b, "one:concurrency", other, false);
    expect(c, &c->b, "GET", "/v1/admin/limits/one:concurrency", NULL, 200, "\"used\":1");
    snprintf(json, sizeof json, "{\"lease_id\":\"%s\",\"actuals\":[]}", held);
    expect(c, &c->b, "POST", "/v1/complete", json, 200, "{\"ok\":true,\"error\":\"\"}");
    reserve_one(c, &c->b, "one:concurrency", other, true);
    /* and the other way round */
    reserve_one(c, &c->a, "one:concurrency", held, false);
    snprintf(json, sizeof json, "{\"lease_id\":\"%s\",\"actuals\":[]}", other);
    expect(c, &c->a, "POST", "/v1/complete", json, 200, "{\"ok\":true,\"error\":\"\"}");
    reserve_one(c, &c->a, "one:concurrency", held, true);

    assert_int_equal(rl_test_daemon_stop(&c->a), 0);
    assert_int_equal(rl_test_daemon_stop(&c->b), 0);
}

/* ---- 3. Redis killed and restarted mid-load ---------------------------- */

/* Polls /healthz on d until it answers want; false after the deadline. */
static bool health_becomes(cluster *c, rl_test_daemon *d, long want, long deadline_ms) {
    long until = rl_test_now_ms() + deadline_ms;
    for (;;) {
        if (call(c, d, "GET", "/healthz", NULL) == want) return true;
        if (rl_test_now_ms() >= until) return false;
        rl_test_redis_sleep_ms(20);
    }
}

static void test_redis_killed_mid_load(void **state) {
    cluster *c = *state;
    start_both(c);
    char json[256];
    snprintf(json, sizeof json,
             "{\"key\":\"f:tpm\",\"kind\":\"rolling\",\"capacity\":%d,\"window_seconds\":60}",
             FAULT_CAPACITY);
    define(c, json);
    expect(c, &c->b, "GET", "/v1/admin/limits/f:tpm", NULL, 200, "\"capacity\":600");

    load l;
    worker workers[CLIENTS];
    load_init(&l, c, MODE_FAULT, "f:tpm");
    load_start(&l, workers);

    /* No cmocka assert until the workers are joined: collect the first problem. */
    char problem[1024] = "";
    long until = rl_test_now_ms() + WAIT_DEADLINE_MS;
    while (atomic_load(&l.admitted) < FAULT_KILL_AFTER && rl_test_now_ms() < until) rl_test_redis_sleep_ms(1);
    long admitted_at_kill = atomic_load(&l.admitted);
    atomic_store(&l.phase, PHASE_DOWN);
    rl_test_redis_kill(&c->redis); /* SIGKILL: no shutdown, what was fsynced is what survives */
    long killed_at = rl_test_now_ms();
    if (admitted_at_kill < FAULT_KILL_AFTER)
        snprintf(problem, sizeof problem, "only %ld admitted in %d ms before the kill",
                 admitted_at_kill, WAIT_DEADLINE_MS);

    if (problem[0] == '\0' && !health_becomes(c, &c->a, 503, 5000))
        snprintf(problem, sizeof problem, "A's /healthz with Redis down: %.300s", c->body);
    if (problem[0] == '\0' && !health_becomes(c, &c->b, 503, 5000))
        snprintf(problem, sizeof problem, "B's /healthz with Redis down: %.300s", c->body);
    long down_for = rl_test_now_ms() - killed_at;
    if (down_for < FAULT_DOWN_MS) rl_test_redis_sleep_ms(FAULT_DOWN_MS - down_for);
    long unavailable_while_down = atomic_load(&l.unavailable);

    bool restarted = rl_test_redis_restart(&c->redis); /* same port and dir: AOF reload */
    long restarted_at = rl_test_now_ms();
    atomic_store(&l.phase, PHASE_RESTARTED);
    if (problem[0] == '\0' && !restarted) snprintf(problem, sizeof problem, "redis did not restart");

    /* Recovery without restarting the daemons: both answer reserves again
     * and report healthy. */
    if (problem[0] == '\0') {
        until = restarted_at + RECOVERY_DEADLINE_MS;
        while ((atomic_load(&l.answered_after_restart[0]) == 0 ||
                atomic_load(&l.answered_after_restart[1]) == 0) &&
               rl_test_now_ms() < until)
            rl_test_redis_sleep_ms(10);
        if (atomic_load(&l.answered_after_restart[0]) == 0 ||
            atomic_load(&l.answered_after_restart[1]) == 0)
            snprintf(problem, sizeof problem,
                     "no reserve answered 200 within %d ms of the restart (A %ld, B %ld)",
                     RECOVERY_DEADLINE_MS, atomic_load(&l.answered_after_restart[0]),
                     atomic_load(&l.answered_after_restart[1]));
    }
    if (problem[0] == '\0' && !health_becomes(c, &c->a, 200, restarted_at + RECOVERY_DEADLINE_MS - rl_test_now_ms()))
        snprintf(problem, sizeof problem, "A's /healthz after the restart: %.300s", c->body);
    if (problem[0] == '\0' && !health_becomes(c, &c->b, 200, restarted_at + RECOVERY_DEADLINE_MS - rl_test_now_ms()))
        snprintf(problem, sizeof problem, "B's /healthz after the restart: %.300s", c->body);
    long recovered_in = rl_test_now_ms() - restarted_at;

    /* Keep the load on until the limit refuses: the load exceeds the capacity. */
    if (problem[0] == '\0') {
        until = rl_test_now_ms() + WAIT_DEADLINE_MS;
        while (atomic_load(&l.denied_after_restart) == 0 && rl_test_now_ms() < until) rl_test_redis_sleep_ms(10);
    }
    load_join(&l, workers);
    pthread_mutex_destroy(&l.mutex);

    fprintf(stderr,
            "redis killed after %ld admitted; %ld answered 503 while down; recovered in %ld ms; "
            "after the restart %ld admitted, %ld denied; %ld admitted in total (capacity %d); "
            "slowest answer: %s\n",
            admitted_at_kill, unavailable_while_down, recovered_in,
            atomic_load(&l.admitted_after_restart), atomic_load(&l.denied_after_restart),
            atomic_load(&l.admitted), FAULT_CAPACITY, l.slowest_what);
    if (problem[0] != '\0') fail_msg("%s", problem);
    load_check_failures(&l);
    assert_true(unavailable_while_down > 0); /* fail closed while down */
    if (atomic_load(&l.admitted) > FAULT_CAPACITY)
        fail_msg("%ld admitted in total on a capacity of %d (%ld before the kill)",
                 atomic_load(&l.admitted), FAULT_CAPACITY, admitted_at_kill);
    /* The limit did refuse after the restart, with its pre-crash reservations
     * counted: without them the load would have got FAULT_CAPACITY more. */
    assert_true(atomic_load(&l.denied_after_restart) > 0);
    /* The store counts at least what clients were told (a reserve that was
     * applied as Redis died may have answered 503), never over capacity. */
    double used = usage_of(c, &c->a, "f:tpm", "used");
    if (used < (double)atomic_load(&l.admitted) || used > FAULT_CAPACITY)
        fail_msg("used %g after the restart: %ld admitted, capacity %d (%s)", used,
                 atomic_load(&l.admitted), FAULT_CAPACITY, c->body);

    /* Neither daemon crashed: both stop cleanly. */
    assert_int_equal(rl_test_daemon_stop(&c->a), 0);
    assert_int_equal(rl_test_daemon_stop(&c->b), 0);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rolling_total_is_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrency_never_over_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_total_is_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_complete_on_b_releases_hold_on_a, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_killed_mid_load, setup_persistent, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
