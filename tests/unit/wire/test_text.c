/* test_text.c — UTF-8 validation and the pre-scan of JSON bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/text.h"

static size_t seq(const char *bytes, size_t avail) {
    return rl__utf8_sequence_len((const unsigned char *)bytes, avail);
}

static void test_sequences(void **state) {
    (void)state;
    assert_int_equal(seq("a", 1), 1);
    assert_int_equal(seq("\x7f", 1), 1);
    assert_int_equal(seq("\xc2\x80", 2), 2);         /* U+0080 */
    assert_int_equal(seq("\xdf\xbf", 2), 2);         /* U+07FF */
    assert_int_equal(seq("\xe0\xa0\x80", 3), 3);     /* U+0800 */
    assert_int_equal(seq("\xed\x9f\xbf", 3), 3);     /* U+D7FF */
    assert_int_equal(seq("\xee\x80\x80", 3), 3);     /* U+E000 */
    assert_int_equal(seq("\xef\xbf\xbf", 3), 3);     /* U+FFFF */
    assert_int_equal(seq("\xf0\x90\x80\x80", 4), 4); /* U+10000 */
    assert_int_equal(seq("\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF */

    assert_int_equal(seq("\x80", 1), 0);             /* continuation alone */
    assert_int_equal(seq("\xc0\x80", 2), 0);         /* overlong NUL */
    assert_int_equal(seq("\xc1\xbf", 2), 0);         /* overlong */
    assert_int_equal(seq("\xe0\x9f\xbf", 3), 0);     /* overlong */
    assert_int_equal(seq("\xed\xa0\x80", 3), 0);     /* surrogate D800 */
    assert_int_equal(seq("\xed\xbf\xbf", 3), 0);     /* surrogate DFFF */
    assert_int_equal(seq("\xf0\x8f\xbf\xbf", 4), 0); /* overlong */
    assert_int_equal(seq("\xf4\x90\x80\x80", 4), 0); /* U+110000 */
    assert_int_equal(seq("\xf5\x80\x80\x80", 4), 0);
    assert_int_equal(seq("\xff", 1), 0);
    assert_int_equal(seq("\xc3\x41", 2), 0);         /* bad continuation */
    assert_int_equal(seq("\xe2\x82\x41", 3), 0);
    assert_int_equal(seq("\xf0\x9f\x98\x41", 4), 0);
    /* Truncated: the bytes are there in memory but not in range. */
    assert_int_equal(seq("\xc3\xa9", 1), 0);
    assert_int_equal(seq("\xe2\x82\xac", 2), 0);
    assert_int_equal(seq("\xf0\x9f\x98\x80", 3), 0);
}

static void test_clean_text(void **state) {
    (void)state;
    assert_true(rl__text_is_clean("", 0));
    assert_true(rl__text_is_clean("job 42 caf\xc3\xa9", 12));
    assert_false(rl__text_is_clean("a\tb", 3));
    assert_false(rl__text_is_clean("a\nb", 3));
    assert_false(rl__text_is_clean("a\x7f", 2));
    assert_false(rl__text_is_clean("a\0b", 3));
    assert_false(rl__text_is_clean("\xc3", 1));
    assert_false(rl__text_is_clean("\xc3\xa9", 1)); /* length counts */
}

static rl__body_problem scan(const char *body, size_t len, size_t *at) {
    /* Exactly-sized copy: the word-at-a-time path must not read past it. */
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    memcpy(copy, body, len);
    rl__body_problem problem = rl__body_scan(copy, len, at);
    free(copy);
    return problem;
}

/* Texts longer than a word, with one bad byte at every position, so that
 * both the 8-byte step and the byte loop meet it. */
static void test_clean_text_every_position(void **state) {
    (void)state;
    static const unsigned char bad[] = {0x00, 0x01, 0x09, 0x0a, 0x1f, 0x7f, 0x80, 0xbf, 0xc3, 0xff};
    for (size_t len = 1; len < 40; len++) {
        char text[48];
        memset(text, 'j', len);
        assert_true(rl__text_is_clean(text, len));
        for (size_t at = 0; at < len; at++) {
            for (size_t b = 0; b < sizeof bad; b++) {
                memset(text, 'j', len);
                text[at] = (char)bad[b];
                if (rl__text_is_clean(text, len))
                    fail_msg("byte 0x%02x at %zu of %zu accepted", bad[b], at, len);
            }
            /* The printable edges and a 2-byte character are fine there. */
            memset(text, 'j', len);
            text[at] = ' ';
            assert_true(rl__text_is_clean(text, len));
            text[at] = '~';
            assert_true(rl__text_is_clean(text, len));
            if (at + 1 < len) {
                memcpy(text + at, "\xc3\xa9", 2);
                assert_true(rl__text_is_clean(text, len));
            }
        }
    }
}

static void test_body_scan(void **state) {
    (void)state;
    size_t at = 99;
    const char *ok = "{\"a\": [1, 2, \"caf\xc3\xa9\\n\\\"\\\\u0000\"],\r\n\t\"b\": null}";
    assert_int_equal(scan(ok, strlen(ok), &at), RL__BODY_OK);
    assert_int_equal(scan("", 0, &at), RL__BODY_OK);

    /* The problem is found at its offset, wherever it falls in an 8-byte word. */
    for (size_t pos = 0; pos < 24; pos++) {
        char body[32];
        memset(body, 'x', sizeof body);
        body[pos] = '\x01';
        assert_int_equal(scan(body, sizeof body, &at), RL__BODY_CONTROL);
        assert_int_equal(at, pos);
        memset(body, 'x', sizeof body);
        body[pos] = '\xff';
        assert_int_equal(scan(body, sizeof body, &at), RL__BODY_BAD_UTF8);
        assert_int_equal(at, pos);
        memset(body, 'x', sizeof body);
        memcpy(body + pos, "\\u0000", 6);
        assert_int_equal(scan(body, sizeof body, &at), RL__BODY_NUL_ESCAPE);
        assert_int_equal(at, pos);
        /* A multi-byte character across a word boundary is fine. */
        memset(body, 'x', sizeof body);
        memcpy(body + pos, "\xf0\x9f\x98\x80", 4);
        assert_int_equal(scan(body, sizeof body, &at), RL__BODY_OK);
    }
    assert_int_equal(scan("a\0b", 3, &at), RL__BODY_CONTROL);
    assert_int_equal(at, 1);
    assert_int_equal(scan("\"\xc3", 2, &at), RL__BODY_BAD_UTF8); /* cut at the end */
    assert_int_equal(at, 1);
    /* An escaped backslash followed by "u0000" is text, not an escape. */
    assert_int_equal(scan("\"\\\\u0000\"", 9, &at), RL__BODY_OK);
    assert_int_equal(scan("\"\\\\\\u0000\"", 10, &at), RL__BODY_NUL_ESCAPE);
    assert_int_equal(at, 3);
    /* Other escapes of zero-ish values are fine here (the field checks judge them). */
    assert_int_equal(scan("\"\\u0001\\u0100\"", 14, &at), RL__BODY_OK);
    /* A backslash at the very end does not read past it. */
    assert_int_equal(scan("\"\\", 2, &at), RL__BODY_OK);
    assert_int_equal(scan("\\u000", 5, &at), RL__BODY_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_clean_text),
        cmocka_unit_test(test_clean_text_every_position),
        cmocka_unit_test(test_body_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
