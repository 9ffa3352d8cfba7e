/* test_cli_parse.c — rlctl's pure parsers (src/cli/parse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "ratelimiter/types.h"

static void test_parse_u64(void **state) {
    (void)state;
    uint64_t v = 7;
    assert_true(rlctl_parse_u64("0", 10, &v) && v == 0);
    assert_true(rlctl_parse_u64("10", 10, &v) && v == 10);
    assert_false(rlctl_parse_u64("11", 10, &v));
    assert_true(rlctl_parse_u64("18446744073709551615", UINT64_MAX, &v) && v == UINT64_MAX);
    assert_false(rlctl_parse_u64("18446744073709551616", UINT64_MAX, &v));
    assert_false(rlctl_parse_u64("", 10, &v));
    assert_false(rlctl_parse_u64("-1", 10, &v));
    assert_false(rlctl_parse_u64("1x", 10, &v));
    assert_false(rlctl_parse_u64(" 1", 10, &v));
    assert_false(rlctl_parse_u64(NULL, 10, &v));
}

static void test_parse_key_amount(void **state) {
    (void)state;
    char key[RL_KEY_MAX_LEN + 1], err[256];
    uint64_t amount = 0;
    assert_true(rlctl_parse_key_amount("global:llm:openai:gpt-4o:tpm=1800", 1, key, sizeof key, &amount, err,
                                       sizeof err));
    assert_string_equal(key, "global:llm:openai:gpt-4o:tpm");
    assert_int_equal(amount, 1800);
    /* The last '=' splits: a key may hold '='. */
    assert_true(rlctl_parse_key_amount("a=b=3", 1, key, sizeof key, &amount, err, sizeof err));
    assert_string_equal(key, "a=b");
    assert_int_equal(amount, 3);
    assert_true(rlctl_parse_key_amount("k=0", 0, key, sizeof key, &amount, err, sizeof err) && amount == 0);
    assert_false(rlctl_parse_key_amount("k=0", 1, key, sizeof key, &amount, err, sizeof err));
    assert_non_null(strstr(err, "amount"));
    assert_false(rlctl_parse_key_amount("k", 1, key, sizeof key, &amount, err, sizeof err));
    assert_non_null(strstr(err, "KEY=AMOUNT"));
    assert_false(rlctl_parse_key_amount("=5", 1, key, sizeof key, &amount, err, sizeof err));
    assert_false(rlctl_parse_key_amount("a key=5", 1, key, sizeof key, &amount, err, sizeof err));
    assert_false(rlctl_parse_key_amount("k=9007199254740993", 1, key, sizeof key, &amount, err, sizeof err));
    assert_true(rlctl_parse_key_amount("k=9007199254740992", 1, key, sizeof key, &amount, err, sizeof err));
    char small[4];
    assert_false(rlctl_parse_key_amount("abcd=1", 1, small, sizeof small, &amount, err, sizeof err));
}

static void test_path_escape(void **state) {
    (void)state;
    char out[64];
    rlctl_path_escape("global:llm:openai:gpt-4o:tpm", out, sizeof out);
    assert_string_equal(out, "global:llm:openai:gpt-4o:tpm");
    rlctl_path_escape("a/b?c%d#e", out, sizeof out);
    assert_string_equal(out, "a%2Fb%3Fc%25d%23e");
    char tiny[6];
    rlctl_path_escape("a/b/c", tiny, sizeof tiny); /* truncates whole escapes, stays terminated */
    assert_string_equal(tiny, "a%2F");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_key_amount),
        cmocka_unit_test(test_path_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
