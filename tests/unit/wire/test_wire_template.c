/* test_wire_template.c — the template body (PUT /v1/admin/templates) and
 * the template object of GET /v1/admin/templates: a limit definition whose
 * key is its "pattern". Bodies are copied into exactly-sized heap blocks so
 * that AddressSanitizer catches a read past the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/limit_def.h"
#include "wire/wire.h"

#define DAILY_TEMPLATE                                                                                  \
    "{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\",\"kind\":\"rolling\",\"capacity\":5000000,"    \
    "\"window_seconds\":86400,\"unit\":\"tokens\",\"description\":\"a tenant's daily tokens\",\"overage\":\"deny\"}"

static rl_status decode_n(const char *body, size_t len, rl_limit_def *out, char *detail) {
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    if (len > 0) memcpy(copy, body, len);
    rl_status status = rl__wire_decode_template_def(copy, len, out, detail);
    free(copy);
    return status;
}

static void refused(const char *body, const char *expected_detail) {
    rl_limit_def def;
    memset(&def, 0x5a, sizeof def);
    rl_limit_def before = def;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(decode_n(body, strlen(body), &def, detail), RL_INVALID_REQUEST);
    if (strcmp(detail, expected_detail) != 0) fail_msg("%s\n  got \"%s\"\n  not \"%s\"", body, detail, expected_detail);
    assert_memory_equal(&def, &before, sizeof def);
}

static void test_template_valid(void **state) {
    (void)state;
    rl_limit_def def;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(decode_n(DAILY_TEMPLATE, strlen(DAILY_TEMPLATE), &def, detail), RL_OK);
    assert_string_equal(def.key, "tenant:{tenant}:llm:daily_tokens");
    assert_int_equal(def.kind, RL_KIND_ROLLING);
    assert_int_equal(def.capacity, 5000000);
    assert_int_equal(def.window_seconds, 86400);
    assert_int_equal(def.overage, RL_OVERAGE_DENY);

    const char *budget = "{\"pattern\":\"tenant:{t}:spend:monthly\",\"kind\":\"budget\",\"capacity\":50000000,"
                         "\"period\":\"month\",\"timeout_seconds\":600,\"unit\":\"usd_micros\"}";
    assert_int_equal(decode_n(budget, strlen(budget), &def, detail), RL_OK);
    assert_string_equal(def.timezone, "UTC"); /* as for a limit */
    assert_int_equal(def.period, RL_PERIOD_MONTH);
}

static void test_template_refused(void **state) {
    (void)state;
    const char *pattern_must =
        "pattern must be a key of 1..256 printable ASCII characters without spaces holding 1..8 placeholders "
        "{name} (letters, digits, '_'), never two side by side, each name once";
    refused("{\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}", "pattern is required");
    /* "key" is not the pattern (an unknown member, as in every body). */
    refused("{\"key\":\"tenant:{t}:x\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}",
            "pattern is required");
    refused("{\"pattern\":\"tenant:acme:x\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}", pattern_must);
    refused("{\"pattern\":\"{a}{b}\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}", pattern_must);
    refused("{\"pattern\":7,\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}", pattern_must);
    refused("{\"pattern\":\"a:{x}\",\"pattern\":\"b:{x}\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}",
            "pattern appears twice");
    refused("{\"pattern\":\"a:{x}\",\"kind\":\"rolling\",\"capacity\":1}",
            "window_seconds must be 1..31622400 for a rolling limit");
    refused("[]", "body must be a JSON object");
    refused("", "body is empty");
}

/* What the refusal of a rolling limit without a window says, so that the
 * test above follows the definition's own rule rather than a copy. */
static void test_rules_are_the_definitions(void **state) {
    (void)state;
    rl_limit_def def;
    char limit_detail[RL_WIRE_DETAIL_SIZE], template_detail[RL_WIRE_DETAIL_SIZE];
    const char *limit = "{\"key\":\"a:b\",\"kind\":\"concurrency\",\"capacity\":1}";
    const char *template_ = "{\"pattern\":\"a:{b}\",\"kind\":\"concurrency\",\"capacity\":1}";
    assert_int_equal(rl__wire_decode_limit_def(limit, strlen(limit), &def, limit_detail), RL_INVALID_REQUEST);
    assert_int_equal(decode_n(template_, strlen(template_), &def, template_detail), RL_INVALID_REQUEST);
    assert_string_equal(limit_detail, template_detail);
}

static void test_template_round_trip_and_truncations(void **state) {
    (void)state;
    rl_limit_def def, again;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(decode_n(DAILY_TEMPLATE, strlen(DAILY_TEMPLATE), &def, detail), RL_OK);
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_template_def(&buf, &def);
    assert_false(buf.failed);
    assert_true(strncmp(buf.data, "{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\",\"kind\":\"rolling\"", 62) == 0);
    assert_int_equal(decode_n(buf.data, buf.len, &again, detail), RL_OK);
    assert_true(rl__limit_def_equal(&def, &again));
    rl__buf_free(&buf);
    for (size_t cut = 0; cut < strlen(DAILY_TEMPLATE); cut++)
        assert_int_equal(decode_n(DAILY_TEMPLATE, cut, &again, detail), RL_INVALID_REQUEST);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_valid),
        cmocka_unit_test(test_template_refused),
        cmocka_unit_test(test_rules_are_the_definitions),
        cmocka_unit_test(test_template_round_trip_and_truncations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
