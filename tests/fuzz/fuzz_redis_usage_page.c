/* fuzz_redis_usage_page.c — Redis's answer to sweep.lua's usage walk (the
 * template_usage op, for /metrics) into rl__redis_usage_page_read, through
 * hiredis's own reader as the daemon gets it.
 *
 * Input: the RESP answer. The reader takes it if and only if it is what
 * the script writes, judged here on its own: an array of 1 + 4n bulk
 * strings, the first a decimal cursor (at most 2^64 - 1), the others
 * decimals of at most 2^53. A refusal leaves the cursor and the sums as
 * they were. An answer taken adds n limits and exactly their figures to
 * the sums it was given (available and debt from each limit's capacity and
 * used), and gives its cursor back as written.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/redis/redis_backend_internal.h"
#include "fuzz.h"
#include "resp_reply.h"

/* A decimal as the script writes it, judged without the reader's code. */
static bool expected_decimal(const redisReply *r, uint64_t max, uint64_t *out) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20) return false;
    unsigned __int128 v = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9') return false;
        v = v * 10 + (unsigned)(r->str[i] - '0');
    }
    if (v > max) return false;
    *out = (uint64_t)v;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    redisReply *reply = read_reply((const char *)data, size);
    if (reply == NULL) return 0;

    /* what the reader should do */
    bool valid = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                 (reply->elements - 1) % RL__REDIS_USAGE_PAGE_FIELDS == 0;
    const rl_template_usage start = {7, 100, 50, 60, 3, 2, 1, false};
    rl_template_usage want = start;
    uint64_t v[RL__REDIS_USAGE_PAGE_FIELDS];
    for (size_t i = 0; valid && i < reply->elements; i++)
        if (!expected_decimal(reply->element[i], i == 0 ? UINT64_MAX : RL_AMOUNT_MAX, &v[0])) valid = false;
    for (size_t i = 1; valid && i < reply->elements; i += RL__REDIS_USAGE_PAGE_FIELDS) {
        for (size_t f = 0; f < RL__REDIS_USAGE_PAGE_FIELDS; f++)
            FUZZ_CHECK(expected_decimal(reply->element[i + f], RL_AMOUNT_MAX, &v[f]));
        want.limits++;
        want.capacity += v[0];
        want.used += v[1];
        want.available += v[1] < v[0] ? v[0] - v[1] : 0;
        want.debt += v[1] > v[0] ? v[1] - v[0] : 0;
        want.committed += v[2];
        want.reserved += v[3];
    }

    /* what it does */
    char cursor[RL_REDIS_NUMBER_SIZE] = "untouched";
    rl_template_usage got = start;
    bool taken = rl__redis_usage_page_read(reply, cursor, &got);
    FUZZ_CHECK(taken == valid);
    if (!taken) {
        FUZZ_CHECK(strcmp(cursor, "untouched") == 0 && memcmp(&got, &start, sizeof got) == 0);
    } else {
        FUZZ_CHECK(strlen(cursor) == reply->element[0]->len &&
                   memcmp(cursor, reply->element[0]->str, reply->element[0]->len) == 0);
        FUZZ_CHECK(got.limits == want.limits && got.capacity == want.capacity && got.used == want.used &&
                   got.available == want.available && got.debt == want.debt && got.committed == want.committed &&
                   got.reserved == want.reserved && got.partial == start.partial);
    }
    freeReplyObject(reply);
    return 0;
}
