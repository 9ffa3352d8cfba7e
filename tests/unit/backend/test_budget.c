/* test_budget.c — limits of kind budget on the memory backend, on a manual
 * clock set to real dates: spend accumulates within a calendar period and
 * is 0 again at the next boundary (UTC and America/New_York across a DST
 * change, a 29-day February); a reservation belongs to the period it was
 * made in, even when completed after the boundary; Complete charges the
 * actual and refunds the rest; timeout refunds in full; overage debt and
 * deny; retry_after_ms and denied_by; LimitInfo's period fields; capacity
 * changes; a change of zone never hands out a fresh budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/memory.h"
#include "support/lease_ids.h"
#include "support/civil_time.h"

/* A UTC time as Unix ms (support/civil_time.h). */
static uint64_t utc(int y, int m, int d, int hh, int mm) { return rl_test_utc_ms(y, m, d, hh, mm); }

#define HOUR_MS 3600000u
#define DAY_MS (24u * HOUR_MS)


typedef struct fixture {
    rl_manual_clock clock;
    rl_backend *backend;
    uint64_t next_lease;
} fixture;

static void start_at(fixture *f, uint64_t unix_ms) {
    rl_manual_clock_init(&f->clock, 1000000, unix_ms);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    assert_int_equal(rl_memory_backend_create(&options, &f->backend), RL_OK);
    f->next_lease = 1;
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    return 0;
}

static void define_budget(fixture *f, const char *key, uint64_t capacity, rl_period period, const char *zone,
                          uint32_t timeout_seconds, rl_overage overage) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = capacity, .timeout_seconds = timeout_seconds,
                        .period = period, .overage = overage};
    snprintf(def.key, sizeof def.key, "%s", key);
    snprintf(def.timezone, sizeof def.timezone, "%s", zone);
    snprintf(def.unit, sizeof def.unit, "usd_micros");
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rl_backend_apply_definition(f->backend, &def, NULL), RL_OK);
}

/* Reserves amount on key with a new lease; returns the result, the lease's
 * number in *lease. */
static rl_reserve_result reserve(fixture *f, const char *key, uint64_t amount, uint64_t *lease) {
    char id[27];
    *lease = f->next_lease++;
    rl_requirement r = {key, amount, false};
    rl_reserve_request request = {rl_test_lease_id(*lease, id), NULL, &r, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

static void complete(fixture *f, uint64_t lease, const char *key, uint64_t actual) {
    char id[27];
    rl_actual a = {key, actual};
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, key != NULL ? &a : NULL, key != NULL ? 1u : 0u};
    assert_int_equal(rl_backend_complete(f->backend, &request), RL_OK);
}

static rl_limit_usage usage(fixture *f, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &u), RL_OK);
    assert_int_equal(u.used, u.committed + u.reserved);
    return u;
}

/* Moves the wall clock (and the monotonic one with it) to unix_ms. */
static void move_to(fixture *f, uint64_t unix_ms) {
    assert_true(unix_ms >= f->clock.unix_now_ms);
    rl_manual_clock_advance(&f->clock, unix_ms - f->clock.unix_now_ms);
}

static void spend_accumulates_and_resets_at_the_month(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 11, 25, 9, 0));
    define_budget(f, "acme:spend", 50000000, RL_PERIOD_MONTH, "UTC", 600, RL_OVERAGE_DEBT);
    uint64_t a, b, c;
    assert_true(reserve(f, "acme:spend", 30000000, &a).allowed);
    rl_limit_usage u = usage(f, "acme:spend");
    assert_int_equal(u.period_start_unix_ms, utc(2026, 11, 1, 0, 0));
    assert_int_equal(u.period_end_unix_ms, utc(2026, 12, 1, 0, 0));
    assert_int_equal(u.reserved, 30000000);
    assert_int_equal(u.committed, 0);
    /* Complete charges the actual and refunds the rest at once */
    complete(f, a, "acme:spend", 12000000);
    u = usage(f, "acme:spend");
    assert_int_equal(u.committed, 12000000);
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.available, 38000000);
    /* what is committed stays committed: no window frees it */
    move_to(f, utc(2026, 11, 30, 23, 0));
    assert_int_equal(usage(f, "acme:spend").committed, 12000000);
    rl_reserve_result r = reserve(f, "acme:spend", 40000000, &b);
    assert_false(r.allowed);
    /* nothing open to time out: room comes back with the next month */
    assert_int_equal(r.retry_after_ms, HOUR_MS);
    assert_string_equal(r.denied_by.key, "acme:spend");
    assert_int_equal(r.denied_by.reason, RL_DENIAL_CAPACITY);
    assert_int_equal(r.denied_by.available, 38000000);
    assert_int_equal(r.denied_by.capacity, 50000000);
    assert_int_equal(r.denied_by.period_end_unix_ms, utc(2026, 12, 1, 0, 0));
    /* the next period starts with nothing spent */
    move_to(f, utc(2026, 12, 1, 0, 0));
    u = usage(f, "acme:spend");
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.period_start_unix_ms, utc(2026, 12, 1, 0, 0));
    assert_int_equal(u.period_end_unix_ms, utc(2027, 1, 1, 0, 0));
    assert_true(reserve(f, "acme:spend", 50000000, &c).allowed);
}

/* A reservation belongs to the period it was made in: completed after the
 * boundary, its actual is charged there, not to the new period, and what it
 * held is not held in the new one. */
static void a_reservation_crossing_a_boundary_charges_its_own_period(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 11, 25, 23, 59));
    define_budget(f, "t:daily", 100, RL_PERIOD_DAY, "UTC", 3600, RL_OVERAGE_DEBT);
    uint64_t a, b;
    assert_true(reserve(f, "t:daily", 80, &a).allowed);
    move_to(f, utc(2026, 11, 26, 0, 1));
    rl_limit_usage u = usage(f, "t:daily");
    assert_int_equal(u.period_start_unix_ms, utc(2026, 11, 26, 0, 0));
    assert_int_equal(u.used, 0);     /* yesterday's reservation is not held today */
    assert_int_equal(u.active, 1);   /* but it is still open */
    complete(f, a, "t:daily", 70);   /* charged to yesterday */
    u = usage(f, "t:daily");
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.active, 0);
    assert_true(reserve(f, "t:daily", 100, &b).allowed); /* today's whole budget */
}

/* A reservation never completed is refunded in full after timeout_seconds:
 * the caller died, nothing was spent. Before that, a denial waits for it. */
static void an_abandoned_reservation_is_refunded_at_its_timeout(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 6, 10, 12, 0));
    define_budget(f, "t:w", 100, RL_PERIOD_WEEK, "UTC", 600, RL_OVERAGE_DEBT);
    uint64_t a, b, c;
    assert_true(reserve(f, "t:w", 60, &a).allowed);
    move_to(f, utc(2026, 6, 10, 12, 4));
    rl_reserve_result r = reserve(f, "t:w", 50, &b);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, 6 * 60000u); /* when lease a times out */
    move_to(f, utc(2026, 6, 10, 12, 10));
    rl_limit_usage u = usage(f, "t:w");
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.committed, 0);
    assert_true(reserve(f, "t:w", 100, &c).allowed);
    complete(f, a, "t:w", 60); /* too late: it was refunded, nothing is charged */
    assert_int_equal(usage(f, "t:w").committed, 0);
    /* a Complete that names no actual for the key keeps what it reserved */
    complete(f, c, NULL, 0);
    assert_int_equal(usage(f, "t:w").committed, 100);
}

static void overage_debt_and_deny(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 6, 10, 12, 0));
    define_budget(f, "t:debt", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    define_budget(f, "t:deny", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DENY);
    uint64_t a, b, c;
    assert_true(reserve(f, "t:debt", 50, &a).allowed);
    complete(f, a, "t:debt", 130); /* 30 above capacity: debt */
    rl_limit_usage u = usage(f, "t:debt");
    assert_int_equal(u.committed, 130);
    assert_int_equal(u.debt, 30);
    assert_int_equal(u.debt_total, 30);
    assert_int_equal(u.available, 0);
    assert_false(reserve(f, "t:debt", 1, &b).allowed);
    assert_true(reserve(f, "t:deny", 50, &a).allowed);
    assert_true(reserve(f, "t:deny", 30, &c).allowed);
    complete(f, a, "t:deny", 90); /* only 70 fits (100 - the other 30 held) */
    u = usage(f, "t:deny");
    assert_int_equal(u.committed, 70);
    assert_int_equal(u.overage_denied_total, 20);
    assert_int_equal(u.used, 100);
}

/* America/New_York: the day clocks spring forward is 23 hours long, and
 * the budget's day ends at local midnight all the same. */
static void a_local_day_across_dst(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 3, 8, 17, 0)); /* 13:00 EDT */
    define_budget(f, "ny:daily", 10, RL_PERIOD_DAY, "America/New_York", 600, RL_OVERAGE_DEBT);
    uint64_t a, b;
    assert_true(reserve(f, "ny:daily", 10, &a).allowed);
    complete(f, a, "ny:daily", 10);
    rl_limit_usage u = usage(f, "ny:daily");
    assert_int_equal(u.period_start_unix_ms, utc(2026, 3, 8, 5, 0));
    assert_int_equal(u.period_end_unix_ms, utc(2026, 3, 9, 4, 0));
    assert_int_equal(u.period_end_unix_ms - u.period_start_unix_ms, 23u * HOUR_MS);
    rl_reserve_result r = reserve(f, "ny:daily", 1, &b);
    assert_false(r.allowed);
    assert_int_equal(r.retry_after_ms, 11u * HOUR_MS); /* until local midnight, 04:00 UTC */
    move_to(f, utc(2026, 3, 9, 4, 0));
    assert_true(reserve(f, "ny:daily", 10, &b).allowed);
}

/* February 2028 has 29 days: the month runs to March 1st. */
static void february_of_a_leap_year(void **state) {
    fixture *f = *state;
    start_at(f, utc(2028, 2, 29, 23, 0));
    define_budget(f, "t:m", 5, RL_PERIOD_MONTH, "UTC", 600, RL_OVERAGE_DEBT);
    rl_limit_usage u = usage(f, "t:m");
    assert_int_equal(u.period_start_unix_ms, utc(2028, 2, 1, 0, 0));
    assert_int_equal(u.period_end_unix_ms, utc(2028, 3, 1, 0, 0));
    assert_int_equal((u.period_end_unix_ms - u.period_start_unix_ms) / DAY_MS, 29);
}

/* Capacity changes apply to the current period: an increase at once; a
 * decrease below what is spent waits (limit_decreasing), and the next
 * period starts under it. */
static void capacity_changes_apply_to_the_period(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 6, 10, 12, 0));
    define_budget(f, "t:cap", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    uint64_t a, b, c;
    assert_true(reserve(f, "t:cap", 80, &a).allowed);
    complete(f, a, "t:cap", 80);
    define_budget(f, "t:cap", 150, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    assert_true(reserve(f, "t:cap", 70, &b).allowed);
    complete(f, b, "t:cap", 70);
    define_budget(f, "t:cap", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    rl_reserve_result r = reserve(f, "t:cap", 1, &c);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_LIMIT_DECREASING);
    assert_int_equal(r.denied_by.reason, RL_DENIAL_DECREASING);
    move_to(f, utc(2026, 6, 11, 0, 0));
    rl_limit_usage u = usage(f, "t:cap");
    assert_int_equal(u.capacity, 100);
    assert_int_equal(u.committed, 0);
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
}

/* A new zone or period for a budget moves its boundaries, and what it had
 * counted goes on counting: a change never hands out a fresh budget. */
static void a_new_zone_keeps_what_was_spent(void **state) {
    fixture *f = *state;
    start_at(f, utc(2026, 6, 10, 12, 0));
    define_budget(f, "t:z", 100, RL_PERIOD_DAY, "UTC", 600, RL_OVERAGE_DEBT);
    uint64_t a, b, c;
    assert_true(reserve(f, "t:z", 60, &a).allowed);
    complete(f, a, "t:z", 60);
    assert_true(reserve(f, "t:z", 30, &b).allowed); /* open */
    define_budget(f, "t:z", 100, RL_PERIOD_DAY, "Asia/Tokyo", 600, RL_OVERAGE_DEBT);
    rl_limit_usage u = usage(f, "t:z");
    assert_int_equal(u.period_start_unix_ms, utc(2026, 6, 9, 15, 0)); /* Tokyo's June 10 */
    assert_int_equal(u.committed, 60);
    assert_int_equal(u.reserved, 30);
    assert_false(reserve(f, "t:z", 11, &c).allowed);
    complete(f, b, "t:z", 10); /* still counted: its hold moved with the period */
    u = usage(f, "t:z");
    assert_int_equal(u.committed, 70);
    assert_int_equal(u.reserved, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(spend_accumulates_and_resets_at_the_month, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reservation_crossing_a_boundary_charges_its_own_period, setup, teardown),
        cmocka_unit_test_setup_teardown(an_abandoned_reservation_is_refunded_at_its_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(overage_debt_and_deny, setup, teardown),
        cmocka_unit_test_setup_teardown(a_local_day_across_dst, setup, teardown),
        cmocka_unit_test_setup_teardown(february_of_a_leap_year, setup, teardown),
        cmocka_unit_test_setup_teardown(capacity_changes_apply_to_the_period, setup, teardown),
        cmocka_unit_test_setup_teardown(a_new_zone_keeps_what_was_spent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
