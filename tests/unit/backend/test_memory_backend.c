/* test_memory_backend.c — what only the memory backend has: its bounded
 * lease table (rl_memory_options.max_leases) and its sweeper thread on the
 * real clock. Everything every backend must do is in
 * test_backend_conformance.c, which runs against this backend too. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

static void threads_never_over_admit_with_the_sweeper_running(void **state) {
    (void)state;
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.sweep_interval_ms = 5;
    rl_backend *backend;
    assert_int_equal(rl_memory_backend_create(&options, &backend), RL_OK);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_lease_table_is_bounded, setup_small, teardown),
        cmocka_unit_test_setup_teardown(denials_behind_a_live_lease_make_room, setup_small, teardown),
        cmocka_unit_test(threads_never_over_admit_with_the_sweeper_running),
    };
    return cmocka_run_group_tests_name("memory only", tests, NULL, NULL);
}
