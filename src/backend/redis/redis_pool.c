/* redis_pool.c — see redis_pool.h. */
#include "backend/redis/redis_pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "backend/redis/lua.h"
#include "core/error_text.h"

#define SHA_LEN 40

typedef struct slot {
    redisContext *ctx; /* NULL: not connected */
    bool busy;
} slot;

struct rl_redis_pool {
    char *host;
    char *password;
    uint16_t port;
    uint32_t db;
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    slot *slots;
    uint32_t slot_count;
    char sha[RL_SCRIPT_COUNT][SHA_LEN + 1];
    bool scripts_loaded;
};

static const char *const *script_sources(rl_redis_script script) {
    static const char *const sources[RL_SCRIPT_COUNT][2] = {
        [RL_SCRIPT_RESERVE] = {rl_lua_common, rl_lua_reserve},
        [RL_SCRIPT_COMPLETE] = {rl_lua_common, rl_lua_complete},
        [RL_SCRIPT_DEFINE] = {rl_lua_common, rl_lua_define},
        [RL_SCRIPT_USAGE] = {rl_lua_common, rl_lua_usage},
        [RL_SCRIPT_SWEEP] = {rl_lua_common, rl_lua_sweep},
        [RL_SCRIPT_DEFINITIONS] = {rl_lua_common, rl_lua_definitions},
    };
    return sources[script];
}

static struct timeval timeval_of(uint32_t ms) {
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000u), .tv_usec = (suseconds_t)(ms % 1000u) * 1000};
    return tv;
}

static rl_status reply_status(redisContext *ctx, redisReply *reply, char *err, size_t err_size) {
    if (reply == NULL) {
        rl_error_text(err, err_size, "redis: %s", ctx->errstr[0] ? ctx->errstr : "no reply");
        return RL_BACKEND_ERROR;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        rl_error_text(err, err_size, "redis: %s", reply->str);
        return RL_BACKEND_ERROR;
    }
    return RL_OK;
}

/* Loads every script on ctx (SCRIPT LOAD is idempotent: the same text has
 * the same SHA on every connection and every restart). Caller holds no lock
 * it needs: the SHAs are written under pool->lock. */
static rl_status load_scripts(rl_redis_pool *pool, redisContext *ctx, char *err, size_t err_size) {
    for (int s = 0; s < RL_SCRIPT_COUNT; s++) {
        const char *const *parts = script_sources((rl_redis_script)s);
        size_t len0 = strlen(parts[0]), len1 = strlen(parts[1]);
        char *text = malloc(len0 + len1 + 2);
        if (text == NULL) return RL_NO_MEMORY;
        memcpy(text, parts[0], len0);
        text[len0] = '\n';
        memcpy(text + len0 + 1, parts[1], len1 + 1);
        const char *argv[] = {"SCRIPT", "LOAD", text};
        size_t lens[] = {6, 4, len0 + len1 + 1};
        redisReply *reply = redisCommandArgv(ctx, 3, argv, lens);
        free(text);
        rl_status status = reply_status(ctx, reply, err, err_size);
        if (status == RL_OK && (reply->type != REDIS_REPLY_STRING || reply->len != SHA_LEN)) {
            rl_error_text(err, err_size, "redis: SCRIPT LOAD gave no SHA");
            status = RL_BACKEND_ERROR;
        }
        if (status == RL_OK) {
            pthread_mutex_lock(&pool->lock);
            memcpy(pool->sha[s], reply->str, SHA_LEN + 1);
            pthread_mutex_unlock(&pool->lock);
        }
        if (reply != NULL) freeReplyObject(reply);
        if (status != RL_OK) return status;
    }
    pthread_mutex_lock(&pool->lock);
    pool->scripts_loaded = true;
    pthread_mutex_unlock(&pool->lock);
    return RL_OK;
}

/* A fresh connection: connect, AUTH, SELECT, timeouts. NULL on failure. */
static redisContext *connect_one(rl_redis_pool *pool, char *err, size_t err_size) {
    redisContext *ctx = redisConnectWithTimeout(pool->host, pool->port, timeval_of(pool->connect_timeout_ms));
    if (ctx == NULL || ctx->err) {
        rl_error_text(err, err_size, "redis %s:%u: %s", pool->host, (unsigned)pool->port,
                      ctx != NULL ? ctx->errstr : "out of memory");
        if (ctx != NULL) redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, timeval_of(pool->command_timeout_ms));
    redisEnableKeepAlive(ctx);
    rl_status status = RL_OK;
    if (pool->password != NULL) {
        redisReply *reply = redisCommand(ctx, "AUTH %s", pool->password);
        status = reply_status(ctx, reply, err, err_size);
        if (reply != NULL) freeReplyObject(reply);
    }
    if (status == RL_OK && pool->db != 0) {
        redisReply *reply = redisCommand(ctx, "SELECT %u", pool->db);
        status = reply_status(ctx, reply, err, err_size);
        if (reply != NULL) freeReplyObject(reply);
    }
    if (status != RL_OK) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

static slot *acquire(rl_redis_pool *pool) {
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        for (uint32_t i = 0; i < pool->slot_count; i++) {
            if (!pool->slots[i].busy) {
                pool->slots[i].busy = true;
                pthread_mutex_unlock(&pool->lock);
                return &pool->slots[i];
            }
        }
        pthread_cond_wait(&pool->freed, &pool->lock);
    }
}

static void release_slot(rl_redis_pool *pool, slot *s) {
    pthread_mutex_lock(&pool->lock);
    s->busy = false;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->lock);
}

/* Whether a failed exchange left the connection unusable (I/O error,
 * timeout, protocol error): then it is dropped, and a retry may help. */
static bool broken(const slot *s) { return s->ctx == NULL || s->ctx->err != 0; }

rl_status rl_redis_command(rl_redis_pool *pool, int argc, const char **argv, const size_t *argv_len,
                           redisReply **reply, char *err, size_t err_size) {
    *reply = NULL;
    slot *s = acquire(pool);
    rl_status status = RL_BACKEND_ERROR;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (s->ctx == NULL) {
            s->ctx = connect_one(pool, err, err_size);
            if (s->ctx == NULL) break; /* Redis is not there: fail now, bounded by the connect timeout */
        }
        *reply = redisCommandArgv(s->ctx, argc, argv, argv_len);
        status = reply_status(s->ctx, *reply, err, err_size);
        if (status == RL_OK || !broken(s)) break;
        if (*reply != NULL) freeReplyObject(*reply);
        *reply = NULL;
        redisFree(s->ctx);
        s->ctx = NULL;
    }
    if (status != RL_OK && broken(s) && s->ctx != NULL) {
        redisFree(s->ctx);
        s->ctx = NULL;
    }
    release_slot(pool, s);
    if (status != RL_OK && *reply != NULL) {
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return status;
}

rl_status rl_redis_eval(rl_redis_pool *pool, rl_redis_script script, int argc, const char **argv,
                        const size_t *argv_len, redisReply **reply, char *err, size_t err_size) {
    const int extra = 3; /* EVALSHA sha 0 */
    const char **full = malloc((size_t)(argc + extra) * sizeof *full);
    size_t *full_len = malloc((size_t)(argc + extra) * sizeof *full_len);
    if (full == NULL || full_len == NULL) {
        free(full);
        free(full_len);
        return RL_NO_MEMORY;
    }
    char sha[SHA_LEN + 1];
    rl_status status = RL_BACKEND_ERROR;
    for (int attempt = 0; attempt < 2; attempt++) {
        pthread_mutex_lock(&pool->lock);
        memcpy(sha, pool->sha[script], sizeof sha);
        pthread_mutex_unlock(&pool->lock);
        full[0] = "EVALSHA";
        full_len[0] = 7;
        full[1] = sha;
        full_len[1] = SHA_LEN;
        full[2] = "0";
        full_len[2] = 1;
        memcpy(full + extra, argv, (size_t)argc * sizeof *argv);
        memcpy(full_len + extra, argv_len, (size_t)argc * sizeof *argv_len);
        status = rl_redis_command(pool, argc + extra, full, full_len, reply, err, err_size);
        if (status == RL_OK || strstr(err, "NOSCRIPT") == NULL) break;
        /* Redis lost its scripts (a restart, SCRIPT FLUSH): load them again. */
        slot *s = acquire(pool);
        if (s->ctx == NULL) s->ctx = connect_one(pool, err, err_size);
        rl_status loaded = s->ctx != NULL ? load_scripts(pool, s->ctx, err, err_size) : RL_BACKEND_ERROR;
        release_slot(pool, s);
        if (loaded != RL_OK) {
            status = loaded;
            break;
        }
    }
    free(full);
    free(full_len);
    return status;
}

static char *copy_or_null(const char *text) { return text != NULL ? strdup(text) : NULL; }

rl_status rl_redis_pool_create(const rl_redis_options *options, rl_redis_pool **out, char *err, size_t err_size) {
    *out = NULL;
    rl_redis_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL) return RL_NO_MEMORY;
    pool->host = copy_or_null(options->host != NULL ? options->host : "127.0.0.1");
    pool->password = copy_or_null(options->password);
    pool->port = options->port != 0 ? options->port : 6379;
    pool->db = options->db;
    pool->connect_timeout_ms = options->connect_timeout_ms != 0 ? options->connect_timeout_ms : 200;
    pool->command_timeout_ms = options->command_timeout_ms != 0 ? options->command_timeout_ms : 500;
    pool->slot_count = options->connections != 0 ? options->connections : 4;
    pool->slots = calloc(pool->slot_count, sizeof *pool->slots);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->freed, NULL);
    if (pool->host == NULL || pool->slots == NULL) {
        rl_redis_pool_destroy(pool);
        return RL_NO_MEMORY;
    }
    /* Fail fast: a daemon pointed at no Redis says so at start-up. */
    pool->slots[0].ctx = connect_one(pool, err, err_size);
    rl_status status = pool->slots[0].ctx != NULL ? load_scripts(pool, pool->slots[0].ctx, err, err_size)
                                                  : RL_BACKEND_ERROR;
    if (status != RL_OK) {
        rl_redis_pool_destroy(pool);
        return status;
    }
    *out = pool;
    return RL_OK;
}

void rl_redis_pool_destroy(rl_redis_pool *pool) {
    if (pool == NULL) return;
    for (uint32_t i = 0; pool->slots != NULL && i < pool->slot_count; i++)
        if (pool->slots[i].ctx != NULL) redisFree(pool->slots[i].ctx);
    free(pool->slots);
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->lock);
    free(pool->host);
    free(pool->password);
    free(pool);
}
