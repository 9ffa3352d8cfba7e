/* redis_upkeep.c — usage, sweeps, health and the background step
 * (redis_backend_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "backend/redis/redis_decimal.h"
#include "backend/redis/redis_memory.h"
#include "core/counter.h"
#include "core/error_text.h"

#define ERR_SIZE 256
#define SWEEP_LIMITS_PER_CALL "100"
/* A failed script call this recent makes /healthz say degraded, with why. */
#define FAILURE_RECENT_MS 60000u
/* An OOM answer this recent still makes /healthz say Redis refuses writes. */
#define OOM_RECENT_MS 10000u

/* One usage.lua call for key, with its bounds if this daemon knows it as
 * a budget, and the template that makes it if one matches. */
static rl_status read_usage(redis_backend *backend, const char *key, uint64_t deadline_ms, redisReply **reply) {
    rl__redis_call_keys keys;
    rl_redis_args a;
    memset(&a, 0, sizeof a);
    rl_status status = RL_NO_MEMORY;
    if (rl__redis_call_keys_init(backend, &keys, 1)) {
        rl__redis_call_keys_add(backend, &keys, key);
        if (rl_redis_args_init(&a, 5 + (int)rl__redis_call_keys_argc(&keys))) {
            rl__redis_push_header(&a, backend, backend->clock);
            rl_redis_args_push_str(&a, key);
            rl__redis_call_keys_push(&a, &keys);
            char err[ERR_SIZE];
            status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_USAGE, a.count, a.argv, a.len, reply, err,
                                   sizeof err);
        }
    }
    rl_redis_args_free(&a);
    rl__redis_call_keys_free(&keys);
    return status;
}

/* usage.lua's answer for a budget whose bounds were not passed. */
static bool asks_for_bounds(const redisReply *reply) {
    return reply->type == REDIS_REPLY_ARRAY && reply->elements == 1;
}

rl_status rl__redis_limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    redis_backend *backend = rl_redis_backend_of(base);
    uint64_t deadline_ms = rl_redis_operation_deadline_ms(backend);
    redisReply *reply = NULL;
    rl_status status = read_usage(backend, key, deadline_ms, &reply);
    /* a budget this daemon has not seen (or not since its period or zone changed): read it, ask again */
    for (int reads = 0; status == RL_OK && asks_for_bounds(reply) && reads < BOUNDS_READS_MAX; reads++) {
        freeReplyObject(reply);
        reply = NULL;
        if (!rl_redis_read_again(backend, key, deadline_ms)) return RL_BACKEND_ERROR; /* its template's too */
        status = read_usage(backend, key, deadline_ms, &reply);
    }
    if (status == RL_OK) {
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
            status = RL_UNKNOWN_LIMIT_KEY;
        } else if (reply->elements != 10) {
            status = RL_BACKEND_ERROR;
        } else {
            memset(out, 0, sizeof *out);
            out->capacity = rl__redis_number(reply->element[0]);
            out->pending_decrease_to = rl__redis_number(reply->element[1]);
            out->status = out->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
            out->used = rl__redis_number(reply->element[2]);
            out->active = rl__redis_number(reply->element[3]);
            out->available = out->used < out->capacity ? out->capacity - out->used : 0;
            out->allotted = rl__redis_number(reply->element[9]);
            out->debt = out->used > out->capacity ? out->used - out->capacity : 0;
            out->debt_total = rl__redis_number(reply->element[4]);
            out->overage_denied_total = rl__redis_number(reply->element[5]);
            out->period_start_unix_ms = rl__redis_number(reply->element[6]);
            out->period_end_unix_ms = rl__redis_number(reply->element[7]);
            out->committed = rl__redis_number(reply->element[8]);
            if (out->period_end_unix_ms != 0) out->reserved = out->used > out->committed ? out->used - out->committed : 0;
        }
    }
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

rl_status rl_redis_eval_page(redis_backend *backend, rl_redis_script script, const char *cursor,
                             const char *per_call, const char *which, redisReply **reply) {
    *reply = NULL;
    rl_redis_args a;
    if (!rl_redis_args_init(&a, 7)) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl__redis_push_header(&a, backend, backend->clock);
    rl_redis_args_push_str(&a, cursor);
    rl_redis_args_push_str(&a, per_call);
    if (which != NULL) rl_redis_args_push_str(&a, which);
    char err[ERR_SIZE];
    rl_status status = rl_redis_eval(backend->pool, rl_redis_pool_deadline_ms(backend->pool, 0), script, a.count,
                                     a.argv, a.len, reply, err, sizeof err);
    rl_redis_args_free(&a);
    return status;
}

/* One pass of sweep.lua over the definitions (made_from NULL) or over the
 * limits made from a template. False if a call failed. */
static bool sweep_pass(redis_backend *backend, const char *made_from) {
    char cursor[RL_REDIS_NUMBER_SIZE] = "0";
    do {
        redisReply *reply = NULL;
        rl_status status =
            rl_redis_eval_page(backend, RL_SCRIPT_SWEEP, cursor, SWEEP_LIMITS_PER_CALL, made_from, &reply);
        if (status != RL_OK || reply->type != REDIS_REPLY_STRING) {
            if (reply != NULL) freeReplyObject(reply);
            return false; /* the next sweep tries again */
        }
        snprintf(cursor, sizeof cursor, "%s", reply->str);
        freeReplyObject(reply);
    } while (strcmp(cursor, "0") != 0);
    return true;
}

static bool decimal_of(const redisReply *r, uint64_t max, uint64_t *out) {
    return r->type == REDIS_REPLY_STRING && rl__redis_decimal(r->str, r->len, max, out);
}

bool rl__redis_usage_page_read(const redisReply *reply, char cursor[RL_REDIS_NUMBER_SIZE], rl_template_usage *out) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0 ||
        (reply->elements - 1) % RL__REDIS_USAGE_PAGE_FIELDS != 0)
        return false;
    uint64_t ignored;
    for (size_t i = 0; i < reply->elements; i++) /* all or nothing */
        if (!decimal_of(reply->element[i], i == 0 ? UINT64_MAX : RL_AMOUNT_MAX, &ignored)) return false;
    rl_template_usage sum = *out;
    for (size_t i = 1; i < reply->elements; i += RL__REDIS_USAGE_PAGE_FIELDS) {
        uint64_t capacity, used, committed, reserved;
        decimal_of(reply->element[i], RL_AMOUNT_MAX, &capacity);
        decimal_of(reply->element[i + 1], RL_AMOUNT_MAX, &used);
        decimal_of(reply->element[i + 2], RL_AMOUNT_MAX, &committed);
        decimal_of(reply->element[i + 3], RL_AMOUNT_MAX, &reserved);
        rl__template_usage_add(&sum, capacity, used, committed, reserved);
    }
    memcpy(cursor, reply->element[0]->str, reply->element[0]->len);
    cursor[reply->element[0]->len] = '\0';
    *out = sum;
    return true;
}

/* The limits made from pattern's template, summed a page at a time: a
 * monitor's reading, bounded (the walk of a template with many tenants
 * stops at the bound, partial). */
static rl_status template_usage_of(redis_backend *backend, const char *pattern, rl_template_usage *out) {
    char cursor[RL_REDIS_NUMBER_SIZE] = "0";
    do {
        if (out->limits >= RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS) {
            out->partial = true;
            return RL_OK;
        }
        rl_redis_args a;
        if (!rl_redis_args_init(&a, 8)) {
            rl_redis_args_free(&a);
            return RL_NO_MEMORY;
        }
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_str(&a, cursor);
        rl_redis_args_push_str(&a, SWEEP_LIMITS_PER_CALL);
        rl_redis_args_push_str(&a, pattern);
        rl_redis_args_push_str(&a, "usage");
        redisReply *reply = NULL;
        char err[ERR_SIZE];
        rl_status status = rl_redis_eval(backend->pool, rl_redis_pool_deadline_ms(backend->pool, 0), RL_SCRIPT_SWEEP,
                                         a.count, a.argv, a.len, &reply, err, sizeof err);
        rl_redis_args_free(&a);
        bool read = status == RL_OK && rl__redis_usage_page_read(reply, cursor, out);
        if (reply != NULL) freeReplyObject(reply);
        if (!read) return status == RL_OK ? RL_BACKEND_ERROR : status;
    } while (strcmp(cursor, "0") != 0);
    return RL_OK;
}

rl_status rl__redis_template_usage(rl_backend *base, const char *const *patterns, size_t count,
                                   rl_template_usage *out) {
    redis_backend *backend = rl_redis_backend_of(base);
    for (size_t i = 0; i < count; i++) {
        rl_status status = template_usage_of(backend, patterns[i], &out[i]);
        if (status != RL_OK) return status;
    }
    return RL_OK;
}

/* The definitions, then the limits made from budget templates: their
 * reservations whose timeout passed are refunded and audited here too
 * (made rolling and concurrency limits need no sweep: what a script does
 * not purge, their TTLs end). */
void rl__redis_sweep(rl_backend *base) {
    redis_backend *backend = rl_redis_backend_of(base);
    if (!sweep_pass(backend, NULL)) return;
    size_t count = 0;
    char(*patterns)[RL_KEY_MAX_LEN + 1] = rl__template_copy_budget_patterns(backend->templates, &count);
    for (size_t i = 0; i < count && sweep_pass(backend, patterns[i]); i++) {
    }
    free(patterns);
}

/* INFO memory: Redis answers (the daemon can serve), and how close it is to
 * refusing writes. A Redis that refuses writes (at maxmemory, or an OOM
 * answer lately) cannot serve: every reserve fails. Close to it is a
 * warning (RL_OK with a detail: degraded). A Redis whose policy became an
 * evicting one since this daemon connected is refused as at start. */
rl_status rl__redis_health(rl_backend *base, char *detail, size_t detail_size) {
    redis_backend *backend = rl_redis_backend_of(base);
    const char *argv[] = {"INFO", "memory"};
    size_t len[] = {4, 6};
    redisReply *reply = NULL;
    char err[ERR_SIZE] = "";
    rl_status status = rl_redis_command(backend->pool, rl_redis_operation_deadline_ms(backend), 2, argv, len, &reply,
                                        err, sizeof err);
    if (status != RL_OK) {
        rl__error_text(detail, detail_size, "%s", err);
        return RL_BACKEND_ERROR;
    }
    rl_redis_memory memory;
    bool parsed = reply->type == REDIS_REPLY_STRING && rl_redis_memory_parse(reply->str, reply->len, &memory);
    freeReplyObject(reply);
    if (!parsed) return RL_OK; /* it answers; nothing more to tell */
    if (rl_redis_memory_evicts(&memory) && !rl_redis_pool_allows_eviction(backend->pool)) {
        rl_redis_memory_eviction_refusal(&memory, rl_redis_pool_address(backend->pool), detail, detail_size);
        return RL_BACKEND_ERROR;
    }
    rl_redis_memory_verdict verdict = rl_redis_memory_judge(&memory, detail, detail_size);
    /* Redis leaves some buffers out of the memory it holds against
     * maxmemory, so close to it the OOM answers themselves tell. (Well below
     * it, an old one only means an operator has given Redis more room since.) */
    uint64_t oom_ms = rl_redis_pool_last_oom_ms(backend->pool);
    if (verdict == RL_REDIS_MEMORY_NEAR && oom_ms != 0 && rl__redis_monotonic_ms() - oom_ms < OOM_RECENT_MS) {
        rl__error_text(detail, detail_size,
                       "Redis refused writes for lack of memory (OOM) in the last %u s: it uses %llu bytes of its "
                       "maxmemory %llu",
                       OOM_RECENT_MS / 1000u, (unsigned long long)memory.used_bytes,
                       (unsigned long long)memory.max_bytes);
        verdict = RL_REDIS_MEMORY_FULL;
    }
    if (verdict == RL_REDIS_MEMORY_FULL) return RL_BACKEND_ERROR;
    /* Redis answers, but a script call failed lately (a bad key, a script
     * error, a timeout): still serving, so degraded, with Redis's sentence.
     * A memory warning comes first. */
    char failure[512];
    if (rl_redis_pool_recent_failure(backend->pool, FAILURE_RECENT_MS, failure, sizeof failure)) {
        size_t used = detail_size > 0 ? strlen(detail) : 0;
        if (used + 2 < detail_size)
            rl__error_text(detail + used, detail_size - used, "%s%s", used > 0 ? "; " : "", failure);
    }
    return RL_OK;
}

/* The background thread's step (complete_retry.h): the definitions
 * followed, then a sweep when one is due. */
void rl__redis_periodic(void *context) {
    redis_backend *backend = context;
    rl_redis_definitions_sync(backend);
    if (backend->sweep_interval_ms == 0 || rl__redis_monotonic_ms() < backend->next_sweep_ms) return;
    rl__redis_sweep(&backend->base);
    backend->next_sweep_ms = rl__redis_monotonic_ms() + backend->sweep_interval_ms;
}
