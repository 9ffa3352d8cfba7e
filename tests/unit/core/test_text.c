/* test_text.c — UTF-8 validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/text.h"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_clean_text),
        cmocka_unit_test(test_clean_text_every_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
