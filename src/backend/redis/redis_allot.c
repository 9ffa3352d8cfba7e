/* redis_allot.c — allotments in Redis (redis_allot.h): one allot.lua call
 * for a batch of keys, its answer read strictly. */
#include "backend/redis/redis_allot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"

#define ERR_SIZE 256
#define VALUES_PER_OP 6

static bool read_u64(const redisReply *r, uint64_t *out) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < r->len; i++) {
        if (r->str[i] < '0' || r->str[i] > '9') return false;
        v = v * 10 + (uint64_t)(r->str[i] - '0');
    }
    *out = v;
    return true;
}

static bool read_status(const redisReply *r, rl__allot_status *out) {
    static const struct {
        const char *word;
        rl__allot_status status;
    } words[] = {{"ok", RL__ALLOT_OK},
                 {"unknown", RL__ALLOT_UNKNOWN},
                 {"kind", RL__ALLOT_KIND},
                 {"generation", RL__ALLOT_GENERATION}};
    if (r->type != REDIS_REPLY_STRING) return false;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (r->len == strlen(words[i].word) && memcmp(r->str, words[i].word, r->len) == 0) {
            *out = words[i].status;
            return true;
        }
    }
    return false;
}

/* Amounts and times within what the scripts write (doubles exact below 2^53). */
static bool in_range(uint64_t v) { return v <= RL_AMOUNT_MAX; }

bool rl__redis_allot_answer_read(const redisReply *reply, size_t count, rl__allot_result *results) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != count * VALUES_PER_OP) return false;
    for (size_t pass = 0; pass < 2; pass++) { /* check all, then write: a refusal leaves results untouched */
        for (size_t i = 0; i < count; i++) {
            redisReply *const *v = &reply->element[i * VALUES_PER_OP];
            rl__allot_result r;
            if (!read_status(v[0], &r.status) || !read_u64(v[1], &r.amount) || !read_u64(v[2], &r.ends_in_ms) ||
                !read_u64(v[3], &r.counted_for_ms) || !read_u64(v[4], &r.free) || !read_u64(v[5], &r.capacity) ||
                !in_range(r.amount) || !in_range(r.ends_in_ms) || !in_range(r.counted_for_ms) ||
                !in_range(r.free) || !in_range(r.capacity))
                return false;
            if (pass == 1) results[i] = r;
        }
    }
    return true;
}

rl_status rl__redis_allot(rl_backend *base, const char *daemon_id, const rl__allot_op *ops, size_t count,
                          rl__allot_result *results) {
    redis_backend *backend = rl_redis_backend_of(base);
    size_t args = 6 + 1;
    for (size_t i = 0; i < count; i++) args += 6 + 2 * ops[i].live_count;
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
        if (!op->give_back) {
            rl_redis_args_push_u64(&a, op->want);
            rl_redis_args_push_u64(&a, op->floor);
            rl_redis_args_push_u64(&a, op->duration_ms);
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
    if (reply != NULL) freeReplyObject(reply);
    return status;
}
