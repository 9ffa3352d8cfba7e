/* test_memory_backend.c — what only the memory backend has: its bounded
 * lease table (rl_memory_options.max_leases) and its sweeper thread on the
 * real clock, which hands freed memory back beside reserving threads. Everything every backend must do is in
 * test_backend_conformance.c, which runs against this backend too. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "backend/memory/memory_backend.h"
#include "ratelimiter/memory.h"
#include "support/backend_fixture.h"
#include "support/lease_ids.h"

static int setup_small(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.max_leases = 4;
    options.lease_memory_ms = 600000;
    assert_int_equal(rl_memory_backend_create(&options, &f->backend), RL_OK);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    free(f);
    return 0;
}

/* Memory-only: max_leases is the memory backend's bound on remembered leases,
 * and beyond it the backend fails closed (RL_BACKEND_ERROR). The redis
 * backend has no such count; its bound is the TTL on every lease key. */
static void the_lease_table_is_bounded(void **state) {
    fixture *f = *state; /* at most 4 leases remembered */
    define(f, "conc", RL_KIND_CONCURRENCY, 2, 10, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "conc", 1).allowed);
    assert_true(reserve1(f, 2, "conc", 1).allowed);
    for (uint64_t lease = 3; lease < 100; lease++) assert_false(reserve1(f, lease, "conc", 1).allowed);
    rl_manual_clock_advance(&f->clock, 5000);
    /* denied leases make way for new ones; the two live holds stay */
    assert_int_equal(usage_of(f, "conc").used, 2);
    complete_n(f, 1, NULL, 0);
    complete_n(f, 2, NULL, 0);
    assert_true(reserve1(f, 100, "conc", 1).allowed);
    assert_true(reserve1(f, 101, "conc", 1).allowed);
    define(f, "rpm", RL_KIND_ROLLING, 100, 10, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 102, "rpm", 1).allowed);
    /* now 4 leases hold live capacity (two of them only as long as lease
     * memory lasts for the completed ones): a fifth is refused, fail closed */
    rl_reserve_result r;
    for (uint64_t lease = 103; lease < 106; lease++) r = reserve1(f, lease, "rpm", 1);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_BACKEND_ERROR);
    rl_manual_clock_advance(&f->clock, 10000); /* everything expired */
    assert_true(reserve1(f, 200, "rpm", 1).allowed);
}

/* A live lease due to be forgotten first does not keep denied leases made
 * after it from making room: they are remembered for the lease memory only,
 * in a lifetime of their own. (Before, a flood of denials on a long window
 * behind one admitted lease failed every reserve closed.) */
static void denials_behind_a_live_lease_make_room(void **state) {
    fixture *f = *state; /* at most 4 leases remembered */
    define(f, "tpd", RL_KIND_ROLLING, 1, 86400, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpd", 1).allowed); /* held for a day */
    for (uint64_t lease = 2; lease < 1000; lease++) {
        rl_reserve_result r = reserve1(f, lease, "tpd", 1);
        assert_false(r.allowed);
        assert_int_equal(r.status, RL_OK); /* denied, not failed closed */
    }
    assert_int_equal(usage_of(f, "tpd").used, 1);
    /* the newest denials are still remembered, the admitted lease too */
    assert_false(reserve1(f, 999, "tpd", 1).allowed);
    assert_int_equal(reserve1(f, 1, "tpd", 1).reserved_at_unix_ms, T0_UNIX_MS);
}

/* Many threads on the real clock, with the sweeper thread purging every
 * 5 ms in between: never more admitted than capacity. Memory-only because
 * it races the memory backend's own sweeper thread (rl_memory_options);
 * test_backend_conformance.c runs the same hammer against every backend. */
typedef struct hammer {
    rl_backend *backend;
    int thread;
    int admitted;
} hammer;

static void *hammer_main(void *arg) {
    hammer *h = arg;
    rl_requirement reqs[] = {{"h:conc", 1, false}, {"h:rpm", 1, false}};
    for (int i = 0; i < 2000; i++) {
        char id[27];
        rl_test_lease_id((uint64_t)h->thread * 100000u + (uint64_t)i + 1, id);
        rl_reserve_request request = {id, NULL, reqs, 2, false};
        rl_reserve_result r;
        rl_backend_reserve(h->backend, &request, &r);
        if (r.allowed) {
            h->admitted++;
            rl_complete_request done = {id, NULL, NULL, 0};
            rl_backend_complete(h->backend, &done);
        }
    }
    return NULL;
}

/* A backend on the real clock whose sweeper thread sweeps every
 * sweep_interval_ms, remembering leases lease_memory_ms. */
static rl_backend *swept_every(uint32_t sweep_interval_ms, uint32_t lease_memory_ms) {
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.sweep_interval_ms = sweep_interval_ms;
    options.lease_memory_ms = lease_memory_ms;
    rl_backend *backend;
    assert_int_equal(rl_memory_backend_create(&options, &backend), RL_OK);
    return backend;
}

static void threads_never_over_admit_with_the_sweeper_running(void **state) {
    (void)state;
    rl_backend *backend = swept_every(5, RL_MEMORY_DEFAULT_LEASE_MEMORY_MS);
    rl_limit_def conc = {.key = "h:conc", .kind = RL_KIND_CONCURRENCY, .capacity = 3, .timeout_seconds = 60};
    rl_limit_def rpm = {.key = "h:rpm", .kind = RL_KIND_ROLLING, .capacity = 500, .window_seconds = 3600};
    assert_int_equal(rl_backend_apply_definition(backend, &conc, NULL), RL_OK);
    assert_int_equal(rl_backend_apply_definition(backend, &rpm, NULL), RL_OK);
    enum { THREADS = 8 };
    hammer hammers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        hammers[t] = (hammer){backend, t, 0};
        pthread_create(&threads[t], NULL, hammer_main, &hammers[t]);
    }
    int admitted = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        admitted += hammers[t].admitted;
    }
    assert_int_equal(admitted, 500);
    rl_limit_usage u;
    rl_backend_limit_usage(backend, "h:conc", &u);
    assert_int_equal(u.used, 0);
    rl_backend_limit_usage(backend, "h:rpm", &u);
    assert_int_equal(u.used, 500);
    rl_backend_destroy(backend);
}

/* The sweeper thread forgets a burst of tenants (their limits and their
 * leases) and hands the memory back while other threads go on reserving:
 * the hand-back runs off the backend's lock, beside them (for TSan). */
typedef struct retrier {
    rl_backend *backend;
    int thread;
    atomic_bool *stop;
} retrier;

static void *retrier_main(void *arg) {
    retrier *r = arg;
    char id[27];
    rl_test_lease_id(900000u + (uint64_t)r->thread, id);
    rl_requirement requirement = {"tenant:steady:tpm", 1, false};
    rl_reserve_request request = {id, NULL, &requirement, 1, false};
    /* One lease id again and again: its first outcome, remembered (made
     * anew once forgotten), so these threads add a lease a second at most. */
    while (!atomic_load(r->stop)) {
        rl_reserve_result result;
        rl_backend_reserve(r->backend, &request, &result);
    }
    return NULL;
}

static uint64_t hand_backs_of(rl_backend *backend) {
    memory_backend *inside = (memory_backend *)backend;
    pthread_mutex_lock(&inside->lock);
    uint64_t hand_backs = inside->hand_back.hand_backs;
    pthread_mutex_unlock(&inside->lock);
    return hand_backs;
}

static void the_sweeper_hands_memory_back_beside_reserving_threads(void **state) {
    (void)state;
    rl_backend *backend = swept_every(1, 0); /* a lease goes with its window */
    rl_limit_def per_tenant = {.key = "tenant:{t}:tpm", .kind = RL_KIND_ROLLING, .capacity = 1000000,
                               .window_seconds = 1};
    assert_int_equal(rl_backend_put_template(backend, &per_tenant), RL_OK);
    enum { BURST = 20000 };
    char key[64], id[27];
    rl_requirement requirement = {key, 1, false};
    rl_reserve_request request = {id, NULL, &requirement, 1, false};
    for (uint64_t i = 0; i < BURST; i++) {
        snprintf(key, sizeof key, "tenant:t%llu:tpm", (unsigned long long)i);
        rl_test_lease_id(i + 1, id);
        rl_reserve_result result;
        rl_backend_reserve(backend, &request, &result);
        assert_true(result.allowed);
    }
    uint64_t hand_backs = hand_backs_of(backend);
    atomic_bool stop = false;
    enum { RETRIERS = 2 };
    retrier retriers[RETRIERS];
    pthread_t threads[RETRIERS];
    for (int t = 0; t < RETRIERS; t++) {
        retriers[t] = (retrier){backend, t, &stop};
        assert_int_equal(pthread_create(&threads[t], NULL, retrier_main, &retriers[t]), 0);
    }
    /* The burst's window ends within a second; a sweep a millisecond later
     * forgets it. Waited for, not timed: the bound only keeps a broken
     * build from hanging. */
    for (int waited_ms = 0; hand_backs_of(backend) == hand_backs && waited_ms < 60000; waited_ms += 10)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    atomic_store(&stop, true);
    for (int t = 0; t < RETRIERS; t++) pthread_join(threads[t], NULL);
    assert_true(hand_backs_of(backend) > hand_backs);
    rl_backend_destroy(backend);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_lease_table_is_bounded, setup_small, teardown),
        cmocka_unit_test_setup_teardown(denials_behind_a_live_lease_make_room, setup_small, teardown),
        cmocka_unit_test(threads_never_over_admit_with_the_sweeper_running),
        cmocka_unit_test(the_sweeper_hands_memory_back_beside_reserving_threads),
    };
    return cmocka_run_group_tests_name("memory only", tests, NULL, NULL);
}
