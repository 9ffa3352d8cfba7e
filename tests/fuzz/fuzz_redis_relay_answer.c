/* fuzz_redis_relay_answer.c — Redis's answer to XREAD of the relay stream
 * (P..'relay', where complete.lua relays the Completes of leases Redis does
 * not know: fields l = lease id, a = "key actual key actual ...") into
 * rl__redis_relay_answer_read, through hiredis's own reader as the daemon
 * gets it.
 *
 * Input: the RESP answer, read twice: with max 256 (what the keeper asks
 * for) and with max 2.
 *
 * The harness judges every entry on its own, without the reader's helpers:
 * an answer is nil or [[stream, [entry, ...]]]; an entry is [id, fields],
 * its id well-formed when it is "ms-seq", two decimals of 1..20 digits
 * each at most 2^64 - 1; it is a relayed Complete when its fields are
 * exactly l and a (in either order, bulk strings), l a ULID (26 Crockford
 * characters in either case, without I L O U, the first at most '7'), and
 * a 0..32 pairs "key amount" with single spaces between and around
 * nothing: keys of 1..256 bytes of 0x21..0x7e, none twice, amounts
 * decimals of 1..20 digits at most 2^53. Entries are taken in order until
 * max have been read.
 *
 * The reader must read exactly those Completes, with their lease id as
 * written, their keys and amounts in order (each actual's key pointing at
 * its own copy, valid by rl_key_is_valid, amounts <= RL_AMOUNT_MAX), each
 * a request rl_complete_request_check takes as the keeper makes it (the
 * local backend asserts that, backend.h), write no further than
 * out[max - 1], and leave last_id at the last well-formed id among the
 * entries it went through, or untouched when there was none.
 * The reading with max 2 is the first part of the reading with max 256.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "backend/redis/redis_allot.h"
#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/limiter.h"
#include "resp_reply.h"

#define MAX_LARGE 256 /* RELAY_READ of allot_keeper.c */
#define MAX_SMALL 2

/* A decimal of 1..20 digits that fits 64 bits, judged by its text: at most
 * "18446744073709551615" when it has 20. */
static bool decimal_fits_u64(const char *text, size_t len) {
    if (len == 0 || len > 20) return false;
    for (size_t i = 0; i < len; i++)
        if (text[i] < '0' || text[i] > '9') return false;
    return len < 20 || memcmp(text, "18446744073709551615", 20) <= 0;
}

/* An amount: 1..20 digits worth at most 2^53 (leading zeros aside, at most
 * 16 digits, 10^16 > 2^53). */
static bool expected_amount(const char *text, size_t len, uint64_t *out) {
    if (!decimal_fits_u64(text, len)) return false;
    size_t first = 0;
    while (first < len && text[first] == '0') first++;
    if (len - first > 16) return false;
    uint64_t v = 0;
    for (size_t i = first; i < len; i++) v = v * 10 + (uint64_t)(text[i] - '0');
    if (v > (UINT64_C(1) << 53)) return false;
    *out = v;
    return true;
}

static bool expected_stream_id(const redisReply *r) {
    if (r->type != REDIS_REPLY_STRING) return false;
    const char *dash = memchr(r->str, '-', r->len);
    if (dash == NULL) return false;
    size_t ms_len = (size_t)(dash - r->str);
    return decimal_fits_u64(r->str, ms_len) && decimal_fits_u64(dash + 1, r->len - ms_len - 1);
}

static bool expected_ulid(const char *text, size_t len) {
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if (len != 26 || text[0] < '0' || text[0] > '7') return false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        if (c == '\0' || strchr(alphabet, c) == NULL) return false;
    }
    return true;
}

typedef struct expected_actual {
    const char *key;
    size_t key_len;
    uint64_t amount;
} expected_actual;

typedef struct expected_complete {
    const char *lease_id; /* 26 bytes, in the reply */
    expected_actual actuals[RL_MAX_REQUIREMENTS];
    size_t actual_count;
} expected_complete;

/* "key amount key amount ...": split at every space, each piece non-empty. */
static bool expected_actuals(const char *text, size_t len, expected_complete *out) {
    out->actual_count = 0;
    if (len == 0) return true;
    const char *pieces[2 * RL_MAX_REQUIREMENTS];
    size_t lens[2 * RL_MAX_REQUIREMENTS], n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != ' ') continue;
        if (i == start || n == 2 * RL_MAX_REQUIREMENTS) return false; /* an empty piece, or a 33rd pair */
        pieces[n] = text + start;
        lens[n++] = i - start;
        start = i + 1;
    }
    if (n % 2 != 0) return false;
    for (size_t p = 0; p < n; p += 2) {
        if (lens[p] > RL_KEY_MAX_LEN) return false;
        for (size_t i = 0; i < lens[p]; i++)
            if ((unsigned char)pieces[p][i] < 0x21 || (unsigned char)pieces[p][i] > 0x7e) return false;
        for (size_t k = 0; k < out->actual_count; k++)
            if (out->actuals[k].key_len == lens[p] && memcmp(out->actuals[k].key, pieces[p], lens[p]) == 0)
                return false; /* a Complete names each key once */
        expected_actual *a = &out->actuals[out->actual_count++];
        a->key = pieces[p];
        a->key_len = lens[p];
        if (!expected_amount(pieces[p + 1], lens[p + 1], &a->amount)) return false;
    }
    return true;
}

/* The fields [l, id, a, pairs] or [a, pairs, l, id]. */
static bool expected_entry(const redisReply *fields, expected_complete *out) {
    if (fields->type != REDIS_REPLY_ARRAY || fields->elements != 4) return false;
    for (size_t i = 0; i < 4; i++)
        if (fields->element[i]->type != REDIS_REPLY_STRING) return false;
    const redisReply *n0 = fields->element[0], *n2 = fields->element[2];
    if (n0->len != 1 || n2->len != 1) return false;
    const redisReply *l, *a;
    if (n0->str[0] == 'l' && n2->str[0] == 'a') {
        l = fields->element[1];
        a = fields->element[3];
    } else if (n0->str[0] == 'a' && n2->str[0] == 'l') {
        a = fields->element[1];
        l = fields->element[3];
    } else {
        return false;
    }
    if (!expected_ulid(l->str, l->len)) return false;
    out->lease_id = l->str;
    return expected_actuals(a->str, a->len, out);
}

/* What the reader should make of reply with max: the Completes (into
 * expected, count returned) and the last well-formed id it goes through
 * (NULL if none). */
static size_t expect(const redisReply *reply, size_t max, expected_complete *expected, const redisReply **last) {
    *last = NULL;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1) return 0;
    const redisReply *stream = reply->element[0];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2) return 0;
    const redisReply *entries = stream->element[1];
    if (entries->type != REDIS_REPLY_ARRAY) return 0;
    size_t count = 0;
    for (size_t i = 0; i < entries->elements && count < max; i++) {
        const redisReply *entry = entries->element[i];
        if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || !expected_stream_id(entry->element[0]))
            continue;
        *last = entry->element[0];
        if (expected_entry(entry->element[1], &expected[count])) count++;
    }
    return count;
}

/* Reads reply with max into a block of exactly max entries, checks it
 * against the harness's judgement, and returns what was read (the caller
 * frees it). */
static rl__relayed *read_and_check(const redisReply *reply, size_t max, size_t *count) {
    rl__relayed *out = malloc(max * sizeof *out);
    expected_complete *expected = malloc(max * sizeof *expected);
    if (out == NULL || expected == NULL) abort();
    char last_id[64], before[64];
    memset(last_id, 0x5A, sizeof last_id);
    last_id[63] = '\0';
    memcpy(before, last_id, sizeof before);

    size_t read = rl__redis_relay_answer_read(reply, last_id, out, max);
    const redisReply *last = NULL;
    size_t want = expect(reply, max, expected, &last);

    FUZZ_CHECK(read == want);
    FUZZ_CHECK(read <= max);
    if (last == NULL) {
        FUZZ_CHECK(memcmp(last_id, before, sizeof before) == 0);
    } else {
        FUZZ_CHECK_TEXT(last_id);
        FUZZ_CHECK(strlen(last_id) == last->len && memcmp(last_id, last->str, last->len) == 0);
    }
    for (size_t i = 0; i < read; i++) {
        const rl__relayed *r = &out[i];
        const expected_complete *e = &expected[i];
        FUZZ_CHECK_TEXT(r->lease_id);
        FUZZ_CHECK(strlen(r->lease_id) == RL_ULID_LEN && memcmp(r->lease_id, e->lease_id, RL_ULID_LEN) == 0);
        FUZZ_CHECK(r->actual_count == e->actual_count);
        for (size_t j = 0; j < r->actual_count; j++) {
            FUZZ_CHECK_TEXT(r->keys[j]);
            FUZZ_CHECK(r->actuals[j].key == r->keys[j]);
            size_t len = strlen(r->keys[j]);
            FUZZ_CHECK(len == e->actuals[j].key_len && memcmp(r->keys[j], e->actuals[j].key, len) == 0);
            FUZZ_CHECK(rl_key_is_valid(r->actuals[j].key, len));
            FUZZ_CHECK(r->actuals[j].actual_amount == e->actuals[j].amount);
            FUZZ_CHECK(r->actuals[j].actual_amount <= RL_AMOUNT_MAX);
        }
        /* the keeper completes it as read: a request backend.h takes */
        rl_complete_request request = {r->lease_id, NULL, r->actuals, r->actual_count};
        char err[RL_LIMITER_ERR_SIZE];
        FUZZ_CHECK(rl_complete_request_check(&request, err));
    }
    free(expected);
    *count = read;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *resp = fuzz_copy(data, size);
    redisReply *reply = read_reply(resp, size);
    free(resp);
    if (reply == NULL) return 0;

    size_t large_count, small_count;
    rl__relayed *large = read_and_check(reply, MAX_LARGE, &large_count);
    rl__relayed *small = read_and_check(reply, MAX_SMALL, &small_count);
    FUZZ_CHECK(small_count == (large_count < MAX_SMALL ? large_count : MAX_SMALL));
    for (size_t i = 0; i < small_count; i++) {
        FUZZ_CHECK(strcmp(small[i].lease_id, large[i].lease_id) == 0);
        FUZZ_CHECK(small[i].actual_count == large[i].actual_count);
        for (size_t j = 0; j < small[i].actual_count; j++) {
            FUZZ_CHECK(strcmp(small[i].keys[j], large[i].keys[j]) == 0);
            FUZZ_CHECK(small[i].actuals[j].actual_amount == large[i].actuals[j].actual_amount);
        }
    }
    free(small);
    free(large);
    freeReplyObject(reply);
    return 0;
}
