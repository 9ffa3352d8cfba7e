/* test_limit_def.c — api.md's rules for limit definitions, and enum names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/types.h"

static rl_limit_def rolling(void) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    strcpy(def.key, "global:llm:openai:gpt-4o:rpm");
    def.kind = RL_KIND_ROLLING;
    def.capacity = 3000;
    def.window_seconds = 60;
    strcpy(def.unit, "requests");
    def.overage = RL_OVERAGE_DEBT;
    return def;
}

static rl_limit_def concurrency(void) {
    rl_limit_def def = rolling();
    strcpy(def.key, "global:llm:openai:gpt-4o:concurrency");
    def.kind = RL_KIND_CONCURRENCY;
    def.capacity = 50;
    def.window_seconds = 0;
    def.timeout_seconds = 600;
    return def;
}

/* Asserts that def is refused with a message that names `field`. */
static void assert_refused(const rl_limit_def *def, const char *field) {
    char err[200] = "";
    assert_false(rl_limit_def_validate(def, err, sizeof err));
    if (strstr(err, field) == NULL) fail_msg("message \"%s\" does not name %s", err, field);
    /* err is optional */
    assert_false(rl_limit_def_validate(def, NULL, 0));
}

static void test_valid_definitions(void **state) {
    (void)state;
    char err[200] = "";
    rl_limit_def def = rolling();
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def = concurrency();
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.overage = RL_OVERAGE_DENY;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    assert_true(rl_limit_def_validate(&def, NULL, 0));
}

static void test_key_rules(void **state) {
    (void)state;
    rl_limit_def def = rolling();
    def.key[0] = '\0';
    assert_refused(&def, "key");
    strcpy(def.key, "has space");
    assert_refused(&def, "key");
    strcpy(def.key, "tab\there");
    assert_refused(&def, "key");
    strcpy(def.key, "del\x7f");
    assert_refused(&def, "key");
    /* 256 characters are fine; a key array without NUL is not. */
    memset(def.key, 'k', RL_KEY_MAX_LEN);
    def.key[RL_KEY_MAX_LEN] = '\0';
    char err[200];
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.key[RL_KEY_MAX_LEN] = 'k';
    assert_refused(&def, "key");
}

static void test_kind_rules(void **state) {
    (void)state;
    rl_limit_def def = rolling();
    def.kind = (rl_kind)3;
    assert_refused(&def, "kind");
    def.kind = (rl_kind)-1;
    assert_refused(&def, "kind");
}

static void test_capacity_rules(void **state) {
    (void)state;
    char err[200];
    rl_limit_def def = rolling();
    def.capacity = 0;
    assert_refused(&def, "capacity");
    def.capacity = RL_AMOUNT_MAX + 1;
    assert_refused(&def, "capacity");
    def.capacity = UINT64_MAX;
    assert_refused(&def, "capacity");
    def.capacity = RL_AMOUNT_MAX;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.capacity = 1;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
}

static void test_rolling_window_rules(void **state) {
    (void)state;
    char err[200];
    rl_limit_def def = rolling();
    def.window_seconds = 0;
    assert_refused(&def, "window_seconds");
    def.window_seconds = RL_WINDOW_SECONDS_MAX + 1;
    assert_refused(&def, "window_seconds");
    def.window_seconds = RL_WINDOW_SECONDS_MAX;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.window_seconds = 1;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    /* A timeout means nothing for a rolling limit: refuse rather than ignore. */
    def.timeout_seconds = 5;
    assert_refused(&def, "timeout_seconds");
}

static void test_concurrency_timeout_rules(void **state) {
    (void)state;
    char err[200];
    rl_limit_def def = concurrency();
    def.timeout_seconds = 0;
    assert_refused(&def, "timeout_seconds");
    def.timeout_seconds = RL_TIMEOUT_SECONDS_MAX + 1;
    assert_refused(&def, "timeout_seconds");
    def.timeout_seconds = RL_TIMEOUT_SECONDS_MAX;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.timeout_seconds = 1;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.window_seconds = 60;
    assert_refused(&def, "window_seconds");
}

static void test_overage_rules(void **state) {
    (void)state;
    rl_limit_def def = rolling();
    def.overage = (rl_overage)2;
    assert_refused(&def, "overage");
}

static void test_text_length_rules(void **state) {
    (void)state;
    char err[200];
    rl_limit_def def = rolling();
    memset(def.unit, 'u', RL_UNIT_MAX_LEN);
    def.unit[RL_UNIT_MAX_LEN] = '\0';
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.unit[RL_UNIT_MAX_LEN] = 'u'; /* no NUL in the array */
    assert_refused(&def, "unit");

    def = rolling();
    memset(def.description, 'd', RL_DESCRIPTION_MAX_LEN);
    def.description[RL_DESCRIPTION_MAX_LEN] = '\0';
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.description[RL_DESCRIPTION_MAX_LEN] = 'd';
    assert_refused(&def, "description");
}

static void test_small_error_buffer(void **state) {
    (void)state;
    rl_limit_def def = rolling();
    def.capacity = 0;
    char err[8];
    memset(err, 'x', sizeof err);
    assert_false(rl_limit_def_validate(&def, err, sizeof err));
    assert_int_equal(strlen(err), sizeof err - 1); /* truncated, terminated */
}

static rl_limit_def budget(void) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = 50000000, .timeout_seconds = 600,
                        .period = RL_PERIOD_MONTH, .overage = RL_OVERAGE_DEBT};
    snprintf(def.key, sizeof def.key, "tenant:acme:spend:monthly");
    snprintf(def.unit, sizeof def.unit, "usd_micros");
    snprintf(def.timezone, sizeof def.timezone, "UTC");
    return def;
}

static void test_budget_rules(void **state) {
    (void)state;
    char err[200];
    rl_limit_def def = budget();
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    snprintf(def.timezone, sizeof def.timezone, "America/New_York");
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def.period = RL_PERIOD_HOUR;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    /* a timeout is required: a reservation never completed is refunded after it */
    def = budget();
    def.timeout_seconds = 0;
    assert_refused(&def, "timeout_seconds");
    def.timeout_seconds = RL_TIMEOUT_SECONDS_MAX + 1;
    assert_refused(&def, "timeout_seconds");
    def.timeout_seconds = RL_TIMEOUT_SECONDS_MAX;
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    def = budget();
    def.window_seconds = 60;
    assert_refused(&def, "window_seconds");
    def = budget();
    def.period = RL_PERIOD_NONE;
    assert_refused(&def, "period");
    /* a zone tzdata does not know is refused naming the field */
    def = budget();
    snprintf(def.timezone, sizeof def.timezone, "Mars/Olympus_Mons");
    assert_refused(&def, "timezone");
    def.timezone[0] = '\0';
    assert_refused(&def, "timezone");
    /* period and timezone belong to budgets */
    def = rolling();
    def.period = RL_PERIOD_DAY;
    assert_refused(&def, "period");
    def = concurrency();
    snprintf(def.timezone, sizeof def.timezone, "UTC");
    assert_refused(&def, "timezone");
}

static void test_names(void **state) {
    (void)state;
    assert_string_equal(rl_kind_name(RL_KIND_ROLLING), "rolling");
    assert_string_equal(rl_kind_name(RL_KIND_CONCURRENCY), "concurrency");
    assert_string_equal(rl_kind_name(RL_KIND_BUDGET), "budget");
    assert_string_equal(rl_period_name(RL_PERIOD_MONTH), "month");
    assert_string_equal(rl_period_name(RL_PERIOD_NONE), "");
    assert_string_equal(rl_overage_name(RL_OVERAGE_DEBT), "debt");
    assert_string_equal(rl_overage_name(RL_OVERAGE_DENY), "deny");
    assert_string_equal(rl_limit_status_name(RL_LIMIT_STATUS_ACTIVE), "active");
    assert_string_equal(rl_limit_status_name(RL_LIMIT_STATUS_DECREASING), "decreasing");
}

static void test_parse(void **state) {
    (void)state;
    rl_kind kind = (rl_kind)7;
    assert_true(rl_kind_parse("rolling", &kind));
    assert_int_equal(kind, RL_KIND_ROLLING);
    assert_true(rl_kind_parse("concurrency", &kind));
    assert_int_equal(kind, RL_KIND_CONCURRENCY);
    assert_true(rl_kind_parse("budget", &kind));
    assert_int_equal(kind, RL_KIND_BUDGET);
    rl_period period = RL_PERIOD_NONE;
    assert_true(rl_period_parse("week", &period));
    assert_int_equal(period, RL_PERIOD_WEEK);
    assert_false(rl_period_parse("", &period));
    assert_false(rl_period_parse("year", &period));
    assert_int_equal(period, RL_PERIOD_WEEK);
    kind = (rl_kind)7;
    assert_false(rl_kind_parse("Rolling", &kind)); /* exact, case-sensitive */
    assert_false(rl_kind_parse("", &kind));
    assert_false(rl_kind_parse("rolling ", &kind));
    assert_false(rl_kind_parse("window", &kind));
    assert_int_equal(kind, 7); /* untouched on failure */

    rl_overage overage = (rl_overage)7;
    assert_true(rl_overage_parse("debt", &overage));
    assert_int_equal(overage, RL_OVERAGE_DEBT);
    assert_true(rl_overage_parse("deny", &overage));
    assert_int_equal(overage, RL_OVERAGE_DENY);
    overage = (rl_overage)7;
    assert_false(rl_overage_parse("DENY", &overage));
    assert_false(rl_overage_parse("", &overage));
    assert_false(rl_overage_parse("allow", &overage));
    assert_int_equal(overage, 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_definitions),
        cmocka_unit_test(test_key_rules),
        cmocka_unit_test(test_kind_rules),
        cmocka_unit_test(test_capacity_rules),
        cmocka_unit_test(test_rolling_window_rules),
        cmocka_unit_test(test_concurrency_timeout_rules),
        cmocka_unit_test(test_overage_rules),
        cmocka_unit_test(test_text_length_rules),
        cmocka_unit_test(test_small_error_buffer),
        cmocka_unit_test(test_budget_rules),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
