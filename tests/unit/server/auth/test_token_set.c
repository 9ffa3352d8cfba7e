/* test_token_set.c — tokens files: what is a token, what is skipped, every
 * refusal with its line, and the check (server/auth/token_set.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/auth/token_set.h"

#define TOKEN_A "a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define TOKEN_B "QmVhcmVyIHRva2VuIGZvciB0ZXN0cw=="

static bool has(const rl_token_set *set, const char *token) {
    uint8_t digest[RL_TOKEN_DIGEST_BYTES];
    rl_token_digest(token, strlen(token), digest);
    return rl_token_set_has_digest(set, digest);
}

static rl_token_set *parse_ok(const char *text) {
    rl_token_set *set = NULL;
    char err[256] = "";
    if (!rl_token_set_parse(text, strlen(text), "t.tokens", &set, err, sizeof err)) fail_msg("refused: %s", err);
    return set;
}

/* The text is refused, and the message holds fragment (and no token). */
static void expect_refused(const char *text, size_t len, const char *fragment) {
    rl_token_set *set = (rl_token_set *)1;
    char err[256] = "";
    assert_false(rl_token_set_parse(text, len, "t.tokens", &set, err, sizeof err));
    assert_null(set);
    if (strstr(err, fragment) == NULL) fail_msg("\"%s\" not in \"%s\"", fragment, err);
    assert_null(strstr(err, TOKEN_A));
}

static void test_lines(void **state) {
    (void)state;
    /* Comments, blank lines, spaces and tabs around, CRLF, no final newline. */
    rl_token_set *set = parse_ok("# the operators\n\n  " TOKEN_A "\t\r\n   \n" TOKEN_B);
    assert_int_equal(rl_token_set_count(set), 2);
    assert_true(has(set, TOKEN_A));
    assert_true(has(set, TOKEN_B));
    assert_false(has(set, "a1b2c3d4e5f60718293a4b5c6d7e8f9"));   /* one short */
    assert_false(has(set, TOKEN_A "0"));                          /* one more */
    assert_false(has(set, "A1b2c3d4e5f60718293a4b5c6d7e8f90"));   /* case counts */
    assert_false(has(set, ""));
    assert_false(has(NULL, TOKEN_A));
    rl_token_set_free(set);

    /* Every character of the alphabet, and the shortest and longest tokens. */
    set = parse_ok("azAZ09-._~+/azAZ==\n0123456789abcdef\n");
    assert_true(has(set, "azAZ09-._~+/azAZ=="));
    assert_true(has(set, "0123456789abcdef"));
    rl_token_set_free(set);
    char longest[RL_TOKEN_MAX_LEN + 2];
    memset(longest, 'x', RL_TOKEN_MAX_LEN);
    longest[RL_TOKEN_MAX_LEN] = '\0';
    set = parse_ok(longest);
    assert_true(has(set, longest));
    rl_token_set_free(set);
    longest[RL_TOKEN_MAX_LEN] = 'x';
    longest[RL_TOKEN_MAX_LEN + 1] = '\0';
    expect_refused(longest, strlen(longest), "t.tokens:1: a token must be 16..512 characters");
}

static void test_refusals(void **state) {
    (void)state;
    expect_refused("", 0, "t.tokens: holds no token");
    expect_refused("# nothing\n\n", 11, "holds no token");
    expect_refused(TOKEN_A "\nshort\n", 39, "t.tokens:2: a token must be 16..512 characters");
    expect_refused("\n\n" TOKEN_A " " TOKEN_B "\n", 2 + 32 + 1 + 32 + 1, "t.tokens:3: a token holds only");
    expect_refused("Bearer " TOKEN_A "\n", 40, "t.tokens:1:");
    expect_refused("0123456789abcdef=x\n", 19, "t.tokens:1: a token holds only");
    expect_refused("=0123456789abcdef\n", 18, "t.tokens:1: a token must start with");
    expect_refused(TOKEN_A "\n# again\n" TOKEN_A "\n", 32 + 1 + 8 + 32 + 1, "t.tokens:3: the same token as line 1");
    char with_nul[] = TOKEN_A "\n\0" TOKEN_B;
    expect_refused(with_nul, sizeof with_nul - 1, "holds a NUL byte");

    /* Past the count. */
    size_t size = (RL_TOKEN_SET_MAX + 1) * 20 + 1;
    char *many = malloc(size);
    assert_non_null(many);
    size_t len = 0;
    for (int i = 0; i <= RL_TOKEN_SET_MAX; i++) len += (size_t)snprintf(many + len, size - len, "token-%013d\n", i);
    expect_refused(many, len, "t.tokens:1025: more than 1024 tokens");
    rl_token_set *set = NULL;
    char err[256];
    assert_true(rl_token_set_parse(many, len - 20, "t.tokens", &set, err, sizeof err)); /* the first 1024 */
    assert_int_equal(rl_token_set_count(set), RL_TOKEN_SET_MAX);
    assert_true(has(set, "token-0000000001023"));
    rl_token_set_free(set);
    free(many);
}

static void test_file(void **state) {
    (void)state;
    char path[] = "/tmp/rl_test_tokens_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "# admin\n" TOKEN_B "\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    rl_token_set *set = NULL;
    char err[512] = "";
    assert_true(rl_token_set_load_file(path, &set, err, sizeof err));
    assert_true(has(set, TOKEN_B));
    rl_token_set_free(set);
    unlink(path);
    assert_false(rl_token_set_load_file(path, &set, err, sizeof err));
    assert_null(set);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "cannot open"));
}

/* A FIFO (or a directory) is no tokens file: refused at once with a sentence
 * that says what it is, never waited on for a writer (a SIGHUP that met one
 * would hold the daemon's signal loop). */
static void test_not_a_regular_file(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_test_tokens_XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/tokens.fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    rl_token_set *set = (rl_token_set *)1;
    char err[512] = "";
    assert_false(rl_token_set_load_file(fifo, &set, err, sizeof err));
    assert_null(set);
    assert_non_null(strstr(err, fifo));
    assert_non_null(strstr(err, ": is a FIFO, not a regular file"));
    assert_false(rl_token_set_load_file(dir, &set, err, sizeof err));
    assert_non_null(strstr(err, ": is a directory, not a regular file"));
    unlink(fifo);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_not_a_regular_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
