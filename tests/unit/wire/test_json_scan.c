/* test_json_scan.c — the strict in-place JSON tokenizer (wire/json_scan.h):
 * every escape, surrogate pairs, broken UTF-8 (overlongs and UTF-16
 * surrogates encoded in UTF-8 included), the number grammar and exact
 * values, literals, structure, the depth limit, and every truncation of
 * valid documents. Texts are copied into exactly-sized heap blocks (the
 * bytes and the sentinel NUL) so that AddressSanitizer catches any read past
 * the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/json_scan.h"

/* ---- helpers ---------------------------------------------------------- */

/* A writable copy of text[0..len) with the sentinel NUL after it. */
static char *copy_of(const char *text, size_t len) {
    char *copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    copy[len] = '\0';
    return copy;
}

/* Checks text[0..len) as a whole document: one value, whitespace around.
 * Returns the first error (RL__JSON_OK if valid) and its offset. */
static rl__json_error check_n(const char *text, size_t len, size_t *at) {
    char *copy = copy_of(text, len);
    rl__json_scan s;
    rl__scan_init(&s, copy, len);
    bool ok = rl__scan_skip(&s) && rl__scan_end(&s);
    assert_true(ok == (s.error == RL__JSON_OK));
    assert_true(s.error_at <= len);
    if (at != NULL) *at = s.error_at;
    free(copy);
    return s.error;
}
static rl__json_error check(const char *text) { return check_n(text, strlen(text), NULL); }

#define VALID(text)                                                                          \
    do {                                                                                     \
        size_t at_;                                                                          \
        rl__json_error e_ = check_n((text), strlen(text), &at_);                             \
        if (e_ != RL__JSON_OK) fail_msg("%s: error %d at %zu for %s", #text, e_, at_, text); \
    } while (0)
/* The text is refused with `error` at byte `offset` (SIZE_MAX: anywhere). */
#define REFUSED_N(text, len, error, offset) refused((text), (len), (error), (offset), __LINE__)
#define REFUSED(text, error, offset) REFUSED_N((text), strlen(text), (error), (offset))

static void refused(const char *text, size_t len, rl__json_error error, size_t offset, int line) {
    size_t at = 0;
    rl__json_error got = check_n(text, len, &at);
    if (got != error || (offset != SIZE_MAX && at != offset))
        fail_msg("line %d: expected error %d at %zu, got %d at %zu for \"%.*s\"", line, error,
                 offset, got, at, (int)len, text);
}

/* Decodes the string document text (a JSON string and nothing else) and
 * compares it with expected[0..expected_len). */
static void string_is(const char *text, const char *expected, size_t expected_len, int line) {
    size_t len = strlen(text);
    char *copy = copy_of(text, len);
    rl__json_scan s;
    rl__scan_init(&s, copy, len);
    char *out = NULL;
    size_t out_len = 0;
    if (!rl__scan_string(&s, &out, &out_len) || !rl__scan_end(&s))
        fail_msg("line %d: %s refused (error %d at %zu)", line, text, s.error, s.error_at);
    /* Zero-copy: the string is in the text, NUL-terminated there. */
    assert_true(out >= copy && out + out_len < copy + len);
    assert_int_equal(out[out_len], '\0');
    if (out_len != expected_len || memcmp(out, expected, expected_len) != 0)
        fail_msg("line %d: %s decoded to %zu bytes, expected %zu", line, text, out_len,
                 expected_len);
    free(copy);
}
#define STRING_IS(text, expected) string_is((text), (expected), sizeof(expected) - 1, __LINE__)

/* ---- strings ---------------------------------------------------------- */

static void test_string_escapes(void **state) {
    (void)state;
    STRING_IS("\"\"", "");
    STRING_IS("\"plain\"", "plain");
    STRING_IS(" \t\r\n\"ws around\" \n", "ws around");
    STRING_IS("\"\\\"\"", "\"");
    STRING_IS("\"\\\\\"", "\\");
    STRING_IS("\"\\/\"", "/");
    STRING_IS("\"\\b\\f\\n\\r\\t\"", "\b\f\n\r\t");
    STRING_IS("\"a\\\"b\\\\c\\/d\"", "a\"b\\c/d");
    STRING_IS("\"\\u0041\\u0062\"", "Ab");
    STRING_IS("\"\\u0001\\u001f\\u007f\"", "\x01\x1f\x7f"); /* escaped controls are JSON */
    STRING_IS("\"\\u0080\"", "\xc2\x80");                    /* 2-byte edges */
    STRING_IS("\"\\u07ff\"", "\xdf\xbf");
    STRING_IS("\"\\u00e9\\u00E9\"", "\xc3\xa9\xc3\xa9");     /* hex in either case */
    STRING_IS("\"\\u0800\"", "\xe0\xa0\x80");                /* 3-byte edges */
    STRING_IS("\"\\u20ac\"", "\xe2\x82\xac");
    STRING_IS("\"\\ud7ff\\ue000\"", "\xed\x9f\xbf\xee\x80\x80"); /* around the surrogates */
    STRING_IS("\"\\uffff\"", "\xef\xbf\xbf");
    /* Surrogate pairs: one 4-byte sequence, from U+10000 to U+10FFFF. */
    STRING_IS("\"\\ud800\\udc00\"", "\xf0\x90\x80\x80");
    STRING_IS("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80");
    STRING_IS("\"\\uD83D\\uDE00\"", "\xf0\x9f\x98\x80");
    STRING_IS("\"\\udbff\\udfff\"", "\xf4\x8f\xbf\xbf");
    /* Escapes mixed with raw UTF-8 and plain runs longer than a word. */
    STRING_IS("\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 0123456789abcdef \xf0\x9f\x98\x80 end\"",
              "caf\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80 0123456789abcdef \xf0\x9f\x98\x80 end");
    STRING_IS("\"\\n0123456789abcdefghijklmnopqrstuvwxyz\\t\"",
              "\n0123456789abcdefghijklmnopqrstuvwxyz\t");
    STRING_IS("\"\x7f DEL is not a control character to JSON\"",
              "\x7f DEL is not a control character to JSON");
}

static void test_string_errors(void **state) {
    (void)state;
    REFUSED("\"unterminated", RL__JSON_SYNTAX, 13);
    REFUSED("\"", RL__JSON_SYNTAX, 1);
    REFUSED("\"ends in a backslash\\", RL__JSON_SYNTAX, 21);
    REFUSED("\"bad \\x escape\"", RL__JSON_SYNTAX, 6);
    REFUSED("\"bad \\U0041 escape\"", RL__JSON_SYNTAX, 6);
    REFUSED("\"bad \\' escape\"", RL__JSON_SYNTAX, 6);
    REFUSED("\"short \\u12\"", RL__JSON_SYNTAX, 11);
    REFUSED("\"short \\u12", RL__JSON_SYNTAX, 11);
    REFUSED("\"not hex \\u12g4\"", RL__JSON_SYNTAX, 13);
    REFUSED("\"\\u\"", RL__JSON_SYNTAX, 3);
    /* Surrogates must come in high-low pairs. */
    REFUSED("\"\\ud800\"", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800x\"", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800\\n\"", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800\\u0041\"", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800\\ud800\"", RL__JSON_SYNTAX, 7);
    REFUSED("\"\\ud800\\u12\"", RL__JSON_SYNTAX, 11);
    REFUSED("\"\\udc00\"", RL__JSON_SYNTAX, 1);
    REFUSED("\"\\udfff\\ud800\"", RL__JSON_SYNTAX, 1);
    /* \u0000 would cut a C string short. */
    REFUSED("\"\\u0000\"", RL__JSON_NUL_ESCAPE, 1);
    REFUSED("\"abc\\u0000def\"", RL__JSON_NUL_ESCAPE, 4);
    REFUSED("\"\\n\\u0000\"", RL__JSON_NUL_ESCAPE, 3);
    STRING_IS("\"\\\\u0000\"", "\\u0000"); /* an escaped backslash, then text */
    /* Raw control characters, in the plain run and after an escape. */
    REFUSED("\"a\x01z\"", RL__JSON_CONTROL, 2);
    REFUSED("\"a\x1fz\"", RL__JSON_CONTROL, 2);
    REFUSED("\"tab\there\"", RL__JSON_CONTROL, 4);
    REFUSED("\"new\nline\"", RL__JSON_CONTROL, 4);
    REFUSED("\"cr\r\"", RL__JSON_CONTROL, 3);
    REFUSED("\"\\n\x01\"", RL__JSON_CONTROL, 3);
    REFUSED_N("\"a\0b\"", 5, RL__JSON_CONTROL, 2);
    REFUSED_N("\"\\n\0\"", 5, RL__JSON_CONTROL, 3);
    REFUSED("\"\\\x01\"", RL__JSON_CONTROL, 2); /* a control character as the escape */
}

/* Each invalid sequence, alone in a string, in a long plain run, and after
 * an escape (the copying path). */
static void test_string_utf8(void **state) {
    (void)state;
    static const char *const invalid[] = {
        "\x80",             /* continuation alone */
        "\xbf",
        "\xc0\x80",         /* overlong NUL */
        "\xc0\xaf",         /* overlong '/' */
        "\xc1\xbf",         /* overlong U+007F */
        "\xe0\x80\x80",     /* overlong NUL */
        "\xe0\x80\xaf",     /* overlong '/' */
        "\xe0\x9f\xbf",     /* overlong U+07FF */
        "\xf0\x80\x80\x80", /* overlong NUL */
        "\xf0\x80\x80\xaf", /* overlong '/' */
        "\xf0\x8f\xbf\xbf", /* overlong U+FFFF */
        "\xed\xa0\x80",     /* U+D800 encoded in UTF-8 */
        "\xed\xaf\xbf",     /* U+DBFF */
        "\xed\xb0\x80",     /* U+DC00 */
        "\xed\xbf\xbf",     /* U+DFFF */
        "\xed\xa0\xbd\xed\xb8\x80", /* a surrogate pair encoded as two sequences (CESU-8) */
        "\xf4\x90\x80\x80", /* U+110000 */
        "\xf5\x80\x80\x80", "\xf7\xbf\xbf\xbf", "\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80",
        "\xfe", "\xff",
        "\xc3\x41",         /* bad continuation */
        "\xe2\x82\x41", "\xe2\x41\xac", "\xf0\x9f\x98\x41", "\xf0\x9f\x41\x80",
        "\xc3",             /* truncated before the quote */
        "\xe2\x82", "\xf0\x9f\x98",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        const char *prefixes[] = {"", "0123456789abcdef", "\\n", "\\u00e9x"};
        for (size_t p = 0; p < 4; p++) {
            char text[64];
            int n = snprintf(text, sizeof text, "\"%s%s\"", prefixes[p], invalid[i]);
            size_t at = 0;
            rl__json_error error = check_n(text, (size_t)n, &at);
            if (error != RL__JSON_BAD_UTF8 || at != 1 + strlen(prefixes[p]))
                fail_msg("invalid[%zu] after \"%s\": error %d at %zu", i, prefixes[p], error, at);
        }
    }
    /* Cut inside a sequence at the very end of the text. */
    REFUSED_N("\"\xc3", 2, RL__JSON_BAD_UTF8, 1);
    REFUSED_N("\"\xf0\x9f\x98", 4, RL__JSON_BAD_UTF8, 1);
    /* The valid edges. */
    STRING_IS("\"\xc2\x80\xdf\xbf\"", "\xc2\x80\xdf\xbf");
    STRING_IS("\"\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\"",
              "\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf");
    STRING_IS("\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"", "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
    /* Outside strings, broken UTF-8 is reported as such, valid UTF-8 as syntax. */
    REFUSED("[\xff]", RL__JSON_BAD_UTF8, 1);
    REFUSED("[\xc3\xa9]", RL__JSON_SYNTAX, 1);
    REFUSED("{\"a\":1}\xff", RL__JSON_BAD_UTF8, 7);
}

/* The special byte at every position of strings longer than a word, so that
 * both the 8-byte step and the byte loop meet it. */
static void test_string_every_position(void **state) {
    (void)state;
    for (size_t len = 0; len < 40; len++) {
        for (size_t at = 0; at < len; at++) {
            char text[64], expected[64];
            text[0] = '"';
            for (size_t i = 0; i < len; i++) text[1 + i] = expected[i] = (char)('a' + i % 26);
            text[1 + len] = '"';
            text[2 + len] = '\0';
            /* A control character there is refused at its offset. */
            text[1 + at] = '\x02';
            refused(text, len + 2, RL__JSON_CONTROL, 1 + at, __LINE__);
            /* A quote there ends the string early: trailing data. */
            text[1 + at] = '"';
            refused(text, len + 2, RL__JSON_TRAILING, at + 2, __LINE__);
            /* A 2-byte character there decodes. */
            char wide[72];
            memcpy(wide, text, 1 + at);
            memcpy(wide + 1 + at, "\xc3\xa9", 2);
            memcpy(wide + 3 + at, expected + at + 1, len - at - 1);
            memcpy(wide + 2 + len, "\"", 2);
            char wide_expected[72];
            memcpy(wide_expected, expected, at);
            memcpy(wide_expected + at, "\xc3\xa9", 2);
            memcpy(wide_expected + at + 2, expected + at + 1, len - at - 1);
            string_is(wide, wide_expected, len + 1, __LINE__);
            /* An escape there decodes (and moves what follows down). */
            char escaped[72];
            memcpy(escaped, text, 1 + at);
            memcpy(escaped + 1 + at, "\\u0041", 6);
            memcpy(escaped + 7 + at, expected + at + 1, len - at - 1);
            memcpy(escaped + 6 + len, "\"", 2);
            char escaped_expected[64];
            memcpy(escaped_expected, expected, len);
            escaped_expected[at] = 'A';
            string_is(escaped, escaped_expected, len, __LINE__);
        }
    }
}

/* ---- numbers ---------------------------------------------------------- */

static rl__json_number number_of(const char *text) {
    size_t len = strlen(text);
    char *copy = copy_of(text, len);
    rl__json_scan s;
    rl__scan_init(&s, copy, len);
    rl__json_number number;
    memset(&number, 0x5a, sizeof number);
    if (!rl__scan_number(&s, &number) || !rl__scan_end(&s))
        fail_msg("%s refused (error %d at %zu)", text, s.error, s.error_at);
    free(copy);
    return number;
}

static void test_number_values(void **state) {
    (void)state;
    static const struct {
        const char *text;
        bool negative, integral;
        uint64_t magnitude;
    } cases[] = {
        {"0", false, true, 0},
        {"-0", true, true, 0},
        {"1", false, true, 1},
        {"-5", true, true, 5},
        {"10", false, true, 10},
        {"1800", false, true, 1800},
        {"9007199254740993", false, true, UINT64_C(9007199254740993)}, /* exact, unlike a double */
        {"9999999999999999999", false, true, UINT64_C(9999999999999999999)}, /* 19 digits */
        {"10000000000000000000", false, false, 0}, /* 10^19 */
        {"18446744073709551616", false, false, 0},  /* 2^64 */
        {"1.5", false, false, 0},
        {"0.5", false, false, 0},
        {"1.0", false, true, 1},
        {"1.000000000000000000000000000000", false, true, 1},
        {"1.0000000000000000000000000001", false, false, 0},
        {"0.0", false, true, 0},
        {"-0.0", true, true, 0},
        {"1e2", false, true, 100},
        {"1E2", false, true, 100},
        {"1e+2", false, true, 100},
        {"1e-2", false, false, 0},
        {"100e-2", false, true, 1},
        {"0.1e1", false, true, 1},
        {"123.456e3", false, true, 123456},
        {"1.23456e2", false, false, 0},
        {"1800e-3", false, false, 0},
        {"0e0", false, true, 0},
        {"0.000e999999999999999999", false, true, 0},
        {"1e18", false, true, UINT64_C(1000000000000000000)},
        {"1e19", false, false, 0},
        {"1e999999999999999999", false, false, 0},
        {"1e-999999999999999999", false, false, 0},
        {"12345678901234567890e-1", false, true, UINT64_C(1234567890123456789)},
        {"0.000000000000000000000000000000000000001e39", false, true, 1},
        {"9.007199254740992e15", false, true, UINT64_C(9007199254740992)},
        {"-12.5e1", true, true, 125},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl__json_number n = number_of(cases[i].text);
        if (n.negative != cases[i].negative || n.integral != cases[i].integral ||
            (n.integral && n.magnitude != cases[i].magnitude))
            fail_msg("%s: negative %d integral %d magnitude %llu", cases[i].text, n.negative,
                     n.integral, (unsigned long long)n.magnitude);
    }
}

static void test_number_grammar(void **state) {
    (void)state;
    /* In an array, so that a number that stops early leaves a byte the array
     * cannot take. Offsets are of the first byte the grammar refuses. */
    static const struct {
        const char *text;
        size_t at;
    } bad[] = {
        {"[01]", 2},   {"[00]", 2},   {"[-01]", 3},  {"[1.]", 3},   {"[1.e3]", 3},
        {"[.5]", 1},   {"[-]", 2},    {"[-a]", 2},   {"[--1]", 2},  {"[+1]", 1},
        {"[1e]", 3},   {"[1e+]", 4},  {"[1E-]", 4},  {"[1e1.5]", 4}, {"[1.5.1]", 4},
        {"[0x10]", 2}, {"[1_000]", 2}, {"[NaN]", 1}, {"[nan]", 2},  {"[Infinity]", 1},
        {"[-Infinity]", 2}, {"[1 2]", 3}, {"[- 1]", 2}, {"[1. 5]", 3}, {"[1e 5]", 3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i].text, strlen(bad[i].text), RL__JSON_SYNTAX, bad[i].at, __LINE__);
    VALID("[0,-0,1,-1,0.5,-0.5,1e5,1E5,1e+5,1e-5,1.5e5,-1.5E-5,12345678901234567890123]");
    VALID(" 42 ");
    REFUSED("01", RL__JSON_TRAILING, 1); /* at the root, "0" then more */
    REFUSED("-", RL__JSON_SYNTAX, 1);
    REFUSED("1e", RL__JSON_SYNTAX, 2);
}

/* ---- literals and structure ------------------------------------------- */

static void test_literals(void **state) {
    (void)state;
    VALID("true");
    VALID("false");
    VALID("null");
    VALID("[true,false,null]");
    REFUSED("tru", RL__JSON_SYNTAX, 3);
    REFUSED("nul", RL__JSON_SYNTAX, 3);
    REFUSED("fals", RL__JSON_SYNTAX, 4);
    REFUSED("True", RL__JSON_SYNTAX, 0);
    REFUSED("NULL", RL__JSON_SYNTAX, 0);
    REFUSED("nulL", RL__JSON_SYNTAX, 3);
    REFUSED("nulll", RL__JSON_TRAILING, 4);
    REFUSED("truefalse", RL__JSON_TRAILING, 4);
    REFUSED("[truex]", RL__JSON_SYNTAX, 5);
    REFUSED("undefined", RL__JSON_SYNTAX, 0);
}

static void test_structure(void **state) {
    (void)state;
    VALID("{}");
    VALID("[]");
    VALID(" { } ");
    VALID("[[],{},[[]],{\"a\":{}}]");
    VALID("{\"a\":1,\"b\":[1,2,{\"c\":null}],\"\":\"empty name\",\"a\":2}"); /* names may repeat */
    VALID(" \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n1 \t\r\n, \"b\":[ 1 , 2 ] } \t\r\n");
    REFUSED("", RL__JSON_SYNTAX, 0);
    REFUSED("   ", RL__JSON_SYNTAX, 3);
    REFUSED("{", RL__JSON_SYNTAX, 1);
    REFUSED("[", RL__JSON_SYNTAX, 1);
    REFUSED("}", RL__JSON_SYNTAX, 0);
    REFUSED("]", RL__JSON_SYNTAX, 0);
    REFUSED("{]", RL__JSON_SYNTAX, 1);
    REFUSED("[}", RL__JSON_SYNTAX, 1);
    REFUSED("{\"a\"}", RL__JSON_SYNTAX, 4);
    REFUSED("{\"a\":}", RL__JSON_SYNTAX, 5);
    REFUSED("{\"a\" 1}", RL__JSON_SYNTAX, 5);
    REFUSED("{\"a\":1,}", RL__JSON_SYNTAX, 7);
    REFUSED("{,\"a\":1}", RL__JSON_SYNTAX, 1);
    REFUSED("{\"a\":1 \"b\":2}", RL__JSON_SYNTAX, 7);
    REFUSED("{\"a\":1,,\"b\":2}", RL__JSON_SYNTAX, 7);
    REFUSED("{a:1}", RL__JSON_SYNTAX, 1);
    REFUSED("{'a':1}", RL__JSON_SYNTAX, 1);
    REFUSED("{1:1}", RL__JSON_SYNTAX, 1);
    REFUSED("[1,]", RL__JSON_SYNTAX, 3);
    REFUSED("[,1]", RL__JSON_SYNTAX, 1);
    REFUSED("[1,,2]", RL__JSON_SYNTAX, 3);
    REFUSED("[1 2]", RL__JSON_SYNTAX, 3);
    REFUSED("[1:2]", RL__JSON_SYNTAX, 2);
    REFUSED("/* comment */ 1", RL__JSON_SYNTAX, 0);
    REFUSED("[1] // comment", RL__JSON_TRAILING, 4);
    /* Only space, tab, LF and CR are whitespace. */
    REFUSED("\v{}", RL__JSON_CONTROL, 0);
    REFUSED("{}\f", RL__JSON_CONTROL, 2);
    REFUSED("[1,\x01 2]", RL__JSON_CONTROL, 3);
    REFUSED_N("{}\0", 3, RL__JSON_CONTROL, 2);
    REFUSED_N("\0{}", 3, RL__JSON_CONTROL, 0);
    REFUSED("\xc2\xa0{}", RL__JSON_SYNTAX, 0); /* U+00A0 is not JSON whitespace */
    REFUSED("\xef\xbb\xbf{}", RL__JSON_SYNTAX, 0); /* nor is a byte order mark */
    REFUSED("{} {}", RL__JSON_TRAILING, 3);
    REFUSED("{}x", RL__JSON_TRAILING, 2);
}

static void test_members_and_elements(void **state) {
    (void)state;
    const char *text = "{\"lease\\u005fid\":\"x\",\"\":[10,\"s\",[]],\"k\":{}}";
    size_t len = strlen(text);
    char *copy = copy_of(text, len);
    rl__json_scan s;
    rl__scan_init(&s, copy, len);
    char *name, *value;
    size_t name_len, value_len;
    assert_true(rl__scan_object_open(&s));
    assert_int_equal(s.depth, 1);
    assert_int_equal(rl__scan_member(&s, 0, &name, &name_len), 1);
    assert_string_equal(name, "lease_id"); /* names are decoded too */
    assert_int_equal(name_len, 8);
    assert_int_equal(rl__scan_peek(&s), '"');
    assert_true(rl__scan_string(&s, &value, &value_len));
    assert_string_equal(value, "x");
    assert_int_equal(rl__scan_member(&s, 1, &name, &name_len), 1);
    assert_int_equal(name_len, 0);
    assert_true(rl__scan_array_open(&s));
    assert_int_equal(s.depth, 2);
    assert_int_equal(rl__scan_element(&s, 0), 1);
    rl__json_number number;
    assert_true(rl__scan_number(&s, &number));
    assert_true(number.integral && number.magnitude == 10);
    assert_int_equal(rl__scan_element(&s, 1), 1);
    assert_false(rl__scan_number(&s, &number)); /* a string is not a number */
    size_t string_at = (size_t)(strstr(text, "\"s\"") - text);
    assert_int_equal(s.error, RL__JSON_SYNTAX);
    assert_int_equal(s.error_at, string_at);
    /* Stopped: everything fails from now on, and the first error stays. */
    assert_int_equal(rl__scan_element(&s, 2), -1);
    assert_int_equal(rl__scan_peek(&s), '\0');
    assert_false(rl__scan_skip(&s));
    assert_false(rl__scan_end(&s));
    assert_int_equal(s.error_at, string_at);
    free(copy);

    /* Walking an array to its end, depth back to 0. */
    text = "[ 1 , [ ] , { \"a\" : [ 2 ] } ]";
    len = strlen(text);
    copy = copy_of(text, len);
    rl__scan_init(&s, copy, len);
    assert_true(rl__scan_array_open(&s));
    size_t i = 0;
    int more;
    for (; (more = rl__scan_element(&s, i)) > 0; i++) assert_true(rl__scan_skip(&s));
    assert_int_equal(more, 0);
    assert_int_equal(i, 3);
    assert_int_equal(s.depth, 0);
    assert_true(rl__scan_end(&s));
    free(copy);

    /* Asking for one kind of value where another is. */
    text = "[\"s\"]";
    copy = copy_of(text, 5);
    rl__scan_init(&s, copy, 5);
    assert_false(rl__scan_object_open(&s));
    assert_int_equal(s.error_at, 0);
    free(copy);
    copy = copy_of(text, 5);
    rl__scan_init(&s, copy, 5);
    assert_false(rl__scan_string(&s, &value, &value_len));
    free(copy);
}

/* ---- the depth limit -------------------------------------------------- */

static void test_depth_limit(void **state) {
    (void)state;
    static char text[8 * RL__JSON_MAX_DEPTH + 16];
    for (int depth = RL__JSON_MAX_DEPTH - 1; depth <= RL__JSON_MAX_DEPTH + 1; depth++) {
        /* Arrays, objects, and the two alternating. */
        for (int shape = 0; shape < 3; shape++) {
            size_t at = 0;
            for (int i = 0; i < depth; i++) {
                bool object = shape == 1 || (shape == 2 && i % 2 == 1);
                if (object) at += (size_t)sprintf(text + at, "{\"k\":");
                else text[at++] = '[';
            }
            text[at++] = '0';
            for (int i = depth - 1; i >= 0; i--) {
                bool object = shape == 1 || (shape == 2 && i % 2 == 1);
                text[at++] = object ? '}' : ']';
            }
            size_t error_at = 0;
            rl__json_error error = check_n(text, at, &error_at);
            if (depth <= RL__JSON_MAX_DEPTH) {
                if (error != RL__JSON_OK)
                    fail_msg("depth %d shape %d: error %d", depth, shape, error);
            } else {
                assert_int_equal(error, RL__JSON_TOO_DEEP);
                /* At the bracket that opens level 65. */
                assert_true(text[error_at] == '[' || text[error_at] == '{');
            }
        }
    }
    /* Far deeper than the limit: refused without recursing that deep. */
    static char deep[200000];
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    size_t error_at = 0;
    assert_int_equal(check_n(deep, sizeof deep, &error_at), RL__JSON_TOO_DEEP);
    assert_int_equal(error_at, RL__JSON_MAX_DEPTH);
}

/* ---- every truncation ------------------------------------------------- */

static void test_every_truncation(void **state) {
    (void)state;
    static const char *const documents[] = {
        "{\"lease_id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\","
        "\"job_id\":\"caf\xc3\xa9\\u00e9\\ud83d\\ude00\",\"x\":[null,true,false,-1.5e3,0,{}],"
        "\"requirements\":[{\"key\":\"a\\\"b\",\"amount\":1e3}]}",
        "[\"\\b\\f\\n\\r\\t\\/\\\\\\\"\",\"\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\",-0.5E+10,123]",
        " { \"a\" : [ 1 , 2 ] , \"b\" : { \"c\" : null } } ",
    };
    for (size_t d = 0; d < sizeof documents / sizeof documents[0]; d++) {
        size_t len = strlen(documents[d]);
        if (check_n(documents[d], len, NULL) != RL__JSON_OK) fail_msg("document %zu refused", d);
        /* Every prefix is refused (these roots are containers: no prefix
         * is a complete value), as syntax or as a cut UTF-8 sequence. */
        for (size_t cut = 0; cut < len; cut++) {
            size_t at = 0;
            rl__json_error error = check_n(documents[d], cut, &at);
            bool trailing_space_only = true;
            for (size_t i = cut; i < len; i++)
                if (documents[d][i] != ' ') trailing_space_only = false;
            if (trailing_space_only) {
                assert_int_equal(error, RL__JSON_OK);
                continue;
            }
            if (error != RL__JSON_SYNTAX && error != RL__JSON_BAD_UTF8)
                fail_msg("document %zu cut at %zu: error %d at %zu", d, cut, error, at);
        }
    }
    assert_int_equal(check("[1]"), RL__JSON_OK);
}

/* ---- sentences -------------------------------------------------------- */

static void test_describe(void **state) {
    (void)state;
    char detail[200];
    rl__scan_describe(RL__JSON_SYNTAX, 5, "body", detail, sizeof detail);
    assert_string_equal(detail, "body is not valid JSON (error near byte 5)");
    rl__scan_describe(RL__JSON_BAD_UTF8, 3, "body", detail, sizeof detail);
    assert_string_equal(detail, "body is not valid UTF-8 (at byte 3)");
    rl__scan_describe(RL__JSON_CONTROL, 7, "body", detail, sizeof detail);
    assert_string_equal(detail,
                        "body contains a raw control character (at byte 7); escape it in strings");
    rl__scan_describe(RL__JSON_NUL_ESCAPE, 9, "file", detail, sizeof detail);
    assert_string_equal(detail, "file contains \\u0000 (at byte 9), which is not allowed");
    rl__scan_describe(RL__JSON_TOO_DEEP, 64, "body", detail, sizeof detail);
    assert_string_equal(detail, "body nests objects and arrays more than 64 deep (at byte 64)");
    rl__scan_describe(RL__JSON_TRAILING, 8, "body", detail, sizeof detail);
    assert_string_equal(detail, "body has unexpected data after the JSON value (at byte 8)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_string_errors),
        cmocka_unit_test(test_string_utf8),
        cmocka_unit_test(test_string_every_position),
        cmocka_unit_test(test_number_values),
        cmocka_unit_test(test_number_grammar),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_members_and_elements),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
