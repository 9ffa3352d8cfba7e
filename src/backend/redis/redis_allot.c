/* redis_allot.c — allotments in Redis (redis_allot.h): one allot.lua call
 * for a batch of keys, its answer read strictly; and settle.lua for what
 * local Completes leave to the store. */
#include "backend/redis/redis_allot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "backend/redis/redis_decimal.h"
#include "wire/wire.h"

#define ERR_SIZE 256
#define VALUES_PER_OP 10

/* Amounts and times as the scripts write them: decimals within 2^53
 * (doubles are exact below it). */
static bool read_u64(const redisReply *r, uint64_t *out) {
    return r->type == REDIS_REPLY_STRING && rl__redis_decimal(r->str, r->len, RL_AMOUNT_MAX, out);
}

static bool read_status(const redisReply *r, rl__allot_status *out) {
    static const struct {
        const char *word;
        rl__allot_status status;
    } words[] = {{"ok", RL__ALLOT_OK},
                 {"unknown", RL__ALLOT_UNKNOWN},
                 {"kind", RL__ALLOT_KIND},
                 {"generation", RL__ALLOT_GENERATION},
                 {"incarnation", RL__ALLOT_INCARNATION}};
    if (r->type != REDIS_REPLY_STRING) return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (r->len == strlen(words[i].word) && memcmp(r->str, words[i].word, r->len) == 0) {
            *out = words[i].status;
            return true;
        }
    }
    return false;
}

/* The definition an answer carries ('' for none): it must decode, and be
 * of the key the operation named (unknown here: checked by the caller). */
static bool read_definition(const redisReply *r, rl__allot_result *out) {
    out->has_definition = false;
    if (r->type != REDIS_REPLY_STRING || r->len > RL__ALLOT_DEFINITION_MAX) return false;
    if (r->len == 0) return true;
    char detail[RL_WIRE_DETAIL_SIZE];
    if (rl__wire_decode_limit_def(r->str, r->len, &out->definition, detail) != RL_OK) return false;
    out->has_definition = true;
    return true;
}

static bool read_one(redisReply *const *v, rl__allot_result *r) {
    return read_status(v[0], &r->status) && read_u64(v[1], &r->amount) && read_u64(v[2], &r->ends_in_ms) &&
           read_u64(v[3], &r->counted_for_ms) && read_u64(v[4], &r->share) && read_u64(v[5], &r->capacity) &&
           read_u64(v[6], &r->generation) && read_u64(v[7], &r->version) && read_u64(v[8], &r->incarnation) &&
           read_definition(v[9], r);
}

bool rl__redis_allot_answer_read(const redisReply *reply, size_t count, rl__allot_result *results) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != count * VALUES_PER_OP) return false;
    rl__allot_result *read = count > 0 ? malloc(count * sizeof *read) : NULL;
    if (count > 0 && read == NULL) return false;
    bool ok = true;
    for (size_t i = 0; i < count && ok; i++) ok = read_one(&reply->element[i * VALUES_PER_OP], &read[i]);
    if (ok && count > 0) memcpy(results, read, count * sizeof *read); /* a refusal leaves results untouched */
    free(read);
    return ok;
}

rl_status rl__redis_allot(rl_backend *base, const char *daemon_id, const rl__allot_op *ops, size_t count,
                          rl__allot_result *results) {
    redis_backend *backend = rl_redis_backend_of(base);
    size_t args = 6 + 1;
    for (size_t i = 0; i < count; i++) args += 11 + 2 * ops[i].live_count;
    rl_redis_args a;
    if (!rl_redis_args_init(&a, (int)args)) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl__redis_push_header(&a, backend, backend->clock);
    rl_redis_args_push_str(&a, daemon_id);
    rl_redis_args_push_u64(&a, count);
    for (size_t i = 0; i < count; i++) {
        const rl__allot_op *op = &ops[i];
        rl_redis_args_push_str(&a, op->key);
        rl_redis_args_push_str(&a, op->give_back ? "return" : "carve");
        rl_redis_args_push_u64(&a, op->generation);
        rl_redis_args_push_u64(&a, op->known_version);
        if (op->mirrored) rl_redis_args_push_u64(&a, op->incarnation);
        else rl_redis_args_push_str(&a, "");
        if (!op->give_back) {
            rl_redis_args_push_u64(&a, op->want);
            rl_redis_args_push_u64(&a, op->floor);
            rl_redis_args_push_u64(&a, op->duration_ms);
            rl_redis_args_push_u64(&a, op->least);
            rl_redis_args_push_u64(&a, op->live_now);
            rl_redis_args_push_u64(&a, op->live_entries);
        } else {
            rl_redis_args_push_u64(&a, op->live_count);
            for (size_t j = 0; j < op->live_count; j++) {
                rl_redis_args_push_u64(&a, op->live[j].remaining_ms);
                rl_redis_args_push_u64(&a, op->live[j].amount);
            }
        }
    }
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, rl_redis_operation_deadline_ms(backend), RL_SCRIPT_ALLOT,
                                     a.count, a.argv, a.len, &reply, err, sizeof err);
    rl_redis_args_free(&a);
    if (status == RL_OK && !rl__redis_allot_answer_read(reply, count, results)) {
        fprintf(stderr, "ratelimiterd: allot.lua answered what this build cannot read\n");
        status = RL_BACKEND_ERROR;
    }
    for (size_t i = 0; status == RL_OK && i < count; i++) {
        if (results[i].has_definition && strcmp(results[i].definition.key, ops[i].key) != 0) {
            fprintf(stderr, "ratelimiterd: allot.lua answered the definition of another key\n");
            status = RL_BACKEND_ERROR;
        }
    }
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

rl_status rl__redis_settle(rl_backend *base, const rl__allot_spend *spends, size_t count) {
    if (count == 0) return RL_OK;
    redis_backend *backend = rl_redis_backend_of(base);
    rl_redis_args a;
    if (!rl_redis_args_init(&a, (int)(5 + 8 * count))) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl__redis_push_header(&a, backend, backend->clock);
    rl_redis_args_push_u64(&a, count);
    for (size_t i = 0; i < count; i++) {
        const rl__allot_spend *s = &spends[i];
        rl_redis_args_push_str(&a, s->key);
        rl_redis_args_push_lease_id(&a, s->lease_id);
        rl_redis_args_push_str(&a, s->job_id);
        rl_redis_args_push_u64(&a, s->reserved);
        rl_redis_args_push_u64(&a, s->actual);
        rl_redis_args_push_u64(&a, s->overage);
        rl_redis_args_push_u64(&a, s->overage_for_ms);
        rl_redis_args_push_u64(&a, s->incarnation);
    }
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, rl_redis_operation_deadline_ms(backend), RL_SCRIPT_SETTLE,
                                     a.count, a.argv, a.len, &reply, err, sizeof err);
    rl_redis_args_free(&a);
    if (reply != NULL) freeReplyObject(reply);
    return status;
}
