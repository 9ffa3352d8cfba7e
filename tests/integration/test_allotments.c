/* test_allotments.c — two or three ratelimiterd --allotments on one
 * redis-server (docs/allotments.md), under load from 16 client threads:
 *
 *  - a lease of three keys (rolling rpm, concurrency, rolling tpm), half of
 *    them completed through the other daemon: the fleet admits no more than
 *    the rpm limit's capacity, never holds more than the concurrency
 *    capacity at once, decides most leases locally, and once the limit is
 *    exhausted and the daemons have looked, admits exactly the capacity
 *    with nothing left in allotments; every hold is released in the end;
 *  - one daemon killed with SIGKILL mid-load: its allotments end by
 *    themselves (allotment end plus the hold timeout), and the survivor can
 *    then hold the whole capacity;
 *  - Redis paused (SIGSTOP) mid-load: the daemons go on deciding from what
 *    they hold (health 200, degraded, saying so), then fail closed (503)
 *    once their allotments end; Redis resumed: they recover by themselves;
 *  - Redis killed (SIGKILL) mid-load and restarted on its append-only file:
 *    never more than the capacity admitted across the crash;
 *  - a capacity decrease under load reaches both daemons within a second:
 *    past that nothing is admitted while usage is above the new capacity;
 *  - three daemons: a limit deleted and PUT again with a smaller capacity
 *    at once, after a load that used most of it: the new limit starts
 *    empty once the daemons have looked (nothing of the old allotments,
 *    nor the overage of old leases completed after the delete, counts in
 *    it), and the fleet then admits exactly its capacity under load.
 *
 * Threads do not call cmocka asserts: they record, the main thread checks.
 * Skipped when redis-server is not installed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "support/metrics_page.h"
#include "support/redis_server.h"
#include "support/ulid_gen.h"

#define CLIENTS 16
#define DAEMONS_MAX 3

typedef struct fleet {
    rl_test_redis redis;
    rl_test_daemon d[DAEMONS_MAX];
    int count;
    char redis_address[32];
    char body[65536];
} fleet;

static int setup_with(void **state, bool persistent, int count) {
    fleet *f = calloc(1, sizeof *f);
    assert_non_null(f);
    switch (rl_test_redis_start_with(&f->redis, persistent)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(f); skip(); return 0;
    case RL_TEST_REDIS_FAILED: free(f); fail_msg("redis-server did not start"); return -1;
    }
    snprintf(f->redis_address, sizeof f->redis_address, "127.0.0.1:%u", (unsigned)f->redis.port);
    f->count = count;
    for (int i = 0; i < count; i++) {
        rl_test_daemon_init(&f->d[i]);
        const char *args[] = {"--backend", "redis", "--redis", f->redis_address, "--allotments", NULL};
        if (!rl_test_daemon_start(&f->d[i], args)) {
            char text[8192];
            rl_test_daemon_read_stderr(&f->d[i], text, sizeof text);
            fail_msg("ratelimiterd did not start: %s", text);
        }
    }
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_with(state, false, 2); }
/* Redis with its append-only file synced at every write: what it
 * acknowledged survives a kill. */
static int setup_persistent(void **state) { return setup_with(state, true, 2); }
static int setup_three(void **state) { return setup_with(state, false, 3); }

static int teardown(void **state) {
    fleet *f = *state;
    if (f == NULL) return 0;
    if (f->redis.pid != 0) kill(f->redis.pid, SIGCONT);
    for (int i = 0; i < f->count; i++) rl_test_daemon_cleanup(&f->d[i]);
    rl_test_redis_cleanup(&f->redis);
    free(f);
    return 0;
}

static long call(fleet *f, int d, const char *method, const char *path, const char *body) {
    rl_test_response r;
    rl_test_daemon_http(&f->d[d], method, path, body, &r);
    snprintf(f->body, sizeof f->body, "%s", r.status != 0 ? r.body : r.error);
    long status = r.status;
    rl_test_response_free(&r);
    return status;
}

static void define(fleet *f, const char *json) {
    if (call(f, 0, "PUT", "/v1/admin/limits", json) != 200) fail_msg("PUT %s: %s", json, f->body);
}

/* A usage field of key through daemon d, -1 if it cannot be read
 * ("allotted" is there only while allotments hold some: 0 when absent). */
static long usage_of(fleet *f, int d, const char *key, const char *field) {
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    if (call(f, d, "GET", path, NULL) != 200) return -1;
    cJSON *root = cJSON_Parse(f->body);
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "limit"), "usage"), field);
    long n = cJSON_IsNumber(v) ? (long)v->valuedouble : v == NULL && strcmp(field, "allotted") == 0 ? 0 : -1;
    cJSON_Delete(root);
    return n;
}

/* How many leases daemon d said at its exit it decided locally. */
static long decided_locally(fleet *f, int d) {
    char text[16384];
    rl_test_daemon_read_stderr(&f->d[d], text, sizeof text);
    const char *line = strstr(text, "allotments: ");
    return line != NULL ? strtol(line + strlen("allotments: "), NULL, 10) : -1;
}

/* ---- the load ---- */

typedef struct load {
    fleet *f;
    const char *body_format; /* one %s: the lease id */
    const char *complete_format; /* one %s, or NULL: nothing completed */
    atomic_bool stop;
    atomic_long admitted, denied, unavailable, failures;
    atomic_int holding, max_holding;
    atomic_long last_admitted_ms;  /* when the latest admission was answered */
    atomic_long admitted_after_ms; /* admissions asked for after mark_ms (sent then: an answer
                                     * that only arrives then may be slow on a busy machine) */
    atomic_long mark_ms;
    long pace_us;
    char first_failure[512];
    pthread_mutex_t mutex;
} load;

typedef struct worker {
    pthread_t thread;
    load *l;
    int index;
} worker;

static void failure(load *l, const char *what) {
    if (atomic_fetch_add(&l->failures, 1) == 0) {
        pthread_mutex_lock(&l->mutex);
        snprintf(l->first_failure, sizeof l->first_failure, "%s", what);
        pthread_mutex_unlock(&l->mutex);
    }
}

static void *hammer(void *arg) {
    worker *w = arg;
    load *l = w->l;
    int count = l->f->count, home = w->index * count / CLIENTS; /* the clients split evenly */
    rl_test_client clients[DAEMONS_MAX];
    int ready = 0;
    while (ready < count && rl_test_client_init(&clients[ready], l->f->d[ready].port)) ready++;
    unsigned seed = (unsigned)w->index * 2654435761u ^ (unsigned)time(NULL);
    while (ready == count && !atomic_load(&l->stop)) {
        char id[27], body[1024], what[512];
        rl_test_ulid_new(id);
        snprintf(body, sizeof body, l->body_format, id);
        rl_test_response r;
        long sent_ms = rl_test_now_ms();
        long status = rl_test_client_request(&clients[home], "POST", "/v1/reserve", body, &r);
        bool allowed = status == 200 && strstr(r.body, "\"allowed\":true") != NULL;
        if (status == 503 && strstr(r.body, "backend_error") != NULL) {
            atomic_fetch_add(&l->unavailable, 1);
        } else if (status != 200 || (!allowed && strstr(r.body, "\"allowed\":false") == NULL)) {
            snprintf(what, sizeof what, "reserve on %d -> %ld %s %s", home, status, r.error, r.body);
            failure(l, what);
        } else if (!allowed) {
            atomic_fetch_add(&l->denied, 1);
        } else {
            atomic_fetch_add(&l->admitted, 1);
            long now = rl_test_now_ms();
            atomic_store(&l->last_admitted_ms, now);
            long mark = atomic_load(&l->mark_ms);
            if (mark != 0 && sent_ms > mark) atomic_fetch_add(&l->admitted_after_ms, 1);
            int holding = atomic_fetch_add(&l->holding, 1) + 1;
            int seen = atomic_load(&l->max_holding);
            while (holding > seen && !atomic_compare_exchange_weak(&l->max_holding, &seen, holding)) {
            }
        }
        rl_test_response_free(&r);
        if (allowed && l->complete_format != NULL) {
            atomic_fetch_sub(&l->holding, 1); /* uncounted before release: the count lags the store's */
            int where = rand_r(&seed) % 2 == 0 ? home : (home + 1) % count;
            snprintf(body, sizeof body, l->complete_format, id);
            status = rl_test_client_request(&clients[where], "POST", "/v1/complete", body, &r);
            if (status != 200 && !(status == 503 && strstr(r.body, "backend_error") != NULL)) {
                snprintf(what, sizeof what, "complete on %d -> %ld %s %s", where, status, r.error, r.body);
                failure(l, what);
            }
            rl_test_response_free(&r);
        }
        if (l->pace_us > 0) {
            struct timespec ts = {0, l->pace_us * 1000};
            nanosleep(&ts, NULL);
        }
    }
    while (ready > 0) rl_test_client_cleanup(&clients[--ready]);
    return NULL;
}

static void load_start(load *l, worker *workers, fleet *f, const char *body_format, const char *complete_format,
                       long pace_us) {
    memset(l, 0, sizeof *l);
    l->f = f;
    l->body_format = body_format;
    l->complete_format = complete_format;
    l->pace_us = pace_us;
    pthread_mutex_init(&l->mutex, NULL);
    for (int i = 0; i < CLIENTS; i++) {
        workers[i] = (worker){.l = l, .index = i};
        assert_int_equal(pthread_create(&workers[i].thread, NULL, hammer, &workers[i]), 0);
    }
}

static void load_stop(load *l, worker *workers) {
    atomic_store(&l->stop, true);
    for (int i = 0; i < CLIENTS; i++) pthread_join(workers[i].thread, NULL);
    pthread_mutex_destroy(&l->mutex);
    if (atomic_load(&l->failures) != 0) fail_msg("%ld failures, first: %s", atomic_load(&l->failures), l->first_failure);
}

/* Waits until a load's counter reaches n, or deadline_ms have passed. */
static void wait_for_count(atomic_long *counter, long n, long deadline_ms) {
    long until = rl_test_now_ms() + deadline_ms;
    while (atomic_load(counter) < n && rl_test_now_ms() < until) rl_test_sleep_ms(5);
}

/* One reserve of body_format through daemon d with a new lease id, into
 * id: 1 allowed, 0 denied, -1 else. */
static int reserve_as(fleet *f, int d, const char *body_format, char id[27]) {
    char body[1024];
    snprintf(body, sizeof body, body_format, rl_test_ulid_new(id));
    long status = call(f, d, "POST", "/v1/reserve", body);
    if (status != 200) return -1;
    return strstr(f->body, "\"allowed\":true") != NULL ? 1 : 0;
}

static int reserve(fleet *f, int d, const char *body_format) {
    char id[27];
    return reserve_as(f, d, body_format, id);
}

/* A limit of capacity the load exhausted: the daemons give back what their
 * allotments still hold at their next looks, then the rest of the capacity,
 * if any, goes to the next leases of body_format, asked of each daemon in
 * turn until twenty in a row are not admitted (or one more than the
 * capacity is). Those admitted are added to *admitted, the answers whose
 * outcome nobody knows (a 503: Redis may have applied it) to *unknown. */
static void admit_the_rest(fleet *f, const char *body_format, long capacity, long *admitted, long *unknown) {
    rl_test_sleep_ms(1000);
    for (int misses = 0, d = 0; misses < 20 && *admitted <= capacity; d = (d + 1) % f->count) {
        int r = reserve(f, d, body_format);
        if (r == 1) {
            (*admitted)++;
            misses = 0;
        } else {
            if (r < 0) (*unknown)++;
            misses++;
            rl_test_sleep_ms(25); /* twenty misses span more than a daemon's look */
        }
    }
}

#define LEASE3 \
    "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"l:rpm\",\"amount\":1},{\"key\":\"l:conc\",\"amount\":1}," \
    "{\"key\":\"l:tpm\",\"amount\":100}]}"
#define COMPLETE3 "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"l:tpm\",\"actual_amount\":40}]}"

static void two_daemons_under_load_never_admit_more_than_capacity(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"l:rpm\",\"kind\":\"rolling\",\"capacity\":3000,\"window_seconds\":600}");
    define(f, "{\"key\":\"l:conc\",\"kind\":\"concurrency\",\"capacity\":300,\"timeout_seconds\":600}");
    define(f, "{\"key\":\"l:tpm\",\"kind\":\"rolling\",\"capacity\":1000000000,\"window_seconds\":600}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, LEASE3, COMPLETE3, 0);
    wait_for_count(&l.denied, 2000, 30000);
    load_stop(&l, workers);
    long admitted = atomic_load(&l.admitted), unknown = atomic_load(&l.unavailable);
    fprintf(stderr, "admitted %ld, denied %ld, %ld answered 503 (outcome unknown), at most %d held at once\n",
            admitted, atomic_load(&l.denied), unknown, atomic_load(&l.max_holding));
    assert_true(admitted <= 3000);
    assert_true(atomic_load(&l.max_holding) <= 300);
    admit_the_rest(f, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"l:rpm\",\"amount\":1}]}", 3000, &admitted,
                   &unknown);
    /* Exactly the capacity, but for answers whose outcome nobody knows (a
     * 503 on a busy machine: Redis may have applied it) */
    assert_true(admitted <= 3000 && admitted + unknown >= 3000);
    assert_int_equal(usage_of(f, 0, "l:rpm", "used"), 3000);
    assert_int_equal(usage_of(f, 1, "l:rpm", "allotted"), 0);
    /* every hold released, those completed through the other daemon too */
    long until = rl_test_now_ms() + 10000;
    while (usage_of(f, 0, "l:conc", "used") != 0 && rl_test_now_ms() < until) rl_test_sleep_ms(50);
    assert_int_equal(usage_of(f, 0, "l:conc", "used"), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[0]), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[1]), 0);
    long local = decided_locally(f, 0) + decided_locally(f, 1);
    fprintf(stderr, "%ld leases decided locally\n", local);
    /* most of the capacity goes in the first second, while the allotments
     * grow to the demand (the first leases of each key go to Redis): a
     * tenth at least was decided locally even on a busy machine */
    assert_true(local > 300);
}

#define CONC1 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k:conc\",\"amount\":1}]}"
#define COMPLETE1 "{\"lease_id\":\"%s\",\"actuals\":[]}"

static void a_killed_daemons_allotments_come_back(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"k:conc\",\"kind\":\"concurrency\",\"capacity\":200,\"timeout_seconds\":2}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, CONC1, COMPLETE1, 1000);
    rl_test_sleep_ms(1500);
    assert_int_equal(rl_test_daemon_stop_with(&f->d[0], SIGKILL), 128 + SIGKILL);
    rl_test_sleep_ms(500);
    atomic_store(&l.stop, true); /* the clients of the dead daemon fail from now on: stop them all */
    for (int i = 0; i < CLIENTS; i++) pthread_join(workers[i].thread, NULL);
    pthread_mutex_destroy(&l.mutex);
    assert_true(atomic_load(&l.admitted) > 100);
    assert_true(usage_of(f, 1, "k:conc", "used") + usage_of(f, 1, "k:conc", "allotted") <= 200);
    /* the dead daemon's allotment ends by itself: its end plus the timeout */
    long until = rl_test_now_ms() + 15000;
    while ((usage_of(f, 1, "k:conc", "used") != 0 || usage_of(f, 1, "k:conc", "allotted") != 0) &&
           rl_test_now_ms() < until)
        rl_test_sleep_ms(100);
    assert_int_equal(usage_of(f, 1, "k:conc", "used"), 0);
    assert_int_equal(usage_of(f, 1, "k:conc", "allotted"), 0);
    /* the survivor can hold the whole capacity, and no more. Near
     * exhaustion it goes synchronous and gives back the room its own
     * allotment still holds at its keeper's next steps: a lease asked in
     * between is denied by Redis, so a denial is asked again a little later */
    int held = 0;
    until = rl_test_now_ms() + 5000;
    while (held < 200 && rl_test_now_ms() < until) {
        if (reserve(f, 1, CONC1) == 1) held++;
        else rl_test_sleep_ms(20);
    }
    assert_int_equal(held, 200);
    for (int i = 0; i < 10; i++) assert_int_equal(reserve(f, 1, CONC1), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[1]), 0);
}

#define RPM1 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"p:rpm\",\"amount\":1}]}"

/* /healthz of daemon d until it answers want with fragment in its body. */
static bool health_becomes(fleet *f, int d, long want, const char *fragment, long deadline_ms) {
    long until = rl_test_now_ms() + deadline_ms;
    for (;;) {
        if (call(f, d, "GET", "/healthz", NULL) == want && (fragment == NULL || strstr(f->body, fragment) != NULL))
            return true;
        if (rl_test_now_ms() >= until) return false;
        rl_test_sleep_ms(20);
    }
}

static void redis_paused_then_resumed(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"p:rpm\",\"kind\":\"rolling\",\"capacity\":100000000,\"window_seconds\":60}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, RPM1, NULL, 500);
    rl_test_sleep_ms(1500);
    kill(f->redis.pid, SIGSTOP);
    long paused_at = rl_test_now_ms();
    long admitted_at_pause = atomic_load(&l.admitted);
    char problem[512] = "";
    /* deciding from allotments, and saying so */
    if (!health_becomes(f, 0, 200, "deciding from allotments", 3000))
        snprintf(problem, sizeof problem, "healthz while paused: %.300s", f->body);
    long admitted_while_held = atomic_load(&l.admitted) - admitted_at_pause;
    /* then failing closed once they end */
    if (problem[0] == '\0' && !health_becomes(f, 0, 503, NULL, 12000))
        snprintf(problem, sizeof problem, "healthz once allotments ended: %.300s", f->body);
    long unavailable = atomic_load(&l.unavailable);
    long paused_for = rl_test_now_ms() - paused_at;
    kill(f->redis.pid, SIGCONT);
    long resumed_at = rl_test_now_ms();
    if (problem[0] == '\0' && !health_becomes(f, 0, 200, NULL, 10000))
        snprintf(problem, sizeof problem, "healthz after resuming: %.300s", f->body);
    long admitted_before = atomic_load(&l.admitted);
    long until = rl_test_now_ms() + 10000;
    while (atomic_load(&l.admitted) == admitted_before && rl_test_now_ms() < until) rl_test_sleep_ms(10);
    long recovered_in = rl_test_now_ms() - resumed_at;
    load_stop(&l, workers);
    fprintf(stderr, "paused %ld ms: %ld admitted from allotments meanwhile, %ld answered 503; recovered in %ld ms\n",
            paused_for, admitted_while_held, unavailable, recovered_in);
    if (problem[0] != '\0') fail_msg("%s", problem);
    assert_true(admitted_while_held > 0);
    assert_true(unavailable > 0);
    assert_true(atomic_load(&l.admitted) > admitted_before);
    assert_int_equal(rl_test_daemon_stop(&f->d[0]), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[1]), 0);
}

#define KILL1 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k:rpm\",\"amount\":1}]}"

/* Redis killed with SIGKILL mid-load and started again on its append-only
 * file: the daemons decide from their allotments meanwhile, fail closed
 * once those end, recover by themselves, and the fleet never admits more
 * than the capacity across the crash (allotments are counted in Redis like
 * reservations, and Redis kept them). */
static void redis_killed_mid_load(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"k:rpm\",\"kind\":\"rolling\",\"capacity\":6000,\"window_seconds\":600}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, KILL1, NULL, 1000);
    wait_for_count(&l.admitted, 1500, 20000);
    long admitted_at_kill = atomic_load(&l.admitted);
    rl_test_redis_kill(&f->redis);
    rl_test_sleep_ms(1500);
    bool restarted = rl_test_redis_restart(&f->redis);
    char problem[512] = "";
    if (!restarted) snprintf(problem, sizeof problem, "redis did not restart");
    if (problem[0] == '\0' && !health_becomes(f, 0, 200, NULL, 15000))
        snprintf(problem, sizeof problem, "healthz after the restart: %.300s", f->body);
    /* on until the limit refuses */
    long until = rl_test_now_ms() + 30000;
    while (problem[0] == '\0' && atomic_load(&l.denied) < 500 && rl_test_now_ms() < until) rl_test_sleep_ms(10);
    load_stop(&l, workers);
    long admitted = atomic_load(&l.admitted);
    fprintf(stderr, "redis killed after %ld admitted; %ld answered 503; %ld admitted in all (capacity 6000)\n",
            admitted_at_kill, atomic_load(&l.unavailable), admitted);
    if (problem[0] != '\0') fail_msg("%s", problem);
    assert_true(atomic_load(&l.denied) >= 500);
    if (admitted > 6000) fail_msg("%ld admitted on a capacity of 6000", admitted);
    /* what the daemons hold live reaches Redis at their keepers' next looks */
    long used = usage_of(f, 1, "k:rpm", "used");
    until = rl_test_now_ms() + 5000;
    while (used < admitted && rl_test_now_ms() < until) {
        rl_test_sleep_ms(50);
        used = usage_of(f, 1, "k:rpm", "used");
    }
    if (used < admitted || used > 6000) fail_msg("used %ld, %ld admitted, capacity 6000", used, admitted);
    assert_int_equal(rl_test_daemon_stop(&f->d[0]), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[1]), 0);
}

#define DEC1 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"d:rpm\",\"amount\":1}]}"

static void a_decrease_under_load_reaches_both_daemons_within_a_second(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"d:rpm\",\"kind\":\"rolling\",\"capacity\":100000,\"window_seconds\":600}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, DEC1, NULL, 2000);
    wait_for_count(&l.admitted, 1000, 20000);
    long admitted_at_put = atomic_load(&l.admitted);
    define(f, "{\"key\":\"d:rpm\",\"kind\":\"rolling\",\"capacity\":500,\"window_seconds\":600}");
    long put_at = rl_test_now_ms();
    atomic_store(&l.mark_ms, put_at + 1000);
    rl_test_sleep_ms(2500);
    load_stop(&l, workers);
    fprintf(stderr, "%ld admitted before the decrease, %ld in its first second, %ld after\n", admitted_at_put,
            atomic_load(&l.admitted) - admitted_at_put - atomic_load(&l.admitted_after_ms),
            atomic_load(&l.admitted_after_ms));
    assert_true(admitted_at_put >= 1000);
    assert_int_equal(atomic_load(&l.admitted_after_ms), 0);
    if (call(f, 1, "GET", "/v1/admin/limits/d:rpm", NULL) != 200 || strstr(f->body, "\"status\":\"decreasing\"") == NULL)
        fail_msg("the limit after the decrease: %s", f->body);
    assert_true(usage_of(f, 1, "d:rpm", "used") <= 100000);
    assert_int_equal(rl_test_daemon_stop(&f->d[0]), 0);
    assert_int_equal(rl_test_daemon_stop(&f->d[1]), 0);
}

#define RE1 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"re:rpm\",\"amount\":1}]}"
#define RE_OVER "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"re:rpm\",\"actual_amount\":300}]}"

/* A metric of daemon d's /metrics, -1 if it cannot be read. */
static double metric_of(fleet *f, int d, const char *series) {
    if (call(f, d, "GET", "/metrics", NULL) != 200) return -1;
    return rl_test_metrics_sample(f->body, series);
}

/* Three daemons under load use most of a limit; it is deleted and PUT
 * again at once with half the capacity (the PUT through the daemon that
 * deleted it, before the others could hear of the delete). Leases of the
 * old limit completed after that with overage, on their own daemon or
 * through another, charge the new one nothing; once every daemon has
 * looked, nothing is used of the new limit; then the fleet admits exactly
 * its capacity under load. */
static void a_limit_deleted_and_put_again_starts_empty_on_every_daemon(void **state) {
    fleet *f = *state;
    define(f, "{\"key\":\"re:rpm\",\"kind\":\"rolling\",\"capacity\":2000,\"window_seconds\":600}");
    load l;
    worker workers[CLIENTS];
    load_start(&l, workers, f, RE1, NULL, 0);
    wait_for_count(&l.admitted, 1800, 30000);
    load_stop(&l, workers);
    long admitted_before = atomic_load(&l.admitted);
    char old[3][27];
    int old_count = 0;
    for (int d = 0; d < 3; d++)
        if (reserve_as(f, d, RE1, old[old_count]) == 1) old_count++;
    fprintf(stderr, "%ld admitted of 2000 before the delete, %d more to complete after it\n", admitted_before,
            old_count);
    assert_true(admitted_before >= 1800);

    if (call(f, 0, "DELETE", "/v1/admin/limits/re:rpm", NULL) != 200) fail_msg("DELETE: %s", f->body);
    define(f, "{\"key\":\"re:rpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":600}");
    for (int i = 0; i < old_count; i++) {
        char body[256];
        snprintf(body, sizeof body, RE_OVER, old[i]);
        if (call(f, i % 2 == 0 ? i : (i + 1) % 3, "POST", "/v1/complete", body) != 200)
            fail_msg("complete: %s", f->body);
    }
    /* every daemon looks within a second and drops the old limit's
     * allotment, holding none at that moment (a daemon that did not drop
     * it would go on holding it, with what its leases hold live) */
    long until = rl_test_now_ms() + 10000;
    for (int d = 0; d < 3 && rl_test_now_ms() < until;)
        if (metric_of(f, d, "ratelimiter_allotments_held") == 0) d++;
        else rl_test_sleep_ms(50);
    long used = usage_of(f, 0, "re:rpm", "used"), allotted = usage_of(f, 0, "re:rpm", "allotted");
    long debt = usage_of(f, 0, "re:rpm", "debt_total");
    fprintf(stderr, "the new limit, the daemons settled: used %ld, allotted %ld, debt_total %ld\n", used, allotted,
            debt);
    assert_int_equal(used, 0); /* allotments carved since for the new limit hold room, unused */
    assert_true(allotted <= 1000);
    assert_int_equal(debt, 0);
    assert_int_equal(usage_of(f, 0, "re:rpm", "capacity"), 1000);

    load_start(&l, workers, f, RE1, NULL, 0);
    wait_for_count(&l.denied, 1000, 30000);
    load_stop(&l, workers);
    long admitted = atomic_load(&l.admitted), unknown = atomic_load(&l.unavailable);
    admit_the_rest(f, RE1, 1000, &admitted, &unknown);
    fprintf(stderr, "the new limit admitted %ld of 1000 (%ld answered 503)\n", admitted, unknown);
    assert_true(admitted <= 1000 && admitted + unknown >= 1000);
    assert_int_equal(usage_of(f, 0, "re:rpm", "used"), 1000);
    for (int d = 0; d < 3; d++) assert_int_equal(rl_test_daemon_stop(&f->d[d]), 0);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(two_daemons_under_load_never_admit_more_than_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(a_killed_daemons_allotments_come_back, setup, teardown),
        cmocka_unit_test_setup_teardown(redis_paused_then_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(redis_killed_mid_load, setup_persistent, teardown),
        cmocka_unit_test_setup_teardown(a_decrease_under_load_reaches_both_daemons_within_a_second, setup, teardown),
        cmocka_unit_test_setup_teardown(a_limit_deleted_and_put_again_starts_empty_on_every_daemon, setup_three,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
