/* test_template_pattern.c — a template's pattern: what it takes, which keys
 * it names, which of several wins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/template_pattern.h"

static bool parse(const char *text, rl__template_pattern *out, char *err) {
    return rl__template_pattern_parse(text, strlen(text), out, err, 200);
}

static bool matches(const char *pattern, const char *key) {
    rl__template_pattern p;
    char err[200];
    if (!parse(pattern, &p, err)) fail_msg("%s: %s", pattern, err);
    return rl__template_pattern_match(&p, key, strlen(key));
}

static void test_valid_patterns(void **state) {
    (void)state;
    rl__template_pattern p;
    char err[200] = "";
    assert_true(parse("tenant:{tenant}:llm:daily_tokens", &p, err));
    assert_string_equal(p.text, "tenant:{tenant}:llm:daily_tokens");
    assert_int_equal(p.placeholder_count, 1);
    assert_int_equal(p.literal_count, strlen("tenant::llm:daily_tokens"));
    assert_int_equal(p.head_len, strlen("tenant"));
    assert_true(parse("global:llm:{provider}:{model}:rpm", &p, err));
    assert_int_equal(p.placeholder_count, 2);
    assert_true(parse("{scope}:{id}:tokens", &p, err));
    assert_int_equal(p.head_len, 0); /* the first segment holds a placeholder */
    assert_true(parse("{x}", &p, err));
    assert_int_equal(p.literal_count, 0);
    assert_true(parse("user-{id}-daily:{A_9}", &p, err));
    assert_true(parse("a{b}c", &p, err)); /* a placeholder inside a segment */
    assert_int_equal(p.head_len, 0);
    char longest[RL_KEY_MAX_LEN + 1];
    memset(longest, 'k', RL_KEY_MAX_LEN);
    memcpy(longest, "{t}:", 4);
    longest[RL_KEY_MAX_LEN] = '\0';
    assert_true(parse(longest, &p, err));
    assert_true(parse("a:{p1}:{p2}:{p3}:{p4}:{p5}:{p6}:{p7}:{p8}", &p, err));
}

static void refused(const char *pattern, const char *expect_in_err) {
    rl__template_pattern p;
    memset(&p, 0x5a, sizeof p);
    rl__template_pattern before = p;
    char err[200] = "";
    if (parse(pattern, &p, err)) fail_msg("accepted \"%s\"", pattern);
    if (strstr(err, expect_in_err) == NULL) fail_msg("\"%s\": \"%s\" lacks \"%s\"", pattern, err, expect_in_err);
    assert_memory_equal(&p, &before, sizeof p); /* untouched */
}

static void test_invalid_patterns(void **state) {
    (void)state;
    refused("", "printable ASCII");
    refused("tenant:{t} x", "printable ASCII");
    refused("tenant:acme:llm:rpm", "at least one placeholder");
    refused("tenant:{}:x", "not {name}");
    refused("tenant:{t:x", "not {name}");
    refused("tenant:{t-x}:x", "not {name}");
    refused("tenant:{t", "not {name}");
    refused("tenant:t}", "closes no placeholder");
    refused("tenant:{{t}}", "not {name}");
    refused("{a}{b}:x", "side by side");
    refused("{t}:{t}", "twice");
    refused("{p1}:{p2}:{p3}:{p4}:{p5}:{p6}:{p7}:{p8}:{p9}", "more than 8");
    refused("x:{aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}", "not {name}"); /* 33 characters */
    char too_long[RL_KEY_MAX_LEN + 2];
    memset(too_long, 'k', RL_KEY_MAX_LEN + 1);
    memcpy(too_long, "{t}:", 4);
    too_long[RL_KEY_MAX_LEN + 1] = '\0';
    refused(too_long, "printable ASCII");
}

static void test_matching(void **state) {
    (void)state;
    assert_true(matches("tenant:{tenant}:llm:daily_tokens", "tenant:acme:llm:daily_tokens"));
    assert_true(matches("tenant:{tenant}:llm:daily_tokens", "tenant:a:llm:daily_tokens"));
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenant::llm:daily_tokens")); /* one or more */
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenant:a:b:llm:daily_tokens")); /* no ':' inside */
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenant:acme:llm:daily_token"));
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenant:acme:llm:daily_tokensx"));
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenants:acme:llm:daily_tokens"));
    assert_false(matches("tenant:{tenant}:llm:daily_tokens", "tenant"));
    assert_true(matches("global:llm:{provider}:{model}:rpm", "global:llm:openai:gpt-4o:rpm"));
    assert_false(matches("global:llm:{provider}:{model}:rpm", "global:llm:openai:rpm"));
    assert_true(matches("{x}", "anything-without-a-colon"));
    assert_false(matches("{x}", "a:b"));
    assert_true(matches("{scope}:{id}:tokens", "tenant:acme:tokens"));
    assert_false(matches("{scope}:{id}:tokens", "tenant:acme:tokens:x"));
    /* Placeholders inside a segment, where the split is not obvious. */
    assert_true(matches("user-{id}-daily", "user-a-b-daily"));
    assert_true(matches("user-{id}-daily", "user---daily")); /* the id is "-" */
    assert_false(matches("user-{id}-daily", "user--daily"));
    assert_true(matches("{a}-{b}", "x-y-z"));
    assert_true(matches("{a}x{b}x{c}", "xxxxxxx"));
    assert_false(matches("{a}x{b}x{c}", "xxxx")); /* needs 5 at least */
    assert_true(matches("{a}x{b}x{c}", "xxxxx"));
    assert_true(matches("a{b}c", "abbbc"));
    assert_false(matches("a{b}c", "ac"));
    assert_true(matches("a{b}c:{d}", "abc:d"));
    assert_false(matches("a{b}c:{d}", "abc:"));
    /* Only keys: a placeholder never takes what no key holds. */
    assert_false(matches("{x}", "a b"));
    rl__template_pattern p;
    char err[200];
    assert_true(parse("tenant:{t}:x", &p, err));
    assert_false(rl__template_pattern_match(&p, "tenant:\0\0:x", 11));
    assert_false(rl__template_pattern_match(&p, "tenant:a\tb:x", 12));
}

/* A pathological key and pattern stay quick: the walk is linear per
 * segment in practice (this would take ages with naive backtracking). */
static void test_no_exponential_walk(void **state) {
    (void)state;
    char key[RL_KEY_MAX_LEN + 1];
    memset(key, 'a', RL_KEY_MAX_LEN);
    key[RL_KEY_MAX_LEN] = '\0';
    key[RL_KEY_MAX_LEN - 1] = 'b';
    for (int i = 0; i < 1000; i++) assert_false(matches("{p1}a{p2}a{p3}a{p4}a{p5}a{p6}a{p7}a{p8}c", key));
}

static int precedence(const char *a, const char *b) {
    rl__template_pattern pa, pb;
    char err[200];
    assert_true(parse(a, &pa, err));
    assert_true(parse(b, &pb, err));
    int ab = rl__template_pattern_precedence(&pa, &pb), ba = rl__template_pattern_precedence(&pb, &pa);
    assert_true((ab < 0 && ba > 0) || (ab > 0 && ba < 0) || (ab == 0 && ba == 0));
    return ab;
}

static void test_precedence(void **state) {
    (void)state;
    /* More literal characters first. */
    assert_true(precedence("tenant:{t}:llm:daily_tokens", "{scope}:{t}:llm:daily_tokens") < 0);
    assert_true(precedence("tenant:acme-{x}:rpm", "tenant:{x}:rpm") < 0);
    /* Then fewer placeholders. */
    assert_true(precedence("ab:{x}", "a{y}:{x}") < 0);
    /* Then byte order, never a tie between two patterns. */
    assert_true(precedence("a:{x}", "b:{x}") < 0);
    assert_true(precedence("a:{x}", "a:{y}") < 0);
    assert_int_equal(precedence("a:{x}", "a:{x}"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_patterns),   cmocka_unit_test(test_invalid_patterns),
        cmocka_unit_test(test_matching),         cmocka_unit_test(test_no_exponential_walk),
        cmocka_unit_test(test_precedence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
