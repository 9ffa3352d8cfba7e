/* test_ulid.c — ULID lease id validation and decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/types.h"
#include "ratelimiter/ulid.h"

static bool valid(const char *text) { return rl_ulid_is_valid(text, strlen(text)); }

static void test_valid(void **state) {
    (void)state;
    assert_true(valid("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    assert_true(valid("00000000000000000000000000"));
    assert_true(valid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")); /* the largest ULID */
    assert_true(valid("01J0000000000000000000000A"));
    assert_true(valid("0123456789ABCDEFGHJKMNPQRS"));
    assert_true(valid("0TVWXYZ0000000000000000000"));
}

static void test_lowercase_accepted(void **state) {
    (void)state;
    assert_true(valid("01arz3ndektsv4rrffq69g5fav"));
    assert_true(valid("01ArZ3nDeKtSv4RrFfQ69g5FaV"));
    assert_true(valid("7zzzzzzzzzzzzzzzzzzzzzzzzz"));
}

static void test_excluded_letters(void **state) {
    (void)state;
    /* Crockford base32 has no I, L, O, U, in either case. */
    const char *letters = "ILOUilou";
    for (const char *c = letters; *c != '\0'; c++) {
        char text[RL_ULID_LEN + 1] = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        text[10] = *c;
        assert_false(valid(text));
    }
}

static void test_other_bad_characters(void **state) {
    (void)state;
    const char bad[] = {' ', '-', '_', '*', '!', '~', '\0', '\n', '\x7f', (char)0xc3, '{', '`'};
    for (size_t i = 0; i < sizeof bad; i++) {
        char text[RL_ULID_LEN + 1] = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        text[5] = bad[i];
        assert_false(rl_ulid_is_valid(text, RL_ULID_LEN));
    }
}

static void test_first_char_over_7(void **state) {
    (void)state;
    /* 26 * 5 = 130 bits: a first character above 7 overflows 128 bits. */
    assert_false(valid("80000000000000000000000000"));
    assert_false(valid("ZZZZZZZZZZZZZZZZZZZZZZZZZZ"));
    assert_false(valid("90000000000000000000000000"));
    assert_false(valid("a0000000000000000000000000"));
    for (char c = '0'; c <= '7'; c++) {
        char text[RL_ULID_LEN + 1] = "00000000000000000000000000";
        text[0] = c;
        assert_true(valid(text));
    }
}

static void test_wrong_length(void **state) {
    (void)state;
    assert_false(valid(""));
    assert_false(valid("01ARZ3NDEKTSV4RRFFQ69G5FA"));   /* 25 */
    assert_false(valid("01ARZ3NDEKTSV4RRFFQ69G5FAVX")); /* 27 */
    assert_false(rl_ulid_is_valid(NULL, 0));
    assert_false(rl_ulid_is_valid(NULL, RL_ULID_LEN));
    /* Length is what counts, not the NUL. */
    assert_true(rl_ulid_is_valid("01ARZ3NDEKTSV4RRFFQ69G5FAVjunk", RL_ULID_LEN));
}

static void test_decode_values(void **state) {
    (void)state;
    uint64_t hi = 1, lo = 1;
    assert_true(rl_ulid_decode("00000000000000000000000000", RL_ULID_LEN, &hi, &lo));
    assert_true(hi == 0 && lo == 0);
    assert_true(rl_ulid_decode("00000000000000000000000001", RL_ULID_LEN, &hi, &lo));
    assert_true(hi == 0 && lo == 1);
    assert_true(rl_ulid_decode("0000000000000000000000000Z", RL_ULID_LEN, &hi, &lo));
    assert_true(hi == 0 && lo == 31);
    assert_true(rl_ulid_decode("7ZZZZZZZZZZZZZZZZZZZZZZZZZ", RL_ULID_LEN, &hi, &lo));
    assert_true(hi == UINT64_MAX && lo == UINT64_MAX);
    /* The ULID spec's example id (values computed independently, in Python). */
    assert_true(rl_ulid_decode("01ARZ3NDEKTSV4RRFFQ69G5FAV", RL_ULID_LEN, &hi, &lo));
    assert_true(hi == UINT64_C(0x01563e3ab5d3d676) && lo == UINT64_C(0x4c61efb99302bd5b));
    assert_true((hi >> 16) == UINT64_C(1469922850259)); /* 48-bit timestamp, ms */
    /* NULL outputs are allowed. */
    assert_true(rl_ulid_decode("01ARZ3NDEKTSV4RRFFQ69G5FAV", RL_ULID_LEN, NULL, NULL));
    assert_false(rl_ulid_decode("8ZZZZZZZZZZZZZZZZZZZZZZZZZ", RL_ULID_LEN, &hi, &lo));
}

static void test_decode_case_insensitive(void **state) {
    (void)state;
    uint64_t hi1, lo1, hi2, lo2, hi3, lo3;
    assert_true(rl_ulid_decode("01ARZ3NDEKTSV4RRFFQ69G5FAV", RL_ULID_LEN, &hi1, &lo1));
    assert_true(rl_ulid_decode("01arz3ndektsv4rrffq69g5fav", RL_ULID_LEN, &hi2, &lo2));
    assert_true(rl_ulid_decode("01ArZ3nDeKtSv4RrFfQ69g5FaV", RL_ULID_LEN, &hi3, &lo3));
    assert_true(hi1 == hi2 && lo1 == lo2);
    assert_true(hi1 == hi3 && lo1 == lo3);
    /* ... and different ids differ. */
    assert_true(rl_ulid_decode("01ARZ3NDEKTSV4RRFFQ69G5FAW", RL_ULID_LEN, &hi2, &lo2));
    assert_false(hi1 == hi2 && lo1 == lo2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_lowercase_accepted),
        cmocka_unit_test(test_excluded_letters),
        cmocka_unit_test(test_other_bad_characters),
        cmocka_unit_test(test_first_char_over_7),
        cmocka_unit_test(test_wrong_length),
        cmocka_unit_test(test_decode_values),
        cmocka_unit_test(test_decode_case_insensitive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
