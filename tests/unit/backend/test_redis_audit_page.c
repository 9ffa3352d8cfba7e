/* test_redis_audit_page.c — reading a page of the audit log out of Redis's
 * XRANGE answer (backend/redis/audit_page.h), fed as RESP through hiredis's
 * own reader: entries in order with their key, lease ids upper-cased, a page
 * never ending inside a millisecond that has more (unless that millisecond
 * is all it has), and every answer the scripts would not write refused
 * whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "backend/redis/audit_page.h"

#define LEASE "01JAAAAAAAAAAAAAAAAAAAAAAA"

/* RESP text -> a reply (the caller frees it). */
static redisReply *reply_of(const char *resp) {
    redisReader *reader = redisReaderCreate();
    assert_int_equal(redisReaderFeed(reader, resp, strlen(resp)), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(reader, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(reader);
    return reply;
}

/* One XRANGE entry as RESP: id and the six fields audit.lua writes. */
static void entry(char *out, size_t size, const char *id, const char *lease, const char *job, const char *reserved,
                  const char *actual, const char *period, const char *expired) {
    snprintf(out, size,
             "*2\r\n$%zu\r\n%s\r\n*12\r\n$1\r\nl\r\n$%zu\r\n%s\r\n$1\r\nj\r\n$%zu\r\n%s\r\n$1\r\nr\r\n$%zu\r\n%s\r\n"
             "$1\r\na\r\n$%zu\r\n%s\r\n$1\r\np\r\n$%zu\r\n%s\r\n$1\r\nx\r\n$%zu\r\n%s\r\n",
             strlen(id), id, strlen(lease), lease, strlen(job), job, strlen(reserved), reserved, strlen(actual),
             actual, strlen(period), period, strlen(expired), expired);
}

/* A page of entries at the given ms ids, each otherwise alike. */
static redisReply *page_at(const char *const *ids, size_t n) {
    static char resp[16384];
    size_t at = (size_t)snprintf(resp, sizeof resp, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++) {
        entry(resp + at, sizeof resp - at, ids[i], LEASE, "", "5", "4", "0", "0");
        at += strlen(resp + at);
    }
    return reply_of(resp);
}

static void reads_entries_in_order_with_their_key(void **state) {
    (void)state;
    char resp[4096], one[1024], two[1024];
    entry(one, sizeof one, "1700000000000-0", "01jaaaaaaaaaaaaaaaaaaaaaaa", "job \"a\" \xc3\xa9", "300", "120", "0", "0");
    entry(two, sizeof two, "1700000000001-3", LEASE, "", "2000", "0", "1699999200000", "1");
    snprintf(resp, sizeof resp, "*2\r\n%s%s", one, two);
    redisReply *reply = reply_of(resp);
    rl_audit_entry entries[4];
    rl_audit_page page = {entries, 99, 0};
    assert_true(rl__redis_audit_page_read(reply, "tenant:usd", 5, 3, &page));
    assert_int_equal(page.count, 2);
    assert_int_equal(page.next_since_unix_ms, 1700000000002u);
    assert_int_equal(entries[0].at_unix_ms, 1700000000000u);
    assert_string_equal(entries[0].lease_id, LEASE);
    assert_string_equal(entries[0].job_id, "job \"a\" \xc3\xa9");
    assert_string_equal(entries[0].key, "tenant:usd");
    assert_int_equal(entries[0].reserved, 300);
    assert_int_equal(entries[0].actual, 120);
    assert_false(entries[0].expired);
    assert_int_equal(entries[1].period_start_unix_ms, 1699999200000u);
    assert_true(entries[1].expired);
    freeReplyObject(reply);

    reply = reply_of("*0\r\n");
    assert_true(rl__redis_audit_page_read(reply, "k", 77, 3, &page));
    assert_int_equal(page.count, 0);
    assert_int_equal(page.next_since_unix_ms, 77);
    freeReplyObject(reply);
}

/* Asked with COUNT limit + 1: the extra entry tells whether the page's last
 * millisecond goes on. */
static void a_page_never_ends_inside_a_millisecond(void **state) {
    (void)state;
    rl_audit_entry entries[4];
    rl_audit_page page = {entries, 0, 0};
    const char *cut[] = {"10-0", "10-1", "12-0", "12-1", "12-2"}; /* limit 4: 12 goes on */
    redisReply *reply = page_at(cut, 5);
    assert_true(rl__redis_audit_page_read(reply, "k", 0, 4, &page));
    assert_int_equal(page.count, 2);
    assert_int_equal(page.next_since_unix_ms, 11);
    freeReplyObject(reply);
    const char *ends[] = {"10-0", "10-1", "12-0", "12-1", "13-0"}; /* limit 4: 12 ends with the page */
    reply = page_at(ends, 5);
    assert_true(rl__redis_audit_page_read(reply, "k", 0, 4, &page));
    assert_int_equal(page.count, 4);
    assert_int_equal(page.next_since_unix_ms, 13);
    freeReplyObject(reply);
    const char *one_ms[] = {"12-0", "12-1", "12-2"}; /* limit 2: 12 is all there is */
    reply = page_at(one_ms, 3);
    assert_true(rl__redis_audit_page_read(reply, "k", 9, 2, &page));
    assert_int_equal(page.count, 2);
    assert_int_equal(page.next_since_unix_ms, 13); /* 12's third entry is in no page */
    freeReplyObject(reply);
}

/* Whatever audit.lua would not write is refused, never half read. */
static void refuses_what_the_scripts_do_not_write(void **state) {
    (void)state;
    char one[1024], resp[2048];
    struct {
        const char *id, *lease, *job, *reserved, *actual, *period, *expired;
    } bad[] = {
        {"12", LEASE, "", "1", "1", "0", "0"},                      /* an id without its sequence */
        {"x-0", LEASE, "", "1", "1", "0", "0"},                     /* an id that is no number */
        {"12-0", "01JAAAAAAAAAAAAAAAAAAAAAA", "", "1", "1", "0", "0"}, /* 25 characters */
        {"12-0", "81JAAAAAAAAAAAAAAAAAAAAAAA", "", "1", "1", "0", "0"}, /* beyond 48 bits */
        {"12-0", LEASE, "a\tb", "1", "1", "0", "0"},                /* a control character */
        {"12-0", LEASE, "\xff", "1", "1", "0", "0"},                /* not UTF-8 */
        {"12-0", LEASE, "", "9007199254740993", "1", "0", "0"},     /* above RL_AMOUNT_MAX */
        {"12-0", LEASE, "", "1", "-1", "0", "0"},
        {"12-0", LEASE, "", "1", "1", "0", "2"},
        {"12-0", LEASE, "", "1", "", "0", "0"},
        {"3-0", LEASE, "", "1", "1", "0", "0"}, /* before since */
    };
    rl_audit_entry entries[2];
    rl_audit_page page = {entries, 0, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        entry(one, sizeof one, bad[i].id, bad[i].lease, bad[i].job, bad[i].reserved, bad[i].actual, bad[i].period,
              bad[i].expired);
        snprintf(resp, sizeof resp, "*1\r\n%s", one);
        redisReply *reply = reply_of(resp);
        if (rl__redis_audit_page_read(reply, "k", 5, 2, &page)) fail_msg("case %zu was read", i);
        assert_int_equal(page.count, 0);
        assert_int_equal(page.next_since_unix_ms, 5);
        freeReplyObject(reply);
    }
    const char *shapes[] = {
        "$2\r\nno\r\n",                                              /* not an array */
        "*1\r\n*1\r\n$4\r\n12-0\r\n",                                /* an entry without fields */
        "*1\r\n*2\r\n$4\r\n12-0\r\n*1\r\n$1\r\nl\r\n",               /* a field without its value */
        "*1\r\n*2\r\n$4\r\n12-0\r\n*2\r\n$1\r\nl\r\n:1\r\n",         /* a value that is no string */
        "*1\r\n*2\r\n$4\r\n12-0\r\n*2\r\n$1\r\nr\r\n$1\r\n1\r\n",    /* fields missing */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        redisReply *reply = reply_of(shapes[i]);
        if (rl__redis_audit_page_read(reply, "k", 5, 2, &page)) fail_msg("shape %zu was read", i);
        freeReplyObject(reply);
    }
    /* out of order, also when only the look-ahead entry is */
    const char *backwards[] = {"12-0", "11-0"};
    redisReply *reply = page_at(backwards, 2);
    assert_false(rl__redis_audit_page_read(reply, "k", 0, 2, &page));
    assert_false(rl__redis_audit_page_read(reply, "k", 0, 1, &page));
    freeReplyObject(reply);
    /* a field of a later build is passed over */
    entry(one, sizeof one, "12-0", LEASE, "", "1", "1", "0", "0");
    one[strlen("*2\r\n$4\r\n12-0\r\n*1")] = '4'; /* *12 -> *14 fields */
    snprintf(resp, sizeof resp, "*1\r\n%s$2\r\nzz\r\n$1\r\n9\r\n", one);
    reply = reply_of(resp);
    assert_true(rl__redis_audit_page_read(reply, "k", 5, 2, &page));
    assert_int_equal(page.count, 1);
    freeReplyObject(reply);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_entries_in_order_with_their_key),
        cmocka_unit_test(a_page_never_ends_inside_a_millisecond),
        cmocka_unit_test(refuses_what_the_scripts_do_not_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
