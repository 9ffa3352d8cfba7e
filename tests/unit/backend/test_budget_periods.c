/* test_budget_periods.c — the calendars of the budgets a redis daemon
 * knows (backend/redis/budget_periods.h): the bounds passed to the scripts
 * are the period before, the one holding the instant, and the next, by
 * tzdata (America/New_York across a DST change, a leap February, Havana's
 * midnight that happens twice, so that they hold the instant); learning
 * another kind forgets the key; a zone tzdata lacks is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/redis/budget_periods.h"
#include "support/civil_time.h"

static rl_limit_def budget(const char *key, rl_period period, const char *zone) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = 10, .timeout_seconds = 60, .period = period};
    snprintf(def.key, sizeof def.key, "%s", key);
    snprintf(def.timezone, sizeof def.timezone, "%s", zone);
    return def;
}

static void expect_bounds(const rl_budget_bounds *b, uint64_t before, uint64_t start, uint64_t end, uint64_t next_end) {
    assert_int_equal(b->at_unix_ms[0], before);
    assert_int_equal(b->at_unix_ms[1], start);
    assert_int_equal(b->at_unix_ms[2], end);
    assert_int_equal(b->at_unix_ms[3], next_end);
}

static void bounds_are_the_periods_around_an_instant(void **state) {
    (void)state;
    rl_budget_periods *periods = rl__budget_periods_create();
    assert_false(rl__budget_periods_any(periods));
    rl_limit_def month = budget("m", RL_PERIOD_MONTH, "UTC");
    assert_true(rl__budget_periods_learn(periods, &month));
    assert_true(rl__budget_periods_any(periods));
    rl_budget_bounds b;
    assert_true(rl__budget_periods_bounds(periods, "m", rl_test_utc_ms(2028, 2, 29, 23, 59), &b));
    assert_string_equal(b.cal, "month UTC");
    expect_bounds(&b, rl_test_utc_ms(2028, 1, 1, 0, 0), rl_test_utc_ms(2028, 2, 1, 0, 0), rl_test_utc_ms(2028, 3, 1, 0, 0),
                  rl_test_utc_ms(2028, 4, 1, 0, 0));
    /* the same period from its cache; the next one when the instant gets there */
    assert_true(rl__budget_periods_bounds(periods, "m", rl_test_utc_ms(2028, 2, 1, 0, 0), &b));
    assert_int_equal(b.at_unix_ms[1], rl_test_utc_ms(2028, 2, 1, 0, 0));
    assert_true(rl__budget_periods_bounds(periods, "m", rl_test_utc_ms(2028, 3, 1, 0, 0), &b));
    assert_int_equal(b.at_unix_ms[0], rl_test_utc_ms(2028, 2, 1, 0, 0));
    /* and back, should a clock go back */
    assert_true(rl__budget_periods_bounds(periods, "m", rl_test_utc_ms(2028, 1, 31, 0, 0), &b));
    assert_int_equal(b.at_unix_ms[1], rl_test_utc_ms(2028, 1, 1, 0, 0));

    /* New York's day before, of and after the spring change: 24, 23, 24 hours */
    rl_limit_def ny = budget("ny", RL_PERIOD_DAY, "America/New_York");
    assert_true(rl__budget_periods_learn(periods, &ny));
    assert_true(rl__budget_periods_bounds(periods, "ny", rl_test_utc_ms(2026, 3, 8, 17, 0), &b));
    assert_string_equal(b.cal, "day America/New_York");
    expect_bounds(&b, rl_test_utc_ms(2026, 3, 7, 5, 0), rl_test_utc_ms(2026, 3, 8, 5, 0), rl_test_utc_ms(2026, 3, 9, 4, 0),
                  rl_test_utc_ms(2026, 3, 10, 4, 0));
    rl__budget_periods_destroy(periods);
}

/* Havana's clocks go back from 01:00 to 00:00 on November 1, 2026: the day
 * starts at the first 00:00 (04:00 UTC), so a reserve at 00:30 of that
 * first reading gets bounds whose middle period holds it, which the script
 * needs to find its period. */
static void bounds_hold_an_instant_in_a_repeated_midnight(void **state) {
    (void)state;
    rl_budget_periods *periods = rl__budget_periods_create();
    rl_limit_def havana = budget("h", RL_PERIOD_DAY, "America/Havana");
    assert_true(rl__budget_periods_learn(periods, &havana));
    rl_budget_bounds b;
    assert_true(rl__budget_periods_bounds(periods, "h", rl_test_utc_ms(2026, 11, 1, 4, 30), &b));
    expect_bounds(&b, rl_test_utc_ms(2026, 10, 31, 4, 0), rl_test_utc_ms(2026, 11, 1, 4, 0),
                  rl_test_utc_ms(2026, 11, 2, 5, 0), rl_test_utc_ms(2026, 11, 3, 5, 0));
    rl__budget_periods_destroy(periods);
}

static void another_kind_or_calendar_replaces_what_was_known(void **state) {
    (void)state;
    rl_budget_periods *periods = rl__budget_periods_create();
    rl_limit_def def = budget("k", RL_PERIOD_HOUR, "UTC");
    assert_true(rl__budget_periods_learn(periods, &def));
    rl_budget_bounds b;
    uint64_t at = rl_test_utc_ms(2026, 6, 1, 12, 10);
    assert_true(rl__budget_periods_bounds(periods, "k", at, &b));
    assert_int_equal(b.at_unix_ms[1], rl_test_utc_ms(2026, 6, 1, 12, 0));
    def = budget("k", RL_PERIOD_HOUR, "Asia/Kolkata");
    assert_true(rl__budget_periods_learn(periods, &def));
    assert_true(rl__budget_periods_bounds(periods, "k", at, &b));
    assert_string_equal(b.cal, "hour Asia/Kolkata");
    assert_int_equal(b.at_unix_ms[1], rl_test_utc_ms(2026, 6, 1, 11, 30));
    assert_false(rl__budget_periods_bounds(periods, "other", at, &b));
    rl_limit_def rolling = {.key = "k", .kind = RL_KIND_ROLLING, .capacity = 1, .window_seconds = 60};
    assert_true(rl__budget_periods_learn(periods, &rolling));
    assert_false(rl__budget_periods_bounds(periods, "k", at, &b));
    assert_false(rl__budget_periods_any(periods));
    /* a zone tzdata does not have: refused, and the key forgotten */
    assert_true(rl__budget_periods_learn(periods, &def));
    rl_limit_def nowhere = budget("k", RL_PERIOD_DAY, "Nowhere/Atlantis");
    assert_false(rl__budget_periods_learn(periods, &nowhere));
    assert_false(rl__budget_periods_bounds(periods, "k", at, &b));
    assert_int_equal(rl__budget_bounds_of_def(&nowhere, at, &b), RL_INVALID_REQUEST);
    assert_int_equal(rl__budget_bounds_of_def(&def, at, &b), RL_OK);
    assert_int_equal(b.at_unix_ms[2], rl_test_utc_ms(2026, 6, 1, 12, 30));
    rl__budget_periods_destroy(periods);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bounds_are_the_periods_around_an_instant),
        cmocka_unit_test(bounds_hold_an_instant_in_a_repeated_midnight),
        cmocka_unit_test(another_kind_or_calendar_replaces_what_was_known),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
