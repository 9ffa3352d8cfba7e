/* test_redis_allot.c — allotments of capacity in Redis (redis_allot.h,
 * allot.lua) against a real redis-server, on a manual clock:
 *
 *  - a carve takes what is free, never more: the limit's usage counts it,
 *    and a reserve by any daemon (the synchronous path) finds only the rest;
 *  - a rolling allotment is counted until its end plus the window, a
 *    concurrency one until its end plus the hold timeout, then freed;
 *  - a refill moves the end and resizes, but never below the floor the
 *    daemon holds live from it;
 *  - a return keeps what is still live as entries of their own, and frees
 *    the rest at once;
 *  - a retried call (same generation) changes nothing more; a generation
 *    out of step is refused; a budget (no allotments yet) and an unknown
 *    key are answered as such.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/redis/redis_allot.h"
#include "ratelimiter/redis.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

static rl_test_redis server;

#define T0_UNIX_MS UINT64_C(1793491200000)

static rl_backend *open_at(const char *prefix, rl_manual_clock *clock) {
    rl_manual_clock_init(clock, 1000000, T0_UNIX_MS);
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = prefix;
    options.clock = &clock->base;
    options.sweep_interval_ms = 0;
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

static void put(rl_backend *backend, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds) {
    rl_limit_def def = {.kind = kind, .capacity = capacity};
    snprintf(def.key, sizeof def.key, "%s", key);
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    if (kind == RL_KIND_BUDGET) {
        def.period = RL_PERIOD_MONTH;
        snprintf(def.timezone, sizeof def.timezone, "UTC");
    }
    assert_int_equal(rl_backend_apply_definition(backend, &def, NULL), RL_OK);
}

static rl_reserve_result reserve(rl_backend *backend, uint64_t lease, const char *key, uint64_t amount) {
    char id[27];
    rl_requirement req = {key, amount};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &req, 1};
    rl_reserve_result result;
    rl_backend_reserve(backend, &request, &result);
    return result;
}

static uint64_t used_of(rl_backend *backend, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(backend, key, &u), RL_OK);
    return u.used;
}

static rl__allot_result carve(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                              uint64_t want, uint64_t floor, uint64_t duration_ms) {
    rl__allot_op op = {key, false, generation, want, floor, duration_ms, NULL, 0};
    rl__allot_result result;
    assert_int_equal(rl__redis_allot(backend, daemon, &op, 1, &result), RL_OK);
    return result;
}

static rl__allot_result give_back(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                                  const rl__allot_live *live, size_t live_count) {
    rl__allot_op op = {key, true, generation, 0, 0, 0, live, live_count};
    rl__allot_result result;
    assert_int_equal(rl__redis_allot(backend, daemon, &op, 1, &result), RL_OK);
    return result;
}

/* A carve takes what is free, the limit counts it, the synchronous path
 * finds the rest; it is counted until its end plus the window. */
static void a_rolling_allotment_is_counted_until_its_end_plus_the_window(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("r1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_true(reserve(redis, 1, "tpm", 300).allowed);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 500, 0, 10000);
    assert_int_equal(a.status, RL__ALLOT_OK);
    assert_int_equal(a.amount, 500);
    assert_int_equal(a.ends_in_ms, 10000);
    assert_int_equal(a.counted_for_ms, 70000);
    assert_int_equal(a.free, 200);
    assert_int_equal(used_of(redis, "tpm"), 800);
    /* Another daemon's carve gets what is left, never more. */
    rl__allot_result b = carve(redis, "D2", "tpm", 1, 500, 0, 10000);
    assert_int_equal(b.amount, 200);
    assert_int_equal(b.free, 0);
    assert_false(reserve(redis, 2, "tpm", 1).allowed); /* the synchronous path finds nothing */
    /* Past the end, still counted (reservations made from it live on) ... */
    rl_manual_clock_advance(&clock, 65000);
    assert_int_equal(used_of(redis, "tpm"), 700); /* the reservation's window is over */
    /* ... until the end plus the window. */
    rl_manual_clock_advance(&clock, 5000);
    assert_int_equal(used_of(redis, "tpm"), 0);
    rl_backend_destroy(redis);
}

/* A concurrency allotment: slots until its end plus the hold timeout. */
static void a_concurrency_allotment_is_counted_until_its_end_plus_the_timeout(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("c1:", &clock);
    put(redis, "conc", RL_KIND_CONCURRENCY, 10, 30);
    rl__allot_result a = carve(redis, "D1", "conc", 1, 4, 0, 5000);
    assert_int_equal(a.amount, 4);
    assert_int_equal(a.counted_for_ms, 35000);
    assert_int_equal(used_of(redis, "conc"), 4);
    rl_manual_clock_advance(&clock, 35000);
    assert_int_equal(used_of(redis, "conc"), 0);
    rl_backend_destroy(redis);
}

/* A refill moves the end and resizes: it may shrink, never below the
 * floor the daemon holds live; it grows only into what is free. */
static void a_refill_resizes_but_never_below_the_floor(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("f1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_int_equal(carve(redis, "D1", "tpm", 1, 600, 0, 10000).amount, 600);
    rl_manual_clock_advance(&clock, 5000);
    rl__allot_result grown = carve(redis, "D1", "tpm", 2, 900, 100, 10000);
    assert_int_equal(grown.amount, 900);
    assert_int_equal(grown.ends_in_ms, 10000);
    assert_int_equal(grown.counted_for_ms, 70000);
    assert_int_equal(used_of(redis, "tpm"), 900);
    assert_int_equal(carve(redis, "D2", "tpm", 1, 500, 0, 10000).amount, 100);
    /* Asked for little, but 700 is live from it: 700 stay held. */
    rl__allot_result shrunk = carve(redis, "D1", "tpm", 3, 50, 700, 10000);
    assert_int_equal(shrunk.amount, 700);
    assert_int_equal(used_of(redis, "tpm"), 800);
    rl_backend_destroy(redis);
}

/* A return keeps what is live as entries of their own (until their own
 * expiry) and frees the rest at once. */
static void a_return_keeps_what_is_live_and_frees_the_rest(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("g1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_int_equal(carve(redis, "D1", "tpm", 1, 800, 0, 10000).amount, 800);
    rl__allot_live live[] = {{20000, 100}, {50000, 50}};
    rl__allot_result back = give_back(redis, "D1", "tpm", 2, live, 2);
    assert_int_equal(back.status, RL__ALLOT_OK);
    assert_int_equal(back.amount, 0);
    assert_int_equal(used_of(redis, "tpm"), 150);
    assert_true(reserve(redis, 1, "tpm", 850).allowed);
    rl_manual_clock_advance(&clock, 20000);
    assert_int_equal(used_of(redis, "tpm"), 900);
    rl_manual_clock_advance(&clock, 30000);
    assert_int_equal(used_of(redis, "tpm"), 850);
    rl_backend_destroy(redis);
}

/* Retries and generations: a retried call changes nothing more; one out
 * of step is refused; budgets and unknown keys are answered as such. */
static void generations_kinds_and_unknown_keys(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("s1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    put(redis, "usd", RL_KIND_BUDGET, 1000, 60);
    assert_int_equal(carve(redis, "D1", "tpm", 1, 300, 0, 10000).amount, 300);
    rl__allot_result again = carve(redis, "D1", "tpm", 1, 300, 0, 10000); /* a retry */
    assert_int_equal(again.status, RL__ALLOT_OK);
    assert_int_equal(again.amount, 300);
    assert_int_equal(used_of(redis, "tpm"), 300);
    assert_int_equal(carve(redis, "D1", "tpm", 3, 300, 0, 10000).status, RL__ALLOT_GENERATION);
    assert_int_equal(used_of(redis, "tpm"), 300);
    assert_int_equal(give_back(redis, "D1", "tpm", 2, NULL, 0).amount, 0);
    assert_int_equal(give_back(redis, "D1", "tpm", 2, NULL, 0).status, RL__ALLOT_OK); /* a retry */
    assert_int_equal(used_of(redis, "tpm"), 0);
    assert_int_equal(carve(redis, "D1", "usd", 1, 10, 0, 10000).status, RL__ALLOT_KIND);
    assert_int_equal(carve(redis, "D1", "nope", 1, 10, 0, 10000).status, RL__ALLOT_UNKNOWN);
    /* Several keys in one call. */
    put(redis, "rpm", RL_KIND_ROLLING, 10, 60);
    rl__allot_op ops[] = {{"tpm", false, 3, 100, 0, 10000, NULL, 0}, {"rpm", false, 1, 20, 0, 10000, NULL, 0}};
    rl__allot_result results[2];
    assert_int_equal(rl__redis_allot(redis, "D1", ops, 2, results), RL_OK);
    assert_int_equal(results[0].amount, 100);
    assert_int_equal(results[1].amount, 10);
    assert_int_equal(results[1].free, 0);
    rl_backend_destroy(redis);
}

static int setup(void **state) {
    (void)state;
    return rl_test_redis_start(&server) == RL_TEST_REDIS_STARTED ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    rl_test_redis_cleanup(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_rolling_allotment_is_counted_until_its_end_plus_the_window),
        cmocka_unit_test(a_concurrency_allotment_is_counted_until_its_end_plus_the_timeout),
        cmocka_unit_test(a_refill_resizes_but_never_below_the_floor),
        cmocka_unit_test(a_return_keeps_what_is_live_and_frees_the_rest),
        cmocka_unit_test(generations_kinds_and_unknown_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
