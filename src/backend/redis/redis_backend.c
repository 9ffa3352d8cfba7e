/* redis_backend.c — the backend vtable over Redis (see ratelimiter/redis.h).
 *
 * Each operation is one script call: the C side only checks requests, lays
 * them out as the script's ARGV and maps the answer back. All accounting
 * happens inside the scripts (src/backend/redis/lua), atomically.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/complete_retry.h"
#include "backend/redis/definition_cache.h"
#include "backend/redis/redis_pool.h"
#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/ulid.h"
#include "wire/buf.h"
#include "wire/wire.h"

#define ERR_SIZE 256
#define NUMBER_SIZE 24 /* a uint64 in decimal and a NUL */
#define SWEEP_LIMITS_PER_CALL "100"
#define DEFINITIONS_PER_CALL "500" /* keys a listing page scans: each script call is short */

typedef struct redis_backend {
    rl_backend base;
    rl_redis_pool *pool;
    char *prefix;
    uint64_t lease_memory_ms;
    const rl_clock *clock; /* tests only */
    rl_complete_retry *retry; /* Completes waiting for Redis to come back; the sweeps */
    rl_definition_cache *definitions; /* to define again what a restarted Redis lost */
    /* Limit keys named by replayed outcomes that are not in the request at
     * hand: kept for the backend's life (limits are few and never deleted),
     * so that a result's status_key stays valid as rl_reserve_result says. */
    pthread_mutex_t interned_lock;
    char **interned;
    size_t interned_count, interned_capacity;
} redis_backend;

static inline redis_backend *from_base(rl_backend *base) { return (redis_backend *)base; }

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

/* ---- ARGV building: strings that live until the call returns ---- */

typedef struct args {
    const char **argv;
    size_t *len;
    int count;
    int capacity;
    char (*numbers)[NUMBER_SIZE]; /* storage for the numbers among them */
    int number_count;
    char (*ids)[RL_ULID_TEXT_SIZE]; /* upper-cased lease ids */
    int id_count;
} args;

static bool args_init(args *a, int capacity) {
    memset(a, 0, sizeof *a);
    a->argv = malloc((size_t)capacity * sizeof *a->argv);
    a->len = malloc((size_t)capacity * sizeof *a->len);
    a->numbers = malloc((size_t)capacity * sizeof *a->numbers);
    a->ids = malloc((size_t)capacity * sizeof *a->ids);
    a->capacity = capacity;
    return a->argv != NULL && a->len != NULL && a->numbers != NULL && a->ids != NULL;
}

static void args_free(args *a) {
    free(a->argv);
    free(a->len);
    free(a->numbers);
    free(a->ids);
}

static void push(args *a, const char *text, size_t len) {
    a->argv[a->count] = text;
    a->len[a->count++] = len;
}

static void push_str(args *a, const char *text) { push(a, text, strlen(text)); }

static void push_u64(args *a, uint64_t value) {
    char *slot = a->numbers[a->number_count++];
    int n = snprintf(slot, NUMBER_SIZE, "%llu", (unsigned long long)value);
    push(a, slot, (size_t)n);
}

/* Lease ids go in upper case: "01j..." and "01J..." are one lease. */
static void push_lease_id(args *a, const char *lease_id) {
    char *slot = a->ids[a->id_count++];
    for (int i = 0; i < RL_ULID_LEN; i++) slot[i] = (char)toupper((unsigned char)lease_id[i]);
    slot[RL_ULID_LEN] = '\0';
    push(a, slot, RL_ULID_LEN);
}

/* ARGV[1..3]: prefix and the clock ('' '': Redis TIME). */
static void push_header(redis_backend *backend, args *a) {
    push_str(a, backend->prefix);
    if (backend->clock != NULL) {
        push_u64(a, backend->clock->monotonic_ms(backend->clock));
        push_u64(a, backend->clock->unix_ms(backend->clock));
    } else {
        push(a, "", 0);
        push(a, "", 0);
    }
}

/* ---- checks: the scripts trust their input ---- */

static bool key_ok(const char *key) { return key != NULL && rl_key_is_valid(key, strnlen(key, RL_KEY_MAX_LEN + 1)); }

static bool reserve_ok(const rl_reserve_request *r) {
    if (r->lease_id == NULL || !rl_ulid_is_valid(r->lease_id, strlen(r->lease_id))) return false;
    if (r->requirement_count < 1 || r->requirement_count > RL_MAX_REQUIREMENTS) return false;
    for (size_t i = 0; i < r->requirement_count; i++) {
        const rl_requirement *q = &r->requirements[i];
        if (!key_ok(q->key) || q->amount < 1 || q->amount > RL_AMOUNT_MAX) return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->requirements[j].key, q->key) == 0) return false;
    }
    return true;
}

static bool complete_ok(const rl_complete_request *r) {
    if (r->lease_id == NULL || !rl_ulid_is_valid(r->lease_id, strlen(r->lease_id))) return false;
    if (r->actual_count > RL_MAX_REQUIREMENTS) return false;
    for (size_t i = 0; i < r->actual_count; i++)
        if (!key_ok(r->actuals[i].key) || r->actuals[i].actual_amount > RL_AMOUNT_MAX) return false;
    return true;
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
    default: return RL_BACKEND_ERROR;
    }
}

static void run_reserves(redis_backend *backend, const rl_reserve_request *requests, size_t count,
                         rl_reserve_result *results) {
    /* Checked once: results[i].status is RL_INVALID_REQUEST for a request
     * left out, RL_OK (for now) for one sent. */
    size_t valid = 0, argc = 5;
    for (size_t i = 0; i < count; i++) {
        if (reserve_ok(&requests[i])) {
            fail_result(&results[i], RL_OK);
            valid++;
            argc += 2 + 2 * requests[i].requirement_count;
        } else {
            fail_result(&results[i], RL_INVALID_REQUEST);
        }
    }
    if (valid == 0) return;
    args a;
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = RL_NO_MEMORY;
    if (args_init(&a, (int)argc)) {
        push_header(backend, &a);
        push_u64(&a, backend->lease_memory_ms);
        push_u64(&a, valid);
        for (size_t i = 0; i < count; i++) {
            if (results[i].status == RL_INVALID_REQUEST) continue;
            push_lease_id(&a, requests[i].lease_id);
            push_u64(&a, requests[i].requirement_count);
            for (size_t j = 0; j < requests[i].requirement_count; j++) {
                push_str(&a, requests[i].requirements[j].key);
                push_u64(&a, requests[i].requirements[j].amount);
            }
        }
        status = rl_redis_eval(backend->pool, RL_SCRIPT_RESERVE, a.count, a.argv, a.len, &reply, err, sizeof err);
    }
    args_free(&a);
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

static rl_status apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status);

/* Defines key again from the cache if this daemon has seen it. */
static bool define_again(redis_backend *backend, const char *key) {
    char *json = rl_definition_cache_get(backend->definitions, key);
    if (json == NULL) return false;
    rl_limit_def def;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* The cache holds only JSON that decoded, or that this daemon encoded. */
    bool defined = rl_wire_decode_limit_def(json, strlen(json), &def, detail) == RL_OK &&
                   apply_definition(&backend->base, &def, NULL) == RL_OK;
    free(json);
    return defined;
}

/* A Redis that restarted without persistence, or was flushed, has lost the
 * definitions too: every reserve would answer unknown_limit_key until an
 * admin put them back. The leases that met a key this daemon knows are
 * decided again once, after defining it again. (Their reservations were
 * lost with the rest: run Redis with appendonly for none to be.) */
static void reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    redis_backend *backend = from_base(base);
    run_reserves(backend, requests, count, results);
    for (size_t i = 0; i < count; i++) {
        if (results[i].status != RL_UNKNOWN_LIMIT_KEY || results[i].status_key == NULL) continue;
        if (!define_again(backend, results[i].status_key)) continue;
        /* this lease, and any other that met a key now defined, again */
        for (;;) {
            run_reserves(backend, &requests[i], 1, &results[i]);
            if (results[i].status != RL_UNKNOWN_LIMIT_KEY || results[i].status_key == NULL ||
                !define_again(backend, results[i].status_key))
                break;
        }
    }
}

/* ---- complete ---- */

/* One script call for the valid requests among requests[0..count). */
/* Sends the valid Completes of requests in one script call, checking each
 * once: sent (if not NULL) gets RL_OK for the ones sent and
 * RL_INVALID_REQUEST for the ones left out. Arguments are sized for every
 * request (an invalid one counts at most RL_MAX_REQUIREMENTS actuals), and
 * the count of leases is written once they are known. */
static rl_status send_completes(redis_backend *backend, const rl_complete_request *requests, size_t count,
                                rl_status *sent) {
    size_t argc = 4;
    for (size_t i = 0; i < count; i++)
        argc += 2 + 2 * (requests[i].actual_count < RL_MAX_REQUIREMENTS ? requests[i].actual_count
                                                                           : RL_MAX_REQUIREMENTS);
    args a;
    rl_status status = RL_NO_MEMORY;
    if (!args_init(&a, (int)argc)) {
        args_free(&a);
        for (size_t i = 0; sent != NULL && i < count; i++)
            sent[i] = complete_ok(&requests[i]) ? RL_OK : RL_INVALID_REQUEST;
        return status;
    }
    push_header(backend, &a);
    int count_at = a.count;
    push(&a, "", 0); /* ARGV[4], the count: below */
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        bool ok = complete_ok(&requests[i]);
        if (sent != NULL) sent[i] = ok ? RL_OK : RL_INVALID_REQUEST;
        if (!ok) continue;
        valid++;
        push_lease_id(&a, requests[i].lease_id);
        push_u64(&a, requests[i].actual_count);
        for (size_t j = 0; j < requests[i].actual_count; j++) {
            push_str(&a, requests[i].actuals[j].key);
            push_u64(&a, requests[i].actuals[j].actual_amount);
        }
    }
    status = RL_OK;
    if (valid > 0) {
        int end = a.count;
        a.count = count_at;
        push_u64(&a, valid);
        a.count = end;
        char err[ERR_SIZE];
        redisReply *reply = NULL;
        status = rl_redis_eval(backend->pool, RL_SCRIPT_COMPLETE, a.count, a.argv, a.len, &reply, err, sizeof err);
        if (reply != NULL) freeReplyObject(reply);
    }
    args_free(&a);
    return status;
}

static bool retry_send(void *context, const rl_complete_request *requests, size_t count) {
    return send_completes(context, requests, count, NULL) == RL_OK;
}

/* A Complete that cannot reach Redis now is kept and retried in the
 * background: the caller is told it was taken. Only a full retry queue makes
 * it fail. An invalid Complete has nothing to release: ok. */
static void complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    redis_backend *backend = from_base(base);
    rl_status status = send_completes(backend, requests, count, statuses);
    if (status != RL_OK && rl_complete_retry_add(backend->retry, requests, count)) status = RL_OK;
    for (size_t i = 0; i < count; i++) {
        if (statuses[i] != RL_OK) statuses[i] = RL_OK; /* left out: nothing to release */
        else if (status != RL_OK) statuses[i] = RL_BACKEND_ERROR;
    }
}

/* ---- definitions and usage ---- */

static rl_status apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status) {
    redis_backend *backend = from_base(base);
    rl_buf json;
    rl_buf_init(&json);
    rl_wire_encode_limit_def(&json, def);
    if (json.failed) {
        rl_buf_free(&json);
        return RL_NO_MEMORY;
    }
    args a;
    if (!args_init(&a, 9)) {
        args_free(&a);
        rl_buf_free(&json);
        return RL_NO_MEMORY;
    }
    push_header(backend, &a);
    push_str(&a, def->key);
    push_str(&a, def->kind == RL_KIND_ROLLING ? "r" : "c");
    push_u64(&a, def->capacity);
    push_u64(&a, (uint64_t)(def->kind == RL_KIND_ROLLING ? def->window_seconds : def->timeout_seconds) * 1000u);
    push_str(&a, def->overage == RL_OVERAGE_DEBT ? "debt" : "deny");
    push(&a, json.data, json.len);
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, RL_SCRIPT_DEFINE, a.count, a.argv, a.len, &reply, err, sizeof err);
    args_free(&a);
    if (status == RL_OK) rl_definition_cache_put(backend->definitions, def->key, json.data, json.len);
    rl_buf_free(&json);
    if (status == RL_OK && out_status != NULL)
        *out_status = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1 ? RL_LIMIT_STATUS_DECREASING
                                                                                : RL_LIMIT_STATUS_ACTIVE;
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

static rl_status limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    redis_backend *backend = from_base(base);
    args a;
    if (!args_init(&a, 4)) {
        args_free(&a);
        return RL_NO_MEMORY;
    }
    push_header(backend, &a);
    push_str(&a, key);
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, RL_SCRIPT_USAGE, a.count, a.argv, a.len, &reply, err, sizeof err);
    args_free(&a);
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

/* One call of a script that walks the definitions set a page at a time
 * (sweep, definitions): ARGV[4] = the SSCAN cursor, ARGV[5] = keys a page. */
static rl_status eval_page(redis_backend *backend, rl_redis_script script, const char *cursor,
                           const char *per_call, redisReply **reply) {
    *reply = NULL;
    args a;
    if (!args_init(&a, 5)) {
        args_free(&a);
        return RL_NO_MEMORY;
    }
    push_header(backend, &a);
    push_str(&a, cursor);
    push_str(&a, per_call);
    char err[ERR_SIZE];
    rl_status status = rl_redis_eval(backend->pool, script, a.count, a.argv, a.len, reply, err, sizeof err);
    args_free(&a);
    return status;
}

static void sweep(rl_backend *base) {
    redis_backend *backend = from_base(base);
    char cursor[NUMBER_SIZE] = "0";
    do {
        redisReply *reply = NULL;
        rl_status status = eval_page(backend, RL_SCRIPT_SWEEP, cursor, SWEEP_LIMITS_PER_CALL, &reply);
        if (status != RL_OK || reply->type != REDIS_REPLY_STRING) {
            if (reply != NULL) freeReplyObject(reply);
            return; /* the next sweep tries again */
        }
        snprintf(cursor, sizeof cursor, "%s", reply->str);
        freeReplyObject(reply);
    } while (strcmp(cursor, "0") != 0);
}

static rl_status health(rl_backend *base, char *detail, size_t detail_size) {
    redis_backend *backend = from_base(base);
    const char *argv[] = {"PING"};
    size_t len[] = {4};
    redisReply *reply = NULL;
    char err[ERR_SIZE] = "";
    rl_status status = rl_redis_command(backend->pool, 1, argv, len, &reply, err, sizeof err);
    if (reply != NULL) freeReplyObject(reply);
    if (status != RL_OK) rl_error_text(detail, detail_size, "%s", err);
    return status == RL_OK ? RL_OK : RL_BACKEND_ERROR;
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

/* A definition's JSON as Redis holds it (remembered in the definition
 * cache, to define it again should Redis lose it). Every build writes it
 * with rl_wire_encode_limit_def, so one that does not decode was edited by
 * hand, damaged, or written by a build that knows more than this one: an
 * error (RL_BACKEND_ERROR, and a line on stderr saying which and why), not
 * an absence. Left out, the limit would still be enforced by the scripts
 * but be missing from the admin API, and a daemon starting up would seed
 * the key again from its own registry file, over what Redis holds. */
static rl_status decode_stored(redis_backend *backend, const char *json, size_t len,
                               rl_limit_def *out) {
    char detail[RL_WIRE_DETAIL_SIZE];
    if (rl_wire_decode_limit_def(json, len, out, detail) != RL_OK) {
        fprintf(stderr,
                "ratelimiterd: a limit definition in Redis cannot be read (%s); PUT the limit "
                "again to replace it: %.*s\n",
                detail, len > 300 ? 300 : (int)len, json);
        return RL_BACKEND_ERROR;
    }
    rl_definition_cache_put(backend->definitions, out->key, json, len);
    return RL_OK;
}

/* One definition: HGET of its JSON. RL_UNKNOWN_LIMIT_KEY when Redis has
 * none; RL_BACKEND_ERROR for one that does not decode (decode_stored). */
static rl_status read_definition(redis_backend *backend, const char *key, size_t key_len, rl_limit_def *out) {
    char limit_key[RL_KEY_MAX_LEN + 64];
    int n = snprintf(limit_key, sizeof limit_key, "%sl:%.*s", backend->prefix, (int)key_len, key);
    if (n < 0 || (size_t)n >= sizeof limit_key) return RL_UNKNOWN_LIMIT_KEY; /* no such key can exist */
    const char *get[] = {"HGET", limit_key, "def"};
    size_t get_len[] = {4, (size_t)n, 3};
    redisReply *json = NULL;
    char err[ERR_SIZE];
    rl_status status = rl_redis_command(backend->pool, 3, get, get_len, &json, err, sizeof err);
    if (status != RL_OK) return status;
    status = RL_UNKNOWN_LIMIT_KEY;
    if (json->type == REDIS_REPLY_STRING) status = decode_stored(backend, json->str, json->len, out);
    freeReplyObject(json);
    return status;
}

static rl_status get_definition(rl_backend *base, const char *key, rl_limit_def *out) {
    return read_definition(from_base(base), key, strlen(key), out);
}

/* A command on the definitions set (P defs). */
static rl_status on_definitions_set(redis_backend *backend, const char *command, redisReply **reply) {
    char set_key[RL_KEY_MAX_LEN + 64];
    snprintf(set_key, sizeof set_key, "%sdefs", backend->prefix);
    const char *argv[] = {command, set_key};
    size_t len[] = {strlen(command), strlen(set_key)};
    char err[ERR_SIZE];
    return rl_redis_command(backend->pool, 2, argv, len, reply, err, sizeof err);
}

/* SCARD of the definitions set. */
static rl_status count_definitions(rl_backend *base, size_t *count) {
    *count = 0;
    redisReply *reply = NULL;
    rl_status status = on_definitions_set(from_base(base), "SCARD", &reply);
    if (status != RL_OK) return status;
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer >= 0) *count = (size_t)reply->integer;
    else status = RL_BACKEND_ERROR;
    freeReplyObject(reply);
    return status;
}

/* Adds one definition's JSON to defs (growing it), remembering it in the
 * definition cache. One that does not decode fails the listing
 * (decode_stored). */
static rl_status add_definition(redis_backend *backend, const redisReply *json, rl_limit_def **defs, size_t *n,
                                size_t *capacity) {
    if (json->type != REDIS_REPLY_STRING) return RL_OK;
    if (*n == *capacity) {
        size_t grown = *capacity > 0 ? *capacity * 2 : 64;
        rl_limit_def *bigger = realloc(*defs, grown * sizeof *bigger);
        if (bigger == NULL) return RL_NO_MEMORY;
        *defs = bigger;
        *capacity = grown;
    }
    rl_status status = decode_stored(backend, json->str, json->len, &(*defs)[*n]);
    if (status == RL_OK) (*n)++;
    return status;
}

/* Every definition, a page per script call (definitions.lua: SSCAN and the
 * JSONs of DEFINITIONS_PER_CALL keys), sorted by key, repeats dropped. */
static rl_status list_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    redis_backend *backend = from_base(base);
    *out = NULL;
    *count = 0;
    rl_limit_def *defs = NULL;
    size_t n = 0, capacity = 0;
    char cursor[NUMBER_SIZE] = "0";
    rl_status status = RL_OK;
    do {
        redisReply *page = NULL;
        status = eval_page(backend, RL_SCRIPT_DEFINITIONS, cursor, DEFINITIONS_PER_CALL, &page);
        if (status == RL_OK && (page->type != REDIS_REPLY_ARRAY || page->elements < 1 ||
                                page->element[0]->type != REDIS_REPLY_STRING ||
                                page->element[0]->len >= sizeof cursor))
            status = RL_BACKEND_ERROR;
        if (status == RL_OK) {
            snprintf(cursor, sizeof cursor, "%s", page->element[0]->str);
            for (size_t i = 1; i < page->elements && status == RL_OK; i++)
                status = add_definition(backend, page->element[i], &defs, &n, &capacity);
        }
        if (page != NULL) freeReplyObject(page);
    } while (status == RL_OK && strcmp(cursor, "0") != 0);
    if (status != RL_OK) {
        free(defs);
        return status;
    }
    if (n > 1) qsort(defs, n, sizeof *defs, by_key);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || strcmp(defs[kept - 1].key, defs[i].key) != 0) defs[kept++] = defs[i];
    *out = defs;
    *count = kept;
    return RL_OK;
}

static void sweep_for_retry(void *context) { sweep(context); }

static void destroy(rl_backend *base) {
    redis_backend *backend = from_base(base);
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
    .apply_definition = apply_definition,
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .limit_usage = limit_usage,
    .sweep = sweep,
    .destroy = destroy,
    .health = health,
    .list_definitions = list_definitions,
    .get_definition = get_definition,
    .count_definitions = count_definitions,
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
    backend->clock = options->clock;
    backend->definitions = rl_definition_cache_create();
    rl_status status = backend->prefix != NULL && backend->definitions != NULL ? RL_OK : RL_NO_MEMORY;
    if (status == RL_OK) status = rl_redis_pool_create(options, &backend->pool, err, err_size);
    if (status == RL_OK)
        status = rl_complete_retry_start(backend, retry_send, sweep_for_retry,
                                         options->complete_retry_deadline_ms ? options->complete_retry_deadline_ms : 30000,
                                         options->max_pending_completes ? options->max_pending_completes : 100000,
                                         options->sweep_interval_ms, &backend->retry);
    if (status != RL_OK) {
        destroy(&backend->base); /* takes what was made, and NULLs */
        return status;
    }
    *out = &backend->base;
    return RL_OK;
}
