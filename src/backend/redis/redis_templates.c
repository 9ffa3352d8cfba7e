/* redis_templates.c — the redis backend's limit templates (lua/made.lua,
 * lua/template.lua): putting, deleting and listing them in Redis, this
 * daemon's copy of them (template_copy.h) kept current from its own changes
 * and the changes it follows, put back in a Redis that lost them; and what
 * a script call tells about the keys it names (the budgets' bounds, the
 * template of each key a template matches). See redis_backend_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "core/limit_def.h"
#include "core/template_pattern.h"
#include "core/template_set.h"
#include "wire/buf.h"
#include "wire/wire.h"

#define ERR_SIZE 256
#define TEMPLATE_ARGS 14         /* template.lua's put: the header, mode, pattern and 8 values */
#define CHANGE_PREFIX "template " /* changes.lua's name of a template's change */

/* template.lua's answers to a put. */
enum { PUT_DONE = 0, PUT_IN_USE = 2, PUT_KEPT = 3, PUT_DELETED = 4, PUT_FULL = 5 };

/* A template's JSON as Redis holds it: decoded into *out and kept in this
 * daemon's copy; one that does not decode is an error, as a definition's
 * (redis_definitions.c). */
static rl_status learn(redis_backend *backend, const char *json, size_t len, rl_limit_def *out) {
    if (rl_redis_decode_stored("template", rl__wire_decode_template_def, json, len, out) != RL_OK)
        return RL_BACKEND_ERROR;
    (void)rl__template_copy_put(backend->templates, out, json, len); /* out of memory: the next follow */
    return RL_OK;
}

/* One template.lua put (mode "put" or "restore") of def (its JSON json):
 * its code into *code. */
static rl_status put(redis_backend *backend, const char *mode, const rl_limit_def *def, const char *json,
                     size_t json_len, uint64_t deadline_ms, long long *code) {
    char cal[RL_BUDGET_CAL_SIZE] = "";
    if (def->kind == RL_KIND_BUDGET) {
        rl_budget_bounds bounds; /* a zone tzdata cannot read is refused here, as for a limit */
        rl_status status = rl__budget_bounds_of_def(def, rl__redis_unix_now_ms(backend->clock), &bounds);
        if (status != RL_OK) return status;
        snprintf(cal, sizeof cal, "%s", bounds.cal);
    }
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    redisReply *reply = NULL;
    if (rl_redis_args_init(&a, TEMPLATE_ARGS)) {
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_str(&a, mode);
        rl_redis_push_definition_head(&a, def, json, json_len); /* the pattern in the key's place */
        rl_redis_args_push_str(&a, cal);
        rl_redis_args_push_u64(&a, RL_TEMPLATE_MAX_COUNT);
        char err[ERR_SIZE];
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_TEMPLATE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
    }
    rl_redis_args_free(&a);
    if (status == RL_OK && reply->type != REDIS_REPLY_INTEGER) status = RL_BACKEND_ERROR;
    if (status == RL_OK) *code = reply->integer;
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

rl_status rl_redis_put_template(rl_backend *base, const rl_limit_def *def) {
    redis_backend *backend = rl_redis_backend_of(base);
    char err[ERR_SIZE];
    rl__template_pattern pattern;
    if (!rl__template_pattern_parse(def->key, strnlen(def->key, sizeof def->key), &pattern, err, sizeof err) ||
        !rl_limit_def_validate(def, err, sizeof err))
        return RL_INVALID_REQUEST;
    rl_buf json;
    rl__buf_init(&json);
    rl__wire_encode_template_def(&json, def);
    if (json.failed) {
        rl__buf_free(&json);
        return RL_NO_MEMORY;
    }
    long long code = -1;
    rl_status status = put(backend, "put", def, json.data, json.len, rl_redis_operation_deadline_ms(backend), &code);
    if (status == RL_OK) {
        if (code == PUT_DONE) (void)rl__template_copy_put(backend->templates, def, json.data, json.len);
        else status = code == PUT_IN_USE ? RL_LIMIT_IN_USE : code == PUT_FULL ? RL_INVALID_REQUEST : RL_BACKEND_ERROR;
    }
    rl__buf_free(&json);
    return status;
}

/* One template.lua call of mode "delete" (tg: room for the deleted
 * incarnation's number, from the answer) or "drop" (tg: that number):
 * *deleted and *left (limits still to drop) from its answer. */
static rl_status delete_step(redis_backend *backend, const char *mode, const char *pattern,
                             char tg[RL_REDIS_NUMBER_SIZE], uint64_t deadline_ms, bool *deleted, uint64_t *left) {
    bool drop = strcmp(mode, "drop") == 0;
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    redisReply *reply = NULL;
    if (rl_redis_args_init(&a, 7)) {
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_str(&a, mode);
        rl_redis_args_push_str(&a, pattern);
        if (drop) rl_redis_args_push_str(&a, tg);
        char err[ERR_SIZE];
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_TEMPLATE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
    }
    rl_redis_args_free(&a);
    if (status == RL_OK && (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
                            reply->element[0]->type != REDIS_REPLY_INTEGER))
        status = RL_BACKEND_ERROR;
    if (status == RL_OK) {
        *deleted = reply->element[0]->integer == 1;
        *left = rl__redis_number(reply->element[1]);
        if (!drop) {
            const redisReply *number = reply->elements == 3 ? reply->element[2] : NULL;
            if (number != NULL && number->type == REDIS_REPLY_STRING && number->len < RL_REDIS_NUMBER_SIZE)
                snprintf(tg, RL_REDIS_NUMBER_SIZE, "%s", number->str);
            else *left = 0; /* nothing to go on with: the rest goes when touched, or with its TTL */
        }
    }
    if (reply != NULL) freeReplyObject(reply);
    return status;
}

/* The template goes in one call; the limits made from it in pages, each a
 * call of its own with a deadline of its own (a template with many live
 * limits must not hold Redis for long). Should a page fail, the rest are
 * dropped when next touched (their template is gone: made.lua), or end
 * with their TTLs. */
rl_status rl_redis_delete_template(rl_backend *base, const char *pattern) {
    redis_backend *backend = rl_redis_backend_of(base);
    char tg[RL_REDIS_NUMBER_SIZE] = "";
    bool deleted = false;
    uint64_t left = 0;
    rl_status status =
        delete_step(backend, "delete", pattern, tg, rl_redis_operation_deadline_ms(backend), &deleted, &left);
    if (status != RL_OK) return status;
    rl__template_copy_remove(backend->templates, pattern); /* deleted now or before: either way gone */
    if (!deleted) return RL_UNKNOWN_LIMIT_KEY;
    while (left > 0 && delete_step(backend, "drop", pattern, tg, rl_redis_pool_deadline_ms(backend->pool, 0),
                                   &deleted, &left) == RL_OK) {
    }
    return RL_OK;
}

/* Every template (definitions.lua over the set of patterns), each learned
 * into this daemon's copy. */
rl_status rl_redis_list_templates(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_redis_list_paged(rl_redis_backend_of(base), "templates", learn, out, count);
}

rl_status rl__redis_templates_load(redis_backend *backend, char *err, size_t err_size) {
    rl_limit_def *defs = NULL;
    size_t count = 0;
    rl_status status = rl_redis_list_templates(&backend->base, &defs, &count);
    free(defs);
    if (status != RL_OK)
        snprintf(err, err_size, "redis %s: cannot read the limit templates", rl_redis_pool_address(backend->pool));
    return status;
}

bool rl__redis_templates_read_again(redis_backend *backend) {
    rl_limit_def *defs = NULL;
    size_t count = 0;
    rl_status status = rl_redis_list_templates(&backend->base, &defs, &count);
    free(defs);
    return status == RL_OK;
}

const char *rl__redis_template_change(const char *member) {
    size_t prefix = sizeof CHANGE_PREFIX - 1;
    return strncmp(member, CHANGE_PREFIX, prefix) == 0 ? member + prefix : NULL;
}

void rl__redis_template_followed(redis_backend *backend, const char *pattern, const char *json, size_t json_len) {
    rl_limit_def def;
    if (json_len == 0) rl__template_copy_remove(backend->templates, pattern); /* deleted: its tombstone */
    else (void)learn(backend, json, json_len, &def);
}

/* Puts back every template this daemon knows that the store lacks (and did
 * not delete), as restore_all puts back definitions. */
void rl__redis_templates_restore(redis_backend *backend) {
    size_t count = 0, restored = 0;
    char **jsons = rl__template_copy_jsons(backend->templates, &count);
    for (size_t i = 0; i < count; i++) {
        rl_limit_def def;
        char detail[RL_WIRE_DETAIL_SIZE];
        long long code = -1;
        if (rl__wire_decode_template_def(jsons[i], strlen(jsons[i]), &def, detail) != RL_OK) continue;
        if (put(backend, "restore", &def, jsons[i], strlen(jsons[i]), rl_redis_pool_deadline_ms(backend->pool, 0),
                &code) != RL_OK)
            continue; /* the next loss seen tries again */
        if (code == PUT_DELETED) rl__template_copy_remove(backend->templates, def.key);
        else if (code == PUT_DONE) restored++;
    }
    if (restored > 0)
        fprintf(stderr, "ratelimiterd: Redis at %s had lost its limit templates: %zu put back from what this daemon "
                "knew\n", rl_redis_pool_address(backend->pool), restored);
    for (size_t i = 0; i < count; i++) free(jsons[i]);
    free(jsons);
}

/* ---- what a script call tells about its keys ---- */

bool rl__redis_call_keys_init(redis_backend *backend, rl__redis_call_keys *c, size_t max_keys) {
    memset(c, 0, sizeof *c);
    c->unix_now_ms = rl__redis_unix_now_ms(backend->clock);
    c->budgets_known = rl__budget_periods_any(backend->budgets);
    c->templates_known = rl__template_copy_count(backend->templates) > 0;
    if (!c->budgets_known && !c->templates_known) return true; /* nothing to tell: no allocation */
    size_t slots = 16;
    while (slots < 2 * max_keys) slots *= 2;
    c->seen = calloc(slots, sizeof *c->seen);
    c->seen_mask = slots - 1;
    c->bounds = malloc(max_keys * sizeof *c->bounds);
    c->bounds_keys = malloc(max_keys * sizeof *c->bounds_keys);
    c->made_keys = c->templates_known ? malloc(max_keys * sizeof *c->made_keys) : NULL;
    c->made_pattern = c->templates_known ? malloc(max_keys * sizeof *c->made_pattern) : NULL;
    return c->seen != NULL && c->bounds != NULL && c->bounds_keys != NULL &&
           (!c->templates_known || (c->made_keys != NULL && c->made_pattern != NULL));
}

void rl__redis_call_keys_free(rl__redis_call_keys *c) {
    free(c->bounds);
    free(c->bounds_keys);
    free(c->made_keys);
    free(c->made_pattern);
    free(c->patterns);
    free(c->seen);
    memset(c, 0, sizeof *c);
}

/* The index of pattern among c's patterns, added if new; -1 when out of memory. */
static long pattern_index(rl__redis_call_keys *c, const char *pattern) {
    for (size_t i = 0; i < c->pattern_count; i++)
        if (strcmp(c->patterns[i], pattern) == 0) return (long)i;
    if (c->pattern_count == c->pattern_capacity) {
        size_t grown = c->pattern_capacity > 0 ? c->pattern_capacity * 2 : 4;
        char(*bigger)[RL_KEY_MAX_LEN + 1] = realloc(c->patterns, grown * sizeof *bigger);
        if (bigger == NULL) return -1;
        c->patterns = bigger;
        c->pattern_capacity = grown;
    }
    memcpy(c->patterns[c->pattern_count], pattern, strlen(pattern) + 1);
    return (long)c->pattern_count++;
}

/* True the first time key is seen (then remembered), false for a repeat. */
static bool first_sight(rl__redis_call_keys *c, const char *key) {
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (const char *k = key; *k != '\0'; k++) h = (h ^ (unsigned char)*k) * UINT64_C(1099511628211);
    for (size_t at = (size_t)h & c->seen_mask;; at = (at + 1) & c->seen_mask) {
        if (c->seen[at] == NULL) {
            c->seen[at] = key;
            return true;
        }
        if (strcmp(c->seen[at], key) == 0) return false;
    }
}

void rl__redis_call_keys_add(redis_backend *backend, rl__redis_call_keys *c, const char *key) {
    if (c->bounds == NULL || !first_sight(c, key)) return;
    /* a budget this daemon knows as the key's own: its bounds */
    bool bounded = c->budgets_known &&
                   rl__budget_periods_bounds(backend->budgets, key, c->unix_now_ms, &c->bounds[c->budgets]);
    if (bounded) c->bounds_keys[c->budgets++] = key;
    char pattern[RL_KEY_MAX_LEN + 1];
    rl_kind kind;
    if (!c->templates_known || !rl__template_copy_match(backend->templates, key, pattern, &kind)) return;
    long at = pattern_index(c, pattern);
    if (at < 0) return; /* out of memory: the key reads as unknown, as without the template */
    c->made_keys[c->made] = key;
    c->made_pattern[c->made++] = (size_t)at;
    /* a budget made from its template: the template's bounds, unless it has its own */
    if (kind == RL_KIND_BUDGET && !bounded &&
        rl__template_copy_bounds(backend->templates, pattern, c->unix_now_ms, &c->bounds[c->budgets]))
        c->bounds_keys[c->budgets++] = key;
}

size_t rl__redis_call_keys_argc(const rl__redis_call_keys *c) { return 2 + 6 * c->budgets + 2 * c->made; }

void rl__redis_call_keys_push(rl_redis_args *a, const rl__redis_call_keys *c) {
    rl_redis_args_push_u64(a, c->budgets);
    for (size_t k = 0; k < c->budgets; k++) rl_redis_args_push_bounds(a, c->bounds_keys[k], &c->bounds[k]);
    rl_redis_args_push_u64(a, c->made);
    for (size_t k = 0; k < c->made; k++) {
        rl_redis_args_push_str(a, c->made_keys[k]);
        rl_redis_args_push_str(a, c->patterns[c->made_pattern[k]]);
    }
}
