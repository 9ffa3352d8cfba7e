/* test_buf.c — the response buffer: growth, reset, numbers, JSON escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wire/buf.h"

static void test_empty(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    assert_non_null(buf.data);
    assert_string_equal(buf.data, ""); /* NUL-terminated even before any append */
    assert_int_equal(buf.len, 0);
    assert_false(buf.failed);
    rl__buf_reset(&buf);
    assert_string_equal(buf.data, "");
    rl__buf_free(&buf);
    rl__buf_free(&buf); /* harmless twice */
    assert_string_equal(buf.data, "");
}

static void test_append_and_grow(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    char expected[10001];
    for (size_t i = 0; i < 10000; i++) {
        char c = (char)('a' + i % 26);
        rl__buf_append(&buf, &c, 1);
        expected[i] = c;
    }
    expected[10000] = '\0';
    assert_false(buf.failed);
    assert_int_equal(buf.len, 10000);
    assert_true(buf.cap > buf.len);
    assert_string_equal(buf.data, expected);
    size_t cap = buf.cap;
    rl__buf_reset(&buf);
    assert_int_equal(buf.len, 0);
    assert_int_equal(buf.cap, cap); /* keeps its memory */
    assert_string_equal(buf.data, "");
    rl__buf_append_str(&buf, "abc");
    rl__buf_append(&buf, "", 0);
    rl__buf_append_str(&buf, "");
    assert_string_equal(buf.data, "abc");
    rl__buf_free(&buf);
}

static void test_u64(void **state) {
    (void)state;
    const uint64_t values[] = {0, 1, 9, 10, 99, 100, 1736660000000, UINT64_C(9007199254740992),
                               UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        rl_buf buf;
        rl__buf_init(&buf);
        rl__buf_append_u64(&buf, values[i]);
        char expected[32];
        snprintf(expected, sizeof expected, "%llu", (unsigned long long)values[i]);
        assert_string_equal(buf.data, expected);
        rl__buf_free(&buf);
    }
}

static void test_json_string(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    rl__buf_append_json_string(&buf, "plain", 5);
    assert_string_equal(buf.data, "\"plain\"");
    rl__buf_reset(&buf);
    rl__buf_append_json_string(&buf, "", 0);
    assert_string_equal(buf.data, "\"\"");
    rl__buf_reset(&buf);
    rl__buf_append_json_string(&buf, "q\"b\\s/", 6);
    assert_string_equal(buf.data, "\"q\\\"b\\\\s/\"");
    rl__buf_reset(&buf);
    rl__buf_append_json_string(&buf, "\b\f\n\r\t", 5);
    assert_string_equal(buf.data, "\"\\b\\f\\n\\r\\t\"");
    rl__buf_reset(&buf);
    /* len counts, not the NUL: embedded NULs are escaped too. */
    rl__buf_append_json_string(&buf, "a\0b\x1f\x7f", 5);
    assert_string_equal(buf.data, "\"a\\u0000b\\u001f\x7f\"");
    rl__buf_reset(&buf);
    /* UTF-8 passes through unchanged. */
    rl__buf_append_json_string(&buf, "caf\xc3\xa9 \xf0\x9f\x98\x80", 10);
    assert_string_equal(buf.data, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    rl__buf_reset(&buf);
    /* Only the first len bytes. */
    rl__buf_append_json_string(&buf, "abcdef", 3);
    assert_string_equal(buf.data, "\"abc\"");
    rl__buf_free(&buf);
}

static void test_every_control_character(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    for (int c = 0; c < 0x20; c++) {
        char ch = (char)c;
        rl__buf_reset(&buf);
        rl__buf_append_json_string(&buf, &ch, 1);
        char expected[16];
        switch (c) {
        case '\b': strcpy(expected, "\"\\b\""); break;
        case '\f': strcpy(expected, "\"\\f\""); break;
        case '\n': strcpy(expected, "\"\\n\""); break;
        case '\r': strcpy(expected, "\"\\r\""); break;
        case '\t': strcpy(expected, "\"\\t\""); break;
        default: snprintf(expected, sizeof expected, "\"\\u%04x\"", c); break;
        }
        assert_string_equal(buf.data, expected);
    }
    rl__buf_free(&buf);
}

static void test_long_escaped_string(void **state) {
    (void)state;
    /* Escaping grows the output beyond what was reserved for the input. */
    char text[3000];
    memset(text, '"', sizeof text);
    rl_buf buf;
    rl__buf_init(&buf);
    rl__buf_append_json_string(&buf, text, sizeof text);
    assert_false(buf.failed);
    assert_int_equal(buf.len, 2 + 2 * sizeof text);
    assert_int_equal(buf.data[0], '"');
    assert_int_equal(buf.data[1], '\\');
    assert_int_equal(buf.data[buf.len - 1], '"');
    rl__buf_free(&buf);
}

static void test_failed_buffer_ignores_appends(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    rl__buf_append_str(&buf, "ok");
    buf.failed = true; /* as after an allocation failure */
    rl__buf_append_str(&buf, "more");
    rl__buf_append_u64(&buf, 5);
    rl__buf_append_json_string(&buf, "x", 1);
    assert_int_equal(buf.len, 2);
    rl__buf_reset(&buf); /* a reset makes it usable again */
    assert_false(buf.failed);
    rl__buf_append_str(&buf, "again");
    assert_string_equal(buf.data, "again");
    rl__buf_free(&buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_append_and_grow),
        cmocka_unit_test(test_u64),
        cmocka_unit_test(test_json_string),
        cmocka_unit_test(test_every_control_character),
        cmocka_unit_test(test_long_escaped_string),
        cmocka_unit_test(test_failed_buffer_ignores_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
