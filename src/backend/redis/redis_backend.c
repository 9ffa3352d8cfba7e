/* redis_backend.c — the backend vtable over Redis (see ratelimiter/redis.h):
 * the lease half (reserve, complete, usage, sweep, health) and the backend's
 * life; the definitions half is redis_definitions.c.
 *
 * Each operation is one script call: the C side only checks requests, lays
 * them out as the script's ARGV and maps the answer back. All accounting
 * happens inside the scripts (src/backend/redis/lua), atomically. Every
 * operation has one deadline for all its calls to Redis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "backend/redis/redis_memory.h"
#include "core/call_wait.h"
#include "core/error_text.h"
#include "core/lease_fingerprint.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/ulid.h"

#define ERR_SIZE 256
#define SWEEP_LIMITS_PER_CALL "100"
/* The background thread's step: definitions followed, sweeps when due. */
#define PERIODIC_STEP_MS 1000u
/* An OOM answer this recent still makes /healthz say Redis refuses writes. */
#define OOM_RECENT_MS 10000u

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t rl_redis_operation_deadline_ms(const redis_backend *backend) {
    return rl_redis_pool_deadline_ms(backend->pool, rl__call_wait_since_ms());
}

void rl_redis_options_default(rl_redis_options *options) {
    memset(options, 0, sizeof *options);
    options->host = "127.0.0.1";
    options->port = 6379;
    options->key_prefix = "rl:";
    options->connections = 4;
    options->connect_timeout_ms = 200;
    options->command_timeout_ms = 500;
    options->lease_memory_ms = RL_MEMORY_DEFAULT_LEASE_MEMORY_MS;
    options->complete_retry_deadline_ms = 30000;
    options->max_pending_completes = 100000;
    options->sweep_interval_ms = 1000;
}

/* ---- checks: the scripts trust their input ---- */

/* api.md's rules, in their one place (core/request_check.c). */
static bool reserve_ok(const rl_reserve_request *r) {
    char why[RL_LIMITER_ERR_SIZE];
    return rl_reserve_request_check(r, why);
}

static bool complete_ok(const rl_complete_request *r) {
    char why[RL_LIMITER_ERR_SIZE];
    return rl_complete_request_check(r, why);
}

static void fail_result(rl_reserve_result *result, rl_status status) {
    memset(result, 0, sizeof *result);
    result->status = status;
}

/* ---- reserve ---- */

static uint64_t integer_at(const redisReply *reply, size_t i) {
    const redisReply *item = reply->element[i];
    if (item->type == REDIS_REPLY_INTEGER) return item->integer > 0 ? (uint64_t)item->integer : 0;
    if (item->type == REDIS_REPLY_STRING) return strtoull(item->str, NULL, 10);
    return 0;
}

static const char *intern(redis_backend *backend, const char *text, size_t len) {
    const char *found = NULL;
    pthread_mutex_lock(&backend->interned_lock);
    for (size_t i = 0; i < backend->interned_count && found == NULL; i++)
        if (strlen(backend->interned[i]) == len && memcmp(backend->interned[i], text, len) == 0)
            found = backend->interned[i];
    if (found == NULL) {
        if (backend->interned_count == backend->interned_capacity) {
            size_t capacity = backend->interned_capacity ? backend->interned_capacity * 2 : 16;
            char **grown = realloc(backend->interned, capacity * sizeof *grown);
            if (grown != NULL) {
                backend->interned = grown;
                backend->interned_capacity = capacity;
            }
        }
        char *copy = backend->interned_count < backend->interned_capacity ? strndup(text, len) : NULL;
        if (copy != NULL) backend->interned[backend->interned_count++] = copy;
        found = copy;
    }
    pthread_mutex_unlock(&backend->interned_lock);
    return found;
}

/* The status key is usually one of the request's own keys: point at it, so
 * that it lives as long as the request (rl_reserve_result's contract). A
 * retried lease replays its first outcome, whose key may be another. */
static const char *status_key_of(redis_backend *backend, const rl_reserve_request *request, const redisReply *item) {
    if (item->type != REDIS_REPLY_STRING || item->len == 0) return NULL;
    for (size_t i = 0; i < request->requirement_count; i++)
        if (strlen(request->requirements[i].key) == item->len &&
            memcmp(request->requirements[i].key, item->str, item->len) == 0)
            return request->requirements[i].key;
    return intern(backend, item->str, item->len);
}

static rl_status status_of_code(uint64_t code) {
    switch (code) {
    case 0: return RL_OK;
    case 1: return RL_UNKNOWN_LIMIT_KEY;
    case 2: return RL_LIMIT_DECREASING;
    case 3: return RL_EXCEEDS_CAPACITY;
    case 4: return RL_LEASE_ID_CONFLICT;
    default: return RL_BACKEND_ERROR;
    }
}

static void run_reserves(redis_backend *backend, const rl_reserve_request *requests, size_t count,
                         uint64_t deadline_ms, rl_reserve_result *results) {
    /* Checked once: results[i].status is RL_INVALID_REQUEST for a request
     * left out, RL_OK (for now) for one sent. */
    size_t valid = 0, argc = 5;
    for (size_t i = 0; i < count; i++) {
        if (reserve_ok(&requests[i])) {
            fail_result(&results[i], RL_OK);
            valid++;
            argc += 3 + 2 * requests[i].requirement_count;
        } else {
            fail_result(&results[i], RL_INVALID_REQUEST);
        }
    }
    if (valid == 0) return;
    rl_redis_args a;
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = RL_NO_MEMORY;
    if (rl_redis_args_init(&a, (int)argc)) {
        rl_redis_args_push_header(&a, backend->prefix, backend->clock);
        rl_redis_args_push_u64(&a, backend->lease_memory_ms);
        rl_redis_args_push_u64(&a, valid);
        for (size_t i = 0; i < count; i++) {
            if (results[i].status == RL_INVALID_REQUEST) continue;
            rl_redis_args_push_lease_id(&a, requests[i].lease_id);
            rl_redis_args_push_u64(&a, requests[i].requirement_count);
            rl_redis_args_push_fingerprint(
                &a, rl__lease_fingerprint(requests[i].requirements, requests[i].requirement_count));
            for (size_t j = 0; j < requests[i].requirement_count; j++) {
                rl_redis_args_push_str(&a, requests[i].requirements[j].key);
                rl_redis_args_push_u64(&a, requests[i].requirements[j].amount);
            }
        }
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_RESERVE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
    }
    rl_redis_args_free(&a);
    if (status == RL_OK && (reply->type != REDIS_REPLY_ARRAY || reply->elements != 5 * valid)) status = RL_BACKEND_ERROR;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        if (results[i].status == RL_INVALID_REQUEST) continue;
        rl_reserve_result *r = &results[i];
        if (status != RL_OK) {
            fail_result(r, RL_BACKEND_ERROR); /* fail closed: nothing admitted without the store */
            continue;
        }
        r->allowed = integer_at(reply, at) == 1;
        r->retry_after_ms = integer_at(reply, at + 1);
        r->reserved_at_unix_ms = integer_at(reply, at + 2);
        r->status = status_of_code(integer_at(reply, at + 3));
        r->status_key = status_key_of(backend, &requests[i], reply->element[at + 4]);
        at += 5;
    }
    if (reply != NULL) freeReplyObject(reply);
}

/* A Redis that restarted without persistence, or was flushed, has lost the
 * definitions too: every reserve would answer unknown_limit_key until an
 * admin put them back. The leases that met a key this daemon knows are
 * decided again once, after defining it again (the background thread puts
 * back the rest within a second). Their reservations were lost with the
 * rest: run Redis with appendonly for none to be. All within the
 * operation's one deadline. */
static void reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    redis_backend *backend = rl_redis_backend_of(base);
    uint64_t deadline_ms = rl_redis_operation_deadline_ms(backend);
    run_reserves(backend, requests, count, deadline_ms, results);
    for (size_t i = 0; i < count; i++) {
        if (results[i].status != RL_UNKNOWN_LIMIT_KEY || results[i].status_key == NULL) continue;
        if (!rl_redis_define_again(backend, results[i].status_key, deadline_ms)) continue;
        /* this lease, and any other that met a key now defined, again */
        for (;;) {
            run_reserves(backend, &requests[i], 1, deadline_ms, &results[i]);
            if (results[i].status != RL_UNKNOWN_LIMIT_KEY || results[i].status_key == NULL ||
                !rl_redis_define_again(backend, results[i].status_key, deadline_ms))
                break;
        }
    }
}

/* ---- complete ---- */

/* Sends the valid Completes of requests in one script call, checking each
 * once: sent (if not NULL) gets RL_OK for the ones sent and
 * RL_INVALID_REQUEST for the ones left out. Arguments are sized for every
 * request (an invalid one counts at most RL_MAX_REQUIREMENTS actuals), and
 * the count of leases is written once they are known. */
static rl_status send_completes(redis_backend *backend, const rl_complete_request *requests, size_t count,
                                uint64_t deadline_ms, rl_status *sent) {
    size_t argc = 4;
    for (size_t i = 0; i < count; i++)
        argc += 2 + 2 * (requests[i].actual_count < RL_MAX_REQUIREMENTS ? requests[i].actual_count
                                                                           : RL_MAX_REQUIREMENTS);
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    if (!rl_redis_args_init(&a, (int)argc)) {
        rl_redis_args_free(&a);
        for (size_t i = 0; sent != NULL && i < count; i++)
            sent[i] = complete_ok(&requests[i]) ? RL_OK : RL_INVALID_REQUEST;
        return status;
    }
    rl_redis_args_push_header(&a, backend->prefix, backend->clock);
    int count_at = a.count;
    rl_redis_args_push(&a, "", 0); /* ARGV[4], the count: below */
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        bool ok = complete_ok(&requests[i]);
        if (sent != NULL) sent[i] = ok ? RL_OK : RL_INVALID_REQUEST;
        if (!ok) continue;
        valid++;
        rl_redis_args_push_lease_id(&a, requests[i].lease_id);
        rl_redis_args_push_u64(&a, requests[i].actual_count);
        for (size_t j = 0; j < requests[i].actual_count; j++) {
            rl_redis_args_push_str(&a, requests[i].actuals[j].key);
            rl_redis_args_push_u64(&a, requests[i].actuals[j].actual_amount);
        }
    }
    status = RL_OK;
    if (valid > 0) {
        int end = a.count;
        a.count = count_at;
        rl_redis_args_push_u64(&a, valid);
        a.count = end;
        char err[ERR_SIZE];
        redisReply *reply = NULL;
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_COMPLETE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
        if (reply != NULL) freeReplyObject(reply);
    }
    rl_redis_args_free(&a);
    return status;
}

static bool retry_send(void *context, const rl_complete_request *requests, size_t count) {
    redis_backend *backend = context;
    return send_completes(backend, requests, count, rl_redis_pool_deadline_ms(backend->pool, 0), NULL) == RL_OK;
}

/* A Complete that cannot reach Redis now is kept and retried in the
 * background: the caller is told it was taken. Only a full retry queue makes
 * it fail. An invalid Complete has nothing to release: ok. */
static void complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_status status = send_completes(backend, requests, count, rl_redis_operation_deadline_ms(backend), statuses);
    if (status != RL_OK && rl_complete_retry_add(backend->retry, requests, count)) status = RL_OK;
    for (size_t i = 0; i < count; i++) {
        if (statuses[i] != RL_OK) statuses[i] = RL_OK; /* left out: nothing to release */
        else if (status != RL_OK) statuses[i] = RL_BACKEND_ERROR;
    }
}

/* ---- usage, sweep, health ---- */

static rl_status limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_redis_args a;
    if (!rl_redis_args_init(&a, 4)) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl_redis_args_push_header(&a, backend->prefix, backend->clock);
    rl_redis_args_push_str(&a, key);
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, rl_redis_operation_deadline_ms(backend), RL_SCRIPT_USAGE, a.count,
                                     a.argv, a.len, &reply, err, sizeof err);
    rl_redis_args_free(&a);
    if (status == RL_OK) {
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
            status = RL_UNKNOWN_LIMIT_KEY;
        } else if (reply->elements != 6) {
            status = RL_BACKEND_ERROR;
        } else {
            memset(out, 0, sizeof *out);
            out->capacity = integer_at(reply, 0);
            out->pending_decrease_to = integer_at(reply, 1);
            out->status = out->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
            out->used = integer_at(reply, 2);
            out->active = integer_at(reply, 3);
            out->available = out->used < out->capacity ? out->capacity - out->used : 0;
            out->debt = out->used > out->capacity ? out->used - out->capacity : 0;
            out->debt_total = integer_at(reply, 4);
            out->overage_denied_total = integer_at(reply, 5);
        }
    }
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

rl_status rl_redis_eval_page(redis_backend *backend, rl_redis_script script, const char *cursor,
                             const char *per_call, redisReply **reply) {
    *reply = NULL;
    rl_redis_args a;
    if (!rl_redis_args_init(&a, 5)) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl_redis_args_push_header(&a, backend->prefix, backend->clock);
    rl_redis_args_push_str(&a, cursor);
    rl_redis_args_push_str(&a, per_call);
    char err[ERR_SIZE];
    rl_status status = rl_redis_eval(backend->pool, rl_redis_pool_deadline_ms(backend->pool, 0), script, a.count,
                                     a.argv, a.len, reply, err, sizeof err);
    rl_redis_args_free(&a);
    return status;
}

static void sweep(rl_backend *base) {
    redis_backend *backend = rl_redis_backend_of(base);
    char cursor[RL_REDIS_NUMBER_SIZE] = "0";
    do {
        redisReply *reply = NULL;
        rl_status status = rl_redis_eval_page(backend, RL_SCRIPT_SWEEP, cursor, SWEEP_LIMITS_PER_CALL, &reply);
        if (status != RL_OK || reply->type != REDIS_REPLY_STRING) {
            if (reply != NULL) freeReplyObject(reply);
            return; /* the next sweep tries again */
        }
        snprintf(cursor, sizeof cursor, "%s", reply->str);
        freeReplyObject(reply);
    } while (strcmp(cursor, "0") != 0);
}

/* INFO memory: Redis answers (the daemon can serve), and how close it is to
 * refusing writes. A Redis that refuses writes (at maxmemory, or an OOM
 * answer lately) cannot serve: every reserve fails. Close to it is a
 * warning (RL_OK with a detail: degraded). A Redis whose policy became an
 * evicting one since this daemon connected is refused as at start. */
static rl_status health(rl_backend *base, char *detail, size_t detail_size) {
    redis_backend *backend = rl_redis_backend_of(base);
    const char *argv[] = {"INFO", "memory"};
    size_t len[] = {4, 6};
    redisReply *reply = NULL;
    char err[ERR_SIZE] = "";
    rl_status status = rl_redis_command(backend->pool, rl_redis_operation_deadline_ms(backend), 2, argv, len, &reply,
                                        err, sizeof err);
    if (status != RL_OK) {
        rl_error_text(detail, detail_size, "%s", err);
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
    if (verdict == RL_REDIS_MEMORY_NEAR && oom_ms != 0 && monotonic_ms() - oom_ms < OOM_RECENT_MS) {
        rl_error_text(detail, detail_size,
                      "Redis refused writes for lack of memory (OOM) in the last %u s: it uses %llu bytes of its "
                      "maxmemory %llu",
                      OOM_RECENT_MS / 1000u, (unsigned long long)memory.used_bytes,
                      (unsigned long long)memory.max_bytes);
        verdict = RL_REDIS_MEMORY_FULL;
    }
    return verdict == RL_REDIS_MEMORY_FULL ? RL_BACKEND_ERROR : RL_OK;
}

/* The background thread's step (complete_retry.h): the definitions
 * followed, then a sweep when one is due. */
static void periodic(void *context) {
    redis_backend *backend = context;
    rl_redis_definitions_sync(backend);
    if (backend->sweep_interval_ms == 0 || monotonic_ms() < backend->next_sweep_ms) return;
    sweep(&backend->base);
    backend->next_sweep_ms = monotonic_ms() + backend->sweep_interval_ms;
}

static void destroy(rl_backend *base) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_complete_retry_stop(backend->retry); /* its last try still uses the pool */
    rl_redis_pool_destroy(backend->pool);
    rl_definition_cache_destroy(backend->definitions);
    for (size_t i = 0; i < backend->interned_count; i++) free(backend->interned[i]);
    free(backend->interned);
    pthread_mutex_destroy(&backend->interned_lock);
    free(backend->prefix);
    free(backend);
}

static const rl_backend_ops redis_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "redis",
    .apply_definition = rl_redis_apply_definition,
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .limit_usage = limit_usage,
    .sweep = sweep,
    .destroy = destroy,
    .health = health,
    .list_definitions = rl_redis_list_definitions,
    .get_definition = rl_redis_get_definition,
    .count_definitions = rl_redis_count_definitions,
};

rl_status rl_redis_backend_create(const rl_redis_options *options, rl_backend **out, char *err, size_t err_size) {
    *out = NULL;
    rl_redis_options defaults;
    rl_redis_options_default(&defaults);
    if (options == NULL) options = &defaults;
    redis_backend *backend = calloc(1, sizeof *backend);
    if (backend == NULL) return RL_NO_MEMORY;
    backend->base.ops = &redis_ops;
    pthread_mutex_init(&backend->interned_lock, NULL);
    backend->prefix = strdup(options->key_prefix != NULL ? options->key_prefix : "rl:");
    backend->lease_memory_ms = options->lease_memory_ms;
    backend->sweep_interval_ms = options->sweep_interval_ms;
    backend->clock = options->clock;
    backend->definitions = rl_definition_cache_create();
    rl_status status = backend->prefix != NULL && backend->definitions != NULL ? RL_OK : RL_NO_MEMORY;
    if (status == RL_OK) status = rl_redis_pool_create(options, &backend->pool, err, err_size);
    if (status == RL_OK) status = rl_redis_definitions_follow(backend, err, err_size);
    if (status == RL_OK) {
        /* Sweeps more often than the step run at the sweep's own pace. */
        uint32_t step_ms = backend->sweep_interval_ms != 0 && backend->sweep_interval_ms < PERIODIC_STEP_MS
                               ? backend->sweep_interval_ms
                               : PERIODIC_STEP_MS;
        backend->next_sweep_ms = monotonic_ms() + backend->sweep_interval_ms;
        status = rl_complete_retry_start(backend, retry_send, periodic,
                                         options->complete_retry_deadline_ms ? options->complete_retry_deadline_ms : 30000,
                                         options->max_pending_completes ? options->max_pending_completes : 100000,
                                         step_ms, &backend->retry);
    }
    if (status != RL_OK) {
        destroy(&backend->base); /* takes what was made, and NULLs */
        return status;
    }
    *out = &backend->base;
    return RL_OK;
}
