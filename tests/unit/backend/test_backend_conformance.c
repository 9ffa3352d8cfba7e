/* test_backend_conformance.c — the semantics every backend honours, written
 * against the rl_backend_* interface only and run unchanged against each
 * backend: the four accounting examples of docs/concepts.md, expiry,
 * all-or-nothing, idempotency, retry_after, lease memory, batches and many
 * threads, all on a manual clock that the backend reads its time from.
 *
 * The groups run the same case list: "memory" (sweeper off), the memory
 * backend with its journal, "redis" (one private redis-server per group,
 * tests/support/redis_server.h; each case gets its own key prefix, so cases
 * never see each other's limits or leases), and a fleet of three redis
 * daemons with allotments on one Redis (support/fleet_backend.h). Cases about one backend's internals live beside it:
 * test_memory_backend.c for the memory backend's bounded lease table and its
 * sweeper thread on the real clock.
 */
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
#include "ratelimiter/redis.h"
#include "support/backend_fixture.h"
#include "support/fleet_backend.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

#define LEASE_MEMORY_MS 60000u

/* --- the backends under test: one fixture per case, one setup per backend --- */

static int setup_memory(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    assert_int_equal(rl_memory_backend_create(&options, &f->backend), RL_OK);
    *state = f;
    return 0;
}

/* The memory backend with its journal and audit log (in a directory of
 * its own, removed by teardown): every case holds for it too, and the
 * audit cases run. */
static int setup_memory_journal(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_conformance_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char journal[128], audit[128];
    snprintf(journal, sizeof journal, "%s/journal", f->dir);
    snprintf(audit, sizeof audit, "%s/audit", f->dir);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.journal_path = journal;
    options.audit_dir = audit;
    char err[256];
    if (rl_memory_backend_open(&options, &f->backend, err, sizeof err) != RL_OK) fail_msg("%s", err);
    *state = f;
    return 0;
}

static rl_test_redis redis_server; /* the "redis" group's, started by its group setup */
static unsigned redis_cases_run;

static int start_redis(void **state) {
    (void)state;
    if (rl_test_redis_start(&redis_server) != RL_TEST_REDIS_STARTED) return -1;
    print_message("redis-server %s on 127.0.0.1:%u (log: %s)\n", redis_server.executable,
                  (unsigned)redis_server.port, redis_server.log_path);
    return 0;
}

static int stop_redis(void **state) {
    (void)state;
    rl_test_redis_cleanup(&redis_server);
    return 0;
}

static int setup_redis(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%u:", ++redis_cases_run); /* a fresh keyspace per case */
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.host = "127.0.0.1";
    options.port = redis_server.port;
    options.key_prefix = prefix;
    options.clock = &f->clock.base;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.sweep_interval_ms = 0; /* as the memory fixture: no thread reads the clock while a case advances it */
    char err[256] = "";
    rl_status status = rl_redis_backend_create(&options, &f->backend, err, sizeof err);
    if (status != RL_OK) {
        free(f);
        fail_msg("rl_redis_backend_create on port %u: %d %s", (unsigned)redis_server.port, status, err);
    }
    *state = f;
    return 0;
}

/* A fleet: three daemons with allotments on the same Redis (support/
 * fleet_backend.h), each deciding what its allotments hold room for and
 * forwarding the rest; from outside, one backend with the same semantics. */
static int setup_fleet(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "f%u:", ++redis_cases_run);
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.host = "127.0.0.1";
    options.port = redis_server.port;
    options.key_prefix = prefix;
    options.clock = &f->clock.base;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.sweep_interval_ms = 0;
    char err[256] = "";
    rl_status status = rl_test_fleet_create(&options, 3, &f->backend, err, sizeof err);
    if (status != RL_OK) {
        free(f);
        fail_msg("a fleet on port %u: %d %s", (unsigned)redis_server.port, status, err);
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    if (f->dir[0] != '\0') {
        char command[128];
        snprintf(command, sizeof command, "rm -rf %s", f->dir);
        if (system(command) != 0) return -1;
    }
    free(f);
    return 0;
}

/* --- the cases --- */

/* overview.md Example 1: reconcile frees the unused part at once. */
static void example1_rolling_reconcile_frees_early(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    rl_reserve_result r = reserve1(f, 1, "tpm", 80);
    assert_true(r.allowed);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(r.retry_after_ms, 0);
    assert_int_equal(usage_of(f, "tpm").available, 20);
    assert_false(reserve1(f, 2, "tpm", 40).allowed);

    rl_manual_clock_advance(&f->clock, 10000);
    complete1(f, 1, "tpm", 60);
    assert_int_equal(usage_of(f, "tpm").available, 40);
    assert_true(reserve1(f, 3, "tpm", 40).allowed);
    assert_int_equal(usage_of(f, "tpm").available, 0);

    /* the 60 stays for the rest of lease 1's window only */
    rl_manual_clock_advance(&f->clock, 49999);
    assert_int_equal(usage_of(f, "tpm").used, 100);
    rl_manual_clock_advance(&f->clock, 1);
    assert_int_equal(usage_of(f, "tpm").used, 40);
}

/* overview.md Example 2: concurrency frees on Complete. */
static void example2_concurrency_released_on_complete(void **state) {
    fixture *f = *state;
    define(f, "conc", RL_KIND_CONCURRENCY, 2, 300, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "conc", 1).allowed);
    assert_true(reserve1(f, 2, "conc", 1).allowed);
    rl_reserve_result third = reserve1(f, 3, "conc", 1);
    assert_false(third.allowed);
    assert_int_equal(third.status, RL_OK);
    assert_int_equal(third.retry_after_ms, 300000); /* the soonest hold timeout */
    complete_n(f, 1, NULL, 0);
    assert_true(reserve1(f, 4, "conc", 1).allowed);
    assert_int_equal(usage_of(f, "conc").active, 2);
}

/* overview.md Example 3: overage recorded as debt; new reservations wait. */
static void example3_overage_debt(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpm", 100).allowed);
    rl_manual_clock_advance(&f->clock, 1000);
    complete1(f, 1, "tpm", 140);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, 140);
    assert_int_equal(u.debt, 40);
    assert_int_equal(u.debt_total, 40);
    assert_int_equal(u.available, 0);
    rl_reserve_result r = reserve1(f, 2, "tpm", 1);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, 59000); /* all 140 go at once, at the end of lease 1's window */
    rl_manual_clock_advance(&f->clock, 59000);
    u = usage_of(f, "tpm");
    assert_int_equal(u.used, 0);
    assert_int_equal(u.debt, 0);
    assert_int_equal(u.debt_total, 40);
    assert_true(reserve1(f, 3, "tpm", 100).allowed);
}

static void overage_partly_fitting_records_only_the_excess_as_debt(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpm", 50).allowed);
    assert_true(reserve1(f, 2, "tpm", 30).allowed);
    complete1(f, 1, "tpm", 90); /* +40: 20 fit, 20 above capacity */
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, 120);
    assert_int_equal(u.debt, 20);
    assert_int_equal(u.debt_total, 20);
}

static void overage_deny_charges_only_what_fits(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DENY);
    assert_true(reserve1(f, 1, "tpm", 50).allowed);
    assert_true(reserve1(f, 2, "tpm", 30).allowed);
    complete1(f, 1, "tpm", 90);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, 100);
    assert_int_equal(u.debt, 0);
    assert_int_equal(u.overage_denied_total, 20);
}

/* Leases first.. first + count - 1 (count at most OVERRUN_MAX), each of 1
 * on every one of keys, reserved in batches of 256 (every one admitted),
 * then completed in batches with actual on every key: overage on each, as
 * a client that says it used 2^53 on a lease of 1. */
enum { OVERRUN_BATCH = 256, OVERRUN_MAX = 2048 };
static void overrun(fixture *f, uint64_t first, size_t count, const char *const *keys, size_t key_count,
                    uint64_t actual) {
    rl_requirement reqs[RL_MAX_REQUIREMENTS];
    rl_actual actuals[RL_MAX_REQUIREMENTS];
    for (size_t k = 0; k < key_count; k++) {
        reqs[k] = (rl_requirement){keys[k], 1, false};
        actuals[k] = (rl_actual){keys[k], actual};
    }
    static char ids[OVERRUN_MAX][27];
    static rl_reserve_request reserves[OVERRUN_MAX];
    static rl_reserve_result results[OVERRUN_MAX];
    static rl_complete_request completes[OVERRUN_MAX];
    static rl_status statuses[OVERRUN_MAX];
    assert_true(count <= OVERRUN_MAX);
    for (size_t i = 0; i < count; i++) {
        reserves[i] = (rl_reserve_request){rl_test_lease_id(first + i, ids[i]), NULL, reqs, key_count, false};
        completes[i] = (rl_complete_request){ids[i], NULL, actuals, key_count};
    }
    for (size_t at = 0; at < count; at += OVERRUN_BATCH) {
        size_t n = count - at < OVERRUN_BATCH ? count - at : OVERRUN_BATCH;
        rl_backend_reserve_batch(f->backend, reserves + at, n, results + at);
        for (size_t i = at; i < at + n; i++)
            if (!results[i].allowed) fail_msg("lease %zu of %zu was denied", i, count);
    }
    for (size_t at = 0; at < count; at += OVERRUN_BATCH) {
        size_t n = count - at < OVERRUN_BATCH ? count - at : OVERRUN_BATCH;
        rl_backend_complete_batch(f->backend, completes + at, n, statuses + at);
        for (size_t i = at; i < at + n; i++) assert_int_equal(statuses[i], RL_OK);
    }
}

/* Overage is the client's word: 2,048 leases of 1 completed with 2^53
 * each would take used and debt_total past 2^64, where they wrapped to a
 * limit that reads empty and admits 2^53 again. Every counter stops at the
 * ceiling instead, and what the entries counted leaves with their window,
 * exactly. */
static void counters_saturate_instead_of_wrapping(void **state) {
    fixture *f = *state;
    const uint64_t half = RL_AMOUNT_MAX / 2;
    define(f, "tpm", RL_KIND_ROLLING, RL_AMOUNT_MAX, 3600, RL_OVERAGE_DEBT);
    define(f, "tph", RL_KIND_ROLLING, half, 3600, RL_OVERAGE_DEBT);
    define(f, "tpd", RL_KIND_ROLLING, half, 3600, RL_OVERAGE_DENY);
    const char *keys[] = {"tpm", "tph", "tpd"};
    /* 2,048 times 2^53 is 2^64, where a 64-bit sum wraps to 0 (1,024: where
     * Redis's signed one turns negative). A fleet settles each Complete
     * through its keepers, which sanitizers make dear: 64 (2^59) take its
     * counters past the ceiling, and the groups beside it cover the wrap. */
    const size_t leases = f->backend->ops == &rl_test_fleet_ops ? 64 : 2048;
    overrun(f, 1, leases, keys, 3, RL_AMOUNT_MAX);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, RL_COUNTER_MAX);
    assert_int_equal(u.available, 0);
    assert_int_equal(u.active, leases);
    assert_int_equal(u.debt, 0); /* used above a capacity that is the ceiling itself */
    assert_int_equal(u.debt_total, RL_COUNTER_MAX);
    u = usage_of(f, "tph");
    assert_int_equal(u.used, RL_COUNTER_MAX);
    assert_int_equal(u.debt, RL_COUNTER_MAX - half);
    assert_int_equal(u.debt_total, RL_COUNTER_MAX);
    u = usage_of(f, "tpd");
    assert_int_equal(u.used, half);
    assert_int_equal(u.overage_denied_total, RL_COUNTER_MAX);
    assert_int_equal(u.debt_total, 0);
    rl_reserve_result r = reserve1(f, 5000, "tpm", RL_AMOUNT_MAX);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_OK);
    /* room comes back with the window (a fleet's allotment's bucket may end a few seconds later) */
    assert_in_range(r.retry_after_ms, 3600000, 3600000 + 60000);
    assert_int_equal(r.denied_by.available, 0);
    assert_false(reserve1(f, 5001, "tpm", 1).allowed);
    assert_false(reserve1(f, 5002, "tph", 1).allowed);
    assert_false(reserve1(f, 5003, "tpd", 1).allowed);

    rl_manual_clock_advance(&f->clock, 3600000);
    for (size_t k = 0; k < 3; k++) {
        u = usage_of(f, keys[k]);
        assert_int_equal(u.used, 0);
        assert_int_equal(u.active, 0);
        assert_int_equal(u.debt, 0);
    }
    assert_int_equal(usage_of(f, "tph").debt_total, RL_COUNTER_MAX);
    assert_true(reserve1(f, 5004, "tpm", RL_AMOUNT_MAX).allowed);
    assert_true(reserve1(f, 5005, "tph", half).allowed);
}

/* The ceiling itself: a counter 1 below it takes 1 more and stops there,
 * and an amount that would pass a capacity of 2^53 by 1 is denied however
 * it is added up (2^53 + 1 is no double: a sum in Lua would round it down
 * to the capacity and admit it). */
static void a_counter_at_the_ceiling_admits_nothing_more(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, RL_AMOUNT_MAX, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpm", RL_AMOUNT_MAX - 1).allowed);
    assert_false(reserve1(f, 2, "tpm", 2).allowed);
    assert_true(reserve1(f, 3, "tpm", 1).allowed);
    assert_int_equal(usage_of(f, "tpm").used, RL_COUNTER_MAX);
    assert_false(reserve1(f, 4, "tpm", 1).allowed);
    complete1(f, 3, "tpm", 3); /* 2 more than fits under the ceiling: counted as debt, not as used */
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, RL_COUNTER_MAX);
    assert_int_equal(u.debt_total, 2);
    assert_false(reserve1(f, 5, "tpm", 1).allowed);
    complete1(f, 1, "tpm", 0); /* what it counted leaves exactly */
    assert_int_equal(usage_of(f, "tpm").used, 1);
    assert_true(reserve1(f, 6, "tpm", 1).allowed);
    assert_int_equal(usage_of(f, "tpm").used, 2);
}

/* overview.md Example 4: a decrease waits for usage, denying meanwhile. */
static void example4_capacity_decrease(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpm", 50).allowed);
    rl_manual_clock_advance(&f->clock, 1000);
    assert_true(reserve1(f, 2, "tpm", 30).allowed);
    assert_int_equal(define(f, "tpm", RL_KIND_ROLLING, 60, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.status, RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(u.capacity, 100);
    assert_int_equal(u.pending_decrease_to, 60);

    rl_reserve_result r = reserve1(f, 3, "tpm", 1);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_LIMIT_DECREASING);
    assert_string_equal(r.status_key, "tpm");
    assert_int_equal(r.retry_after_ms, 10000);

    complete1(f, 2, "tpm", 10); /* used 60: the decrease applies */
    u = usage_of(f, "tpm");
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 60);
    assert_int_equal(u.pending_decrease_to, 0);
    assert_false(reserve1(f, 4, "tpm", 1).allowed);
    rl_manual_clock_advance(&f->clock, 59000); /* lease 1 expires */
    assert_true(reserve1(f, 5, "tpm", 50).allowed);
}

static void decrease_applies_on_expiry_and_increase_cancels_it(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_int_equal(define(f, "tpm", RL_KIND_ROLLING, 80, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(usage_of(f, "tpm").capacity, 80);
    assert_true(reserve1(f, 1, "tpm", 70).allowed);
    assert_int_equal(define(f, "tpm", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(define(f, "tpm", RL_KIND_ROLLING, 90, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_ACTIVE);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.capacity, 90);
    assert_int_equal(u.pending_decrease_to, 0);
    assert_int_equal(define(f, "tpm", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    rl_manual_clock_advance(&f->clock, 60000);
    u = usage_of(f, "tpm");
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 10);
}

static void reserve_is_all_or_nothing(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT);
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(f, "conc", RL_KIND_CONCURRENCY, 5, 30, RL_OVERAGE_DEBT);
    rl_requirement big[] = {{"rpm", 1, false}, {"conc", 1, false}, {"tpm", 101, false}};
    rl_reserve_result r = reserve_n(f, 1, big, 3);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    assert_string_equal(r.status_key, "tpm");
    assert_int_equal(r.retry_after_ms, 0);
    assert_true(reserve1(f, 2, "tpm", 95).allowed);
    rl_requirement reqs[] = {{"rpm", 1, false}, {"conc", 1, false}, {"tpm", 10, false}};
    r = reserve_n(f, 3, reqs, 3);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_int_equal(usage_of(f, "rpm").used, 0);
    assert_int_equal(usage_of(f, "conc").used, 0);
    assert_int_equal(usage_of(f, "tpm").used, 95);
    rl_requirement fits[] = {{"rpm", 1, false}, {"conc", 1, false}, {"tpm", 5, false}};
    assert_true(reserve_n(f, 4, fits, 3).allowed);
    assert_int_equal(usage_of(f, "rpm").used, 1);
    assert_int_equal(usage_of(f, "conc").used, 1);
    assert_int_equal(usage_of(f, "tpm").used, 100);
}

static void rolling_reservations_expire_after_the_window(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 2, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "rpm", 1).allowed);
    rl_manual_clock_advance(&f->clock, 20000);
    assert_true(reserve1(f, 2, "rpm", 1).allowed);
    rl_reserve_result r = reserve1(f, 3, "rpm", 1);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, 40000);
    rl_manual_clock_advance(&f->clock, 39999);
    assert_false(reserve1(f, 4, "rpm", 1).allowed);
    rl_manual_clock_advance(&f->clock, 1);
    assert_true(reserve1(f, 5, "rpm", 1).allowed);
}

static void retry_after_walks_expiries_until_enough_frees(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tpm", 10).allowed); /* frees at 60 s */
    rl_manual_clock_advance(&f->clock, 10000);
    assert_true(reserve1(f, 2, "tpm", 20).allowed); /* 70 s */
    rl_manual_clock_advance(&f->clock, 10000);
    assert_true(reserve1(f, 3, "tpm", 70).allowed); /* 80 s */
    /* at 20 s: 0 free. 25 needs lease 1 and lease 2 gone: 70 s - 20 s */
    assert_int_equal(reserve1(f, 4, "tpm", 25).retry_after_ms, 50000);
    assert_int_equal(reserve1(f, 5, "tpm", 10).retry_after_ms, 40000);
    assert_int_equal(reserve1(f, 6, "tpm", 31).retry_after_ms, 60000);
    /* the lease waits for the slowest of its failing requirements */
    define(f, "rpm", RL_KIND_ROLLING, 1, 5, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 7, "rpm", 1).allowed);
    rl_requirement both[] = {{"rpm", 1, false}, {"tpm", 10, false}};
    assert_int_equal(reserve_n(f, 8, both, 2).retry_after_ms, 40000);
}

/* A kind changes only on a limit that holds nothing: a rolling hour kept on
 * a limit whose holds time out in 5 s would deny for the hour, and no
 * Complete would release it. */
static void a_kind_changes_only_while_the_limit_holds_nothing(void **state) {
    fixture *f = *state;
    rl_limit_status status;
    define(f, "k", RL_KIND_ROLLING, 10, 3600, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "k", 1).allowed);
    assert_int_equal(apply_def(f, "k", RL_KIND_CONCURRENCY, 10, 5, RL_OVERAGE_DEBT, &status), RL_LIMIT_IN_USE);
    /* nothing changed: still rolling, the reservation held past 5 s */
    rl_manual_clock_advance(&f->clock, 5000);
    assert_int_equal(usage_of(f, "k").used, 1);
    assert_int_equal(reserve1(f, 2, "k", 10).retry_after_ms, 3595000);
    complete1(f, 1, "k", 0); /* used nothing: the reservation goes */
    assert_int_equal(usage_of(f, "k").used, 0);
    assert_int_equal(apply_def(f, "k", RL_KIND_CONCURRENCY, 10, 5, RL_OVERAGE_DEBT, &status), RL_OK);
    assert_int_equal(status, RL_LIMIT_STATUS_ACTIVE);
    /* now by the concurrency rules: a Complete releases, a hold times out */
    assert_true(reserve1(f, 3, "k", 10).allowed);
    assert_int_equal(reserve1(f, 4, "k", 1).retry_after_ms, 5000);
    complete_n(f, 3, NULL, 0);
    assert_int_equal(usage_of(f, "k").used, 0);
    assert_true(reserve1(f, 5, "k", 2).allowed);
    assert_int_equal(apply_def(f, "k", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT, &status), RL_LIMIT_IN_USE);
    assert_int_equal(usage_of(f, "k").active, 1);
    rl_manual_clock_advance(&f->clock, 5000); /* the hold times out */
    assert_int_equal(apply_def(f, "k", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT, &status), RL_OK);
    assert_true(reserve1(f, 6, "k", 10).allowed);
    assert_int_equal(reserve1(f, 7, "k", 1).retry_after_ms, 60000);
}

static void concurrency_hold_times_out(void **state) {
    fixture *f = *state;
    define(f, "conc", RL_KIND_CONCURRENCY, 1, 30, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "conc", 1).allowed);
    rl_manual_clock_advance(&f->clock, 29999);
    assert_false(reserve1(f, 2, "conc", 1).allowed);
    rl_manual_clock_advance(&f->clock, 1);
    assert_true(reserve1(f, 3, "conc", 1).allowed);
    /* the late Complete of lease 1 releases nothing more */
    complete_n(f, 1, NULL, 0);
    assert_int_equal(usage_of(f, "conc").used, 1);
}

static void a_retried_lease_gets_its_first_outcome(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 1, 60, RL_OVERAGE_DEBT);
    rl_reserve_result first = reserve1(f, 1, "rpm", 1);
    assert_true(first.allowed);
    rl_manual_clock_advance(&f->clock, 5000);
    rl_reserve_result again = reserve1(f, 1, "rpm", 1);
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, first.reserved_at_unix_ms);
    assert_int_equal(usage_of(f, "rpm").used, 1);

    /* the same id in lower case is the same lease */
    char id[27];
    rl_test_lease_id(1, id);
    for (char *c = id; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    rl_requirement req = {"rpm", 1, false};
    rl_reserve_request lower = {id, NULL, &req, 1, false};
    rl_reserve_result r;
    rl_backend_reserve(f->backend, &lower, &r);
    assert_true(r.allowed);
    assert_int_equal(r.reserved_at_unix_ms, first.reserved_at_unix_ms);

    rl_reserve_result denied = reserve1(f, 2, "rpm", 1);
    assert_false(denied.allowed);
    rl_manual_clock_advance(&f->clock, 60000); /* capacity is free again... */
    rl_reserve_result still = reserve1(f, 2, "rpm", 1); /* ...but a denied lease stays denied */
    assert_false(still.allowed);
    assert_int_equal(still.retry_after_ms, denied.retry_after_ms);
    assert_true(reserve1(f, 3, "rpm", 1).allowed);
}

static void unknown_keys_are_reported_and_not_remembered(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"rpm", 1, false}, {"nope", 1, false}};
    rl_reserve_result r = reserve_n(f, 1, reqs, 2);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(r.status_key, "nope");
    assert_int_equal(usage_of(f, "rpm").used, 0);
    define(f, "nope", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    assert_true(reserve_n(f, 1, reqs, 2).allowed);
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, "other", &u), RL_UNKNOWN_LIMIT_KEY);
}

static void complete_is_idempotent_and_tolerates_unknown_leases(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(f, "conc", RL_KIND_CONCURRENCY, 1, 60, RL_OVERAGE_DEBT);
    complete1(f, 99, "tpm", 5); /* never reserved */
    rl_requirement reqs[] = {{"tpm", 50, false}, {"conc", 1, false}};
    assert_true(reserve_n(f, 1, reqs, 2).allowed);
    rl_actual actuals[] = {{"tpm", 20}, {"conc", 7}, {"unknown", 3}};
    complete_n(f, 1, actuals, 3);
    assert_int_equal(usage_of(f, "tpm").used, 20);
    assert_int_equal(usage_of(f, "conc").used, 0);
    complete1(f, 1, "tpm", 5); /* a second Complete changes nothing */
    assert_int_equal(usage_of(f, "tpm").used, 20);
    complete1(f, 1, "tpm", 0);
    assert_int_equal(usage_of(f, "tpm").used, 20);
    /* actual 0 frees the whole reservation */
    assert_true(reserve1(f, 2, "tpm", 30).allowed);
    complete1(f, 2, "tpm", 0);
    rl_limit_usage u = usage_of(f, "tpm");
    assert_int_equal(u.used, 20);
    assert_int_equal(u.active, 1);
    /* a denied lease has nothing to complete */
    assert_true(reserve1(f, 3, "conc", 1).allowed);
    assert_false(reserve1(f, 4, "conc", 1).allowed);
    complete_n(f, 4, NULL, 0);
    assert_int_equal(usage_of(f, "conc").used, 1);
}

static void leases_are_forgotten_after_their_memory(void **state) {
    fixture *f = *state; /* lease memory 60 s */
    define(f, "rpm", RL_KIND_ROLLING, 1, 10, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "rpm", 1).allowed);
    assert_false(reserve1(f, 2, "rpm", 1).allowed);
    /* 1 ms past the end of their memory: at the instant itself a backend may
     * still answer from memory (a_retried_lease_gets_its_first_outcome
     * retries exactly then); only after it is forgetting required */
    rl_manual_clock_advance(&f->clock, 10000 + 60000 + 1);
    rl_backend_sweep(f->backend);
    /* both ids are new again: lease 1 reserves afresh, lease 2 is decided anew */
    assert_true(reserve1(f, 2, "rpm", 1).allowed);
    assert_false(reserve1(f, 1, "rpm", 1).allowed);
}

/* A retry must be the same request: a remembered lease id reused with other
 * keys or amounts is lease_id_conflict, never the first outcome (which
 * would make the caller believe it holds what was never reserved). */
static void a_reused_lease_id_with_other_requirements_conflicts(void **state) {
    fixture *f = *state;
    define(f, "a", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT);
    define(f, "b", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "a", 1).allowed);
    assert_true(reserve1(f, 2, "b", 10).allowed); /* b is full */
    rl_reserve_result reuse = reserve1(f, 1, "b", 10);
    assert_false(reuse.allowed);
    assert_int_equal(reuse.status, RL_LEASE_ID_CONFLICT);
    assert_null(reuse.status_key);
    assert_int_equal(reuse.retry_after_ms, 0);
    assert_int_equal(reuse.reserved_at_unix_ms, 0);
    assert_int_equal(usage_of(f, "a").used, 1);
    assert_int_equal(usage_of(f, "b").used, 10);
    /* another amount on the same key, another key besides it */
    assert_int_equal(reserve1(f, 1, "a", 2).status, RL_LEASE_ID_CONFLICT);
    rl_requirement both[] = {{"a", 1, false}, {"b", 1, false}};
    assert_int_equal(reserve_n(f, 1, both, 2).status, RL_LEASE_ID_CONFLICT);
    /* a key nobody defined: still the lease's conflict, not unknown_limit_key */
    assert_int_equal(reserve1(f, 1, "nowhere", 1).status, RL_LEASE_ID_CONFLICT);
    /* the true retry, its requirements in another order, keeps its first outcome */
    define(f, "c", RL_KIND_CONCURRENCY, 5, 60, RL_OVERAGE_DEBT);
    rl_requirement pair[] = {{"a", 3, false}, {"c", 2, false}};
    rl_reserve_result first = reserve_n(f, 3, pair, 2);
    assert_true(first.allowed);
    rl_requirement swapped[] = {pair[1], pair[0]};
    rl_reserve_result again = reserve_n(f, 3, swapped, 2);
    assert_true(again.allowed);
    assert_int_equal(again.status, RL_OK);
    assert_int_equal(again.reserved_at_unix_ms, first.reserved_at_unix_ms);
    assert_true(reserve1(f, 1, "a", 1).allowed);
    assert_int_equal(usage_of(f, "a").used, 4);
    assert_int_equal(usage_of(f, "c").used, 2);
    /* a remembered denial too: retried, it stays denied; reused, it conflicts */
    rl_reserve_result denied = reserve1(f, 4, "b", 5);
    assert_false(denied.allowed);
    assert_int_equal(denied.status, RL_OK);
    assert_int_equal(reserve1(f, 4, "b", 5).retry_after_ms, denied.retry_after_ms);
    assert_int_equal(reserve1(f, 4, "a", 1).status, RL_LEASE_ID_CONFLICT);
    assert_int_equal(usage_of(f, "a").used, 4);
    /* in a batch: that item's result, the others decided as usual */
    char ids[3][27];
    rl_requirement a1 = {"a", 1, false}, b10 = {"b", 10, false};
    rl_reserve_request requests[3] = {
        {rl_test_lease_id(5, ids[0]), NULL, &a1, 1, false},
        {rl_test_lease_id(1, ids[1]), NULL, &b10, 1, false},
        {rl_test_lease_id(6, ids[2]), NULL, &a1, 1, false},
    };
    rl_reserve_result results[3];
    rl_backend_reserve_batch(f->backend, requests, 3, results);
    assert_true(results[0].allowed);
    assert_false(results[1].allowed);
    assert_int_equal(results[1].status, RL_LEASE_ID_CONFLICT);
    assert_true(results[2].allowed);
    assert_int_equal(usage_of(f, "a").used, 6);
    assert_int_equal(usage_of(f, "b").used, 10);
}

static void batches_decide_in_order(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 2, 60, RL_OVERAGE_DEBT);
    char ids[4][27];
    rl_requirement one = {"rpm", 1, false};
    rl_reserve_request requests[4];
    for (int i = 0; i < 4; i++) requests[i] = (rl_reserve_request){rl_test_lease_id((uint64_t)i + 1, ids[i]), NULL, &one, 1, false};
    requests[3].lease_id = ids[0]; /* the same lease again within the batch */
    rl_reserve_result results[4];
    rl_backend_reserve_batch(f->backend, requests, 4, results);
    assert_true(results[0].allowed);
    assert_true(results[1].allowed);
    assert_false(results[2].allowed);
    assert_true(results[3].allowed);
    assert_int_equal(usage_of(f, "rpm").used, 2);
}

/* Many threads on one backend: never more admitted than capacity. Time
 * stands still (the manual clock is only read), so the count is exact.
 * test_memory_backend.c runs the same hammer on the real clock with the
 * memory backend's sweeper thread racing it. */
typedef struct hammer {
    rl_backend *backend;
    int thread;
    int admitted;
    int errors;
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
        if (r.status != RL_OK) h->errors++;
        if (r.allowed) {
            h->admitted++;
            rl_complete_request done = {id, NULL, NULL, 0};
            if (rl_backend_complete(h->backend, &done) != RL_OK) h->errors++;
        }
    }
    return NULL;
}

static void threads_never_over_admit(void **state) {
    fixture *f = *state;
    define(f, "h:conc", RL_KIND_CONCURRENCY, 3, 60, RL_OVERAGE_DEBT);
    define(f, "h:rpm", RL_KIND_ROLLING, 500, 3600, RL_OVERAGE_DEBT);
    enum { THREADS = 8 };
    hammer hammers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        hammers[t] = (hammer){f->backend, t, 0, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, hammer_main, &hammers[t]), 0);
    }
    int admitted = 0, errors = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        admitted += hammers[t].admitted;
        errors += hammers[t].errors;
    }
    assert_int_equal(errors, 0);
    assert_int_equal(admitted, 500);
    assert_int_equal(usage_of(f, "h:conc").used, 0);
    assert_int_equal(usage_of(f, "h:rpm").used, 500);
}

/* ---- denied_by: which limit said no, and by how much ---------------------- */

static void expect_denial(const rl_reserve_result *r, const char *key, rl_denial_reason reason, uint64_t requested,
                          uint64_t available, uint64_t capacity) {
    assert_false(r->allowed);
    assert_non_null(r->denied_by.key);
    assert_string_equal(r->denied_by.key, key);
    assert_int_equal(r->denied_by.reason, reason);
    assert_int_equal(r->denied_by.requested, requested);
    assert_int_equal(r->denied_by.available, available);
    assert_int_equal(r->denied_by.capacity, capacity);
}

static void a_denial_names_its_limit(void **state) {
    fixture *f = *state;
    define(f, "d:rpm", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT);
    define(f, "d:conc", RL_KIND_CONCURRENCY, 2, 60, RL_OVERAGE_DEBT);
    rl_reserve_result ok = reserve1(f, 1, "d:rpm", 7);
    assert_true(ok.allowed);
    assert_null(ok.denied_by.key);
    rl_reserve_result r = reserve1(f, 2, "d:rpm", 4);
    expect_denial(&r, "d:rpm", RL_DENIAL_CAPACITY, 4, 3, 10);
    assert_int_equal(r.status, RL_OK); /* v1's answer as it was: error "" */
    assert_null(r.status_key);
    /* a lease that fits on one limit and not on the other names the other */
    assert_true(reserve1(f, 3, "d:conc", 2).allowed);
    rl_requirement both[] = {{"d:rpm", 1, false}, {"d:conc", 1, false}};
    r = reserve_n(f, 4, both, 2);
    expect_denial(&r, "d:conc", RL_DENIAL_CAPACITY, 1, 0, 2);
    /* more than the whole capacity */
    r = reserve1(f, 5, "d:rpm", 11);
    expect_denial(&r, "d:rpm", RL_DENIAL_EXCEEDS_CAPACITY, 11, 3, 10);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    /* errors name no limit */
    r = reserve1(f, 6, "d:nope", 1);
    assert_int_equal(r.status, RL_UNKNOWN_LIMIT_KEY);
    assert_null(r.denied_by.key);
    rl_requirement other = {"d:rpm", 1, false};
    r = reserve_n(f, 2, &other, 1); /* lease 2 reused with another amount */
    assert_int_equal(r.status, RL_LEASE_ID_CONFLICT);
    assert_null(r.denied_by.key);
}

/* Where several limits are full, the one whose room comes back last: the
 * one the caller waits for, and the one retry_after_ms is about. */
static void a_denial_names_the_limit_waited_for(void **state) {
    fixture *f = *state;
    define(f, "w:early", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    define(f, "w:late", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "w:early", 5).allowed);
    rl_manual_clock_advance(&f->clock, 20000);
    assert_true(reserve1(f, 2, "w:late", 5).allowed);
    rl_requirement both[] = {{"w:early", 1, false}, {"w:late", 1, false}};
    rl_reserve_result r = reserve_n(f, 3, both, 2);
    expect_denial(&r, "w:late", RL_DENIAL_CAPACITY, 1, 0, 5);
    assert_int_equal(r.retry_after_ms, 60000);
    rl_requirement reversed[] = {{"w:late", 1, false}, {"w:early", 1, false}};
    r = reserve_n(f, 4, reversed, 2);
    expect_denial(&r, "w:late", RL_DENIAL_CAPACITY, 1, 0, 5);
    /* a decreasing limit is named before a full one, as its status says */
    define(f, "w:late", RL_KIND_ROLLING, 3, 60, RL_OVERAGE_DEBT);
    r = reserve_n(f, 5, both, 2);
    assert_int_equal(r.status, RL_LIMIT_DECREASING);
    assert_string_equal(r.status_key, "w:late");
    expect_denial(&r, "w:late", RL_DENIAL_DECREASING, 1, 0, 3);
}

/* A retried denied lease gets its first outcome, denied_by as it was, even
 * once there is room. */
static void a_retried_denial_keeps_its_denied_by(void **state) {
    fixture *f = *state;
    define(f, "r:rpm", RL_KIND_ROLLING, 4, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "r:rpm", 3).allowed);
    rl_manual_clock_advance(&f->clock, 30000);
    rl_reserve_result first = reserve1(f, 2, "r:rpm", 2);
    expect_denial(&first, "r:rpm", RL_DENIAL_CAPACITY, 2, 1, 4);
    rl_manual_clock_advance(&f->clock, 31000); /* lease 1's window is over: room again */
    rl_reserve_result again = reserve1(f, 2, "r:rpm", 2);
    expect_denial(&again, "r:rpm", RL_DENIAL_CAPACITY, 2, 1, 4);
    assert_int_equal(again.retry_after_ms, first.retry_after_ms);
    assert_true(reserve1(f, 3, "r:rpm", 4).allowed);
}

/* ---- budgets: spend over a calendar period ---------------------------------- */

/* T0 (2025-01-12 05:33:20 UTC, a Sunday) in its UTC hour and day. */
#define HOUR_MS UINT64_C(3600000)
#define DAY_MS (24u * HOUR_MS)
#define HOUR_START (T0_UNIX_MS - T0_UNIX_MS % HOUR_MS)
#define DAY_START (T0_UNIX_MS - T0_UNIX_MS % DAY_MS)
#define TO_HOUR_END (HOUR_START + HOUR_MS - T0_UNIX_MS) /* 26 min 40 s */

static rl_status apply_budget(fixture *f, const char *key, uint64_t capacity, rl_period period, const char *zone,
                              uint32_t timeout_seconds, rl_overage overage, rl_limit_status *status) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = capacity, .timeout_seconds = timeout_seconds,
                        .period = period, .overage = overage};
    snprintf(def.key, sizeof def.key, "%s", key);
    snprintf(def.timezone, sizeof def.timezone, "%s", zone);
    snprintf(def.unit, sizeof def.unit, "usd_micros");
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    return rl_backend_apply_definition(f->backend, &def, status);
}

static rl_limit_status define_budget(fixture *f, const char *key, uint64_t capacity, rl_period period,
                                     const char *zone, uint32_t timeout_seconds, rl_overage overage) {
    rl_limit_status status;
    assert_int_equal(apply_budget(f, key, capacity, period, zone, timeout_seconds, overage, &status), RL_OK);
    return status;
}

/* A budget's usage, whose parts add up. */
static rl_limit_usage budget_usage(fixture *f, const char *key) {
    rl_limit_usage u = usage_of(f, key);
    assert_int_equal(u.used, u.committed + u.reserved);
    return u;
}

/* Spend accumulates within the period; Complete charges the actual and
 * refunds the rest at once; at the boundary it is 0 again. */
static void budget_spend_accumulates_and_resets_at_the_period(void **state) {
    fixture *f = *state;
    define_budget(f, "b:h", 100, RL_PERIOD_HOUR, "UTC", 600, RL_OVERAGE_DEBT);
    rl_limit_usage u = budget_usage(f, "b:h");
    assert_int_equal(u.period_start_unix_ms, HOUR_START);
    assert_int_equal(u.period_end_unix_ms, HOUR_START + HOUR_MS);
    assert_int_equal(u.used, 0);
    assert_true(reserve1(f, 1, "b:h", 60).allowed);
    u = budget_usage(f, "b:h");
    assert_int_equal(u.reserved, 60);
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.active, 1);
    rl_manual_clock_advance(&f->clock, 1000);
    complete1(f, 1, "b:h", 40);
    u = budget_usage(f, "b:h");
    assert_int_equal(u.committed, 40);
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.available, 60);
    assert_int_equal(u.active, 0);
    /* nothing open to time out: room comes back with the next period */
    rl_reserve_result r = reserve1(f, 2, "b:h", 70);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_int_equal(r.retry_after_ms, TO_HOUR_END - 1000);
    assert_string_equal(r.denied_by.key, "b:h");
    assert_int_equal(r.denied_by.reason, RL_DENIAL_CAPACITY);
    assert_int_equal(r.denied_by.requested, 70);
    assert_int_equal(r.denied_by.available, 60);
    assert_int_equal(r.denied_by.capacity, 100);
    assert_int_equal(r.denied_by.period_end_unix_ms, HOUR_START + HOUR_MS);
    /* retried, the denial is replayed whole */
    rl_reserve_result again = reserve1(f, 2, "b:h", 70);
    assert_int_equal(again.denied_by.period_end_unix_ms, HOUR_START + HOUR_MS);
    assert_int_equal(again.retry_after_ms, r.retry_after_ms);
    rl_manual_clock_advance(&f->clock, TO_HOUR_END - 1001);
    assert_int_equal(budget_usage(f, "b:h").committed, 40); /* no window frees what is committed */
    rl_manual_clock_advance(&f->clock, 1);
    u = budget_usage(f, "b:h");
    assert_int_equal(u.period_start_unix_ms, HOUR_START + HOUR_MS);
    assert_int_equal(u.period_end_unix_ms, HOUR_START + 2 * HOUR_MS);
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.used, 0);
    assert_true(reserve1(f, 3, "b:h", 100).allowed);
}

/* A reservation belongs to the period it was made in: completed after the
 * boundary it is charged there, and held nowhere now. */
static void budget_reservation_crossing_a_boundary_charges_its_own_period(void **state) {
    fixture *f = *state;
    define_budget(f, "b:x", 100, RL_PERIOD_HOUR, "UTC", 3600, RL_OVERAGE_DEBT);
    rl_manual_clock_advance(&f->clock, TO_HOUR_END - 1);
    assert_true(reserve1(f, 1, "b:x", 80).allowed);
    assert_true(reserve1(f, 2, "b:x", 20).allowed);
    rl_manual_clock_advance(&f->clock, 2);
    rl_limit_usage u = budget_usage(f, "b:x");
    assert_int_equal(u.period_start_unix_ms, HOUR_START + HOUR_MS);
    assert_int_equal(u.used, 0);   /* the last hour's reservations are not held in this one */
    assert_int_equal(u.active, 2); /* but they are still open */
    complete1(f, 1, "b:x", 70);    /* charged to the last hour */
    u = budget_usage(f, "b:x");
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.active, 1);
    assert_true(reserve1(f, 3, "b:x", 100).allowed); /* this hour's whole budget */
    rl_reserve_result r = reserve1(f, 4, "b:x", 1);
    assert_false(r.allowed);
    /* lease 2's timeout frees nothing of this hour: lease 3's does */
    assert_int_equal(r.retry_after_ms, 3600000);
}

/* A reservation never completed is refunded in full at its timeout; before
 * that a denial waits for it; a Complete after it charges nothing. */
static void budget_an_abandoned_reservation_is_refunded_at_its_timeout(void **state) {
    fixture *f = *state;
    define_budget(f, "b:t", 100, RL_PERIOD_DAY, "UTC", 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "b:t", 60).allowed);
    rl_manual_clock_advance(&f->clock, 20000);
    assert_true(reserve1(f, 2, "b:t", 30).allowed);
    rl_reserve_result r = reserve1(f, 3, "b:t", 50);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, 40000); /* when lease 1 times out */
    assert_int_equal(reserve1(f, 4, "b:t", 80).retry_after_ms, 60000); /* both: lease 2's timeout */
    rl_manual_clock_advance(&f->clock, 39999);
    assert_int_equal(budget_usage(f, "b:t").reserved, 90);
    rl_manual_clock_advance(&f->clock, 1);
    rl_limit_usage u = budget_usage(f, "b:t");
    assert_int_equal(u.reserved, 30);
    assert_int_equal(u.active, 1);
    assert_int_equal(u.committed, 0);
    complete1(f, 1, "b:t", 60); /* too late: refunded, nothing is charged */
    assert_int_equal(budget_usage(f, "b:t").committed, 0);
    /* a Complete that names no actual for the key charges what it reserved */
    complete_n(f, 2, NULL, 0);
    u = budget_usage(f, "b:t");
    assert_int_equal(u.committed, 30);
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.active, 0);
    /* only the period's end frees what is committed */
    r = reserve1(f, 5, "b:t", 71);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, DAY_START + DAY_MS - T0_UNIX_MS - 60000);
}

static void budget_overage_debt_and_deny(void **state) {
    fixture *f = *state;
    define_budget(f, "b:debt", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    define_budget(f, "b:deny", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DENY);
    assert_true(reserve1(f, 1, "b:debt", 50).allowed);
    assert_true(reserve1(f, 2, "b:debt", 40).allowed);
    complete1(f, 1, "b:debt", 80); /* 30 more than reserved: 20 above capacity */
    rl_limit_usage u = budget_usage(f, "b:debt");
    assert_int_equal(u.committed, 80);
    assert_int_equal(u.reserved, 40);
    assert_int_equal(u.debt, 20);
    assert_int_equal(u.debt_total, 20);
    assert_int_equal(u.available, 0);
    assert_false(reserve1(f, 3, "b:debt", 1).allowed);
    assert_true(reserve1(f, 4, "b:deny", 50).allowed);
    assert_true(reserve1(f, 5, "b:deny", 30).allowed);
    complete1(f, 4, "b:deny", 90); /* only 70 fits beside the 30 held */
    u = budget_usage(f, "b:deny");
    assert_int_equal(u.committed, 70);
    assert_int_equal(u.overage_denied_total, 20);
    assert_int_equal(u.used, 100);
    assert_int_equal(u.debt_total, 0);
}

/* A budget's counters saturate too: 2,048 leases of 1 charged 2^53 each
 * leave committed at the ceiling for the rest of the period (not wrapped
 * to 0, a fresh budget), debt_total and overage_denied_total with it. */
static void budget_counters_saturate_instead_of_wrapping(void **state) {
    fixture *f = *state;
    const uint64_t half = RL_AMOUNT_MAX / 2;
    define_budget(f, "b:debt", RL_AMOUNT_MAX, RL_PERIOD_MONTH, "UTC", 600, RL_OVERAGE_DEBT);
    define_budget(f, "b:deny", half, RL_PERIOD_MONTH, "UTC", 600, RL_OVERAGE_DENY);
    const char *keys[] = {"b:debt", "b:deny"};
    overrun(f, 1, 2048, keys, 2, RL_AMOUNT_MAX);
    rl_limit_usage u = budget_usage(f, "b:debt");
    assert_int_equal(u.committed, RL_COUNTER_MAX);
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.available, 0);
    assert_int_equal(u.debt_total, RL_COUNTER_MAX);
    rl_reserve_result r = reserve1(f, 5000, "b:debt", RL_AMOUNT_MAX);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, u.period_end_unix_ms - T0_UNIX_MS);
    assert_false(reserve1(f, 5001, "b:debt", 1).allowed);
    u = budget_usage(f, "b:deny");
    assert_int_equal(u.committed, half);
    assert_int_equal(u.overage_denied_total, RL_COUNTER_MAX);
    assert_false(reserve1(f, 5002, "b:deny", 1).allowed);
}

/* Capacity changes apply to the current period: an increase at once; a
 * decrease below what is spent waits, and the next period starts under it. */
static void budget_capacity_changes_apply_to_the_period(void **state) {
    fixture *f = *state;
    define_budget(f, "b:cap", 100, RL_PERIOD_HOUR, "UTC", 600, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "b:cap", 80).allowed);
    complete1(f, 1, "b:cap", 80);
    assert_int_equal(define_budget(f, "b:cap", 150, RL_PERIOD_HOUR, "UTC", 600, RL_OVERAGE_DEBT),
                     RL_LIMIT_STATUS_ACTIVE);
    assert_true(reserve1(f, 2, "b:cap", 70).allowed);
    assert_int_equal(define_budget(f, "b:cap", 100, RL_PERIOD_HOUR, "UTC", 600, RL_OVERAGE_DEBT),
                     RL_LIMIT_STATUS_DECREASING);
    rl_reserve_result r = reserve1(f, 3, "b:cap", 1);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_LIMIT_DECREASING);
    assert_int_equal(r.denied_by.reason, RL_DENIAL_DECREASING);
    assert_int_equal(r.denied_by.capacity, 100);
    assert_int_equal(r.denied_by.period_end_unix_ms, HOUR_START + HOUR_MS);
    complete1(f, 2, "b:cap", 10); /* used 90: the decrease applies */
    rl_limit_usage u = budget_usage(f, "b:cap");
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 100);
    assert_int_equal(u.committed, 90);
    assert_int_equal(define_budget(f, "b:cap", 50, RL_PERIOD_HOUR, "UTC", 600, RL_OVERAGE_DEBT),
                     RL_LIMIT_STATUS_DECREASING);
    rl_manual_clock_advance(&f->clock, TO_HOUR_END);
    u = budget_usage(f, "b:cap");
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 50);
    assert_int_equal(u.committed, 0);
}

/* Another zone or period moves the boundaries, and what the budget had
 * counted goes on counting: a change never hands out a fresh budget. */
static void budget_a_new_zone_or_period_keeps_what_was_counted(void **state) {
    fixture *f = *state;
    define_budget(f, "b:z", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "b:z", 60).allowed);
    complete1(f, 1, "b:z", 60);
    assert_true(reserve1(f, 2, "b:z", 30).allowed); /* open */
    define_budget(f, "b:z", 100, RL_PERIOD_DAY, "Asia/Tokyo", 600, RL_OVERAGE_DEBT);
    rl_limit_usage u = budget_usage(f, "b:z");
    assert_int_equal(u.period_start_unix_ms, DAY_START - 9 * HOUR_MS); /* Tokyo's January 12 */
    assert_int_equal(u.period_end_unix_ms, DAY_START - 9 * HOUR_MS + DAY_MS);
    assert_int_equal(u.committed, 60);
    assert_int_equal(u.reserved, 30);
    assert_false(reserve1(f, 3, "b:z", 11).allowed);
    complete1(f, 2, "b:z", 10); /* still counted: its reservation moved with the period */
    u = budget_usage(f, "b:z");
    assert_int_equal(u.committed, 70);
    assert_int_equal(u.reserved, 0);
    define_budget(f, "b:z", 100, RL_PERIOD_HOUR, "Asia/Tokyo", 600, RL_OVERAGE_DEBT);
    u = budget_usage(f, "b:z");
    assert_int_equal(u.period_start_unix_ms, HOUR_START);
    assert_int_equal(u.committed, 70);
    rl_manual_clock_advance(&f->clock, TO_HOUR_END); /* the new period's end: now it resets */
    assert_int_equal(budget_usage(f, "b:z").committed, 0);
}

/* A lease that fails on a rolling limit and a budget waits for the budget's
 * period: the one named, with its end. A budget's kind changes only while
 * nothing is open on it, and what it charged is no rolling use. */
static void budget_denials_and_kind_changes(void **state) {
    fixture *f = *state;
    define(f, "b:rpm", RL_KIND_ROLLING, 1, 60, RL_OVERAGE_DEBT);
    define_budget(f, "b:k", 10, RL_PERIOD_HOUR, "UTC", 60, RL_OVERAGE_DEBT);
    rl_requirement both[] = {{"b:rpm", 1, false}, {"b:k", 10, false}};
    assert_true(reserve_n(f, 1, both, 2).allowed);
    complete_n(f, 1, NULL, 0);
    rl_reserve_result r = reserve_n(f, 2, both, 2);
    expect_denial(&r, "b:k", RL_DENIAL_CAPACITY, 10, 0, 10);
    assert_int_equal(r.retry_after_ms, TO_HOUR_END);
    assert_int_equal(r.denied_by.period_end_unix_ms, HOUR_START + HOUR_MS);
    r = reserve1(f, 3, "b:k", 11);
    expect_denial(&r, "b:k", RL_DENIAL_EXCEEDS_CAPACITY, 11, 0, 10);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    r = reserve1(f, 4, "b:rpm", 1);
    expect_denial(&r, "b:rpm", RL_DENIAL_CAPACITY, 1, 0, 1);
    assert_int_equal(r.denied_by.period_end_unix_ms, 0);

    define_budget(f, "b:k2", 10, RL_PERIOD_HOUR, "UTC", 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 5, "b:k2", 4).allowed);
    rl_limit_status status;
    assert_int_equal(apply_def(f, "b:k2", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT, &status), RL_LIMIT_IN_USE);
    complete1(f, 5, "b:k2", 4);
    assert_int_equal(budget_usage(f, "b:k2").committed, 4);
    assert_int_equal(apply_def(f, "b:k2", RL_KIND_ROLLING, 10, 60, RL_OVERAGE_DEBT, &status), RL_OK);
    rl_limit_usage u = usage_of(f, "b:k2");
    assert_int_equal(u.used, 0);
    assert_int_equal(u.period_end_unix_ms, 0);
    assert_true(reserve1(f, 6, "b:k2", 10).allowed);
    rl_manual_clock_advance(&f->clock, 60000);
    assert_int_equal(apply_budget(f, "b:k2", 10, RL_PERIOD_DAY, "UTC", 60, RL_OVERAGE_DEBT, &status), RL_OK);
    u = budget_usage(f, "b:k2");
    assert_int_equal(u.period_start_unix_ms, DAY_START);
    assert_int_equal(u.committed, 0);
}

/* ---- the audit log of spend (backends with audit_query) ---------------------- */

static bool has_audit(const fixture *f) { return f->backend->ops->audit_query != NULL; }

static rl_reserve_result reserve_for_job(fixture *f, uint64_t lease, const char *job_id, const rl_requirement *reqs,
                                         size_t n) {
    char id[27];
    rl_reserve_request request = {rl_test_lease_id(lease, id), job_id, reqs, n, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

/* Every Complete: one entry per rolling or budget key it charged, none for
 * a concurrency hold, with the reserve's job id; a second Complete, a
 * denied or unknown lease: none. */
static void audit_a_complete_writes_an_entry_per_key_charged(void **state) {
    fixture *f = *state;
    if (!has_audit(f)) skip();
    define(f, "a:tpm", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DEBT);
    define(f, "a:conc", RL_KIND_CONCURRENCY, 5, 60, RL_OVERAGE_DEBT);
    define_budget(f, "a:usd", 5000, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"a:tpm", 300, false}, {"a:conc", 1, false}, {"a:usd", 2000, false}};
    const char *job = "job \"7\" \xc3\xa9t\xc3\xa9 ^ #x !1:2 \\ @9";
    assert_true(reserve_for_job(f, 1, job, reqs, 3).allowed);
    assert_true(reserve_for_job(f, 2, NULL, reqs, 3).allowed);
    assert_false(reserve_for_job(f, 3, "denied", (rl_requirement[]){{"a:usd", 2000, false}}, 1).allowed);
    rl_audit_entry entries[8];
    uint64_t next;
    assert_int_equal(audit_page(f, "a:tpm", 0, 8, entries, &next), 0);
    assert_int_equal(next, 0);
    rl_manual_clock_advance(&f->clock, 5000);
    rl_actual actuals[] = {{"a:tpm", 120}, {"a:usd", 1500}, {"a:conc", 1}};
    complete_n(f, 1, actuals, 3);
    complete_n(f, 1, actuals, 3); /* again: nothing more */
    complete_n(f, 3, actuals, 1); /* denied: nothing */
    complete_n(f, 99, actuals, 1); /* unknown: nothing */
    rl_manual_clock_advance(&f->clock, 1);
    complete_n(f, 2, NULL, 0); /* no actuals: what it reserved */
    rl_manual_clock_advance(&f->clock, 1); /* entries are listed once their millisecond is over */
    uint64_t at = T0_UNIX_MS + 5000;
    assert_int_equal(audit_page(f, "a:tpm", 0, 8, entries, &next), 2);
    expect_entry(&entries[0], at, 1, job, "a:tpm", 300, 120, 0, false);
    expect_entry(&entries[1], at + 1, 2, "", "a:tpm", 300, 300, 0, false);
    assert_int_equal(next, at + 2);
    assert_int_equal(audit_page(f, "a:usd", 0, 8, entries, &next), 2);
    expect_entry(&entries[0], at, 1, job, "a:usd", 2000, 1500, DAY_START, false);
    expect_entry(&entries[1], at + 1, 2, "", "a:usd", 2000, 2000, DAY_START, false);
    assert_int_equal(audit_page(f, "a:conc", 0, 8, entries, &next), 0);
    /* since: from that millisecond on */
    assert_int_equal(audit_page(f, "a:usd", at + 1, 8, entries, &next), 1);
    expect_entry(&entries[0], at + 1, 2, "", "a:usd", 2000, 2000, DAY_START, false);
    assert_int_equal(audit_page(f, "a:usd", at + 2, 8, entries, &next), 0);
    assert_int_equal(next, at + 2);
}

/* A budget's reservation refunded by its timeout: one entry, expired, actual
 * 0, at its timeout, whoever notices; its late Complete adds none. A
 * reservation completed after its period's end is audited in that period. */
static void audit_refunds_and_periods(void **state) {
    fixture *f = *state;
    if (!has_audit(f)) skip();
    define_budget(f, "a:h", 100, RL_PERIOD_HOUR, "UTC", 60, RL_OVERAGE_DEBT);
    assert_true(reserve_for_job(f, 1, "crashed", (rl_requirement[]){{"a:h", 40, false}}, 1).allowed);
    rl_manual_clock_advance(&f->clock, 75000); /* past its timeout, unnoticed until the sweep */
    rl_backend_sweep(f->backend);
    complete1(f, 1, "a:h", 40);
    rl_manual_clock_advance(&f->clock, 1); /* entries are listed once their millisecond is over */
    rl_audit_entry entries[4];
    uint64_t next;
    assert_int_equal(audit_page(f, "a:h", 0, 4, entries, &next), 1);
    /* At its timeout (redis) or when it was noticed (memory: the entry's
     * time never goes back), no later than the sweep. */
    assert_in_range(entries[0].at_unix_ms, T0_UNIX_MS + 60000, T0_UNIX_MS + 75000);
    expect_entry(&entries[0], entries[0].at_unix_ms, 1, "crashed", "a:h", 40, 0, HOUR_START, true);
    assert_int_equal(budget_usage(f, "a:h").used, 0);
    rl_manual_clock_advance(&f->clock, TO_HOUR_END - 75001 - 10);
    assert_true(reserve1(f, 2, "a:h", 50).allowed);
    rl_manual_clock_advance(&f->clock, 20); /* the next hour */
    complete1(f, 2, "a:h", 45);
    rl_manual_clock_advance(&f->clock, 1);
    assert_int_equal(audit_page(f, "a:h", next, 4, entries, &next), 1);
    expect_entry(&entries[0], HOUR_START + HOUR_MS + 10, 2, "", "a:h", 50, 45, HOUR_START, false);
    assert_int_equal(budget_usage(f, "a:h").committed, 0);
}

/* Pages: at most limit entries, oldest first; a page never ends inside a
 * millisecond that has more entries (the next page would miss them),
 * unless that millisecond is all it has. */
static void audit_pages_never_end_inside_a_millisecond(void **state) {
    fixture *f = *state;
    if (!has_audit(f)) skip();
    define(f, "a:p", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DEBT);
    for (uint64_t lease = 1; lease <= 5; lease++) assert_true(reserve1(f, lease, "a:p", 1).allowed);
    for (uint64_t lease = 1; lease <= 3; lease++) complete1(f, lease, "a:p", 1); /* three at T0 */
    rl_manual_clock_advance(&f->clock, 7);
    for (uint64_t lease = 4; lease <= 5; lease++) complete1(f, lease, "a:p", 1); /* two at T0 + 7 */
    rl_manual_clock_advance(&f->clock, 1); /* entries are listed once their millisecond is over */
    rl_audit_entry entries[8];
    uint64_t next;
    /* 4 would cut T0 + 7: the page is T0's three */
    assert_int_equal(audit_page(f, "a:p", 0, 4, entries, &next), 3);
    assert_int_equal(entries[2].at_unix_ms, T0_UNIX_MS);
    assert_int_equal(next, T0_UNIX_MS + 1);
    assert_int_equal(audit_page(f, "a:p", next, 4, entries, &next), 2);
    expect_entry(&entries[1], T0_UNIX_MS + 7, 5, "", "a:p", 1, 1, 0, false);
    assert_int_equal(next, T0_UNIX_MS + 8);
    /* 3 ends where T0 ends: the whole page */
    assert_int_equal(audit_page(f, "a:p", 0, 3, entries, &next), 3);
    assert_int_equal(next, T0_UNIX_MS + 1);
    /* 2, inside T0's three: that millisecond is all the page has (its
     * third entry is in no page: ask with a limit above a millisecond's) */
    assert_int_equal(audit_page(f, "a:p", 0, 2, entries, &next), 2);
    assert_int_equal(next, T0_UNIX_MS + 1);
    expect_entry(&entries[0], T0_UNIX_MS, 1, "", "a:p", 1, 1, 0, false);
}

/* ---- optional requirements ---------------------------------------------------- */

/* An optional key without a definition is skipped: the lease is decided on
 * the rest and remembered as usual; its retry must say optional too; a
 * Complete naming the skipped key ignores it. */
static void optional_unknown_keys_are_skipped(void **state) {
    fixture *f = *state;
    define(f, "o:rpm", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"o:rpd", 1, true}, {"o:rpm", 2, false}};
    rl_reserve_result r = reserve_n(f, 1, reqs, 2);
    assert_true(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_null(r.status_key);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(usage_of(f, "o:rpm").used, 2);
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, "o:rpd", &u), RL_UNKNOWN_LIMIT_KEY);

    rl_manual_clock_advance(&f->clock, 1000);
    rl_reserve_result again = reserve_n(f, 1, reqs, 2); /* a retry: its first outcome */
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(usage_of(f, "o:rpm").used, 2);
    rl_requirement not_optional[] = {{"o:rpd", 1, false}, {"o:rpm", 2, false}};
    assert_int_equal(reserve_n(f, 1, not_optional, 2).status, RL_LEASE_ID_CONFLICT);
    /* the same request without the flag, new: the undefined key is an error */
    r = reserve_n(f, 2, not_optional, 2);
    assert_int_equal(r.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(r.status_key, "o:rpd");

    rl_actual actuals[] = {{"o:rpd", 7}, {"o:rpm", 1}};
    complete_n(f, 1, actuals, 2);
    assert_int_equal(usage_of(f, "o:rpm").used, 1);
    assert_int_equal(rl_backend_limit_usage(f->backend, "o:rpd", &u), RL_UNKNOWN_LIMIT_KEY);

    /* once defined, the same requirements reserve it (a new lease) */
    define(f, "o:rpd", RL_KIND_ROLLING, 100, 86400, RL_OVERAGE_DEBT);
    assert_true(reserve_n(f, 3, reqs, 2).allowed);
    assert_int_equal(usage_of(f, "o:rpd").used, 1);
    assert_int_equal(usage_of(f, "o:rpm").used, 3);
}

/* A defined optional key is reserved as any other, and denies as any other. */
static void optional_known_keys_are_reserved_and_deny(void **state) {
    fixture *f = *state;
    define(f, "o:rpm", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    define(f, "o:conc", RL_KIND_CONCURRENCY, 1, 60, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"o:rpm", 1, false}, {"o:conc", 1, true}, {"o:none", 1, true}};
    assert_true(reserve_n(f, 1, reqs, 3).allowed);
    assert_int_equal(usage_of(f, "o:conc").used, 1);
    rl_reserve_result r = reserve_n(f, 2, reqs, 3);
    expect_denial(&r, "o:conc", RL_DENIAL_CAPACITY, 1, 0, 1);
    assert_int_equal(r.retry_after_ms, 60000);
    assert_int_equal(usage_of(f, "o:rpm").used, 1); /* all or nothing */
    rl_reserve_result still = reserve_n(f, 2, reqs, 3); /* a denied lease stays denied */
    expect_denial(&still, "o:conc", RL_DENIAL_CAPACITY, 1, 0, 1);
    complete_n(f, 1, NULL, 0);
    assert_int_equal(usage_of(f, "o:conc").used, 0);
    rl_requirement too_much[] = {{"o:rpm", 6, true}, {"o:none", 1, true}};
    r = reserve_n(f, 3, too_much, 2);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    expect_denial(&r, "o:rpm", RL_DENIAL_EXCEEDS_CAPACITY, 6, 4, 5);
}

/* Every requirement skipped: allowed, holding nothing, remembered (its
 * retry answers its first outcome, even once a key is defined) until the
 * lease memory ends. */
static void a_lease_of_skipped_requirements_holds_nothing(void **state) {
    fixture *f = *state;
    rl_requirement reqs[] = {{"s:a", 3, true}, {"s:b", 1, true}};
    rl_reserve_result r = reserve_n(f, 1, reqs, 2);
    assert_true(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS);
    define(f, "s:a", RL_KIND_ROLLING, 3, 60, RL_OVERAGE_DEBT);
    rl_manual_clock_advance(&f->clock, 2000);
    rl_reserve_result again = reserve_n(f, 1, reqs, 2);
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(usage_of(f, "s:a").used, 0);
    complete_n(f, 1, (rl_actual[]){{"s:a", 3}}, 1);
    assert_int_equal(usage_of(f, "s:a").used, 0);
    assert_true(reserve_n(f, 2, reqs, 2).allowed);
    assert_int_equal(usage_of(f, "s:a").used, 3);
    /* forgotten after its lease memory: the id is new again */
    rl_manual_clock_advance(&f->clock, LEASE_MEMORY_MS + 1);
    rl_backend_sweep(f->backend);
    define(f, "s:b", RL_KIND_ROLLING, 1, 600, RL_OVERAGE_DEBT);
    assert_true(reserve_n(f, 1, reqs, 2).allowed);
    assert_int_equal(usage_of(f, "s:b").used, 1);
}

/* ---- dry runs --------------------------------------------------------------- */

/* A dry run's answer and the real reserve's right after are the same,
 * denied_by included, and a dry run changes nothing. */
static void expect_same_answer(const rl_reserve_result *dry, const rl_reserve_result *real) {
    assert_int_equal(dry->allowed, real->allowed);
    assert_int_equal(dry->retry_after_ms, real->retry_after_ms);
    assert_int_equal(dry->reserved_at_unix_ms, real->reserved_at_unix_ms);
    assert_int_equal(dry->status, real->status);
    if (real->status_key == NULL) assert_null(dry->status_key);
    else assert_string_equal(dry->status_key, real->status_key);
    if (real->denied_by.key == NULL) {
        assert_null(dry->denied_by.key);
        return;
    }
    assert_string_equal(dry->denied_by.key, real->denied_by.key);
    assert_int_equal(dry->denied_by.reason, real->denied_by.reason);
    assert_int_equal(dry->denied_by.requested, real->denied_by.requested);
    assert_int_equal(dry->denied_by.available, real->denied_by.available);
    assert_int_equal(dry->denied_by.capacity, real->denied_by.capacity);
    assert_int_equal(dry->denied_by.period_end_unix_ms, real->denied_by.period_end_unix_ms);
}

static void expect_unchanged(fixture *f, const char *key, const rl_limit_usage *before) {
    rl_limit_usage now = usage_of(f, key);
    assert_int_equal(now.used, before->used);
    assert_int_equal(now.active, before->active);
    assert_int_equal(now.available, before->available);
    assert_int_equal(now.status, before->status);
}

/* A dry run, checked to change nothing, then the real reserve of the same
 * lease: both answers returned. */
static rl_reserve_result dry_then_real(fixture *f, uint64_t lease, const rl_requirement *reqs, size_t n,
                                       rl_reserve_result *real) {
    rl_limit_usage before[RL_MAX_REQUIREMENTS];
    bool defined[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < n; i++)
        defined[i] = rl_backend_limit_usage(f->backend, reqs[i].key, &before[i]) == RL_OK;
    rl_reserve_result dry = reserve_request(f, lease, reqs, n, true);
    for (size_t i = 0; i < n; i++)
        if (defined[i]) expect_unchanged(f, reqs[i].key, &before[i]);
    *real = reserve_request(f, lease, reqs, n, false);
    expect_same_answer(&dry, real);
    return dry;
}

static void a_dry_run_answers_what_a_reserve_would(void **state) {
    fixture *f = *state;
    define(f, "d:rpm", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    define(f, "d:conc", RL_KIND_CONCURRENCY, 1, 30, RL_OVERAGE_DEBT);
    define_budget(f, "d:usd", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    rl_reserve_result real;
    rl_requirement fits[] = {{"d:rpm", 3, false}, {"d:conc", 1, false}, {"d:usd", 60, false}};
    rl_reserve_result dry = dry_then_real(f, 1, fits, 3, &real);
    assert_true(dry.allowed);
    assert_int_equal(dry.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(usage_of(f, "d:rpm").used, 3);
    rl_manual_clock_advance(&f->clock, 10000);
    /* full: the limit waited for, and when */
    rl_requirement full[] = {{"d:rpm", 3, false}, {"d:conc", 1, false}};
    dry = dry_then_real(f, 2, full, 2, &real);
    expect_denial(&dry, "d:rpm", RL_DENIAL_CAPACITY, 3, 2, 5);
    assert_int_equal(dry.retry_after_ms, 50000);
    /* a budget's period end */
    dry = dry_then_real(f, 3, (rl_requirement[]){{"d:usd", 50, false}}, 1, &real);
    assert_false(dry.allowed);
    assert_int_equal(dry.denied_by.period_end_unix_ms, DAY_START + DAY_MS);
    /* more than the whole capacity; a decreasing limit */
    dry = dry_then_real(f, 4, (rl_requirement[]){{"d:rpm", 6, false}}, 1, &real);
    assert_int_equal(dry.status, RL_EXCEEDS_CAPACITY);
    define(f, "d:rpm", RL_KIND_ROLLING, 2, 60, RL_OVERAGE_DEBT);
    dry = dry_then_real(f, 5, (rl_requirement[]){{"d:rpm", 1, false}}, 1, &real);
    assert_int_equal(dry.status, RL_LIMIT_DECREASING);
    assert_string_equal(dry.status_key, "d:rpm");
    /* an unknown key: the same error, nothing remembered; an optional one: skipped */
    dry = dry_then_real(f, 6, (rl_requirement[]){{"d:nope", 1, false}}, 1, &real);
    assert_int_equal(dry.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(dry.status_key, "d:nope");
    complete_n(f, 1, NULL, 0);
    dry = dry_then_real(f, 7, (rl_requirement[]){{"d:nope", 1, true}, {"d:conc", 1, false}}, 2, &real);
    assert_true(dry.allowed);
    dry = dry_then_real(f, 8, (rl_requirement[]){{"d:nope", 1, true}}, 1, &real);
    assert_true(dry.allowed);
}

/* Nothing of a dry run stays: no capacity held however many, no lease
 * remembered (the same id is new afterwards, with any requirements), no
 * audit entry; a lease id remembered before answers its first outcome or a
 * conflict, as a reserve would. */
static void a_dry_run_changes_nothing(void **state) {
    fixture *f = *state;
    define(f, "n:conc", RL_KIND_CONCURRENCY, 1, 30, RL_OVERAGE_DEBT);
    define(f, "n:tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    rl_requirement one[] = {{"n:conc", 1, false}, {"n:tpm", 100, false}};
    for (uint64_t lease = 1; lease <= 5; lease++) {
        rl_reserve_result r = reserve_request(f, lease, one, 2, true);
        assert_true(r.allowed);
        assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS);
    }
    assert_int_equal(usage_of(f, "n:conc").used, 0);
    assert_int_equal(usage_of(f, "n:tpm").active, 0);
    complete_n(f, 1, (rl_actual[]){{"n:tpm", 40}}, 1); /* a dry run's id is no lease: nothing */
    assert_int_equal(usage_of(f, "n:tpm").used, 0);
    rl_manual_clock_advance(&f->clock, 1);
    rl_requirement other[] = {{"n:tpm", 30, false}};
    rl_reserve_result r = reserve_n(f, 1, other, 1); /* not a conflict: nothing was remembered */
    assert_true(r.allowed);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS + 1);
    /* a remembered lease: its first outcome, or a conflict */
    rl_manual_clock_advance(&f->clock, 1000);
    r = reserve_request(f, 1, other, 1, true);
    assert_true(r.allowed);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS + 1);
    assert_int_equal(reserve_request(f, 1, one, 2, true).status, RL_LEASE_ID_CONFLICT);
    assert_true(reserve_n(f, 2, one, 1).allowed);
    rl_reserve_result denied = reserve_n(f, 3, one, 1);
    assert_false(denied.allowed);
    complete_n(f, 2, NULL, 0); /* room again, but lease 3 stays denied */
    rl_reserve_result replayed = reserve_request(f, 3, one, 1, true);
    expect_same_answer(&replayed, &denied);
    assert_int_equal(usage_of(f, "n:conc").used, 0);
    assert_int_equal(usage_of(f, "n:tpm").used, 30);
    /* in a batch beside real reserves: only the real ones hold */
    char ids[3][27];
    rl_reserve_request batch[3] = {{rl_test_lease_id(10, ids[0]), NULL, one, 2, true},
                                   {rl_test_lease_id(11, ids[1]), NULL, one, 1, false},
                                   {rl_test_lease_id(12, ids[2]), NULL, one, 1, true}};
    rl_reserve_result results[3];
    rl_backend_reserve_batch(f->backend, batch, 3, results);
    assert_false(results[0].allowed); /* n:tpm has 70 of 100 free */
    expect_denial(&results[0], "n:tpm", RL_DENIAL_CAPACITY, 100, 70, 100);
    assert_true(results[1].allowed);
    assert_false(results[2].allowed); /* lease 11 holds n:conc now */
    expect_denial(&results[2], "n:conc", RL_DENIAL_CAPACITY, 1, 0, 1);
    assert_int_equal(usage_of(f, "n:conc").used, 1);
    if (has_audit(f)) {
        rl_manual_clock_advance(&f->clock, 1);
        rl_audit_entry entries[4];
        uint64_t next;
        assert_int_equal(audit_page(f, "n:tpm", 0, 4, entries, &next), 0);
    }
}

/* The case list, the same for every backend. */
/* ---- deleting a limit -------------------------------------------------------- */

static rl_status delete_limit(fixture *f, const char *key) { return rl_backend_delete_definition(f->backend, key); }

static void expect_unknown(fixture *f, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &u), RL_UNKNOWN_LIMIT_KEY);
}

/* A delete drops the limit and all it holds (rolling reservations, holds, a
 * budget's open reservations), charging and auditing nothing. A reserve
 * naming the key is unknown (and holds nothing elsewhere); a lease that held
 * it keeps its other keys, which its Complete still charges; a retried lease
 * id gets its first outcome. */
static void delete_drops_a_limit_and_what_it_holds(void **state) {
    fixture *f = *state;
    define(f, "d:tpm", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DEBT);
    define(f, "d:conc", RL_KIND_CONCURRENCY, 2, 300, RL_OVERAGE_DEBT);
    define_budget(f, "d:usd", 5000, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    define(f, "d:keep", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DEBT);
    rl_requirement all[] = {{"d:tpm", 300, false}, {"d:conc", 1, false}, {"d:usd", 2000, false}, {"d:keep", 300, false}};
    assert_true(reserve_n(f, 1, all, 4).allowed);
    assert_true(reserve_n(f, 2, all, 4).allowed);
    assert_int_equal(usage_of(f, "d:conc").active, 2);

    assert_int_equal(delete_limit(f, "d:tpm"), RL_OK);
    assert_int_equal(delete_limit(f, "d:conc"), RL_OK);
    assert_int_equal(delete_limit(f, "d:usd"), RL_OK);
    expect_unknown(f, "d:tpm");
    expect_unknown(f, "d:conc");
    expect_unknown(f, "d:usd");
    assert_int_equal(usage_of(f, "d:keep").used, 600);

    rl_reserve_result r = reserve_n(f, 3, all, 4);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(r.status_key, "d:tpm");
    assert_int_equal(usage_of(f, "d:keep").used, 600);
    r = reserve_n(f, 1, all, 4); /* a retry: its first outcome */
    assert_true(r.allowed);
    assert_int_equal(r.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(usage_of(f, "d:keep").used, 600);

    rl_manual_clock_advance(&f->clock, 1000);
    rl_actual actuals[] = {{"d:tpm", 100}, {"d:usd", 1000}, {"d:conc", 1}, {"d:keep", 100}};
    complete_n(f, 1, actuals, 4);
    assert_int_equal(usage_of(f, "d:keep").used, 400);
    complete_n(f, 2, NULL, 0); /* keeps its 300 on d:keep, names nothing */
    assert_int_equal(usage_of(f, "d:keep").used, 400);
    if (has_audit(f)) {
        rl_manual_clock_advance(&f->clock, 1); /* entries are listed once their millisecond is over */
        rl_audit_entry entries[4];
        uint64_t next;
        assert_int_equal(audit_page(f, "d:keep", 0, 4, entries, &next), 2);
        expect_entry(&entries[0], T0_UNIX_MS + 1000, 1, "", "d:keep", 300, 100, 0, false);
        expect_entry(&entries[1], T0_UNIX_MS + 1000, 2, "", "d:keep", 300, 300, 0, false);
        assert_int_equal(audit_page(f, "d:tpm", 0, 4, entries, &next), 0);
        assert_int_equal(audit_page(f, "d:usd", 0, 4, entries, &next), 0);
    }
    /* its window over, d:keep is empty again; nothing of the rest comes back */
    rl_manual_clock_advance(&f->clock, 600000);
    rl_backend_sweep(f->backend);
    assert_int_equal(usage_of(f, "d:keep").used, 0);
    expect_unknown(f, "d:usd");
}

/* A key defined again after a delete is a new limit that starts empty; the
 * leases of the old one touch nothing of it, also when they complete (in
 * Redis their entries may share a bucket with the new limit's: the same
 * millisecond and window). */
static void a_limit_defined_again_after_a_delete_starts_empty(void **state) {
    fixture *f = *state;
    define(f, "d:tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(f, "d:conc", RL_KIND_CONCURRENCY, 1, 300, RL_OVERAGE_DEBT);
    define_budget(f, "d:usd", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"d:tpm", 80, false}, {"d:conc", 1, false}, {"d:usd", 70, false}};
    assert_true(reserve_n(f, 1, reqs, 3).allowed);
    assert_true(reserve1(f, 2, "d:tpm", 10).allowed);
    complete1(f, 2, "d:tpm", 30); /* 10 of debt */
    assert_int_equal(usage_of(f, "d:tpm").debt_total, 10);
    assert_int_equal(delete_limit(f, "d:tpm"), RL_OK);
    assert_int_equal(delete_limit(f, "d:conc"), RL_OK);
    assert_int_equal(delete_limit(f, "d:usd"), RL_OK);
    assert_int_equal(define(f, "d:tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_ACTIVE);
    define(f, "d:conc", RL_KIND_CONCURRENCY, 1, 300, RL_OVERAGE_DEBT);
    define_budget(f, "d:usd", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    rl_limit_usage u = usage_of(f, "d:tpm");
    assert_int_equal(u.used, 0);
    assert_int_equal(u.active, 0);
    assert_int_equal(u.debt_total, 0);
    assert_int_equal(usage_of(f, "d:conc").active, 0);
    assert_int_equal(budget_usage(f, "d:usd").used, 0);

    assert_true(reserve_n(f, 3, reqs, 3).allowed); /* the old holds are gone: it fits */
    rl_actual old[] = {{"d:tpm", 10}, {"d:usd", 20}, {"d:conc", 1}};
    complete_n(f, 1, old, 3); /* the old lease: nothing of the new limits moves */
    u = usage_of(f, "d:tpm");
    assert_int_equal(u.used, 80);
    assert_int_equal(u.active, 1);
    assert_int_equal(usage_of(f, "d:conc").active, 1);
    assert_int_equal(budget_usage(f, "d:usd").reserved, 70);
    assert_int_equal(budget_usage(f, "d:usd").committed, 0);
    rl_manual_clock_advance(&f->clock, 1000);
    rl_actual actuals[] = {{"d:tpm", 30}, {"d:usd", 50}};
    complete_n(f, 3, actuals, 2);
    u = usage_of(f, "d:tpm");
    assert_int_equal(u.used, 30);
    assert_int_equal(u.active, 1);
    assert_int_equal(usage_of(f, "d:conc").active, 0);
    assert_int_equal(budget_usage(f, "d:usd").committed, 50);
    if (has_audit(f)) { /* the old lease's Complete charged nothing: no entry */
        rl_manual_clock_advance(&f->clock, 1);
        rl_audit_entry entries[4];
        uint64_t next;
        assert_int_equal(audit_page(f, "d:tpm", 0, 4, entries, &next), 2);
        expect_entry(&entries[0], T0_UNIX_MS, 2, "", "d:tpm", 10, 30, 0, false);
        expect_entry(&entries[1], T0_UNIX_MS + 1000, 3, "", "d:tpm", 80, 30, 0, false);
    }
    rl_manual_clock_advance(&f->clock, 59000);
    assert_int_equal(usage_of(f, "d:tpm").used, 0);
}

/* A key with no limit answers unknown and changes nothing, a second delete
 * too; a denial the deleted limit gave is still its lease's first outcome. */
static void deleting_an_unknown_key_changes_nothing(void **state) {
    fixture *f = *state;
    assert_int_equal(delete_limit(f, "d:never"), RL_UNKNOWN_LIMIT_KEY);
    define(f, "d:tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(f, "d:other", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "d:tpm", 100).allowed);
    rl_reserve_result denied = reserve1(f, 2, "d:tpm", 50);
    assert_false(denied.allowed);
    assert_string_equal(denied.denied_by.key, "d:tpm");
    assert_int_equal(delete_limit(f, "d:tpm"), RL_OK);
    assert_int_equal(delete_limit(f, "d:tpm"), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(delete_limit(f, "d:never"), RL_UNKNOWN_LIMIT_KEY);
    assert_true(reserve1(f, 3, "d:other", 100).allowed);
    rl_reserve_result again = reserve1(f, 2, "d:tpm", 50);
    assert_false(again.allowed);
    assert_int_equal(again.status, RL_OK);
    assert_int_equal(again.retry_after_ms, denied.retry_after_ms);
    assert_string_equal(again.denied_by.key, "d:tpm");
    assert_int_equal(again.denied_by.requested, 50);
    assert_int_equal(again.denied_by.available, 0);
    assert_int_equal(again.denied_by.capacity, 100);
    rl_reserve_result fresh = reserve1(f, 4, "d:tpm", 1);
    assert_int_equal(fresh.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(fresh.status_key, "d:tpm");
}

/* ---- limit templates -------------------------------------------------------- */

/* Puts a template (def.key its pattern) of kind with capacity and a window
 * or timeout of seconds; skips the case on a backend without templates
 * (rl_backend_put_template answers RL_INVALID_REQUEST for a missing op). */
static rl_status apply_template(fixture *f, const char *pattern, rl_kind kind, uint64_t capacity, uint32_t seconds) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", pattern);
    def.kind = kind;
    def.capacity = capacity;
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    if (f->backend->ops->put_template == NULL) skip();
    return rl_backend_put_template(f->backend, &def);
}

static void put_template(fixture *f, const char *pattern, rl_kind kind, uint64_t capacity, uint32_t seconds) {
    assert_int_equal(apply_template(f, pattern, kind, capacity, seconds), RL_OK);
}

/* The sums over a template's limits stop at the ceiling too: two tenants
 * of capacity 2^53 sum to 2^53, not 2^54, and so does what they use. */
static void templates_sums_saturate_at_the_ceiling(void **state) {
    fixture *f = *state;
    if (f->backend->ops->template_usage == NULL) skip();
    put_template(f, "tenant:{t}:tpm", RL_KIND_ROLLING, RL_AMOUNT_MAX, 60);
    assert_true(reserve1(f, 1, "tenant:a:tpm", RL_AMOUNT_MAX).allowed);
    assert_true(reserve1(f, 2, "tenant:b:tpm", 1).allowed);
    const char *patterns[] = {"tenant:{t}:tpm"};
    rl_template_usage sums = {0}; /* zeroed by the caller */
    assert_int_equal(rl_backend_template_usage(f->backend, patterns, 1, &sums), RL_OK);
    assert_int_equal(sums.limits, 2);
    assert_int_equal(sums.capacity, RL_COUNTER_MAX);
    assert_int_equal(sums.used, RL_COUNTER_MAX);
    assert_int_equal(sums.available, RL_AMOUNT_MAX - 1);
}

/* A key no limit defines that a template matches names a limit made from
 * it on first use: a usage read and a dry run see it, a reserve holds on
 * it, it denies at its capacity; it is no definition of its own (not
 * listed, not deletable). A key no template matches stays unknown. */
static void templates_make_limits_on_first_use(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 2, 60);
    rl_limit_usage u = usage_of(f, "tenant:a:rpm");
    assert_int_equal(u.capacity, 2);
    assert_int_equal(u.used, 0);
    rl_requirement one = {"tenant:a:rpm", 2, false};
    assert_true(reserve_request(f, 1, &one, 1, true).allowed); /* a dry run changes nothing */
    assert_int_equal(usage_of(f, "tenant:a:rpm").used, 0);
    assert_true(reserve1(f, 2, "tenant:a:rpm", 1).allowed);
    assert_true(reserve1(f, 3, "tenant:a:rpm", 1).allowed);
    rl_reserve_result denied = reserve1(f, 4, "tenant:a:rpm", 1);
    assert_false(denied.allowed);
    assert_string_equal(denied.denied_by.key, "tenant:a:rpm");
    assert_int_equal(denied.denied_by.capacity, 2);
    assert_true(reserve1(f, 5, "tenant:b:rpm", 2).allowed); /* each key its own limit */
    complete1(f, 2, "tenant:a:rpm", 0);
    assert_int_equal(usage_of(f, "tenant:a:rpm").used, 1);
    if (f->backend->ops->delete_definition != NULL)
        assert_int_equal(rl_backend_delete_definition(f->backend, "tenant:a:rpm"), RL_UNKNOWN_LIMIT_KEY);
    if (rl_backend_is_shared(f->backend)) {
        rl_limit_def *defs = NULL;
        size_t count = 9;
        assert_int_equal(rl_backend_list_definitions(f->backend, &defs, &count), RL_OK);
        assert_int_equal(count, 0);
        free(defs);
    }
    assert_int_equal(reserve1(f, 6, "tenant:a:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    expect_unknown(f, "tenant:a:tpm");
    rl_limit_def *templates = NULL;
    size_t count = 0;
    if (rl_backend_list_templates(f->backend, &templates, &count) == RL_OK) {
        assert_int_equal(count, 1);
        assert_string_equal(templates[0].key, "tenant:{t}:rpm");
        assert_int_equal(templates[0].capacity, 2);
        free(templates);
    }
}

/* Of the templates that match a key, the most specific makes its limit,
 * whatever the order they were put in. */
static void templates_the_most_specific_makes_the_limit(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 3, 60);
    put_template(f, "{scope}:{t}:rpm", RL_KIND_ROLLING, 10, 60);
    put_template(f, "tenant:{t}:{limit}", RL_KIND_CONCURRENCY, 20, 60);
    assert_int_equal(usage_of(f, "tenant:a:rpm").capacity, 3);
    assert_int_equal(usage_of(f, "team:a:rpm").capacity, 10);
    assert_int_equal(usage_of(f, "tenant:a:conc").capacity, 20);
    assert_true(reserve1(f, 1, "tenant:a:rpm", 3).allowed);
    assert_false(reserve1(f, 2, "tenant:a:rpm", 1).allowed);
}

/* A key's own limit wins over a template that matches it, and keeps what
 * it holds when it is defined over a limit made from one; deleting it
 * leaves the key to the template again, made anew, empty. */
static void templates_a_keys_own_limit_wins(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 5, 60);
    define(f, "tenant:vip:rpm", RL_KIND_ROLLING, 1, 60, RL_OVERAGE_DEBT);
    assert_true(reserve1(f, 1, "tenant:vip:rpm", 1).allowed);
    assert_false(reserve1(f, 2, "tenant:vip:rpm", 1).allowed);
    assert_true(reserve1(f, 3, "tenant:a:rpm", 4).allowed);
    define(f, "tenant:a:rpm", RL_KIND_ROLLING, 50, 60, RL_OVERAGE_DEBT);
    rl_limit_usage u = usage_of(f, "tenant:a:rpm");
    assert_int_equal(u.capacity, 50);
    assert_int_equal(u.used, 4);
    if (f->backend->ops->delete_definition == NULL) return;
    assert_int_equal(rl_backend_delete_definition(f->backend, "tenant:vip:rpm"), RL_OK);
    u = usage_of(f, "tenant:vip:rpm");
    assert_int_equal(u.capacity, 5);
    assert_int_equal(u.used, 0);
    assert_true(reserve1(f, 4, "tenant:vip:rpm", 5).allowed);
}

/* A limit made from a template whose reservations are over holds nothing:
 * it is made again, empty, when next named (a backend may forget it
 * meanwhile), and a lease of it completed late changes nothing. */
static void templates_an_idle_limit_is_made_again_empty(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 10, 60);
    put_template(f, "tenant:{t}:conc", RL_KIND_CONCURRENCY, 1, 30);
    rl_requirement both[] = {{"tenant:a:rpm", 10, false}, {"tenant:a:conc", 1, false}};
    assert_true(reserve_n(f, 1, both, 2).allowed);
    assert_false(reserve_n(f, 2, both, 2).allowed);
    rl_manual_clock_advance(&f->clock, 61000);
    rl_backend_sweep(f->backend);
    rl_limit_usage u = usage_of(f, "tenant:a:rpm");
    assert_int_equal(u.used, 0);
    assert_int_equal(u.active, 0);
    assert_int_equal(usage_of(f, "tenant:a:conc").active, 0);
    assert_true(reserve_n(f, 3, both, 2).allowed);
    complete1(f, 1, "tenant:a:rpm", 5); /* the first lease, long over */
    assert_int_equal(usage_of(f, "tenant:a:rpm").used, 10);
    assert_int_equal(usage_of(f, "tenant:a:conc").active, 1);
}

/* A template put again: the limits made from it take the new definition as
 * apply_definition would (an increase at once, a decrease once usage
 * allows), and a change of kind while one of them holds anything is
 * RL_LIMIT_IN_USE, changing nothing. */
static void templates_replaced_are_followed_by_their_limits(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 2, 60);
    assert_true(reserve1(f, 1, "tenant:a:rpm", 2).allowed);
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 3, 60);
    assert_true(reserve1(f, 2, "tenant:a:rpm", 1).allowed);
    assert_false(reserve1(f, 3, "tenant:a:rpm", 1).allowed);
    put_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 1, 60);
    rl_limit_usage u = usage_of(f, "tenant:a:rpm");
    assert_int_equal(u.status, RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(u.pending_decrease_to, 1);
    assert_int_equal(u.used, 3);
    assert_int_equal(reserve1(f, 4, "tenant:a:rpm", 1).status, RL_LIMIT_DECREASING);
    assert_int_equal(apply_template(f, "tenant:{t}:rpm", RL_KIND_CONCURRENCY, 5, 30), RL_LIMIT_IN_USE);
    assert_int_equal(usage_of(f, "tenant:a:rpm").pending_decrease_to, 1);
    rl_manual_clock_advance(&f->clock, 61000);
    rl_backend_sweep(f->backend);
    u = usage_of(f, "tenant:a:rpm");
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 1);
    put_template(f, "tenant:{t}:rpm", RL_KIND_CONCURRENCY, 5, 30); /* it holds nothing now */
    assert_true(reserve1(f, 5, "tenant:a:rpm", 5).allowed);
    assert_int_equal(usage_of(f, "tenant:a:rpm").active, 1);
}

/* A template deleted: the limits made from it are dropped with what they
 * hold, none is made any more (a less specific template takes their keys),
 * and deleting it again is RL_UNKNOWN_LIMIT_KEY. */
static void templates_deleted_drop_their_limits(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:conc", RL_KIND_CONCURRENCY, 1, 300);
    put_template(f, "{scope}:{t}:conc", RL_KIND_CONCURRENCY, 4, 300);
    assert_true(reserve1(f, 1, "tenant:a:conc", 1).allowed);
    assert_false(reserve1(f, 2, "tenant:a:conc", 1).allowed);
    assert_int_equal(rl_backend_delete_template(f->backend, "tenant:{t}:conc"), RL_OK);
    rl_limit_usage u = usage_of(f, "tenant:a:conc");
    assert_int_equal(u.capacity, 4);
    assert_int_equal(u.active, 0);
    assert_true(reserve1(f, 3, "tenant:a:conc", 4).allowed);
    complete_n(f, 1, NULL, 0); /* a lease of the dropped limit releases nothing of the new one */
    assert_int_equal(usage_of(f, "tenant:a:conc").active, 1);
    assert_int_equal(rl_backend_delete_template(f->backend, "{scope}:{t}:conc"), RL_OK);
    assert_int_equal(reserve1(f, 4, "tenant:b:conc", 1).status, RL_UNKNOWN_LIMIT_KEY);
    expect_unknown(f, "tenant:a:conc");
    assert_int_equal(rl_backend_delete_template(f->backend, "tenant:{t}:conc"), RL_UNKNOWN_LIMIT_KEY);
    put_template(f, "tenant:{t}:conc", RL_KIND_CONCURRENCY, 1, 300);
    assert_true(reserve1(f, 5, "tenant:a:conc", 1).allowed); /* put again: made anew, empty */
}

/* An optional requirement counts a key a template matches as defined: it
 * is reserved, and can deny. */
static void templates_an_optional_key_a_template_matches_is_reserved(void **state) {
    fixture *f = *state;
    put_template(f, "tenant:{t}:rpd", RL_KIND_ROLLING, 1, 600);
    define(f, "t:rpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"t:rpm", 1, false}, {"tenant:a:rpd", 1, true}, {"tenant:a:rph", 1, true}};
    assert_true(reserve_n(f, 1, reqs, 3).allowed);
    assert_int_equal(usage_of(f, "tenant:a:rpd").used, 1);
    rl_reserve_result r = reserve_n(f, 2, reqs, 3);
    assert_false(r.allowed);
    assert_string_equal(r.denied_by.key, "tenant:a:rpd");
    assert_int_equal(usage_of(f, "t:rpm").used, 1);
}

/* What put_template refuses changes nothing: a key without a placeholder,
 * a definition a limit could not have. */
static void templates_a_bad_template_is_refused(void **state) {
    fixture *f = *state;
    assert_int_equal(apply_template(f, "tenant:a:rpm", RL_KIND_ROLLING, 2, 60), RL_INVALID_REQUEST);
    assert_int_equal(apply_template(f, "tenant:{t}:rpm", RL_KIND_ROLLING, 2, 0), RL_INVALID_REQUEST);
    assert_int_equal(reserve1(f, 1, "tenant:a:rpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    rl_limit_def *templates = NULL;
    size_t count = 9;
    if (rl_backend_list_templates(f->backend, &templates, &count) == RL_OK) {
        assert_int_equal(count, 0);
        free(templates);
    }
}

#define CONFORMANCE_CASES(setup, teardown)                                                                \
    cmocka_unit_test_setup_teardown(example1_rolling_reconcile_frees_early, setup, teardown),             \
    cmocka_unit_test_setup_teardown(example2_concurrency_released_on_complete, setup, teardown),          \
    cmocka_unit_test_setup_teardown(example3_overage_debt, setup, teardown),                              \
    cmocka_unit_test_setup_teardown(overage_partly_fitting_records_only_the_excess_as_debt, setup, teardown), \
    cmocka_unit_test_setup_teardown(overage_deny_charges_only_what_fits, setup, teardown),                \
    cmocka_unit_test_setup_teardown(counters_saturate_instead_of_wrapping, setup, teardown),              \
    cmocka_unit_test_setup_teardown(a_counter_at_the_ceiling_admits_nothing_more, setup, teardown),       \
    cmocka_unit_test_setup_teardown(example4_capacity_decrease, setup, teardown),                         \
    cmocka_unit_test_setup_teardown(decrease_applies_on_expiry_and_increase_cancels_it, setup, teardown), \
    cmocka_unit_test_setup_teardown(reserve_is_all_or_nothing, setup, teardown),                          \
    cmocka_unit_test_setup_teardown(rolling_reservations_expire_after_the_window, setup, teardown),       \
    cmocka_unit_test_setup_teardown(retry_after_walks_expiries_until_enough_frees, setup, teardown),      \
    cmocka_unit_test_setup_teardown(concurrency_hold_times_out, setup, teardown),                         \
    cmocka_unit_test_setup_teardown(a_kind_changes_only_while_the_limit_holds_nothing, setup, teardown), \
    cmocka_unit_test_setup_teardown(a_retried_lease_gets_its_first_outcome, setup, teardown),             \
    cmocka_unit_test_setup_teardown(a_reused_lease_id_with_other_requirements_conflicts, setup, teardown),             \
    cmocka_unit_test_setup_teardown(unknown_keys_are_reported_and_not_remembered, setup, teardown),       \
    cmocka_unit_test_setup_teardown(complete_is_idempotent_and_tolerates_unknown_leases, setup, teardown), \
    cmocka_unit_test_setup_teardown(leases_are_forgotten_after_their_memory, setup, teardown),            \
    cmocka_unit_test_setup_teardown(batches_decide_in_order, setup, teardown),                            \
    cmocka_unit_test_setup_teardown(a_denial_names_its_limit, setup, teardown),                           \
    cmocka_unit_test_setup_teardown(a_denial_names_the_limit_waited_for, setup, teardown),                \
    cmocka_unit_test_setup_teardown(a_retried_denial_keeps_its_denied_by, setup, teardown),               \
    cmocka_unit_test_setup_teardown(budget_spend_accumulates_and_resets_at_the_period, setup, teardown),   \
    cmocka_unit_test_setup_teardown(budget_reservation_crossing_a_boundary_charges_its_own_period, setup, teardown), \
    cmocka_unit_test_setup_teardown(budget_an_abandoned_reservation_is_refunded_at_its_timeout, setup, teardown), \
    cmocka_unit_test_setup_teardown(budget_overage_debt_and_deny, setup, teardown),                       \
    cmocka_unit_test_setup_teardown(budget_counters_saturate_instead_of_wrapping, setup, teardown),       \
    cmocka_unit_test_setup_teardown(budget_capacity_changes_apply_to_the_period, setup, teardown),        \
    cmocka_unit_test_setup_teardown(budget_a_new_zone_or_period_keeps_what_was_counted, setup, teardown), \
    cmocka_unit_test_setup_teardown(budget_denials_and_kind_changes, setup, teardown),                    \
    cmocka_unit_test_setup_teardown(audit_a_complete_writes_an_entry_per_key_charged, setup, teardown),   \
    cmocka_unit_test_setup_teardown(audit_refunds_and_periods, setup, teardown),                          \
    cmocka_unit_test_setup_teardown(audit_pages_never_end_inside_a_millisecond, setup, teardown),         \
    cmocka_unit_test_setup_teardown(threads_never_over_admit, setup, teardown),                           \
    cmocka_unit_test_setup_teardown(optional_unknown_keys_are_skipped, setup, teardown),                  \
    cmocka_unit_test_setup_teardown(optional_known_keys_are_reserved_and_deny, setup, teardown),          \
    cmocka_unit_test_setup_teardown(a_lease_of_skipped_requirements_holds_nothing, setup, teardown),      \
    cmocka_unit_test_setup_teardown(a_dry_run_answers_what_a_reserve_would, setup, teardown),             \
    cmocka_unit_test_setup_teardown(a_dry_run_changes_nothing, setup, teardown),                          \
    cmocka_unit_test_setup_teardown(delete_drops_a_limit_and_what_it_holds, setup, teardown),            \
    cmocka_unit_test_setup_teardown(a_limit_defined_again_after_a_delete_starts_empty, setup, teardown),  \
    cmocka_unit_test_setup_teardown(deleting_an_unknown_key_changes_nothing, setup, teardown),            \
    cmocka_unit_test_setup_teardown(templates_make_limits_on_first_use, setup, teardown),                \
    cmocka_unit_test_setup_teardown(templates_sums_saturate_at_the_ceiling, setup, teardown),            \
    cmocka_unit_test_setup_teardown(templates_the_most_specific_makes_the_limit, setup, teardown),       \
    cmocka_unit_test_setup_teardown(templates_a_keys_own_limit_wins, setup, teardown),                   \
    cmocka_unit_test_setup_teardown(templates_an_idle_limit_is_made_again_empty, setup, teardown),       \
    cmocka_unit_test_setup_teardown(templates_replaced_are_followed_by_their_limits, setup, teardown),   \
    cmocka_unit_test_setup_teardown(templates_deleted_drop_their_limits, setup, teardown),               \
    cmocka_unit_test_setup_teardown(templates_an_optional_key_a_template_matches_is_reserved, setup, teardown), \
    cmocka_unit_test_setup_teardown(templates_a_bad_template_is_refused, setup, teardown)

static void redis_server_missing(void **state) {
    (void)state;
    skip(); /* cmocka 1.1 cannot skip from a setup: the cases themselves are swapped for this */
}

int main(void) {
    const struct CMUnitTest memory_cases[] = {CONFORMANCE_CASES(setup_memory, teardown)};
    const struct CMUnitTest journal_cases[] = {CONFORMANCE_CASES(setup_memory_journal, teardown)};
    struct CMUnitTest redis_cases[] = {CONFORMANCE_CASES(setup_redis, teardown)};
    struct CMUnitTest fleet_cases[] = {CONFORMANCE_CASES(setup_fleet, teardown)};
    char executable[512];
    bool have_redis = rl_test_redis_find_executable(executable, sizeof executable);
    if (!have_redis) {
        fprintf(stderr, "no redis-server on PATH (make deps-test installs it): the redis group is skipped\n");
        for (size_t i = 0; i < sizeof redis_cases / sizeof redis_cases[0]; i++) {
            redis_cases[i].test_func = fleet_cases[i].test_func = redis_server_missing;
            redis_cases[i].setup_func = fleet_cases[i].setup_func = NULL;
            redis_cases[i].teardown_func = fleet_cases[i].teardown_func = NULL;
        }
    }
    int failed = cmocka_run_group_tests_name("memory", memory_cases, NULL, NULL);
    failed += cmocka_run_group_tests_name("memory with journal and audit log", journal_cases, NULL, NULL);
    failed += have_redis ? cmocka_run_group_tests_name("redis", redis_cases, start_redis, stop_redis)
                         : cmocka_run_group_tests_name("redis", redis_cases, NULL, NULL);
    failed += have_redis ? cmocka_run_group_tests_name("redis fleet with allotments", fleet_cases, start_redis, stop_redis)
                         : cmocka_run_group_tests_name("redis fleet with allotments", fleet_cases, NULL, NULL);
    return failed;
}
