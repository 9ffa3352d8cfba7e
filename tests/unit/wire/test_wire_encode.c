/* test_wire_encode.c — the exact response strings of docs/api.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "wire/wire.h"

static rl_buf buf;

/* What an unknown key's detail says after "no limit has the key <key>: ". */
#define UNKNOWN_KEY_ADVICE "define it (PUT /v1/admin/limits, or a template that matches it) and retry; nothing was reserved"

static int setup(void **state) {
    (void)state;
    rl__buf_init(&buf);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    rl__buf_free(&buf);
    return 0;
}

static const char *reserve_json(bool allowed, uint64_t retry_after_ms, uint64_t reserved_at,
                                rl_status status, const char *key) {
    rl_reserve_result result = {allowed, retry_after_ms, reserved_at, status, key, {0}};
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_result(&buf, &result, false);
    assert_false(buf.failed);
    assert_int_equal(strlen(buf.data), buf.len);
    return buf.data;
}

static void test_reserve_allowed(void **state) {
    (void)state;
    assert_string_equal(reserve_json(true, 0, UINT64_C(1736660000000), RL_OK, NULL),
                        "{\"allowed\":true,\"retry_after_ms\":0,"
                        "\"reserved_at_unix_ms\":1736660000000,\"error\":\"\"}");
}

static void test_reserve_denied(void **state) {
    (void)state;
    assert_string_equal(reserve_json(false, 120, 0, RL_OK, NULL),
                        "{\"allowed\":false,\"retry_after_ms\":120,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"\"}");
    /* A denial never shows a reservation time, whatever the backend left. */
    assert_string_equal(reserve_json(false, 5, 99, RL_OK, NULL),
                        "{\"allowed\":false,\"retry_after_ms\":5,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"\"}");
}

static void test_reserve_errors_naming_a_key(void **state) {
    (void)state;
    /* docs/api.md: no space after the colon. An unknown key's detail names it
     * too, and says what to do. */
    assert_string_equal(reserve_json(false, 0, 0, RL_UNKNOWN_LIMIT_KEY, "tenant:foo:llm:daily_tokens"),
                        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"unknown_limit_key:tenant:foo:llm:daily_tokens\","
                        "\"detail\":\"no limit has the key tenant:foo:llm:daily_tokens: " UNKNOWN_KEY_ADVICE "\"}");
    assert_string_equal(reserve_json(false, 10000, 0, RL_LIMIT_DECREASING,
                                     "global:llm:openai:gpt-4o:tpm"),
                        "{\"allowed\":false,\"retry_after_ms\":10000,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"limit_decreasing:global:llm:openai:gpt-4o:tpm\"}");
    assert_string_equal(reserve_json(false, 0, 0, RL_EXCEEDS_CAPACITY, "k"),
                        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"exceeds_capacity:k\"}");
    /* Keys may hold '"' and '\\': escaped inside the one string. */
    assert_string_equal(reserve_json(false, 0, 0, RL_UNKNOWN_LIMIT_KEY, "a\"b\\c"),
                        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"unknown_limit_key:a\\\"b\\\\c\","
                        "\"detail\":\"no limit has the key a\\\"b\\\\c: " UNKNOWN_KEY_ADVICE "\"}");
}

static void test_reserve_plain_errors(void **state) {
    (void)state;
    const char *expected_backend = "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                   "\"error\":\"backend_error\"}";
    assert_string_equal(reserve_json(false, 0, 0, RL_BACKEND_ERROR, NULL), expected_backend);
    assert_string_equal(reserve_json(false, 0, 0, RL_NO_MEMORY, NULL), expected_backend);
    assert_string_equal(reserve_json(false, 0, 0, RL_IO_ERROR, NULL), expected_backend);
    /* A key given with a status that names none is not shown. */
    assert_string_equal(reserve_json(false, 0, 0, RL_BACKEND_ERROR, "k"), expected_backend);
    assert_string_equal(reserve_json(false, 0, 0, RL_INVALID_REQUEST, NULL),
                        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"invalid_request\"}");
    /* A conflict says why, whichever backend and road it took. */
    assert_string_equal(reserve_json(false, 0, 0, RL_LEASE_ID_CONFLICT, NULL),
                        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                        "\"error\":\"lease_id_conflict\",\"detail\":\"this lease id was reserved before with "
                        "other requirements (keys or amounts): a retry must send the same request; a new request "
                        "needs a new lease id\"}");
}

static void test_reserve_extreme_numbers(void **state) {
    (void)state;
    assert_string_equal(reserve_json(true, UINT64_MAX, UINT64_MAX, RL_OK, NULL),
                        "{\"allowed\":true,\"retry_after_ms\":18446744073709551615,"
                        "\"reserved_at_unix_ms\":18446744073709551615,\"error\":\"\"}");
}

static const char *error_string(rl_status status, const char *key) {
    rl__buf_reset(&buf);
    rl__wire_encode_error_string(&buf, status, key);
    return buf.data;
}

/* A dry run answers exactly what a reserve would, "dry_run":true last
 * (after denied_by). */
static void test_reserve_dry_run(void **state) {
    (void)state;
    rl_reserve_result allowed = {true, 0, UINT64_C(1736660000000), RL_OK, NULL, {0}};
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_result(&buf, &allowed, true);
    assert_string_equal(buf.data, "{\"allowed\":true,\"retry_after_ms\":0,"
                                  "\"reserved_at_unix_ms\":1736660000000,\"error\":\"\",\"dry_run\":true}");
    rl_reserve_result denied = {false, 120, 0, RL_OK, NULL, {"g:tpm", RL_DENIAL_CAPACITY, 1800, 1200, 90000, 0}};
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_result(&buf, &denied, true);
    assert_string_equal(buf.data, "{\"allowed\":false,\"retry_after_ms\":120,\"reserved_at_unix_ms\":0,\"error\":\"\","
                                  "\"denied_by\":{\"key\":\"g:tpm\",\"reason\":\"capacity\",\"requested\":1800,"
                                  "\"available\":1200,\"capacity\":90000},\"dry_run\":true}");
    rl_reserve_result unknown = {false, 0, 0, RL_UNKNOWN_LIMIT_KEY, "g:rpd", {0}};
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_result(&buf, &unknown, true);
    assert_string_equal(buf.data, "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                  "\"error\":\"unknown_limit_key:g:rpd\","
                                  "\"detail\":\"no limit has the key g:rpd: " UNKNOWN_KEY_ADVICE "\",\"dry_run\":true}");
}

static void test_error_strings(void **state) {
    (void)state;
    /* A JSON string literal, quotes included. */
    assert_string_equal(error_string(RL_OK, NULL), "\"\"");
    assert_string_equal(error_string(RL_OK, "k"), "\"\"");
    assert_string_equal(error_string(RL_INVALID_REQUEST, NULL), "\"invalid_request\"");
    assert_string_equal(error_string(RL_BACKEND_ERROR, NULL), "\"backend_error\"");
    assert_string_equal(error_string(RL_UNKNOWN_LIMIT_KEY, "x:y"), "\"unknown_limit_key:x:y\"");
    assert_string_equal(error_string(RL_LIMIT_DECREASING, "x"), "\"limit_decreasing:x\"");
    assert_string_equal(error_string(RL_EXCEEDS_CAPACITY, "x"), "\"exceeds_capacity:x\"");
    /* A key-naming status without its key: the bare name. */
    assert_string_equal(error_string(RL_UNKNOWN_LIMIT_KEY, NULL), "\"unknown_limit_key\"");
}

static void test_complete_results(void **state) {
    (void)state;
    rl__buf_reset(&buf);
    rl__wire_encode_complete_result(&buf, RL_OK);
    assert_string_equal(buf.data, "{\"ok\":true,\"error\":\"\"}");
    rl__buf_reset(&buf);
    rl__wire_encode_complete_result(&buf, RL_BACKEND_ERROR);
    assert_string_equal(buf.data, "{\"ok\":false,\"error\":\"backend_error\"}");
    rl__buf_reset(&buf);
    rl__wire_encode_complete_result(&buf, RL_INVALID_REQUEST);
    assert_string_equal(buf.data, "{\"ok\":false,\"error\":\"invalid_request\"}");
}

static void test_results_append(void **state) {
    (void)state;
    /* Encoders append: a batch response is built by the caller around them. */
    rl__buf_reset(&buf);
    rl__buf_append_str(&buf, "{\"results\":[");
    rl__wire_encode_complete_result(&buf, RL_OK);
    rl__buf_append_str(&buf, ",");
    rl__wire_encode_complete_result(&buf, RL_IO_ERROR);
    rl__buf_append_str(&buf, "]}");
    assert_string_equal(buf.data, "{\"results\":[{\"ok\":true,\"error\":\"\"},"
                                  "{\"ok\":false,\"error\":\"backend_error\"}]}");
}

static rl_limit_def sample_def(void) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    strcpy(def.key, "global:llm:openai:gpt-4o:rpm");
    def.kind = RL_KIND_ROLLING;
    def.capacity = 3000;
    def.window_seconds = 60;
    strcpy(def.unit, "requests");
    strcpy(def.description, "OpenAI gpt-4o requests per minute");
    def.overage = RL_OVERAGE_DEBT;
    return def;
}

#define SAMPLE_DEF_JSON                                                                        \
    "{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":3000,"         \
    "\"window_seconds\":60,\"timeout_seconds\":0,\"unit\":\"requests\",\"description\":\"OpenAI " \
    "gpt-4o requests per minute\",\"overage\":\"debt\"}"

static void test_limit_def(void **state) {
    (void)state;
    rl_limit_def def = sample_def();
    rl__buf_reset(&buf);
    rl__wire_encode_limit_def(&buf, &def);
    assert_string_equal(buf.data, SAMPLE_DEF_JSON);

    memset(&def, 0, sizeof def);
    strcpy(def.key, "k\"\\");
    def.kind = RL_KIND_CONCURRENCY;
    def.capacity = UINT64_C(9007199254740992);
    def.timeout_seconds = 600;
    strcpy(def.description, "line\nnext\ttab \x01 caf\xc3\xa9 \"q\"");
    def.overage = RL_OVERAGE_DENY;
    rl__buf_reset(&buf);
    rl__wire_encode_limit_def(&buf, &def);
    assert_string_equal(buf.data,
                        "{\"key\":\"k\\\"\\\\\",\"kind\":\"concurrency\",\"capacity\":9007199254740992,"
                        "\"window_seconds\":0,\"timeout_seconds\":600,\"unit\":\"\",\"description\":"
                        "\"line\\nnext\\ttab \\u0001 caf\xc3\xa9 \\\"q\\\"\",\"overage\":\"deny\"}");
}

static void test_limit_def_round_trip(void **state) {
    (void)state;
    rl_limit_def def = sample_def();
    strcpy(def.key, "a\"b\\c/d");
    strcpy(def.description, "\xe2\x82\xac per 1k tokens, \"quoted\"");
    def.overage = RL_OVERAGE_DENY;
    rl__buf_reset(&buf);
    rl__wire_encode_limit_def(&buf, &def);
    rl_limit_def back;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(rl__wire_decode_limit_def(buf.data, buf.len, &back, detail), RL_OK);
    assert_string_equal(back.key, def.key);
    assert_int_equal(back.kind, def.kind);
    assert_true(back.capacity == def.capacity);
    assert_int_equal(back.window_seconds, def.window_seconds);
    assert_int_equal(back.timeout_seconds, def.timeout_seconds);
    assert_string_equal(back.unit, def.unit);
    assert_string_equal(back.description, def.description);
    assert_int_equal(back.overage, def.overage);
}

static void test_limit_info(void **state) {
    (void)state;
    rl_limit_def def = sample_def();
    rl_limit_usage usage = {
        .status = RL_LIMIT_STATUS_ACTIVE,
        .capacity = 3000,
        .pending_decrease_to = 7, /* ignored unless decreasing */
        .used = 3100,
        .available = 0,
        .active = 12,
        .debt = 100,
        .debt_total = 250,
        .overage_denied_total = 3,
    };
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info(&buf, &def, &usage);
    assert_string_equal(buf.data,
                        "{\"definition\":" SAMPLE_DEF_JSON ",\"status\":\"active\","
                        "\"pending_decrease_to\":0,\"usage\":{\"capacity\":3000,\"used\":3100,"
                        "\"available\":0,\"active\":12,\"debt\":100,\"debt_total\":250,"
                        "\"overage_denied_total\":3}}");

    usage.status = RL_LIMIT_STATUS_DECREASING;
    usage.pending_decrease_to = 1000;
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info(&buf, &def, &usage);
    assert_string_equal(buf.data,
                        "{\"definition\":" SAMPLE_DEF_JSON ",\"status\":\"decreasing\","
                        "\"pending_decrease_to\":1000,\"usage\":{\"capacity\":3000,\"used\":3100,"
                        "\"available\":0,\"active\":12,\"debt\":100,\"debt_total\":250,"
                        "\"overage_denied_total\":3}}");

    /* Without live usage: the definition, active, no usage object. */
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info(&buf, &def, NULL);
    assert_string_equal(buf.data, "{\"definition\":" SAMPLE_DEF_JSON
                                  ",\"status\":\"active\",\"pending_decrease_to\":0}");

    /* Where the definition comes from, after everything v1 clients read;
     * nothing for an explicit limit. */
    usage.status = RL_LIMIT_STATUS_ACTIVE;
    usage.debt = usage.debt_total = usage.overage_denied_total = 0;
    const char *plain = "{\"definition\":" SAMPLE_DEF_JSON ",\"status\":\"active\",\"pending_decrease_to\":0,"
                        "\"usage\":{\"capacity\":3000,\"used\":3100,\"available\":0,\"active\":12,\"debt\":0,"
                        "\"debt_total\":0,\"overage_denied_total\":0}";
    char expected[2048];
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info_from(&buf, &def, &usage, &(rl_wire_limit_source){"", NULL});
    snprintf(expected, sizeof expected, "%s}", plain);
    assert_string_equal(buf.data, expected);
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info_from(&buf, &def, &usage, NULL);
    assert_string_equal(buf.data, expected);
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info_from(&buf, &def, &usage, &(rl_wire_limit_source){"tenant:{t}:x", NULL});
    snprintf(expected, sizeof expected, "%s,\"template\":\"tenant:{t}:x\"}", plain);
    assert_string_equal(buf.data, expected);
    rl__buf_reset(&buf);
    rl__wire_encode_limit_info_from(&buf, &def, &usage, &(rl_wire_limit_source){NULL, "openai-tier-1"});
    snprintf(expected, sizeof expected, "%s,\"preset\":\"openai-tier-1\"}", plain);
    assert_string_equal(buf.data, expected);
}

static void test_encoded_json_parses(void **state) {
    (void)state;
    /* Whatever the key holds (any printable ASCII), the output is valid JSON
     * that gives the key back. */
    char key[RL_KEY_MAX_LEN + 1];
    size_t n = 0;
    for (int c = 0x21; c <= 0x7e; c++) key[n++] = (char)c;
    key[n] = '\0';
    rl__buf_reset(&buf);
    rl__wire_encode_error_string(&buf, RL_UNKNOWN_LIMIT_KEY, key);
    cJSON *parsed = cJSON_ParseWithLength(buf.data, buf.len);
    assert_non_null(parsed);
    assert_true(cJSON_IsString(parsed));
    assert_string_equal(parsed->valuestring + strlen("unknown_limit_key:"), key);
    cJSON_Delete(parsed);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserve_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_denied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_errors_naming_a_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_plain_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_extreme_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_complete_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_results_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_def, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_def_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_info, setup, teardown),
        cmocka_unit_test_setup_teardown(test_encoded_json_parses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_dry_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
