/* fuzz_redis_allot_answer.c — Redis's answer to allot.lua (allotments of
 * capacity, redis_allot.h) into rl__redis_allot_answer_read, through
 * hiredis's own reader as the daemon gets it.
 *
 * Input: a first line "COUNT\n" (the operations asked, 1..64), then the
 * RESP answer: 10 bulk strings per operation (status, amount, ends_in_ms,
 * counted_for_ms, share, capacity, generation, version, incarnation,
 * definition JSON).
 *
 * The reader takes an answer if and only if it is what the script writes,
 * judged here on its own: an array of exactly 10 × COUNT bulk strings, each
 * operation's status one of ok, unknown, kind, generation, incarnation, its
 * eight numbers decimals of 1..20 digits worth at most 2^53, its definition ''
 * or JSON of at most 4096 bytes that decodes. A refusal leaves the results
 * untouched. An answer taken holds exactly those numbers and statuses, a
 * definition iff the text was not empty, valid by rl_limit_def_validate,
 * whose encoding fits an answer; written back as the script writes it, it
 * reads back the same.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/redis/redis_allot.h"
#include "core/limit_def.h"
#include "fuzz.h"
#include "resp_reply.h"
#include "wire/buf.h"
#include "wire/wire.h"

#define MAX_OPS 64
#define VALUES 10
#define NUMBERS 8 /* after the status; then the definition */

static const char *const STATUS_WORDS[] = {"ok", "unknown", "kind", "generation", "incarnation"};
static const rl__allot_status STATUSES[] = {RL__ALLOT_OK, RL__ALLOT_UNKNOWN, RL__ALLOT_KIND, RL__ALLOT_GENERATION,
                                            RL__ALLOT_INCARNATION};
#define STATUS_COUNT (sizeof STATUSES / sizeof STATUSES[0])

static const char *status_word(rl__allot_status status) {
    for (size_t i = 0; i < STATUS_COUNT; i++)
        if (STATUSES[i] == status) return STATUS_WORDS[i];
    abort();
}

/* What a status text should read as; false if the script never writes it. */
static bool expected_status(const redisReply *r, rl__allot_status *out) {
    if (r->type != REDIS_REPLY_STRING) return false;
    for (size_t i = 0; i < STATUS_COUNT; i++) {
        if (r->len == strlen(STATUS_WORDS[i]) && memcmp(r->str, STATUS_WORDS[i], r->len) == 0) {
            *out = STATUSES[i];
            return true;
        }
    }
    return false;
}

/* What a number text should read as, judged without the reader's loop:
 * 1..20 digits, leading zeros aside at most 16 of them (10^16 > 2^53), and
 * then at most 2^53. */
static bool expected_number(const redisReply *r, uint64_t *out) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20) return false;
    for (size_t i = 0; i < r->len; i++)
        if (r->str[i] < '0' || r->str[i] > '9') return false;
    size_t first = 0;
    while (first < r->len && r->str[first] == '0') first++;
    if (r->len - first > 16) return false;
    uint64_t v = 0;
    for (size_t i = first; i < r->len; i++) v = v * 10 + (uint64_t)(r->str[i] - '0');
    if (v > RL_AMOUNT_MAX) return false;
    *out = v;
    return true;
}

/* Whether a definition text is one the script writes: '' (none), or JSON of
 * at most RL__ALLOT_DEFINITION_MAX bytes that decodes. */
static bool expected_definition(const redisReply *r) {
    if (r->type != REDIS_REPLY_STRING || r->len > RL__ALLOT_DEFINITION_MAX) return false;
    if (r->len == 0) return true;
    rl_limit_def def;
    char detail[RL_WIRE_DETAIL_SIZE];
    return rl__wire_decode_limit_def(r->str, r->len, &def, detail) == RL_OK;
}

/* One operation's 10 values as the script writes them. */
static bool expected_op(redisReply *const *v, rl__allot_result *want) {
    uint64_t *numbers[NUMBERS] = {&want->amount,   &want->ends_in_ms, &want->counted_for_ms, &want->share,
                                  &want->capacity, &want->generation, &want->version,        &want->incarnation};
    if (!expected_status(v[0], &want->status)) return false;
    for (size_t i = 0; i < NUMBERS; i++)
        if (!expected_number(v[1 + i], numbers[i])) return false;
    return expected_definition(v[1 + NUMBERS]);
}

static void put_bulk(rl_buf *out, const char *text, size_t len) {
    char head[32];
    snprintf(head, sizeof head, "$%zu\r\n", len);
    rl__buf_append_str(out, head);
    rl__buf_append(out, text, len);
    rl__buf_append(out, "\r\n", 2);
}

/* The results as allot.lua writes them. */
static void encode(const rl__allot_result *results, size_t count, rl_buf *out) {
    char head[32];
    snprintf(head, sizeof head, "*%zu\r\n", count * VALUES);
    rl__buf_append_str(out, head);
    for (size_t i = 0; i < count; i++) {
        const rl__allot_result *r = &results[i];
        const char *word = status_word(r->status);
        put_bulk(out, word, strlen(word));
        uint64_t values[NUMBERS] = {r->amount,   r->ends_in_ms, r->counted_for_ms, r->share,
                                    r->capacity, r->generation, r->version,        r->incarnation};
        for (size_t v = 0; v < NUMBERS; v++) {
            char text[24];
            snprintf(text, sizeof text, "%" PRIu64, values[v]);
            put_bulk(out, text, strlen(text));
        }
        if (!r->has_definition) {
            put_bulk(out, "", 0);
            continue;
        }
        rl_buf json;
        rl__buf_init(&json);
        rl__wire_encode_limit_def(&json, &r->definition);
        FUZZ_CHECK(!json.failed);
        FUZZ_CHECK(json.len <= RL__ALLOT_DEFINITION_MAX); /* every definition the API allows fits an answer */
        put_bulk(out, json.data, json.len);
        rl__buf_free(&json);
    }
}

static bool same_result(const rl__allot_result *a, const rl__allot_result *b) {
    return a->status == b->status && a->amount == b->amount && a->ends_in_ms == b->ends_in_ms &&
           a->counted_for_ms == b->counted_for_ms && a->share == b->share && a->capacity == b->capacity &&
           a->generation == b->generation && a->version == b->version && a->incarnation == b->incarnation &&
           a->has_definition == b->has_definition &&
           (!a->has_definition || rl__limit_def_equal(&a->definition, &b->definition));
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

    /* what the reader should make of it, judged on its own */
    static rl__allot_result expected[MAX_OPS];
    bool acceptable = reply->type == REDIS_REPLY_ARRAY && reply->elements == (size_t)count * VALUES;
    for (size_t i = 0; acceptable && i < count; i++)
        acceptable = expected_op(&reply->element[i * VALUES], &expected[i]);

    static rl__allot_result results[MAX_OPS], untouched[MAX_OPS], again[MAX_OPS];
    memset(results, 0xA5, sizeof results);
    memcpy(untouched, results, sizeof results);
    bool read = rl__redis_allot_answer_read(reply, count, results);
    FUZZ_CHECK(read == acceptable);
    if (!read) {
        FUZZ_CHECK(memcmp(results, untouched, sizeof results) == 0);
        freeReplyObject(reply);
        return 0;
    }
    for (size_t i = 0; i < count; i++) {
        const rl__allot_result *r = &results[i], *e = &expected[i];
        FUZZ_CHECK(r->status == e->status && r->amount == e->amount && r->ends_in_ms == e->ends_in_ms &&
                   r->counted_for_ms == e->counted_for_ms && r->share == e->share && r->capacity == e->capacity &&
                   r->generation == e->generation && r->version == e->version && r->incarnation == e->incarnation);
        FUZZ_CHECK(r->has_definition == (reply->element[i * VALUES + 1 + NUMBERS]->len > 0));
        if (r->has_definition) {
            char why[256];
            FUZZ_CHECK_TEXT(r->definition.key);
            FUZZ_CHECK(rl_limit_def_validate(&r->definition, why, sizeof why));
        }
    }
    freeReplyObject(reply);

    /* written back as the script writes it, it reads back the same */
    rl_buf text;
    rl__buf_init(&text);
    encode(results, count, &text);
    FUZZ_CHECK(!text.failed);
    redisReply *back = read_reply(text.data, text.len);
    rl__buf_free(&text);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(rl__redis_allot_answer_read(back, count, again));
    freeReplyObject(back);
    for (size_t i = 0; i < count; i++) FUZZ_CHECK(same_result(&again[i], &results[i]));
    return 0;
}
