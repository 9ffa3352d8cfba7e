/* fuzz_redis_allot_answer.c — Redis's answer to allot.lua (allotments of
 * capacity, redis_allot.h) into rl__redis_allot_answer_read, through
 * hiredis's own reader as the daemon gets it.
 *
 * Input: a first line "COUNT\n" (the operations asked, 1..64), then the
 * RESP answer. A refusal leaves the results untouched; an answer read has a
 * known status and amounts and times the scripts can write (≤ 2^53) for
 * every operation, and written back as the script writes it, reads back
 * the same.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/redis/redis_allot.h"
#include "fuzz.h"
#include "resp_reply.h"

#define MAX_OPS 64

static const char *status_word(rl__allot_status status) {
    return status == RL__ALLOT_OK ? "ok" : status == RL__ALLOT_UNKNOWN ? "unknown" : status == RL__ALLOT_KIND ? "kind"
                                                                                                              : "generation";
}

static size_t encode(const rl__allot_result *results, size_t count, char *out) {
    size_t at = (size_t)sprintf(out, "*%zu\r\n", count * 6);
    for (size_t i = 0; i < count; i++) {
        const rl__allot_result *r = &results[i];
        const char *word = status_word(r->status);
        at += (size_t)sprintf(out + at, "$%zu\r\n%s\r\n", strlen(word), word);
        uint64_t values[] = {r->amount, r->ends_in_ms, r->counted_for_ms, r->free, r->capacity};
        for (size_t v = 0; v < 5; v++) {
            char text[24];
            snprintf(text, sizeof text, "%" PRIu64, values[v]);
            at += (size_t)sprintf(out + at, "$%zu\r\n%s\r\n", strlen(text), text);
        }
    }
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *newline = memchr(data, '\n', size);
    if (newline == NULL || (size_t)(newline - (const char *)data) > 8) return 0;
    char head[16];
    memcpy(head, data, (size_t)(newline - (const char *)data));
    head[newline - (const char *)data] = '\0';
    unsigned count;
    if (sscanf(head, "%u", &count) != 1 || count == 0 || count > MAX_OPS) return 0;
    size_t offset = (size_t)(newline - (const char *)data) + 1;
    char *resp = fuzz_copy(data + offset, size - offset);
    redisReply *reply = read_reply(resp, size - offset);
    free(resp);
    if (reply == NULL) return 0;
    static rl__allot_result results[MAX_OPS], again[MAX_OPS];
    memset(results, 0xA5, sizeof results);
    static rl__allot_result untouched[MAX_OPS];
    memcpy(untouched, results, sizeof results);
    bool read = rl__redis_allot_answer_read(reply, count, results);
    freeReplyObject(reply);
    if (!read) {
        FUZZ_CHECK(memcmp(results, untouched, sizeof results) == 0);
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        const rl__allot_result *r = &results[i];
        FUZZ_CHECK(r->status == RL__ALLOT_OK || r->status == RL__ALLOT_UNKNOWN || r->status == RL__ALLOT_KIND ||
                   r->status == RL__ALLOT_GENERATION);
        FUZZ_CHECK(r->amount <= RL_AMOUNT_MAX && r->ends_in_ms <= RL_AMOUNT_MAX &&
                   r->counted_for_ms <= RL_AMOUNT_MAX && r->free <= RL_AMOUNT_MAX && r->capacity <= RL_AMOUNT_MAX);
    }
    char *text = malloc(count * 160 + 16);
    if (text == NULL) abort();
    size_t len = encode(results, count, text);
    redisReply *back = read_reply(text, len);
    free(text);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(rl__redis_allot_answer_read(back, count, again));
    freeReplyObject(back);
    for (size_t i = 0; i < count; i++)
        FUZZ_CHECK(again[i].status == results[i].status && again[i].amount == results[i].amount &&
                   again[i].ends_in_ms == results[i].ends_in_ms &&
                   again[i].counted_for_ms == results[i].counted_for_ms && again[i].free == results[i].free &&
                   again[i].capacity == results[i].capacity);
    return 0;
}
