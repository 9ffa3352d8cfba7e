/* test_template_set.c — the templates in force: put, replace, delete, and
 * which one makes a key's definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/template_set.h"

static rl_limit_def rolling(const char *pattern, uint64_t capacity) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", pattern);
    def.kind = RL_KIND_ROLLING;
    def.capacity = capacity;
    def.window_seconds = 60;
    snprintf(def.unit, sizeof def.unit, "tokens");
    return def;
}

static rl__template_set *set_of(const char *const *patterns, size_t count) {
    rl__template_set *set = rl__template_set_create();
    assert_non_null(set);
    char err[200];
    for (size_t i = 0; i < count; i++) {
        rl_limit_def def = rolling(patterns[i], 100 + i);
        if (rl__template_set_put(set, &def, NULL, err, sizeof err) != RL_OK) fail_msg("%s: %s", patterns[i], err);
    }
    return set;
}

static const char *match(const rl__template_set *set, const char *key) {
    const rl__template *t = rl__template_set_match(set, key, strlen(key));
    return t != NULL ? t->pattern.text : NULL;
}

static void test_put_find_delete(void **state) {
    (void)state;
    rl__template_set *set = rl__template_set_create();
    char err[200];
    uint64_t v1 = 0, v2 = 0;
    rl_limit_def def = rolling("tenant:{t}:llm:daily_tokens", 5000);
    assert_int_equal(rl__template_set_put(set, &def, &v1, err, sizeof err), RL_OK);
    def.capacity = 6000;
    assert_int_equal(rl__template_set_put(set, &def, &v2, err, sizeof err), RL_OK); /* replaces */
    assert_true(v2 > v1);
    assert_int_equal(rl__template_set_count(set), 1);
    const rl__template *t = rl__template_set_find(set, "tenant:{t}:llm:daily_tokens");
    assert_non_null(t);
    assert_int_equal(t->def.capacity, 6000);
    assert_int_equal(t->version, v2);
    assert_null(rl__template_set_find(set, "tenant:{x}:llm:daily_tokens"));

    rl_limit_def made;
    rl__template_instance_def(t, "tenant:acme:llm:daily_tokens", &made);
    assert_string_equal(made.key, "tenant:acme:llm:daily_tokens");
    assert_int_equal(made.capacity, 6000);
    assert_int_equal(made.window_seconds, 60);
    assert_string_equal(made.unit, "tokens");

    assert_false(rl__template_set_delete(set, "tenant:{x}:llm:daily_tokens"));
    assert_true(rl__template_set_delete(set, "tenant:{t}:llm:daily_tokens"));
    assert_int_equal(rl__template_set_count(set), 0);
    assert_null(match(set, "tenant:acme:llm:daily_tokens"));
    rl__template_set_free(set);
}

static void test_refusals_change_nothing(void **state) {
    (void)state;
    const char *patterns[] = {"a:{x}"};
    rl__template_set *set = set_of(patterns, 1);
    char err[200] = "";
    rl_limit_def def = rolling("no-placeholder", 10);
    assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "placeholder"));
    def = rolling("a:{x}", 10);
    def.window_seconds = 0; /* a rolling definition without its window */
    assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "window_seconds"));
    assert_int_equal(rl__template_set_count(set), 1);
    assert_int_equal(rl__template_set_find(set, "a:{x}")->def.capacity, 100); /* as it was */
    rl__template_set_free(set);
}

static void test_most_specific_wins(void **state) {
    (void)state;
    const char *patterns[] = {
        "{scope}:{id}:llm:daily_tokens",
        "tenant:{t}:llm:daily_tokens",
        "tenant:vip-{t}:llm:daily_tokens",
        "{whole}",
        "global:llm:{provider}:{model}:rpm",
        "global:llm:openai:{model}:rpm",
    };
    rl__template_set *set = set_of(patterns, sizeof patterns / sizeof patterns[0]);
    assert_string_equal(match(set, "tenant:acme:llm:daily_tokens"), "tenant:{t}:llm:daily_tokens");
    assert_string_equal(match(set, "tenant:vip-acme:llm:daily_tokens"), "tenant:vip-{t}:llm:daily_tokens");
    assert_string_equal(match(set, "team:red:llm:daily_tokens"), "{scope}:{id}:llm:daily_tokens");
    assert_string_equal(match(set, "global:llm:openai:gpt-4o:rpm"), "global:llm:openai:{model}:rpm");
    assert_string_equal(match(set, "global:llm:anthropic:claude:rpm"), "global:llm:{provider}:{model}:rpm");
    assert_string_equal(match(set, "plainkey"), "{whole}");
    assert_null(match(set, "global:llm:openai:gpt-4o:tpm"));
    assert_null(match(set, "tenant:acme:llm:daily_tokens:x"));
    /* The order of the puts never matters. */
    const char *reversed[] = {patterns[5], patterns[4], patterns[3], patterns[2], patterns[1], patterns[0]};
    rl__template_set *other = set_of(reversed, 6);
    const char *keys[] = {"tenant:acme:llm:daily_tokens", "tenant:vip-acme:llm:daily_tokens",
                          "team:red:llm:daily_tokens", "global:llm:openai:gpt-4o:rpm", "plainkey"};
    for (size_t i = 0; i < 5; i++) assert_string_equal(match(set, keys[i]), match(other, keys[i]));
    rl__template_set_free(other);
    rl__template_set_free(set);
}

/* Many templates of many first segments: the index finds the same template
 * a scan of all of them would. */
static void test_index_agrees_with_a_scan(void **state) {
    (void)state;
    rl__template_set *set = rl__template_set_create();
    char err[200], pattern[64];
    for (int i = 0; i < 2000; i++) {
        if (i % 3 == 0)
            snprintf(pattern, sizeof pattern, "seg%d:{t}:tokens", i % 200);
        else if (i % 3 == 1)
            snprintf(pattern, sizeof pattern, "seg%d:{t}:x%d", i % 200, i);
        else
            snprintf(pattern, sizeof pattern, "{s}:{t}:x%d", i);
        rl_limit_def def = rolling(pattern, 1 + (uint64_t)i);
        assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_OK);
    }
    srand(7);
    for (int n = 0; n < 20000; n++) {
        char key[64];
        int a = rand() % 250, b = rand() % 2100;
        if (rand() % 2)
            snprintf(key, sizeof key, "seg%d:tenant%d:x%d", a, n, b);
        else
            snprintf(key, sizeof key, "seg%d:tenant%d:tokens", a, n);
        const rl__template *best = NULL;
        for (size_t i = 0; i < rl__template_set_count(set); i++) {
            const rl__template *t = rl__template_set_at(set, i);
            if (!rl__template_pattern_match(&t->pattern, key, strlen(key))) continue;
            if (best == NULL || rl__template_pattern_precedence(&t->pattern, &best->pattern) < 0) best = t;
        }
        assert_ptr_equal(rl__template_set_match(set, key, strlen(key)), best);
    }
    rl__template_set_free(set);
}

static void test_bounded_count(void **state) {
    (void)state;
    rl__template_set *set = rl__template_set_create();
    char err[200], pattern[64];
    for (unsigned i = 0; i < RL_TEMPLATE_MAX_COUNT; i++) {
        snprintf(pattern, sizeof pattern, "t%u:{x}", i);
        rl_limit_def def = rolling(pattern, 1);
        assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_OK);
    }
    rl_limit_def def = rolling("one:{more}", 1);
    assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "templates"));
    def = rolling("t5:{x}", 2); /* a replacement still fits */
    assert_int_equal(rl__template_set_put(set, &def, NULL, err, sizeof err), RL_OK);
    assert_int_equal(rl__template_set_count(set), RL_TEMPLATE_MAX_COUNT);
    rl__template_set_free(set);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find_delete),    cmocka_unit_test(test_refusals_change_nothing),
        cmocka_unit_test(test_most_specific_wins), cmocka_unit_test(test_index_agrees_with_a_scan),
        cmocka_unit_test(test_bounded_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
