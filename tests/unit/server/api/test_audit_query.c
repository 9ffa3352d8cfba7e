/* test_audit_query.c — the query string of GET /v1/admin/audit: defaults,
 * percent-decoding, and a sentence naming the parameter for every kind of
 * mistake; the http limiter's own path reads back as what it asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/api/audit_query.h"
#include "wire/wire.h"

static rl__audit_params params;
static char detail[RL_WIRE_DETAIL_SIZE];

static bool decode(const char *query) {
    return rl__audit_params_decode(query, strlen(query), &params, detail);
}

static void expect_refused(const char *query, const char *fragment) {
    if (decode(query)) fail_msg("taken: %s", query);
    if (strstr(detail, fragment) == NULL) fail_msg("\"%s\" not in \"%s\" (query %s)", fragment, detail, query);
}

static void test_defaults_and_values(void **state) {
    (void)state;
    assert_true(decode("key=tenant:acme:spend"));
    assert_string_equal(params.key, "tenant:acme:spend");
    assert_int_equal(params.since_unix_ms, 0);
    assert_int_equal(params.limit, 100);
    assert_true(decode("limit=1000&since_unix_ms=9007199254740992&key=k"));
    assert_string_equal(params.key, "k");
    assert_int_equal(params.since_unix_ms, 9007199254740992u);
    assert_int_equal(params.limit, 1000);
    assert_true(decode("key=k&limit=1&since_unix_ms=0"));
    assert_int_equal(params.limit, 1);
    assert_true(decode("key=k&limit=007"));
    assert_int_equal(params.limit, 7);
    /* Percent-decoded, '+' a plus; names too. */
    assert_true(decode("key=tenant%3Aacme%2Fspend+x&%6Cimit=2"));
    assert_string_equal(params.key, "tenant:acme/spend+x");
    assert_int_equal(params.limit, 2);
    assert_true(decode("key=a=b"));
    assert_string_equal(params.key, "a=b");
    rl_audit_query query = rl__audit_params_query(&params);
    assert_ptr_equal(query.key, params.key);
}

static void test_mistakes_name_the_parameter(void **state) {
    (void)state;
    expect_refused("", "key is required");
    expect_refused("since_unix_ms=5", "key is required");
    expect_refused("key=", "key must be 1..256 printable ASCII");
    expect_refused("key=a%20b", "key must be");
    expect_refused("key=a%2", "key must be");
    expect_refused("key=a%00", "key must be");
    char long_key[300] = "key=";
    memset(long_key + 4, 'k', 257);
    expect_refused(long_key, "key must be");
    expect_refused("key=k&since_unix_ms=", "since_unix_ms must be a decimal integer 0..9007199254740992");
    expect_refused("key=k&since_unix_ms=-1", "since_unix_ms must be");
    expect_refused("key=k&since_unix_ms=1e3", "since_unix_ms must be");
    expect_refused("key=k&since_unix_ms=9007199254740993", "since_unix_ms must be");
    expect_refused("key=k&since_unix_ms=99999999999999999999999", "since_unix_ms must be");
    expect_refused("key=k&since_unix_ms=1%002", "since_unix_ms must be");
    expect_refused("key=k&limit=0", "limit must be a decimal integer 1..1000");
    expect_refused("key=k&limit=1001", "limit must be");
    expect_refused("key=k&limit=+5", "limit must be");
    expect_refused("key=k&key=k", "key appears twice");
    expect_refused("key=k&limit=1&limit=2", "limit appears twice");
    expect_refused("key=k&since=5", "unknown parameter \"since\" (the parameters are key, since_unix_ms and limit)");
    expect_refused("key=k&KEY=k", "unknown parameter \"KEY\"");
    expect_refused("key%00=k", "an unknown parameter");
    expect_refused("%ff=1&key=k", "an unknown parameter");
    expect_refused("key=k&", "empty parameter");
    expect_refused("&key=k", "empty parameter");
    expect_refused("key=k&&limit=1", "empty parameter");
    expect_refused("key", "every parameter must be NAME=VALUE");
    expect_refused("key=k&limit", "NAME=VALUE");
    /* The first problem from the left. */
    expect_refused("limit=0&key=", "limit must be");
}

/* The http limiter's path, after its '?', is what the daemon reads. */
static void test_the_limiter_path_reads_back(void **state) {
    (void)state;
    static const char *const keys[] = {"tenant:acme:spend", "a&b=c+d%e/f?g#h", "~!*'()[]\"\\"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        rl_audit_query query = {keys[i], 1764058800123u, 250};
        rl_buf buf;
        rl__buf_init(&buf);
        rl__wire_encode_audit_path(&buf, &query);
        const char *mark = strchr(buf.data, '?');
        assert_non_null(mark);
        if (!decode(mark + 1)) fail_msg("%s: %s", buf.data, detail);
        assert_string_equal(params.key, keys[i]);
        assert_int_equal(params.since_unix_ms, 1764058800123u);
        assert_int_equal(params.limit, 250);
        rl__buf_free(&buf);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_values),
        cmocka_unit_test(test_mistakes_name_the_parameter),
        cmocka_unit_test(test_the_limiter_path_reads_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
