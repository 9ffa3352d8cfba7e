/* test_cli_parse.c — rlctl's pure parsers (src/cli/parse.c), and its token file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* --token-file and RLCTL_TOKEN_FILE: the daemon's tokens file format. */
static void test_first_token(void **state) {
    (void)state;
    char token[RLCTL_TOKEN_MAX_LEN + 1];
    const char *why = NULL;
    assert_true(rlctl_first_token("# mine\n\n  tok-123456789abcdef \r\nsecond-token-0000000\n", token, sizeof token, &why));
    assert_string_equal(token, "tok-123456789abcdef");
    assert_true(rlctl_first_token("last-line-no-newline", token, sizeof token, &why));
    assert_string_equal(token, "last-line-no-newline");
    assert_false(rlctl_first_token("# only a comment\n\n", token, sizeof token, &why));
    assert_non_null(strstr(why, "holds no token"));
    assert_false(rlctl_first_token("two words\n", token, sizeof token, &why));
    assert_non_null(strstr(why, "without spaces"));
    assert_false(rlctl_first_token("tab\tinside\n", token, sizeof token, &why));
    char small[4];
    assert_false(rlctl_first_token("abcd\n", small, sizeof small, &why));
    assert_true(rlctl_token_is_valid("abc", 3));
    assert_false(rlctl_token_is_valid("", 0));
    assert_false(rlctl_token_is_valid("a\nb", 3));
    char file[] = "/tmp/rl_test_rlctl_token_XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "  from-a-file-0000\n", 19), 19);
    close(fd);
    char err[600];
    assert_true(rlctl_read_token_file(file, token, sizeof token, err, sizeof err));
    assert_string_equal(token, "from-a-file-0000");
    unlink(file);
    assert_false(rlctl_read_token_file(file, token, sizeof token, err, sizeof err));
    assert_non_null(strstr(err, file));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_token),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_key_amount),
        cmocka_unit_test(test_path_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
