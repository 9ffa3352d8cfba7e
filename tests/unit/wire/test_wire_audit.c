/* test_wire_audit.c — the audit log on the wire: the daemon's page encoder
 * read back by the http limiter's strict decoder, the request path with
 * its percent-encoded key, and every answer the decoder must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/wire.h"

#define LEASE "01JD5Z8Q6X4W8N1V0M9R7T3K2A"
#define ENTRY(at, lease, job, key, reserved, actual, period, expired)                                           \
    "{\"at_unix_ms\":" #at ",\"lease_id\":\"" lease "\",\"job_id\":\"" job "\",\"key\":\"" key                   \
    "\",\"reserved\":" #reserved ",\"actual\":" #actual ",\"period_start_unix_ms\":" #period ",\"expired\":" #expired \
    "}"

static rl_audit_entry entries[8];

/* Decodes text (copied: the decoder works in place) for key since limit. */
static rl_status decode(const char *text, const char *key, uint64_t since, uint32_t limit, rl_audit_page *page) {
    rl_audit_query query = {key, since, limit};
    page->entries = entries;
    page->count = 99;
    char *body = strdup(text);
    assert_non_null(body);
    rl_status status = rl__wire_decode_audit_answer(body, strlen(body), &query, page);
    free(body);
    return status;
}

static void expect_refused(const char *text) {
    rl_audit_page page;
    if (decode(text, "t:spend", 100, 3, &page) != RL_INVALID_REQUEST) fail_msg("taken: %s", text);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.next_since_unix_ms, 100);
}

static void test_page_encodes_in_api_order(void **state) {
    (void)state;
    rl_audit_entry two[2] = {
        {1764058800123u, LEASE, "job \"7\"", "t:spend", 400, 150, 1761955200000u, false},
        {1764058800999u, LEASE, "", "t:spend", 50, 0, 1761955200000u, true},
    };
    rl_audit_page page = {two, 2, 1764058801000u};
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_audit_page(&buf, &page);
    assert_false(buf.failed);
    assert_string_equal(buf.data,
                        "{\"entries\":[" ENTRY(1764058800123, LEASE, "job \\\"7\\\"", "t:spend", 400, 150,
                                               1761955200000, false) ","
                        ENTRY(1764058800999, LEASE, "", "t:spend", 50, 0, 1761955200000, true)
                        "],\"next_since_unix_ms\":1764058801000}");
    /* And the client reads back what the daemon wrote. */
    rl_audit_page read;
    assert_int_equal(decode(buf.data, "t:spend", 0, 2, &read), RL_OK);
    assert_int_equal(read.count, 2);
    assert_int_equal(read.next_since_unix_ms, 1764058801000u);
    assert_int_equal(read.entries[0].at_unix_ms, 1764058800123u);
    assert_string_equal(read.entries[0].lease_id, LEASE);
    assert_string_equal(read.entries[0].job_id, "job \"7\"");
    assert_string_equal(read.entries[0].key, "t:spend");
    assert_int_equal(read.entries[0].reserved, 400);
    assert_int_equal(read.entries[0].actual, 150);
    assert_int_equal(read.entries[0].period_start_unix_ms, 1761955200000u);
    assert_false(read.entries[0].expired);
    assert_true(read.entries[1].expired);
    assert_string_equal(read.entries[1].job_id, "");

    rl__buf_reset(&buf);
    page.count = 0;
    page.next_since_unix_ms = 5;
    rl__wire_encode_audit_page(&buf, &page);
    assert_string_equal(buf.data, "{\"entries\":[],\"next_since_unix_ms\":5}");
    rl__buf_free(&buf);
}

static void test_path_escapes_the_key(void **state) {
    (void)state;
    rl_buf buf;
    rl__buf_init(&buf);
    rl_audit_query query = {"tenant:acme:spend", 1764058800123u, 100};
    rl__wire_encode_audit_path(&buf, &query);
    assert_string_equal(buf.data, "/v1/admin/audit?key=tenant:acme:spend&since_unix_ms=1764058800123&limit=100");
    rl__buf_reset(&buf);
    query = (rl_audit_query){"a&b=c+d%e/f?g#h", 0, 1000};
    rl__wire_encode_audit_path(&buf, &query);
    assert_string_equal(buf.data, "/v1/admin/audit?key=a%26b%3Dc%2Bd%25e%2Ff%3Fg%23h&since_unix_ms=0&limit=1000");
    /* The longest key, every byte escaped, fits whole. */
    char key[RL_KEY_MAX_LEN + 1];
    memset(key, '%', RL_KEY_MAX_LEN);
    key[RL_KEY_MAX_LEN] = '\0';
    rl__buf_reset(&buf);
    query = (rl_audit_query){key, 0, 1};
    rl__wire_encode_audit_path(&buf, &query);
    assert_int_equal(buf.len, strlen("/v1/admin/audit?key=") + 3 * RL_KEY_MAX_LEN + strlen("&since_unix_ms=0&limit=1"));
    rl__buf_free(&buf);

    char out[8];
    assert_int_equal(rl__wire_percent_encode("a b", out, sizeof out), 5);
    assert_string_equal(out, "a%20b");
    assert_int_equal(rl__wire_percent_encode("abc d", out, 6), 3); /* whole escapes only */
    assert_string_equal(out, "abc");
}

static void test_answers_taken(void **state) {
    (void)state;
    rl_audit_page page;
    /* Lower case lease ids come back upper case; unknown members are skipped;
     * entries of the same millisecond keep their order. */
    assert_int_equal(decode("{\"next_since_unix_ms\":300,\"extra\":[1,{}],\"entries\":["
                            ENTRY(100, "01jd5z8q6x4w8n1v0m9r7t3k2a", "j", "t:spend", 5, 5, 0, false) ","
                            "{\"new\":1,\"at_unix_ms\":100,\"lease_id\":\"" LEASE "\",\"job_id\":\"j\","
                            "\"key\":\"t:spend\",\"reserved\":5,\"actual\":0,\"period_start_unix_ms\":0,"
                            "\"expired\":true},"
                            ENTRY(2.99e2, LEASE, "j", "t:spend", 1e1, 7.0, 0, false) "]}",
                            "t:spend", 100, 3, &page),
                     RL_OK);
    assert_int_equal(page.count, 3);
    assert_string_equal(page.entries[0].lease_id, LEASE);
    assert_true(page.entries[1].expired);
    assert_int_equal(page.entries[2].at_unix_ms, 299);
    assert_int_equal(page.entries[2].reserved, 10);
    assert_int_equal(page.next_since_unix_ms, 300);
    assert_int_equal(decode("{\"entries\":[],\"next_since_unix_ms\":100}", "t:spend", 100, 3, &page), RL_OK);
    assert_int_equal(page.count, 0);
}

static void test_answers_refused(void **state) {
    (void)state;
    expect_refused("");
    expect_refused("[]");
    expect_refused("{\"entries\":[]}");                                             /* no next */
    expect_refused("{\"next_since_unix_ms\":100}");                                 /* no entries */
    expect_refused("{\"entries\":[],\"next_since_unix_ms\":99}");                   /* next before since */
    expect_refused("{\"entries\":[],\"next_since_unix_ms\":-1}");
    expect_refused("{\"entries\":[],\"next_since_unix_ms\":100.5}");
    expect_refused("{\"entries\":[],\"entries\":[],\"next_since_unix_ms\":100}"); /* entries twice */
    expect_refused("{\"entries\":[],\"next_since_unix_ms\":100,\"next_since_unix_ms\":100}");
    expect_refused("{\"entries\":[],\"next_since_unix_ms\":100} x");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, false) ",],\"next_since_unix_ms\":100}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":10");
    /* An entry of another key, before since, out of order, too many. */
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:other", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(99, LEASE, "j", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(101, LEASE, "j", "t:spend", 5, 5, 0, false) "," ENTRY(
        100, LEASE, "j", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, false) "," ENTRY(
        100, LEASE, "j", "t:spend", 5, 5, 0, false) "," ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, false) "," ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    /* An expired entry charged something. */
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, 1, 0, true) "],\"next_since_unix_ms\":101}");
    /* Fields: missing, twice, of the wrong type or value. */
    expect_refused("{\"entries\":[{\"at_unix_ms\":100,\"lease_id\":\"" LEASE "\",\"job_id\":\"j\",\"key\":\"t:spend\","
                   "\"reserved\":5,\"actual\":5,\"period_start_unix_ms\":0}],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[{\"at_unix_ms\":100,\"at_unix_ms\":100,\"lease_id\":\"" LEASE "\",\"job_id\":\"j\","
                   "\"key\":\"t:spend\",\"reserved\":5,\"actual\":5,\"period_start_unix_ms\":0,\"expired\":false}],"
                   "\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, "01JD5Z8Q6X4W8N1V0M9R7T3K2", "j", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j\\u0007", "t:spend", 5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", -5, 5, 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, 5, 0, 0) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[" ENTRY(100, LEASE, "j", "t:spend", 5, "5", 0, false) "],\"next_since_unix_ms\":101}");
    expect_refused("{\"entries\":[7],\"next_since_unix_ms\":101}");
    /* A job id longer than api.md allows. */
    char text[1024];
    char job[RL_JOB_ID_MAX_LEN + 2];
    memset(job, 'j', sizeof job - 1);
    job[sizeof job - 1] = '\0';
    snprintf(text, sizeof text,
             "{\"entries\":[{\"at_unix_ms\":100,\"lease_id\":\"" LEASE "\",\"job_id\":\"%s\",\"key\":\"t:spend\","
             "\"reserved\":5,\"actual\":5,\"period_start_unix_ms\":0,\"expired\":false}],\"next_since_unix_ms\":101}",
             job);
    expect_refused(text);
    job[sizeof job - 2] = '\0'; /* 128 bytes: taken */
    snprintf(text, sizeof text,
             "{\"entries\":[{\"at_unix_ms\":100,\"lease_id\":\"" LEASE "\",\"job_id\":\"%s\",\"key\":\"t:spend\","
             "\"reserved\":5,\"actual\":5,\"period_start_unix_ms\":0,\"expired\":false}],\"next_since_unix_ms\":101}",
             job);
    rl_audit_page page;
    assert_int_equal(decode(text, "t:spend", 100, 3, &page), RL_OK);
    assert_int_equal(strlen(page.entries[0].job_id), RL_JOB_ID_MAX_LEN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_encodes_in_api_order),
        cmocka_unit_test(test_path_escapes_the_key),
        cmocka_unit_test(test_answers_taken),
        cmocka_unit_test(test_answers_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
