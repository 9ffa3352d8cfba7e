/* redis_reserve.c — reserves through reserve.lua (redis_backend_internal.h):
 * requests laid out as the script's ARGV with each lease's
 * fingerprint, the answers mapped back; a key the store lost is defined
 * again from what this daemon knows, and the lease decided again. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "core/lease_fingerprint.h"
#include "core/lease_rules.h"

#define ERR_SIZE 256

/* reserve.lua's answer per lease: the result, then its denied_by. */
#define REPLY_PER_LEASE 11u
/* reserve.lua's ST_BOUNDS: a budget this daemon passed no bounds for. */
#define CODE_NEEDS_BOUNDS 5u

static void fail_result(rl_reserve_result *result, rl_status status) {
    memset(result, 0, sizeof *result);
    result->status = status;
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

/* A code of reserve.lua's; CODE_NEEDS_BOUNDS is handled by the caller. */
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

/* Requests are valid (backend.h; asserted in debug builds). needs_bounds[i]
 * (if not NULL) tells whether lease i met a budget whose bounds this daemon
 * could not pass (its result is then a backend error naming the key). */
static void run_reserves(redis_backend *backend, const rl_reserve_request *requests, size_t count,
                         uint64_t deadline_ms, rl_reserve_result *results, bool *needs_bounds) {
    if (count == 0) return;
    size_t argc = 6, requirements = 0;
    for (size_t i = 0; i < count; i++) {
        RL__ASSERT_REQUEST_VALID(rl__reserve_request_is_valid(&requests[i]));
        argc += 5 + 2 * requests[i].requirement_count;
        requirements += requests[i].requirement_count;
    }
    /* the bounds of the budgets, and the templates of the keys they match */
    rl__redis_call_keys keys;
    bool keys_ok = rl__redis_call_keys_init(backend, &keys, requirements);
    for (size_t i = 0; keys_ok && i < count; i++)
        for (size_t j = 0; j < requests[i].requirement_count; j++)
            rl__redis_call_keys_add(backend, &keys, requests[i].requirements[j].key);
    argc += rl__redis_call_keys_argc(&keys);
    rl_redis_args a;
    memset(&a, 0, sizeof a);
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = RL_NO_MEMORY;
    if (keys_ok && rl_redis_args_init(&a, (int)argc)) {
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_u64(&a, backend->lease_memory_ms);
        rl__redis_call_keys_push(&a, &keys);
        rl_redis_args_push_u64(&a, count);
        for (size_t i = 0; i < count; i++) {
            rl_redis_args_push_lease_id(&a, requests[i].lease_id);
            rl_redis_args_push_u64(&a, requests[i].requirement_count);
            rl_redis_args_push_fingerprint(
                &a, rl__lease_fingerprint(requests[i].requirements, requests[i].requirement_count));
            rl_redis_args_push_str(&a, requests[i].job_id != NULL ? requests[i].job_id : "");
            rl_redis_args_push_lease_flags(&a, &requests[i]);
            for (size_t j = 0; j < requests[i].requirement_count; j++) {
                rl_redis_args_push_str(&a, requests[i].requirements[j].key);
                rl_redis_args_push_u64(&a, requests[i].requirements[j].amount);
            }
        }
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_RESERVE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
    }
    rl_redis_args_free(&a);
    rl__redis_call_keys_free(&keys);
    if (status == RL_OK && (reply->type != REDIS_REPLY_ARRAY || reply->elements != REPLY_PER_LEASE * count))
        status = RL_BACKEND_ERROR;
    for (size_t i = 0, at = 0; i < count; i++, at += REPLY_PER_LEASE) {
        rl_reserve_result *r = &results[i];
        if (needs_bounds != NULL) needs_bounds[i] = false;
        if (status != RL_OK) {
            fail_result(r, RL_BACKEND_ERROR); /* fail closed: nothing admitted without the store */
            continue;
        }
        uint64_t code = rl__redis_number(reply->element[at + 3]);
        r->allowed = rl__redis_number(reply->element[at]) == 1;
        r->retry_after_ms = rl__redis_number(reply->element[at + 1]);
        r->reserved_at_unix_ms = rl__redis_number(reply->element[at + 2]);
        r->status = status_of_code(code);
        r->status_key = status_key_of(backend, &requests[i], reply->element[at + 4]);
        if (code == CODE_NEEDS_BOUNDS) {
            if (needs_bounds == NULL) fail_result(r, RL_BACKEND_ERROR);
            else needs_bounds[i] = true;
            continue;
        }
        rl_denial *d = &r->denied_by;
        d->key = status_key_of(backend, &requests[i], reply->element[at + 5]);
        uint64_t reason = rl__redis_number(reply->element[at + 6]);
        d->reason = d->key != NULL && reason <= RL_DENIAL_EXCEEDS_CAPACITY ? (rl_denial_reason)reason : RL_DENIAL_NONE;
        d->requested = rl__redis_number(reply->element[at + 7]);
        d->available = rl__redis_number(reply->element[at + 8]);
        d->capacity = rl__redis_number(reply->element[at + 9]);
        d->period_end_unix_ms = rl__redis_number(reply->element[at + 10]);
    }
    if (reply != NULL) freeReplyObject(reply);
}

/* Whether a lease that could not be decided may be decided again now: a
 * key the store lost, defined again from what this daemon knows, or a
 * budget whose latest definition (its calendar) it has now read. */
static bool heal(redis_backend *backend, const rl_reserve_result *result, bool needs_bounds, uint64_t deadline_ms) {
    if (result->status_key == NULL) return false;
    if (needs_bounds) return rl_redis_read_again(backend, result->status_key, deadline_ms);
    return result->status == RL_UNKNOWN_LIMIT_KEY && rl_redis_define_again(backend, result->status_key, deadline_ms);
}

/* A Redis that restarted without persistence, or was flushed, has lost the
 * definitions too: every reserve would answer unknown_limit_key until an
 * admin put them back. The leases that met a key this daemon knows are
 * decided again once, after defining it again (the background thread puts
 * back the rest within a second). Their reservations were lost with the
 * rest: run Redis with appendonly for none to be. A lease that met a budget
 * this daemon has not seen (or not since its period or zone changed) is
 * decided again after reading its definition, a few times at most (another
 * daemon may be changing it meanwhile), then fails. All within the
 * operation's one deadline. */
void rl__redis_reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    redis_backend *backend = rl_redis_backend_of(base);
    uint64_t deadline_ms = rl_redis_operation_deadline_ms(backend);
    bool *needs_bounds = calloc(count, sizeof *needs_bounds); /* NULL: such leases fail */
    run_reserves(backend, requests, count, deadline_ms, results, needs_bounds);
    for (size_t i = 0; i < count; i++) {
        bool *needs = needs_bounds != NULL ? &needs_bounds[i] : NULL;
        /* this lease, and any other that met a key now defined, again */
        for (int reads = 0; !(needs != NULL && *needs && reads++ == BOUNDS_READS_MAX);) {
            if (!heal(backend, &results[i], needs != NULL && *needs, deadline_ms)) break;
            run_reserves(backend, &requests[i], 1, deadline_ms, &results[i], needs);
        }
        if (needs != NULL && *needs) fail_result(&results[i], RL_BACKEND_ERROR);
    }
    free(needs_bounds);
}
