/* test_denials_query.c — the query string of GET /v1/admin/denials:
 * defaults, percent-decoding, lease ids kept upper case, and a sentence
 * naming the parameter for every kind of mistake (the strict reading it
 * shares with GET /v1/admin/audit, query_params.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/api/denials_query.h"
#include "server/observe/denial_ring.h"

static rl__denials_params params;
static char detail[RL_WIRE_DETAIL_SIZE];

static bool decode(const char *query) {
    return rl__denials_params_decode(query, strlen(query), &params, detail);
}

static void expect_refused(const char *query, const char *fragment) {
    if (decode(query)) fail_msg("taken: %s", query);
    if (strstr(detail, fragment) == NULL) fail_msg("\"%s\" not in \"%s\" (query %s)", fragment, detail, query);
    assert_int_equal(params.limit, 0); /* nothing half-read is kept */
    assert_string_equal(params.key, "");
}

static void test_defaults_and_values(void **state) {
    (void)state;
    assert_true(rl__denials_params_decode(NULL, 0, &params, detail));
    assert_int_equal(params.limit, RL__DENIALS_DEFAULT_LIMIT);
    assert_string_equal(params.key, "");
    assert_string_equal(params.lease_id, "");
    assert_true(decode("limit=1024&key=tenant%3Aacme%2Fx+y&lease_id=01jd5z8q6x4w8n1v0m9r7t3k2a"));
    assert_int_equal(params.limit, RL_DENIAL_RING_CAPACITY);
    assert_string_equal(params.key, "tenant:acme/x+y");
    assert_string_equal(params.lease_id, "01JD5Z8Q6X4W8N1V0M9R7T3K2A");
    assert_true(decode("%6Cimit=1"));
    assert_int_equal(params.limit, 1);
}

static void test_mistakes_name_the_parameter(void **state) {
    (void)state;
    expect_refused("limit=0", "limit must be a decimal integer 1..1024");
    expect_refused("limit=1025", "limit must be");
    expect_refused("limit=", "limit must be");
    expect_refused("limit=-1", "limit must be");
    expect_refused("key=", "key must be 1..256 printable ASCII");
    expect_refused("key=a%20b", "key must be");
    expect_refused("lease_id=01JD5Z8Q6X4W8N1V0M9R7T3K2", "lease_id must be a ULID");
    expect_refused("lease_id=81JD5Z8Q6X4W8N1V0M9R7T3K2A", "lease_id must be a ULID");
    expect_refused("lease_id=01JD5Z8Q6X4W8N1V0M9R7T3K2AA", "lease_id must be a ULID");
    expect_refused("lease_id=01JD5Z8Q6X4W8N1V0M9R7T3KUA", "lease_id must be a ULID");
    expect_refused("limit=1&limit=2", "limit appears twice");
    expect_refused("key=k&since_unix_ms=5", "unknown parameter \"since_unix_ms\" (the parameters are limit, key and lease_id)");
    expect_refused("limit", "every parameter must be NAME=VALUE: GET /v1/admin/denials[?limit=N][&key=K][&lease_id=L]");
    expect_refused("limit=1&", "empty parameter");
    expect_refused("&", "empty parameter");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_values),
        cmocka_unit_test(test_mistakes_name_the_parameter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
