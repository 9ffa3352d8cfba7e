/* test_redis_relay.c — Completes relayed through Redis between daemons with
 * allotments (redis_allot.h, complete.lua, redis_relay.c):
 *
 *  - the reader of XREAD's answer for the relay stream, fed as RESP through
 *    hiredis's own reader: every entry that reads as a relayed Complete (a
 *    ULID, then 0..32 pairs of a valid key and an amount up to 2^53, single
 *    spaces, nothing trailing, no key twice) is read in order, up to max;
 *    the others are skipped; last_id moves past every well-formed entry id
 *    it goes through, and stays where it was when there is none;
 *  - against a real redis-server: a backend with relaying on relays the
 *    Complete of a lease Redis does not know, which the next read finds with
 *    its lease id in upper case and its actuals; one without relays nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "backend/redis/redis_allot.h"
#include "ratelimiter/redis.h"
#include "support/redis_server.h"

#define L1 "01JAAAAAAAAAAAAAAAAAAAAAAA"
#define L2 "01jbbbbbbbbbbbbbbbbbbbbbbb"
#define L3 "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
#define UNTOUCHED "untouched"

static rl_test_redis server;

/* RESP text (len bytes) -> a reply (the caller frees it). */
static redisReply *reply_of_len(const char *resp, size_t len) {
    redisReader *reader = redisReaderCreate();
    assert_int_equal(redisReaderFeed(reader, resp, len), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(reader, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(reader);
    return reply;
}

static redisReply *reply_of(const char *resp) { return reply_of_len(resp, strlen(resp)); }

/* Appends one stream entry [id, [l, lease, a, pairs]] to out at *at. */
static void entry(char *out, size_t size, size_t *at, const char *id, const char *lease, const char *pairs) {
    *at += (size_t)snprintf(out + *at, size - *at,
                            "*2\r\n$%zu\r\n%s\r\n*4\r\n$1\r\nl\r\n$%zu\r\n%s\r\n$1\r\na\r\n$%zu\r\n%s\r\n", strlen(id),
                            id, strlen(lease), lease, strlen(pairs), pairs);
    assert_true(*at < size);
}

/* Appends an entry written as RESP by hand (its id and fields). */
static void raw(char *out, size_t size, size_t *at, const char *resp) {
    *at += (size_t)snprintf(out + *at, size - *at, "%s", resp);
    assert_true(*at < size);
}

/* XREAD's answer for the stream: the head of count entries. */
static size_t head(char *out, size_t size, size_t count) {
    return (size_t)snprintf(out, size, "*1\r\n*2\r\n$8\r\nrl:relay\r\n*%zu\r\n", count);
}

/* Reads resp with max: how many, last_id starting at UNTOUCHED. */
static size_t read_answer(const char *resp, size_t max, char last_id[64], rl__relayed *out) {
    snprintf(last_id, 64, UNTOUCHED);
    redisReply *reply = reply_of(resp);
    size_t n = rl__redis_relay_answer_read(reply, last_id, out, max);
    freeReplyObject(reply);
    return n;
}

/* One entry of id with lease and pairs alone in an answer: how many were
 * read (0 or 1), last_id and out as the reader left them. */
static size_t read_one(const char *id, const char *lease, const char *pairs, char last_id[64], rl__relayed *out) {
    static char resp[32768];
    size_t at = head(resp, sizeof resp, 1);
    entry(resp, sizeof resp, &at, id, lease, pairs);
    return read_answer(resp, 4, last_id, out);
}

/* An entry whose id is fine but which is no relayed Complete: skipped, and
 * last_id moves past it. */
static void assert_skipped(const char *lease, const char *pairs) {
    char last_id[64];
    rl__relayed out[4];
    assert_int_equal(read_one("1793491200000-7", lease, pairs, last_id, out), 0);
    assert_string_equal(last_id, "1793491200000-7");
}

static void assert_actual(const rl__relayed *r, size_t i, const char *key, uint64_t amount) {
    assert_true(i < r->actual_count);
    assert_string_equal(r->keys[i], key);
    assert_ptr_equal(r->actuals[i].key, r->keys[i]);
    assert_int_equal(r->actuals[i].actual_amount, amount);
}

/* "k0 0 k1 1 ... k<n-1> <n-1>" */
static void pairs_of(size_t n, char *out, size_t size) {
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) at += (size_t)snprintf(out + at, size - at, "%sk%zu %zu", i ? " " : "", i, i);
}

static void reads_the_relayed_completes_in_order(void **state) {
    (void)state;
    char resp[4096], last_id[64];
    rl__relayed out[8];
    size_t at = head(resp, sizeof resp, 3);
    entry(resp, sizeof resp, &at, "1793491200000-0", L1, "tenant:a:tpm 120 tenant:a:rpm 1");
    /* the fields in the other order, and a lease id in lower case (as written) */
    raw(resp, sizeof resp, &at,
        "*2\r\n$15\r\n1793491200000-1\r\n*4\r\n$1\r\na\r\n$26\r\nrpm 0 tpm 9007199254740992\r\n$1\r\nl\r\n$26\r\n" L2
        "\r\n");
    entry(resp, sizeof resp, &at, "1793491200005-0", L3, "");
    assert_int_equal(read_answer(resp, 8, last_id, out), 3);
    assert_string_equal(last_id, "1793491200005-0");
    assert_string_equal(out[0].lease_id, L1);
    assert_int_equal(out[0].actual_count, 2);
    assert_actual(&out[0], 0, "tenant:a:tpm", 120);
    assert_actual(&out[0], 1, "tenant:a:rpm", 1);
    assert_string_equal(out[1].lease_id, L2);
    assert_int_equal(out[1].actual_count, 2);
    assert_actual(&out[1], 0, "rpm", 0);
    assert_actual(&out[1], 1, "tpm", UINT64_C(9007199254740992));
    assert_string_equal(out[2].lease_id, L3);
    assert_int_equal(out[2].actual_count, 0);
}

static void nothing_new_leaves_last_id(void **state) {
    (void)state;
    char last_id[64], resp[256];
    rl__relayed out[2];
    assert_int_equal(read_answer("$-1\r\n", 2, last_id, out), 0); /* XREAD's nil: nothing after last_id */
    assert_string_equal(last_id, UNTOUCHED);
    assert_int_equal(read_answer("*-1\r\n", 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
    head(resp, sizeof resp, 0);
    assert_int_equal(read_answer(resp, 2, last_id, out), 0); /* a stream without entries */
    assert_string_equal(last_id, UNTOUCHED);
    /* answers of another shape: nothing read, nothing moved */
    assert_int_equal(read_answer("-ERR no\r\n", 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
    assert_int_equal(read_answer(":1\r\n", 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
    assert_int_equal(read_answer("*0\r\n", 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
    size_t at = (size_t)snprintf(resp, sizeof resp, "*2\r\n*2\r\n$8\r\nrl:relay\r\n*1\r\n"); /* two streams */
    entry(resp, sizeof resp, &at, "1-0", L1, "tpm 1");
    raw(resp, sizeof resp, &at, "*2\r\n$1\r\nx\r\n*0\r\n");
    assert_int_equal(read_answer(resp, 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
    assert_int_equal(read_answer("*1\r\n*2\r\n$8\r\nrl:relay\r\n$1\r\nx\r\n", 2, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
}

static void zero_to_32_actuals(void **state) {
    (void)state;
    char pairs[1024], last_id[64];
    rl__relayed out[4];
    assert_int_equal(read_one("1-0", L1, "", last_id, out), 1);
    assert_int_equal(out[0].actual_count, 0);
    pairs_of(32, pairs, sizeof pairs);
    assert_int_equal(read_one("1-1", L1, pairs, last_id, out), 1);
    assert_int_equal(out[0].actual_count, 32);
    assert_actual(&out[0], 0, "k0", 0);
    assert_actual(&out[0], 31, "k31", 31);
    assert_string_equal(last_id, "1-1");
    pairs_of(33, pairs, sizeof pairs);
    assert_skipped(L1, pairs);
}

static void keys_and_amounts_at_their_limits(void **state) {
    (void)state;
    char pairs[512], longest[RL_KEY_MAX_LEN + 1], last_id[64];
    rl__relayed out[4];
    memset(longest, '~', RL_KEY_MAX_LEN);
    longest[RL_KEY_MAX_LEN] = '\0';
    snprintf(pairs, sizeof pairs, "%s 00000000000000000007 ! 9007199254740992", longest);
    assert_int_equal(read_one("1-0", L1, pairs, last_id, out), 1);
    assert_actual(&out[0], 0, longest, 7);
    assert_actual(&out[0], 1, "!", UINT64_C(9007199254740992));

    snprintf(pairs, sizeof pairs, "%s~ 1", longest); /* 257 bytes */
    assert_skipped(L1, pairs);
    assert_skipped(L1, "tpm 9007199254740993");  /* 2^53 + 1 */
    assert_skipped(L1, "tpm 18446744073709551616"); /* 2^64: wraps to 0 */
    assert_skipped(L1, "tpm 18446744073709551617"); /* wraps to 1 */
    assert_skipped(L1, "tpm 100000000000000000000"); /* 21 digits */
    assert_skipped(L1, "tpm -1");
    assert_skipped(L1, "tpm +1");
    assert_skipped(L1, "tpm 1.5");
    assert_skipped(L1, "tpm 0x10");
}

static void no_spaces_out_of_place(void **state) {
    (void)state;
    assert_skipped(L1, "ten ant 1"); /* a key with a space reads as key "ten", amount "ant" */
    assert_skipped(L1, "tpm 1 ");    /* trailing */
    assert_skipped(L1, " tpm 1");    /* leading */
    assert_skipped(L1, "tpm  1");
    assert_skipped(L1, "tpm 1  rpm 2");
    assert_skipped(L1, " ");
    assert_skipped(L1, "tpm");
    assert_skipped(L1, "tpm 1 rpm");
    assert_skipped(L1, "te\tnant 1"); /* not printable */
    assert_skipped(L1, "tpm 1\n");
}

static void each_key_once(void **state) {
    (void)state;
    char last_id[64];
    rl__relayed out[4];
    assert_skipped(L1, "tpm 1 tpm 2");
    assert_skipped(L1, "tpm 1 rpm 2 tpm 1");
    assert_skipped(L1, "tpm 1 tpm 1");
    assert_int_equal(read_one("1-0", L1, "tpm 1 tpm: 2 TPM 3", last_id, out), 1); /* alike is not the same */
    assert_int_equal(out[0].actual_count, 3);
}

static void lease_ids_are_ulids(void **state) {
    (void)state;
    assert_skipped("01JAAAAAAAAAAAAAAAAAAAAAA", "tpm 1");   /* 25 */
    assert_skipped("01JAAAAAAAAAAAAAAAAAAAAAAAA", "tpm 1"); /* 27 */
    assert_skipped("81JAAAAAAAAAAAAAAAAAAAAAAA", "tpm 1");  /* past 2^128 */
    assert_skipped("01JAAAAAAAAAAAAAAAAAAAAAAI", "tpm 1");  /* not Crockford */
    assert_skipped("01JAAAAAAAAAAAAAAAAAAAAAA-", "tpm 1");
    assert_skipped("", "tpm 1");
}

static void fields_exactly_l_and_a(void **state) {
    (void)state;
    static const char *const entries[] = {
        "*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n",                               /* no a */
        "*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$5\r\ntpm 1\r\n",                                  /* no l */
        "*2\r\n$3\r\n1-0\r\n*0\r\n",                                                            /* none */
        "*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n$1\r\nx\r\n$5\r\ntpm 1\r\n",       /* x for a */
        "*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n",     /* l twice */
        "*2\r\n$3\r\n1-0\r\n*4\r\n$2\r\nll\r\n$26\r\n" L1 "\r\n$1\r\na\r\n$5\r\ntpm 1\r\n",      /* a long name */
        "*2\r\n$3\r\n1-0\r\n*6\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n$1\r\na\r\n$5\r\ntpm 1\r\n$1\r\nj\r\n$3\r\njob\r\n",
        "*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nl\r\n:1\r\n$1\r\na\r\n$5\r\ntpm 1\r\n",                  /* an integer */
        "*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n$1\r\na\r\n*0\r\n",                /* an array */
        "*2\r\n$3\r\n1-0\r\n*4\r\n$1\r\nl\r\n$26\r\n" L1 "\r\n$1\r\na\r\n$-1\r\n",              /* nil */
        "*2\r\n$3\r\n1-0\r\n$5\r\nfield\r\n",                                                   /* no array */
    };
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        char resp[512], last_id[64];
        rl__relayed out[2];
        size_t at = head(resp, sizeof resp, 1);
        raw(resp, sizeof resp, &at, entries[i]);
        assert_int_equal(read_answer(resp, 2, last_id, out), 0);
        assert_string_equal(last_id, "1-0");
    }
}

static void last_id_moves_past_well_formed_ids_only(void **state) {
    (void)state;
    static const char *const bad_ids[] = {"1793491200000", "-0", "1-", "1-2-3", "x-0", "1-0 ",
                                          "18446744073709551616-0", "0-18446744073709551616", ""};
    for (size_t i = 0; i < sizeof bad_ids / sizeof *bad_ids; i++) {
        char resp[512], last_id[64];
        rl__relayed out[2];
        size_t at = head(resp, sizeof resp, 1);
        entry(resp, sizeof resp, &at, bad_ids[i], L1, "tpm 1");
        assert_int_equal(read_answer(resp, 2, last_id, out), 0);
        assert_string_equal(last_id, UNTOUCHED);
    }
    char last_id[64];
    rl__relayed out[2];
    assert_int_equal(read_one("18446744073709551615-18446744073709551615", L1, "tpm 1", last_id, out), 1);
    assert_string_equal(last_id, "18446744073709551615-18446744073709551615");

    /* good, bad id, not a Complete, good, not a Complete, bad id */
    char resp[2048];
    rl__relayed many[8];
    size_t at = head(resp, sizeof resp, 7);
    entry(resp, sizeof resp, &at, "5-0", L1, "tpm 1");
    entry(resp, sizeof resp, &at, "5-x", L1, "tpm 2");
    entry(resp, sizeof resp, &at, "6-0", L1, "tpm 3 ");
    entry(resp, sizeof resp, &at, "7-0", L2, "tpm 4");
    raw(resp, sizeof resp, &at, ":7\r\n"); /* not even an entry */
    entry(resp, sizeof resp, &at, "8-0", "x", "tpm 5");
    entry(resp, sizeof resp, &at, "9", L3, "tpm 6");
    assert_int_equal(read_answer(resp, 8, last_id, many), 2);
    assert_string_equal(last_id, "8-0");
    assert_string_equal(many[0].lease_id, L1);
    assert_actual(&many[0], 0, "tpm", 1);
    assert_string_equal(many[1].lease_id, L2);
    assert_actual(&many[1], 0, "tpm", 4);
}

static void at_most_max(void **state) {
    (void)state;
    char resp[2048], last_id[64];
    rl__relayed out[3];
    size_t at = head(resp, sizeof resp, 5);
    entry(resp, sizeof resp, &at, "1-0", L1, "a 1");
    entry(resp, sizeof resp, &at, "2-0", L1, "a 1 ");
    entry(resp, sizeof resp, &at, "3-0", L2, "b 2");
    entry(resp, sizeof resp, &at, "4-0", L1, "a 1 ");
    entry(resp, sizeof resp, &at, "5-0", L3, "c 3");
    /* the rest is left for the next read, from the last Complete read */
    assert_int_equal(read_answer(resp, 2, last_id, out), 2);
    assert_string_equal(last_id, "3-0");
    assert_string_equal(out[1].lease_id, L2);
    assert_int_equal(read_answer(resp, 1, last_id, out), 1);
    assert_string_equal(last_id, "1-0");
    assert_int_equal(read_answer(resp, 3, last_id, out), 3);
    assert_string_equal(last_id, "5-0");
    assert_string_equal(out[2].lease_id, L3);
    assert_int_equal(read_answer(resp, 0, last_id, out), 0);
    assert_string_equal(last_id, UNTOUCHED);
}

/* ---- against a real redis-server ---- */

#define T0_UNIX_MS UINT64_C(1793491200000)

static rl_backend *open_at(const char *prefix, rl_manual_clock *clock) {
    rl_manual_clock_init(clock, 1000000, T0_UNIX_MS);
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = prefix;
    options.clock = &clock->base;
    options.sweep_interval_ms = 0;
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

static void complete_unknown(rl_backend *backend, const char *lease) {
    rl_actual actuals[] = {{"tenant:a:tpm", 120}, {"tenant:a:rpm", 1}};
    rl_complete_request request = {lease, NULL, actuals, 2};
    assert_int_equal(rl_backend_complete(backend, &request), RL_OK);
}

static void a_complete_redis_does_not_know_is_relayed(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *backend = open_at("relay1:", &clock);
    rl__redis_relay_on(backend);
    char last_id[64];
    assert_int_equal(rl__redis_relay_tail(backend, last_id), RL_OK);
    assert_string_equal(last_id, "0-0");

    rl__relayed out[4];
    complete_unknown(backend, "01jaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(rl__redis_relay_read(backend, last_id, out, 4), 1);
    assert_string_equal(out[0].lease_id, L1);
    assert_int_equal(out[0].actual_count, 2);
    assert_actual(&out[0], 0, "tenant:a:tpm", 120);
    assert_actual(&out[0], 1, "tenant:a:rpm", 1);
    assert_string_not_equal(last_id, "0-0");
    char after[64];
    snprintf(after, sizeof after, "%s", last_id);
    assert_int_equal(rl__redis_relay_read(backend, last_id, out, 4), 0); /* read once */
    assert_string_equal(last_id, after);
    assert_int_equal(rl__redis_relay_tail(backend, last_id), RL_OK); /* a daemon starting now begins after it */
    assert_string_equal(last_id, after);
    rl_backend_destroy(backend);

    /* relaying off (the default): nothing goes to the stream */
    backend = open_at("relay2:", &clock);
    complete_unknown(backend, L1);
    assert_int_equal(rl__redis_relay_tail(backend, last_id), RL_OK);
    assert_string_equal(last_id, "0-0");
    assert_int_equal(rl__redis_relay_read(backend, last_id, out, 4), 0);
    assert_string_equal(last_id, "0-0");
    rl_backend_destroy(backend);
}

static int setup(void **state) {
    (void)state;
    switch (rl_test_redis_start(&server)) {
    case RL_TEST_REDIS_STARTED: return 0;
    case RL_TEST_REDIS_SKIPPED: return 0; /* the redis case skips itself */
    default: return -1;
    }
}

static int teardown(void **state) {
    (void)state;
    rl_test_redis_cleanup(&server);
    return 0;
}

static void on_redis(void **state) {
    if (server.pid == 0) skip();
    a_complete_redis_does_not_know_is_relayed(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_the_relayed_completes_in_order),
        cmocka_unit_test(nothing_new_leaves_last_id),
        cmocka_unit_test(zero_to_32_actuals),
        cmocka_unit_test(keys_and_amounts_at_their_limits),
        cmocka_unit_test(no_spaces_out_of_place),
        cmocka_unit_test(each_key_once),
        cmocka_unit_test(lease_ids_are_ulids),
        cmocka_unit_test(fields_exactly_l_and_a),
        cmocka_unit_test(last_id_moves_past_well_formed_ids_only),
        cmocka_unit_test(at_most_max),
        cmocka_unit_test(on_redis),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
