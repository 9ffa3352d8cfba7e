/* redis_relay.c — Completes relayed between daemons with allotments
 * (redis_allot.h; complete.lua writes them, each daemon's keeper reads
 * them): the stream P..'relay', read strictly. */
#include <stdio.h>
#include <string.h>

#include "backend/redis/redis_allot.h"
#include "backend/redis/redis_backend_internal.h"
#include "backend/redis/redis_decimal.h"
#include "core/lease_rules.h"

#define ERR_SIZE 256
#define STREAM_ID_MAX 63

void rl__redis_relay_on(rl_backend *base) { atomic_store(&rl_redis_backend_of(base)->relay_completes, true); }

void rl__redis_on_deleted(rl_backend *base, void (*hook)(void *context, const char *key), void *context) {
    redis_backend *backend = rl_redis_backend_of(base);
    pthread_mutex_lock(&backend->hook_lock);
    backend->deleted_hook = hook;
    backend->deleted_context = context;
    pthread_mutex_unlock(&backend->hook_lock);
}

size_t rl__redis_known_definitions(rl_backend *base) {
    return rl_definition_cache_count(rl_redis_backend_of(base)->definitions);
}

bool rl__redis_made_from_template(rl_backend *base, const char *key) {
    redis_backend *backend = rl_redis_backend_of(base);
    char pattern[RL_KEY_MAX_LEN + 1];
    return rl__template_copy_match(backend->templates, key, pattern, NULL) &&
           !rl_definition_cache_has(backend->definitions, key);
}

/* A stream id as Redis writes it: ms-seq. */
static bool stream_id_ok(const redisReply *r) {
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > STREAM_ID_MAX) return false;
    const char *dash = memchr(r->str, '-', r->len);
    uint64_t part;
    return dash != NULL && rl__redis_decimal(r->str, (size_t)(dash - r->str), UINT64_MAX, &part) &&
           rl__redis_decimal(dash + 1, r->len - (size_t)(dash - r->str) - 1, UINT64_MAX, &part);
}

/* "key actual key actual ..." into out, each key once (a Complete names
 * each key once: the keeper hands it to the local backend as it is); false
 * for anything else. */
static bool read_actuals(const char *text, size_t len, rl__relayed *out) {
    out->actual_count = 0;
    size_t at = 0;
    while (at < len) {
        if (out->actual_count == RL_MAX_REQUIREMENTS) return false;
        const char *key = text + at;
        const char *space = memchr(key, ' ', len - at);
        if (space == NULL) return false;
        size_t key_len = (size_t)(space - key);
        const char *amount = space + 1;
        const char *end = memchr(amount, ' ', len - (size_t)(amount - text));
        size_t amount_len = end != NULL ? (size_t)(end - amount) : len - (size_t)(amount - text);
        uint64_t actual;
        if (!rl__lease_key_ok(key, key_len) || !rl__redis_decimal(amount, amount_len, RL_AMOUNT_MAX, &actual))
            return false;
        size_t i = out->actual_count++;
        memcpy(out->keys[i], key, key_len);
        out->keys[i][key_len] = '\0';
        out->actuals[i] = (rl_actual){out->keys[i], actual};
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->keys[j], out->keys[i]) == 0) return false;
        at = (size_t)(amount - text) + amount_len + (end != NULL ? 1 : 0);
        if (end != NULL && at == len) return false; /* a trailing space */
    }
    return true;
}

/* One stream entry [id, [field, value, ...]] as a relayed Complete. */
static bool read_entry(const redisReply *entry, rl__relayed *out) {
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2) return false;
    const redisReply *fields = entry->element[1];
    if (fields->type != REDIS_REPLY_ARRAY || fields->elements != 4) return false;
    const redisReply *l = NULL, *a = NULL;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *name = fields->element[i], *value = fields->element[i + 1];
        if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING || name->len != 1) return false;
        if (name->str[0] == 'l') l = value;
        else if (name->str[0] == 'a') a = value;
    }
    if (l == NULL || a == NULL || !rl__lease_id_ok(l->str, l->len)) return false;
    memcpy(out->lease_id, l->str, l->len);
    out->lease_id[l->len] = '\0';
    return read_actuals(a->str, a->len, out);
}

size_t rl__redis_relay_answer_read(const redisReply *reply, char last_id[64], rl__relayed *out, size_t max) {
    size_t read = 0;
    /* nil: nothing new; else [[key, [entry, ...]]] */
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 && reply->element[0]->type == REDIS_REPLY_ARRAY &&
        reply->element[0]->elements == 2 && reply->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *entries = reply->element[0]->element[1];
        for (size_t i = 0; i < entries->elements && read < max; i++) {
            const redisReply *entry = entries->element[i];
            if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || !stream_id_ok(entry->element[0]))
                continue;
            snprintf(last_id, 64, "%.*s", (int)entry->element[0]->len, entry->element[0]->str);
            if (read_entry(entry, &out[read])) read++;
        }
    }
    return read;
}

rl_status rl__redis_relay_tail(rl_backend *base, char last_id[64]) {
    redis_backend *backend = rl_redis_backend_of(base);
    char key[600];
    snprintf(key, sizeof key, "%srelay", backend->prefix);
    const char *argv[] = {"XREVRANGE", key, "+", "-", "COUNT", "1"};
    size_t len[] = {9, strlen(key), 1, 1, 5, 1};
    redisReply *reply = NULL;
    char err[ERR_SIZE];
    rl_status status = rl_redis_command(backend->pool, rl_redis_operation_deadline_ms(backend), 6, argv, len, &reply,
                                        err, sizeof err);
    if (status != RL_OK) return status;
    snprintf(last_id, 64, "0-0");
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 && reply->element[0]->type == REDIS_REPLY_ARRAY &&
        reply->element[0]->elements == 2 && stream_id_ok(reply->element[0]->element[0]))
        snprintf(last_id, 64, "%.*s", (int)reply->element[0]->element[0]->len, reply->element[0]->element[0]->str);
    freeReplyObject(reply);
    return RL_OK;
}

long rl__redis_relay_read(rl_backend *base, char last_id[64], rl__relayed *out, size_t max) {
    redis_backend *backend = rl_redis_backend_of(base);
    char key[600], count[24];
    snprintf(key, sizeof key, "%srelay", backend->prefix);
    snprintf(count, sizeof count, "%zu", max);
    const char *argv[] = {"XREAD", "COUNT", count, "STREAMS", key, last_id};
    size_t len[] = {5, 5, strlen(count), 7, strlen(key), strlen(last_id)};
    redisReply *reply = NULL;
    char err[ERR_SIZE];
    if (rl_redis_command(backend->pool, rl_redis_operation_deadline_ms(backend), 6, argv, len, &reply, err,
                         sizeof err) != RL_OK)
        return -1;
    size_t read = rl__redis_relay_answer_read(reply, last_id, out, max);
    freeReplyObject(reply);
    return (long)read;
}
