/* redis_definitions.c — the redis backend's definitions: defining and
 * deleting limits (define.lua, delete.lua), reading them (one, how many,
 * all), and following them so that a store that lost them gets them back
 * (changes.lua + the definition cache), and a deleted one never does. See
 * redis_backend_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "wire/buf.h"
#include "wire/wire.h"

#define ERR_SIZE 256
#define DEFINITIONS_PER_CALL "500" /* keys a listing page scans: each script call is short */
#define DEFINE_ARGS 11             /* per limit in define.lua */
#define RESTORE_PER_CALL 100       /* limits put back per script call after a loss */
#define CHANGES_PER_CALL 500       /* changed definitions read per script call */
#define CHANGES_CALLS_PER_SYNC 20  /* then the next step goes on */
#define DEFINE_DELETED 4           /* define.lua's code for a restore of a key the store deleted */

/* A definition's JSON as this daemon keeps it in its cache: only JSON that
 * decoded, or that it encoded itself, so this cannot fail but for memory. */
static bool decode_cached(const char *json, rl_limit_def *out) {
    char detail[RL_WIRE_DETAIL_SIZE];
    return rl__wire_decode_limit_def(json, strlen(json), out, detail) == RL_OK;
}

/* A definition's JSON as Redis holds it (remembered in the definition
 * cache, to define it again should Redis lose it). Every build writes it
 * with rl__wire_encode_limit_def, so one that does not decode was edited by
 * hand, damaged, or written by a build that knows more than this one: an
 * error (RL_BACKEND_ERROR, and a line on stderr saying which and why), not
 * an absence. Left out, the limit would still be enforced by the scripts
 * but be missing from the admin API, and a daemon starting up would seed
 * the key again from its own registry file, over what Redis holds. */
rl_status rl_redis_decode_stored(const char *what, rl_status (*decode)(const char *, size_t, rl_limit_def *, char *),
                                 const char *json, size_t len, rl_limit_def *out) {
    char detail[RL_WIRE_DETAIL_SIZE];
    if (decode(json, len, out, detail) == RL_OK) return RL_OK;
    fprintf(stderr, "ratelimiterd: a limit %s in Redis cannot be read (%s); PUT the %s again to replace it: %.*s\n",
            what, detail, what, len > 300 ? 300 : (int)len, json);
    return RL_BACKEND_ERROR;
}

static rl_status decode_stored(redis_backend *backend, const char *json, size_t len, rl_limit_def *out) {
    if (rl_redis_decode_stored("definition", rl__wire_decode_limit_def, json, len, out) != RL_OK)
        return RL_BACKEND_ERROR;
    rl_definition_cache_put(backend->definitions, out->key, json, len);
    (void)rl__budget_periods_learn(backend->budgets, out); /* a zone it cannot read: the scripts ask again */
    return RL_OK;
}

/* What this daemon knew of a deleted key goes: nothing defines it again
 * from here, and a backend with allotments drops its mirror of it. */
static void forget_deleted(redis_backend *backend, const char *key) {
    rl_definition_cache_remove(backend->definitions, key);
    rl__budget_periods_forget(backend->budgets, key);
    pthread_mutex_lock(&backend->hook_lock); /* held: the hook's owner may take it away meanwhile */
    if (backend->deleted_hook != NULL) backend->deleted_hook(backend->deleted_context, key);
    pthread_mutex_unlock(&backend->hook_lock);
}

void rl_redis_push_definition_head(rl_redis_args *a, const rl_limit_def *def, const char *json, size_t json_len) {
    rl_redis_args_push_str(a, def->key);
    rl_redis_args_push_str(a, def->kind == RL_KIND_ROLLING ? "r" : def->kind == RL_KIND_CONCURRENCY ? "c" : "b");
    rl_redis_args_push_u64(a, def->capacity);
    rl_redis_args_push_u64(a, (uint64_t)(def->kind == RL_KIND_ROLLING ? def->window_seconds : def->timeout_seconds) *
                                  1000u);
    rl_redis_args_push_str(a, def->overage == RL_OVERAGE_DEBT ? "debt" : "deny");
    rl_redis_args_push(a, json, json_len);
}

/* The 11 values define.lua takes for one limit; json and bounds (a
 * budget's, else unused) must live until the call returns. */
static void push_definition(rl_redis_args *a, const rl_limit_def *def, const char *json, size_t json_len,
                            const rl_budget_bounds *bounds) {
    rl_redis_push_definition_head(a, def, json, json_len);
    if (def->kind == RL_KIND_BUDGET) {
        rl_redis_args_push_str(a, bounds->cal);
        for (int i = 0; i < 4; i++) rl_redis_args_push_u64(a, bounds->at_unix_ms[i]);
    } else {
        rl_redis_args_push(a, "", 0);
        for (int i = 0; i < 4; i++) rl_redis_args_push(a, "0", 1);
    }
}

/* One define.lua call for count limits (mode "put" or "restore"); codes[i]
 * gets limit i's answer (0 active, 1 decreasing, 2 in use: a change of kind
 * refused, 3 left as it was, 4 left deleted: DEFINE_DELETED). A budget's
 * bounds are around clock's now (NULL: the system's), as the script's is
 * Redis's (or clock's). */
static rl_status define(redis_backend *backend, const rl_clock *clock, const char *mode, const rl_limit_def *defs,
                        const char *const *jsons, size_t count, uint64_t deadline_ms, long long *codes) {
    rl_budget_bounds *bounds = calloc(count, sizeof *bounds);
    if (bounds == NULL) return RL_NO_MEMORY;
    uint64_t unix_now_ms = rl__redis_unix_now_ms(clock);
    for (size_t i = 0; i < count; i++) {
        if (defs[i].kind != RL_KIND_BUDGET) continue;
        rl_status status = rl__budget_bounds_of_def(&defs[i], unix_now_ms, &bounds[i]);
        if (status != RL_OK) {
            free(bounds);
            return status;
        }
    }
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    if (rl_redis_args_init(&a, 6 + DEFINE_ARGS * (int)count)) {
        rl__redis_push_header(&a, backend, clock);
        rl_redis_args_push_str(&a, mode);
        rl_redis_args_push_u64(&a, count);
        for (size_t i = 0; i < count; i++) push_definition(&a, &defs[i], jsons[i], strlen(jsons[i]), &bounds[i]);
        char err[ERR_SIZE];
        redisReply *reply = NULL;
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_DEFINE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
        if (status == RL_OK) {
            if (reply->type != REDIS_REPLY_ARRAY || reply->elements != count) status = RL_BACKEND_ERROR;
            for (size_t i = 0; status == RL_OK && i < count; i++)
                codes[i] = reply->element[i]->type == REDIS_REPLY_INTEGER ? reply->element[i]->integer : -1;
        }
        if (reply != NULL) freeReplyObject(reply);
    }
    rl_redis_args_free(&a);
    free(bounds);
    return status;
}

/* One definition in mode "put" (an admin change) or "restore" (putting
 * back a copy: apply_definition's and restore_definition's, below). */
static rl_status define_one(redis_backend *backend, const char *mode, const rl_limit_def *def, long long *code) {
    rl_buf json;
    rl__buf_init(&json);
    rl__wire_encode_limit_def(&json, def);
    if (json.failed) {
        rl__buf_free(&json);
        return RL_NO_MEMORY;
    }
    const char *jsons[] = {json.data};
    rl_status status =
        define(backend, backend->clock, mode, def, jsons, 1, rl_redis_operation_deadline_ms(backend), code);
    if (status == RL_OK && *code == 2) status = RL_LIMIT_IN_USE; /* nothing was written */
    if (status == RL_OK && *code == DEFINE_DELETED) {
        forget_deleted(backend, def->key);
        status = RL_UNKNOWN_LIMIT_KEY;
    }
    if (status == RL_OK && *code != 3) {
        rl_definition_cache_put(backend->definitions, def->key, json.data, json.len);
        (void)rl__budget_periods_learn(backend->budgets, def); /* its zone was just read: this cannot fail but for memory */
    }
    rl__buf_free(&json);
    return status;
}

rl_status rl_redis_apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status) {
    long long code = 0;
    rl_status status = define_one(rl_redis_backend_of(base), "put", def, &code);
    if (status == RL_OK && out_status != NULL)
        *out_status = code == 1 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
    return status;
}

rl_status rl_redis_restore_definition(rl_backend *base, const rl_limit_def *def) {
    long long code = 0;
    return define_one(rl_redis_backend_of(base), "restore", def, &code);
}

/* delete.lua: 1 deleted, 0 no such limit. */
rl_status rl_redis_delete_definition(rl_backend *base, const char *key) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    redisReply *reply = NULL;
    if (rl_redis_args_init(&a, 6)) {
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_str(&a, key);
        char err[ERR_SIZE];
        status = rl_redis_eval(backend->pool, rl_redis_operation_deadline_ms(backend), RL_SCRIPT_DELETE, a.count,
                               a.argv, a.len, &reply, err, sizeof err);
    }
    rl_redis_args_free(&a);
    if (status == RL_OK && reply->type != REDIS_REPLY_INTEGER) status = RL_BACKEND_ERROR;
    if (status == RL_OK && reply->integer == 0) status = RL_UNKNOWN_LIMIT_KEY;
    if (reply != NULL) freeReplyObject(reply);
    /* Deleted now or before (another daemon's, not yet followed): either way
     * nothing of it is to be defined again from here. */
    if (status == RL_OK || status == RL_UNKNOWN_LIMIT_KEY) forget_deleted(backend, key);
    return status;
}

bool rl_redis_define_again(redis_backend *backend, const char *key, uint64_t deadline_ms) {
    char *json = rl_definition_cache_get(backend->definitions, key);
    if (json == NULL) return false;
    rl_limit_def def;
    long long code = 0;
    const char *jsons[] = {json};
    bool defined = decode_cached(json, &def) &&
                   define(backend, backend->clock, "restore", &def, jsons, 1, deadline_ms, &code) == RL_OK;
    free(json);
    if (defined && code == DEFINE_DELETED) { /* deleted by another daemon, not yet followed */
        forget_deleted(backend, key);
        return false;
    }
    return defined;
}

/* Puts back, in pages, every definition this daemon knows that the store
 * lacks (define.lua's restore mode leaves the keys it holds alone). */
static void restore_all(redis_backend *backend) {
    size_t count = 0;
    char **jsons = rl_definition_cache_all(backend->definitions, &count);
    rl_limit_def *defs = count > 0 ? malloc(RESTORE_PER_CALL * sizeof *defs) : NULL;
    const char *page[RESTORE_PER_CALL];
    long long codes[RESTORE_PER_CALL];
    size_t restored = 0, failed = 0;
    for (size_t at = 0; defs != NULL && at < count;) {
        size_t n = 0;
        for (; at < count && n < RESTORE_PER_CALL; at++)
            if (decode_cached(jsons[at], &defs[n])) page[n++] = jsons[at];
        if (n == 0) continue;
        if (define(backend, NULL, "restore", defs, page, n, rl_redis_pool_deadline_ms(backend->pool, 0), codes) != RL_OK) {
            failed += n;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (codes[i] == DEFINE_DELETED) forget_deleted(backend, defs[i].key);
            else if (codes[i] != 3) restored++;
        }
    }
    if (restored > 0 || failed > 0)
        fprintf(stderr,
                "ratelimiterd: Redis at %s had lost its limit definitions: %zu put back from what this daemon "
                "knew%s\n",
                rl_redis_pool_address(backend->pool), restored, failed > 0 ? " (some could not be: retrying)" : "");
    free(defs);
    for (size_t i = 0; i < count; i++) free(jsons[i]);
    free(jsons);
}

/* One changes.lua call: page 0 reads only the epoch and version. */
static rl_status read_changes(redis_backend *backend, uint64_t page, redisReply **reply) {
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    if (rl_redis_args_init(&a, 7)) {
        /* No time: changes.lua needs none, and this runs on the background
         * thread, which must not read the caller's clock (a test's manual
         * clock belongs to the test's thread). */
        rl__redis_push_header(&a, backend, NULL);
        rl_redis_args_push_str(&a, backend->followed_epoch);
        rl_redis_args_push_u64(&a, backend->followed_version);
        rl_redis_args_push_u64(&a, page);
        char err[ERR_SIZE];
        status = rl_redis_eval(backend->pool, rl_redis_pool_deadline_ms(backend->pool, 0), RL_SCRIPT_CHANGES, a.count,
                               a.argv, a.len, reply, err, sizeof err);
        if (status == RL_OK && ((*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements < 3 ||
                                (*reply)->elements % 2 != 1 || (*reply)->element[0]->type != REDIS_REPLY_STRING ||
                                (*reply)->element[0]->len >= sizeof backend->followed_epoch)) {
            freeReplyObject(*reply);
            *reply = NULL;
            status = RL_BACKEND_ERROR;
        }
    }
    rl_redis_args_free(&a);
    return status;
}

rl_status rl_redis_definitions_follow(redis_backend *backend, char *err, size_t err_size) {
    redisReply *reply = NULL;
    rl_status status = read_changes(backend, 0, &reply);
    if (status != RL_OK) {
        snprintf(err, err_size, "redis %s: cannot read the version of the definitions",
                 rl_redis_pool_address(backend->pool));
        return status;
    }
    snprintf(backend->followed_epoch, sizeof backend->followed_epoch, "%s", reply->element[0]->str);
    backend->followed_version = rl__redis_number(reply->element[1]);
    freeReplyObject(reply);
    return RL_OK;
}

void rl_redis_definitions_sync(redis_backend *backend) {
    for (int call = 0; call < CHANGES_CALLS_PER_SYNC; call++) {
        redisReply *reply = NULL;
        if (read_changes(backend, CHANGES_PER_CALL, &reply) != RL_OK) return; /* the next step tries again */
        for (size_t i = 3; i + 1 < reply->elements; i += 2) {
            const redisReply *key = reply->element[i], *json = reply->element[i + 1];
            rl_limit_def def; /* one that does not decode is said on stderr and not kept */
            if (key->type != REDIS_REPLY_STRING || json->type != REDIS_REPLY_STRING) continue;
            const char *pattern = rl__redis_template_change(key->str);
            if (pattern != NULL) rl__redis_template_followed(backend, pattern, json->str, json->len);
            else if (json->len == 0) forget_deleted(backend, key->str); /* deleted: its tombstone */
            else (void)decode_stored(backend, json->str, json->len, &def);
        }
        const char *epoch = reply->element[0]->str;
        /* Another epoch than the one followed: the store was replaced (Redis
         * restarted empty, or was flushed, and something was defined since);
         * no epoch at all while this daemon knows definitions: it lost them
         * and nothing was defined since. Either way, put back what it lacks. */
        bool lost = strcmp(epoch, backend->followed_epoch) != 0 ||
                    (epoch[0] == '\0' && (rl_definition_cache_count(backend->definitions) > 0 ||
                                          rl__template_copy_count(backend->templates) > 0));
        snprintf(backend->followed_epoch, sizeof backend->followed_epoch, "%s", epoch);
        backend->followed_version = rl__redis_number(reply->element[1]);
        bool more = rl__redis_number(reply->element[2]) != 0;
        freeReplyObject(reply);
        if (lost) {
            restore_all(backend);
            rl__redis_templates_restore(backend); /* the limits made from them are not: they start empty */
        }
        if (!more) return;
    }
}

/* One definition: HGET of its JSON. RL_UNKNOWN_LIMIT_KEY when Redis has
 * none; RL_BACKEND_ERROR for one that does not decode (decode_stored). */
static rl_status read_definition(redis_backend *backend, const char *key, size_t key_len, uint64_t deadline_ms,
                                 rl_limit_def *out) {
    char limit_key[RL_KEY_MAX_LEN + 64];
    int n = snprintf(limit_key, sizeof limit_key, "%sl:%.*s", backend->prefix, (int)key_len, key);
    if (n < 0 || (size_t)n >= sizeof limit_key) return RL_UNKNOWN_LIMIT_KEY; /* no such key can exist */
    const char *get[] = {"HGET", limit_key, "def"};
    size_t get_len[] = {4, (size_t)n, 3};
    redisReply *json = NULL;
    char err[ERR_SIZE];
    rl_status status = rl_redis_command(backend->pool, deadline_ms, 3, get, get_len, &json, err, sizeof err);
    if (status != RL_OK) return status;
    status = RL_UNKNOWN_LIMIT_KEY;
    if (json->type == REDIS_REPLY_STRING) status = decode_stored(backend, json->str, json->len, out);
    freeReplyObject(json);
    return status;
}

rl_status rl_redis_get_definition(rl_backend *base, const char *key, rl_limit_def *out) {
    redis_backend *backend = rl_redis_backend_of(base);
    return read_definition(backend, key, strlen(key), rl_redis_operation_deadline_ms(backend), out);
}

bool rl_redis_read_again(redis_backend *backend, const char *key, uint64_t deadline_ms) {
    rl_limit_def def; /* decode_stored learns it */
    rl_status status = read_definition(backend, key, strlen(key), deadline_ms, &def);
    char pattern[RL_KEY_MAX_LEN + 1];
    /* no definition of its own: a limit made from a template, whose budget
     * calendar this daemon may not know as it is now */
    if (status == RL_UNKNOWN_LIMIT_KEY && rl__template_copy_match(backend->templates, key, pattern, NULL))
        return rl__redis_templates_read_again(backend);
    return status == RL_OK;
}

/* SCARD of the definitions set. */
rl_status rl_redis_count_definitions(rl_backend *base, size_t *count) {
    redis_backend *backend = rl_redis_backend_of(base);
    *count = 0;
    char set_key[RL_KEY_MAX_LEN + 64];
    snprintf(set_key, sizeof set_key, "%sdefs", backend->prefix);
    const char *argv[] = {"SCARD", set_key};
    size_t len[] = {5, strlen(set_key)};
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_command(backend->pool, rl_redis_operation_deadline_ms(backend), 2, argv, len, &reply,
                                        err, sizeof err);
    if (status != RL_OK) return status;
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer >= 0) *count = (size_t)reply->integer;
    else status = RL_BACKEND_ERROR;
    freeReplyObject(reply);
    return status;
}

/* Adds one JSON of a listing to defs (growing it), decoded and learned by
 * learn; one that does not decode fails the listing. */
static rl_status add_listed(redis_backend *backend, rl_redis_decode_fn learn, const redisReply *json,
                            rl_limit_def **defs, size_t *n, size_t *capacity) {
    if (json->type != REDIS_REPLY_STRING) return RL_OK;
    if (*n == *capacity) {
        size_t grown = *capacity > 0 ? *capacity * 2 : 64;
        rl_limit_def *bigger = realloc(*defs, grown * sizeof *bigger);
        if (bigger == NULL) return RL_NO_MEMORY;
        *defs = bigger;
        *capacity = grown;
    }
    rl_status status = learn(backend, json->str, json->len, &(*defs)[*n]);
    if (status == RL_OK) (*n)++;
    return status;
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

rl_status rl_redis_list_paged(redis_backend *backend, const char *which, rl_redis_decode_fn learn,
                              rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    rl_limit_def *defs = NULL;
    size_t n = 0, capacity = 0;
    char cursor[RL_REDIS_NUMBER_SIZE] = "0";
    rl_status status = RL_OK;
    do {
        redisReply *page = NULL;
        status = rl_redis_eval_page(backend, RL_SCRIPT_DEFINITIONS, cursor, DEFINITIONS_PER_CALL, which, &page);
        if (status == RL_OK && (page->type != REDIS_REPLY_ARRAY || page->elements < 1 ||
                                page->element[0]->type != REDIS_REPLY_STRING ||
                                page->element[0]->len >= sizeof cursor))
            status = RL_BACKEND_ERROR;
        if (status == RL_OK) {
            snprintf(cursor, sizeof cursor, "%s", page->element[0]->str);
            for (size_t i = 1; i < page->elements && status == RL_OK; i++)
                status = add_listed(backend, learn, page->element[i], &defs, &n, &capacity);
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
    if (kept == 0) {
        free(defs);
        defs = NULL;
    }
    *out = defs;
    *count = kept;
    return RL_OK;
}

/* Every definition (definitions.lua over the definitions set), each
 * remembered in the definition cache (decode_stored). */
rl_status rl_redis_list_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_redis_list_paged(rl_redis_backend_of(base), NULL, decode_stored, out, count);
}
