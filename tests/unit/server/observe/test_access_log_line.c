/* test_access_log_line.c — one access log line: every field in both
 * formats, JSON that cJSON reads back to the same strings whatever a job_id
 * holds, text that stays one line, the time's form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/observe/access_log_line.h"

static const char *const now = "2026-11-28T07:48:03.123Z";

/* A denied single reserve. */
static rl_api_outcome denied_reserve(const char *job_id) {
    rl_api_outcome o;
    memset(&o, 0, sizeof o);
    o.endpoint = RL_API_RESERVE;
    o.http_status = 200;
    o.items = 1;
    o.results[RL_API_RESULT_DENIED_CAPACITY] = 1;
    o.first_result = RL_API_RESULT_DENIED_CAPACITY;
    o.lease_id = "01JH0000000000000000000001";
    o.job_id = job_id;
    snprintf(o.denied_by_key, sizeof o.denied_by_key, "global:llm:openai:gpt-4o:tpm");
    return o;
}

static char *format(rl_access_log_format f, const rl_api_outcome *o, uint64_t latency_us, char *out) {
    size_t len = rl_access_log_line_format(f, now, o, latency_us, out);
    assert_true(len > 0 && len <= RL_ACCESS_LOG_LINE_MAX);
    assert_int_equal(out[len - 1], '\n');
    assert_null(memchr(out, '\n', len - 1)); /* one line */
    out[len] = '\0';
    return out;
}

static void test_json_line(void **state) {
    (void)state;
    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    rl_api_outcome o = denied_reserve("batch-7");
    assert_string_equal(format(RL_ACCESS_LOG_JSON, &o, 41, line),
                        "{\"time\":\"2026-11-28T07:48:03.123Z\",\"endpoint\":\"reserve\",\"status\":200,"
                        "\"lease_id\":\"01JH0000000000000000000001\",\"job_id\":\"batch-7\","
                        "\"decision\":\"denied_capacity\",\"denied_by\":\"global:llm:openai:gpt-4o:tpm\","
                        "\"items\":1,\"denied\":1,\"latency_us\":41}\n");

    /* Nothing to say: null. */
    rl_api_outcome health;
    memset(&health, 0, sizeof health);
    health.endpoint = RL_API_HEALTHZ;
    health.http_status = 200;
    assert_string_equal(format(RL_ACCESS_LOG_JSON, &health, 7, line),
                        "{\"time\":\"2026-11-28T07:48:03.123Z\",\"endpoint\":\"healthz\",\"status\":200,"
                        "\"lease_id\":null,\"job_id\":null,\"decision\":null,\"denied_by\":null,"
                        "\"items\":0,\"denied\":0,\"latency_us\":7}\n");
}

static void test_text_line(void **state) {
    (void)state;
    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    rl_api_outcome o = denied_reserve("batch-7");
    assert_string_equal(format(RL_ACCESS_LOG_TEXT, &o, 41, line),
                        "2026-11-28T07:48:03.123Z reserve 200 lease_id=01JH0000000000000000000001 job_id=batch-7 "
                        "decision=denied_capacity denied_by=global:llm:openai:gpt-4o:tpm items=1 denied=1 "
                        "latency_us=41\n");
    /* A batch: the first item's decision, and how many were denied. */
    o.endpoint = RL_API_RESERVE_BATCH;
    o.items = 3;
    o.results[RL_API_RESULT_ALLOWED] = 1;
    o.results[RL_API_RESULT_DENIED_DECREASING] = 1;
    o.first_result = RL_API_RESULT_ALLOWED;
    o.job_id = NULL;
    assert_string_equal(format(RL_ACCESS_LOG_TEXT, &o, 1234567, line),
                        "2026-11-28T07:48:03.123Z reserve_batch 200 lease_id=01JH0000000000000000000001 job_id=- "
                        "decision=allowed denied_by=global:llm:openai:gpt-4o:tpm items=3 denied=2 "
                        "latency_us=1234567\n");
    /* Anything that is not a plain word is quoted, "-" too (it means none). */
    const struct {
        const char *job_id, *written;
    } cases[] = {
        {"two words", "job_id=\"two words\" "},
        {"say \"hi\"", "job_id=\"say \\\"hi\\\"\" "},
        {"a=b", "job_id=\"a=b\" "},
        {"back\\slash", "job_id=\"back\\\\slash\" "},
        {"-", "job_id=\"-\" "},
        {"", "job_id=\"\" "},
        {"line\nbreak\ttab\r", "job_id=\"line\\nbreak\\ttab\\r\" "},
        {"bell\x07" "del\x7f", "job_id=\"bell\\x07del\\x7f\" "},
        {"caf\xc3\xa9", "job_id=\"caf\xc3\xa9\" "},           /* valid UTF-8 kept */
        {"bad\xc3(\xff", "job_id=\"bad\\xc3(\\xff\" "},        /* invalid bytes escaped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.job_id = cases[i].job_id;
        format(RL_ACCESS_LOG_TEXT, &o, 1, line);
        if (strstr(line, cases[i].written) == NULL) fail_msg("%zu: \"%s\" not in %s", i, cases[i].written, line);
    }
}

/* Whatever job_id and lease_id hold, the JSON line parses, and valid UTF-8
 * reads back exactly; an invalid byte reads back as U+FFFD. */
static void test_json_escaping_round_trips(void **state) {
    (void)state;
    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    const struct {
        const char *job_id, *read_back;
    } cases[] = {
        {"plain", "plain"},
        {"quote \" backslash \\ slash /", "quote \" backslash \\ slash /"},
        {"controls \x01\x1f\n\t\r end", "controls \x01\x1f\n\t\r end"},
        {"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"},
        {"cut \xe6\x97", "cut \xef\xbf\xbd\xef\xbf\xbd"},
        {"\xc0\xaf overlong", "\xef\xbf\xbd\xef\xbf\xbd overlong"},
        {"\xed\xa0\x80 surrogate", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd surrogate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_api_outcome o = denied_reserve(cases[i].job_id);
        o.lease_id = cases[i].job_id; /* a refused item's lease id is free text too */
        format(RL_ACCESS_LOG_JSON, &o, 3, line);
        cJSON *json = cJSON_Parse(line);
        if (json == NULL) fail_msg("%zu: not JSON: %s", i, line);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(json, "job_id")->valuestring, cases[i].read_back);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(json, "lease_id")->valuestring, cases[i].read_back);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(json, "latency_us")->valuedouble, 3);
        cJSON_Delete(json);
    }
}

/* A job_id the API accepts may hold the characters that end a line for
 * readers other than a split on '\n' (NEL and the other C1 controls, the
 * line and paragraph separators): written escaped in both formats, so the
 * line stays one, and read back exactly. */
static void test_line_breaking_characters_escaped(void **state) {
    (void)state;
    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    const char *job_id = "a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9" "d\xc2\x9b" "e\xc2\xa0" "f\xe2\x80\xaf";
    rl_api_outcome o = denied_reserve(job_id);
    format(RL_ACCESS_LOG_TEXT, &o, 1, line);
    /* U+00A0 and U+202F, spaces that break no line, stay as they are */
    const char *text = "job_id=\"a\\xc2\\x85b\\xe2\\x80\\xa8c\\xe2\\x80\\xa9d\\xc2\\x9be\xc2\xa0" "f\xe2\x80\xaf\" ";
    if (strstr(line, text) == NULL) fail_msg("\"%s\" not in %s", text, line);
    format(RL_ACCESS_LOG_JSON, &o, 1, line);
    const char *json_text = "\"job_id\":\"a\\u0085b\\u2028c\\u2029d\\u009be\xc2\xa0" "f\xe2\x80\xaf\"";
    if (strstr(line, json_text) == NULL) fail_msg("\"%s\" not in %s", json_text, line);
    cJSON *json = cJSON_Parse(line);
    assert_non_null(json);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(json, "job_id")->valuestring, job_id);
    cJSON_Delete(json);
}

/* Every string at its bound, every byte escaped: the line still fits, and
 * longer strings are cut. */
static void test_longest_line_fits(void **state) {
    (void)state;
    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    static char lease_id[1000], job_id[1000];
    memset(lease_id, 0x01, sizeof lease_id - 1);
    memset(job_id, 0xff, sizeof job_id - 1);
    rl_api_outcome o = denied_reserve(job_id);
    o.lease_id = lease_id;
    memset(o.denied_by_key, '"', RL_KEY_MAX_LEN);
    o.denied_by_key[RL_KEY_MAX_LEN] = '\0';
    o.http_status = 503;
    o.endpoint = RL_API_COMPLETE_BATCH;
    o.items = UINT32_MAX;
    for (rl_access_log_format f = RL_ACCESS_LOG_TEXT; f <= RL_ACCESS_LOG_JSON; f++) {
        size_t len = rl_access_log_line_format(f, now, &o, UINT64_MAX, line);
        assert_true(len <= RL_ACCESS_LOG_LINE_MAX);
        line[len] = '\0';
        if (f == RL_ACCESS_LOG_JSON) {
            cJSON *json = cJSON_Parse(line);
            assert_non_null(json);
            assert_int_equal(strlen(cJSON_GetObjectItemCaseSensitive(json, "job_id")->valuestring),
                             RL_ACCESS_LOG_JOB_ID_MAX * 3); /* U+FFFD is 3 bytes */
            cJSON_Delete(json);
        }
    }
}

static void test_time_and_format_names(void **state) {
    (void)state;
    char text[RL_ACCESS_LOG_TIME_SIZE];
    rl_access_log_time_format(0, text);
    assert_string_equal(text, "1970-01-01T00:00:00.000Z");
    rl_access_log_time_format(INT64_C(1795851483123), text);
    assert_string_equal(text, "2026-11-28T07:38:03.123Z");
    rl_access_log_time_format(INT64_C(951782400999), text); /* a leap day */
    assert_string_equal(text, "2000-02-29T00:00:00.999Z");
    rl_access_log_time_format(-1, text);
    assert_string_equal(text, "0000-00-00T00:00:00.000Z");

    rl_access_log_format f;
    assert_true(rl_access_log_format_parse("json", &f) && f == RL_ACCESS_LOG_JSON);
    assert_true(rl_access_log_format_parse("text", &f) && f == RL_ACCESS_LOG_TEXT);
    assert_true(rl_access_log_format_parse("off", &f) && f == RL_ACCESS_LOG_OFF);
    assert_false(rl_access_log_format_parse("Json", &f));
    assert_false(rl_access_log_format_parse("", &f));
    assert_string_equal(rl_access_log_format_name(RL_ACCESS_LOG_JSON), "json");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_line),
        cmocka_unit_test(test_text_line),
        cmocka_unit_test(test_json_escaping_round_trips),
        cmocka_unit_test(test_line_breaking_characters_escaped),
        cmocka_unit_test(test_longest_line_fits),
        cmocka_unit_test(test_time_and_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
