/* test_memory_backend.c — the memory backend's semantics on a manual clock:
 * the four accounting examples of spec/overview.md, expiry, all-or-nothing,
 * idempotency, retry_after, bounds, and many threads on the real clock. */
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
#include "support/lease_ids.h"

#define T0_UNIX_MS UINT64_C(1736660000000)

typedef struct fixture {
    rl_manual_clock clock;
    rl_backend *backend;
} fixture;

static int setup_with(void **state, uint64_t max_leases, uint32_t lease_memory_ms) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, 1000000, T0_UNIX_MS);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.max_leases = max_leases;
    options.lease_memory_ms = lease_memory_ms;
    assert_int_equal(rl_memory_backend_create(&options, &f->backend), RL_OK);
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_with(state, 0, 60000); }

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    free(f);
    return 0;
}

static rl_limit_status define(fixture *f, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds,
                              rl_overage overage) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = kind;
    def.capacity = capacity;
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    def.overage = overage;
    char err[200];
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    rl_limit_status status;
    assert_int_equal(rl_backend_apply_definition(f->backend, &def, &status), RL_OK);
    return status;
}

static rl_reserve_result reserve_n(fixture *f, uint64_t lease, const rl_requirement *reqs, size_t n) {
    char id[27];
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, reqs, n};
    rl_reserve_result result;
    memset(&result, 0xab, sizeof result);
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

static rl_reserve_result reserve1(fixture *f, uint64_t lease, const char *key, uint64_t amount) {
    rl_requirement req = {key, amount};
    return reserve_n(f, lease, &req, 1);
}

static void complete_n(fixture *f, uint64_t lease, const rl_actual *actuals, size_t n) {
    char id[27];
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, actuals, n};
    assert_int_equal(rl_backend_complete(f->backend, &request), RL_OK);
}

static void complete1(fixture *f, uint64_t lease, const char *key, uint64_t actual) {
    rl_actual a = {key, actual};
    complete_n(f, lease, &a, 1);
}

static rl_limit_usage usage_of(fixture *f, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &usage), RL_OK);
    return usage;
}

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
    rl_requirement big[] = {{"rpm", 1}, {"conc", 1}, {"tpm", 101}};
    rl_reserve_result r = reserve_n(f, 1, big, 3);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    assert_string_equal(r.status_key, "tpm");
    assert_int_equal(r.retry_after_ms, 0);
    assert_true(reserve1(f, 2, "tpm", 95).allowed);
    rl_requirement reqs[] = {{"rpm", 1}, {"conc", 1}, {"tpm", 10}};
    r = reserve_n(f, 3, reqs, 3);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_int_equal(usage_of(f, "rpm").used, 0);
    assert_int_equal(usage_of(f, "conc").used, 0);
    assert_int_equal(usage_of(f, "tpm").used, 95);
    rl_requirement fits[] = {{"rpm", 1}, {"conc", 1}, {"tpm", 5}};
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
    rl_requirement both[] = {{"rpm", 1}, {"tpm", 10}};
    assert_int_equal(reserve_n(f, 8, both, 2).retry_after_ms, 40000);
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
    rl_requirement req = {"rpm", 1};
    rl_reserve_request lower = {id, NULL, &req, 1};
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
    rl_requirement reqs[] = {{"rpm", 1}, {"nope", 1}};
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

static void invalid_requests_change_nothing(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 5, 60, RL_OVERAGE_DEBT);
    rl_requirement twice[] = {{"rpm", 1}, {"rpm", 1}};
    assert_int_equal(reserve_n(f, 1, twice, 2).status, RL_INVALID_REQUEST);
    rl_requirement zero = {"rpm", 0};
    assert_int_equal(reserve_n(f, 2, &zero, 1).status, RL_INVALID_REQUEST);
    rl_requirement one = {"rpm", 1};
    rl_reserve_request bad_id = {"not-a-ulid", NULL, &one, 1};
    rl_reserve_result r;
    rl_backend_reserve(f->backend, &bad_id, &r);
    assert_int_equal(r.status, RL_INVALID_REQUEST);
    assert_int_equal(usage_of(f, "rpm").used, 0);
    /* and those leases were not remembered as denied */
    assert_true(reserve1(f, 1, "rpm", 1).allowed);
}

static void complete_is_idempotent_and_tolerates_unknown_leases(void **state) {
    fixture *f = *state;
    define(f, "tpm", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(f, "conc", RL_KIND_CONCURRENCY, 1, 60, RL_OVERAGE_DEBT);
    complete1(f, 99, "tpm", 5); /* never reserved */
    rl_requirement reqs[] = {{"tpm", 50}, {"conc", 1}};
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
    rl_manual_clock_advance(&f->clock, 10000 + 60000);
    rl_backend_sweep(f->backend);
    /* both ids are new again: lease 1 reserves afresh, lease 2 is decided anew */
    assert_true(reserve1(f, 2, "rpm", 1).allowed);
    assert_false(reserve1(f, 1, "rpm", 1).allowed);
}

static int setup_small(void **state) { return setup_with(state, 4, 600000); }

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

static void batches_decide_in_order(void **state) {
    fixture *f = *state;
    define(f, "rpm", RL_KIND_ROLLING, 2, 60, RL_OVERAGE_DEBT);
    char ids[4][27];
    rl_requirement one = {"rpm", 1};
    rl_reserve_request requests[4];
    for (int i = 0; i < 4; i++) requests[i] = (rl_reserve_request){rl_test_lease_id((uint64_t)i + 1, ids[i]), NULL, &one, 1};
    requests[3].lease_id = ids[0]; /* the same lease again within the batch */
    rl_reserve_result results[4];
    rl_backend_reserve_batch(f->backend, requests, 4, results);
    assert_true(results[0].allowed);
    assert_true(results[1].allowed);
    assert_false(results[2].allowed);
    assert_true(results[3].allowed);
    assert_int_equal(usage_of(f, "rpm").used, 2);
}

/* Many threads on the real clock: never more admitted than capacity. */
typedef struct hammer {
    rl_backend *backend;
    int thread;
    int admitted;
} hammer;

static void *hammer_main(void *arg) {
    hammer *h = arg;
    rl_requirement reqs[] = {{"h:conc", 1}, {"h:rpm", 1}};
    for (int i = 0; i < 2000; i++) {
        char id[27];
        rl_test_lease_id((uint64_t)h->thread * 100000u + (uint64_t)i + 1, id);
        rl_reserve_request request = {id, NULL, reqs, 2};
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

static void threads_never_over_admit(void **state) {
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
        cmocka_unit_test_setup_teardown(example1_rolling_reconcile_frees_early, setup, teardown),
        cmocka_unit_test_setup_teardown(example2_concurrency_released_on_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(example3_overage_debt, setup, teardown),
        cmocka_unit_test_setup_teardown(overage_partly_fitting_records_only_the_excess_as_debt, setup, teardown),
        cmocka_unit_test_setup_teardown(overage_deny_charges_only_what_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(example4_capacity_decrease, setup, teardown),
        cmocka_unit_test_setup_teardown(decrease_applies_on_expiry_and_increase_cancels_it, setup, teardown),
        cmocka_unit_test_setup_teardown(reserve_is_all_or_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(rolling_reservations_expire_after_the_window, setup, teardown),
        cmocka_unit_test_setup_teardown(retry_after_walks_expiries_until_enough_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrency_hold_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(a_retried_lease_gets_its_first_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_keys_are_reported_and_not_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_requests_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(complete_is_idempotent_and_tolerates_unknown_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(leases_are_forgotten_after_their_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(the_lease_table_is_bounded, setup_small, teardown),
        cmocka_unit_test_setup_teardown(batches_decide_in_order, setup, teardown),
        cmocka_unit_test(threads_never_over_admit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
