/* redis_pool.c — see redis_pool.h. */
#include "backend/redis/redis_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "backend/redis/lua.h"
#include "backend/redis/redis_memory.h"
#include "core/error_text.h"

#define SHA_LEN 40
/* Below this much time left, a retry or a connect is not worth starting. */
#define MIN_ATTEMPT_MS 1u

typedef struct slot {
    redisContext *ctx;   /* NULL: not connected */
    uint32_t timeout_ms; /* the socket's timeout now */
    bool busy;
} slot;

struct rl_redis_pool {
    char *host;
    char *password;
    char address[300]; /* "host:port" ("[v6]:port"), for messages */
    uint16_t port;
    uint32_t db;
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms;
    bool allow_eviction;
    atomic_uint_fast64_t last_oom_ms;
    /* Failed script calls are said on stderr, at most one line a second
     * (an outage fails every call), with how many were not said since. */
    atomic_uint_fast64_t last_said_ms;
    atomic_uint_fast64_t failures_unsaid;
    /* For monitoring (rl_redis_pool_stats): script calls, and those that failed. */
    atomic_uint_fast64_t script_calls, script_failures;
    /* The last failed script call, for /healthz (rl_redis_pool_recent_failure). */
    pthread_mutex_t failure_lock;
    uint64_t last_failure_ms; /* 0: none yet */
    uint64_t failures_total;
    char last_failure[320];   /* "reserve.lua: <Redis's sentence>" */
    pthread_mutex_t lock;
    pthread_cond_t freed; /* CLOCK_MONOTONIC: acquire waits until a deadline */
    slot *slots;
    uint32_t slot_count;
    char sha[RL_SCRIPT_COUNT][SHA_LEN + 1];
};

/* The entry script of each; every one is sent after the preludes (lua.h). */
static const char *script_source(rl_redis_script script) {
    static const char *const sources[RL_SCRIPT_COUNT] = {
        [RL_SCRIPT_RESERVE] = rl_lua_reserve,         [RL_SCRIPT_COMPLETE] = rl_lua_complete,
        [RL_SCRIPT_DEFINE] = rl_lua_define,           [RL_SCRIPT_USAGE] = rl_lua_usage,
        [RL_SCRIPT_SWEEP] = rl_lua_sweep,             [RL_SCRIPT_DEFINITIONS] = rl_lua_definitions,
        [RL_SCRIPT_CHANGES] = rl_lua_changes,         [RL_SCRIPT_AUDIT_PAGE] = rl_lua_audit_page,
        [RL_SCRIPT_ALLOT] = rl_lua_allot,             [RL_SCRIPT_SETTLE] = rl_lua_settle,
        [RL_SCRIPT_DELETE] = rl_lua_delete,           [RL_SCRIPT_TEMPLATE] = rl_lua_template,
    };
    return sources[script];
}

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct timeval timeval_of(uint32_t ms) {
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000u), .tv_usec = (suseconds_t)(ms % 1000u) * 1000};
    return tv;
}

/* Milliseconds left before deadline_ms (0 once it has passed). */
static uint64_t left_ms(uint64_t deadline_ms) {
    uint64_t now = monotonic_ms();
    return deadline_ms > now ? deadline_ms - now : 0;
}

static uint32_t at_most(uint32_t ms, uint64_t left) { return left < ms ? (uint32_t)left : ms; }

static rl_status reply_status(rl_redis_pool *pool, redisContext *ctx, redisReply *reply, char *err,
                              size_t err_size) {
    if (reply == NULL) {
        /* hiredis says strerror(EAGAIN) for a socket timeout: say it plainly. */
        bool timed_out = ctx->err == REDIS_ERR_IO && strcmp(ctx->errstr, strerror(EAGAIN)) == 0;
        rl__error_text(err, err_size, "redis %s: %s", pool->address,
                       timed_out ? "no answer before the deadline" : ctx->errstr[0] ? ctx->errstr : "no reply");
        return RL_BACKEND_ERROR;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (strncmp(reply->str, "OOM", 3) == 0) atomic_store(&pool->last_oom_ms, monotonic_ms());
        rl__error_text(err, err_size, "redis %s: %s", pool->address, reply->str);
        return RL_BACKEND_ERROR;
    }
    return RL_OK;
}

/* Loads every script on ctx (SCRIPT LOAD is idempotent: the same text has
 * the same SHA on every connection and every restart). The SHAs are written
 * under pool->lock. Each script starts with the counters' ceiling, so that
 * Lua saturates where the C side does (core/counter.h). */
static rl_status load_scripts(rl_redis_pool *pool, redisContext *ctx, char *err, size_t err_size) {
    char ceiling[64];
    snprintf(ceiling, sizeof ceiling, "local COUNTER_MAX = %llu", (unsigned long long)RL_COUNTER_MAX);
    for (int s = 0; s < RL_SCRIPT_COUNT; s++) {
        const char *parts[] = {ceiling, rl_lua_common, rl_lua_audit, rl_lua_budget, rl_lua_made,
                               script_source((rl_redis_script)s)};
        size_t len = 0;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) len += strlen(parts[i]) + 1;
        char *text = malloc(len);
        if (text == NULL) return RL_NO_MEMORY;
        char *at = text;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            size_t n = strlen(parts[i]);
            memcpy(at, parts[i], n);
            at[n] = '\n';
            at += n + 1;
        }
        len--; /* the last newline: a NUL for the text's end, not sent */
        text[len] = '\0';
        const char *argv[] = {"SCRIPT", "LOAD", text};
        size_t lens[] = {6, 4, len};
        redisReply *reply = redisCommandArgv(ctx, 3, argv, lens);
        free(text);
        rl_status status = reply_status(pool, ctx, reply, err, err_size);
        if (status == RL_OK && (reply->type != REDIS_REPLY_STRING || reply->len != SHA_LEN)) {
            rl__error_text(err, err_size, "redis %s: SCRIPT LOAD gave no SHA", pool->address);
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
    return RL_OK;
}

/* A command during connect (AUTH, SELECT, INFO): its reply, or NULL with err set. */
static redisReply *setup_command(rl_redis_pool *pool, redisContext *ctx, int argc, const char **argv,
                                 char *err, size_t err_size) {
    redisReply *reply = redisCommandArgv(ctx, argc, argv, NULL);
    if (reply_status(pool, ctx, reply, err, err_size) == RL_OK) return reply;
    if (reply != NULL) freeReplyObject(reply);
    return NULL;
}

/* Refuses a Redis that may evict our keys (redis_memory.h), unless allowed. */
static bool memory_policy_ok(rl_redis_pool *pool, redisContext *ctx, char *err, size_t err_size) {
    const char *info[] = {"INFO", "memory"};
    redisReply *reply = setup_command(pool, ctx, 2, info, err, err_size);
    if (reply == NULL) return false;
    rl_redis_memory memory;
    bool ok = reply->type == REDIS_REPLY_STRING && rl_redis_memory_parse(reply->str, reply->len, &memory);
    if (!ok)
        rl__error_text(err, err_size, "redis %s: INFO memory does not say maxmemory_policy", pool->address);
    else if (rl_redis_memory_evicts(&memory) && !pool->allow_eviction) {
        rl_redis_memory_eviction_refusal(&memory, pool->address, err, err_size);
        ok = false;
    }
    freeReplyObject(reply);
    return ok;
}

/* A fresh connection by deadline_ms: connect, AUTH, SELECT, the memory
 * policy check, each wait bounded by the connect timeout and the deadline.
 * NULL on failure, with err set. */
static redisContext *connect_one(rl_redis_pool *pool, uint64_t deadline_ms, char *err, size_t err_size) {
    uint64_t left = left_ms(deadline_ms);
    if (left < MIN_ATTEMPT_MS) {
        rl__error_text(err, err_size, "redis %s: no time left to connect", pool->address);
        return NULL;
    }
    redisContext *ctx =
        redisConnectWithTimeout(pool->host, pool->port, timeval_of(at_most(pool->connect_timeout_ms, left)));
    if (ctx == NULL || ctx->err) {
        rl__error_text(err, err_size, "redis %s: %s", pool->address, ctx != NULL ? ctx->errstr : "out of memory");
        if (ctx != NULL) redisFree(ctx);
        return NULL;
    }
    left = left_ms(deadline_ms);
    redisSetTimeout(ctx, timeval_of(at_most(pool->connect_timeout_ms, left > 0 ? left : 1)));
    redisEnableKeepAlive(ctx);
    bool ok = true;
    if (pool->password != NULL) {
        const char *auth[] = {"AUTH", pool->password};
        redisReply *reply = setup_command(pool, ctx, 2, auth, err, err_size);
        ok = reply != NULL;
        if (reply != NULL) freeReplyObject(reply);
    }
    if (ok && pool->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%u", (unsigned)pool->db);
        const char *select[] = {"SELECT", db};
        redisReply *reply = setup_command(pool, ctx, 2, select, err, err_size);
        ok = reply != NULL;
        if (reply != NULL) freeReplyObject(reply);
    }
    if (ok) ok = memory_policy_ok(pool, ctx, err, err_size);
    if (!ok) {
        redisFree(ctx);
        return NULL;
    }
    return ctx;
}

/* A free slot, or NULL if none frees up before deadline_ms. */
static slot *acquire(rl_redis_pool *pool, uint64_t deadline_ms) {
    struct timespec until = {.tv_sec = (time_t)(deadline_ms / 1000u), .tv_nsec = (long)(deadline_ms % 1000u) * 1000000L};
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        for (uint32_t i = 0; i < pool->slot_count; i++) {
            if (!pool->slots[i].busy) {
                pool->slots[i].busy = true;
                pthread_mutex_unlock(&pool->lock);
                return &pool->slots[i];
            }
        }
        if (pthread_cond_timedwait(&pool->freed, &pool->lock, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
    }
}

static void release_slot(rl_redis_pool *pool, slot *s) {
    pthread_mutex_lock(&pool->lock);
    s->busy = false;
    pthread_cond_signal(&pool->freed);
    pthread_mutex_unlock(&pool->lock);
}

static void disconnect(slot *s) {
    if (s->ctx != NULL) redisFree(s->ctx);
    s->ctx = NULL;
}

/* Whether a failed exchange left the connection unusable (I/O error,
 * timeout, protocol error): then it is dropped, and a retry may help. */
static bool broken(const slot *s) { return s->ctx == NULL || s->ctx->err != 0; }

static bool ensure_connected(rl_redis_pool *pool, slot *s, uint64_t deadline_ms, char *err, size_t err_size) {
    if (s->ctx != NULL) return true;
    s->ctx = connect_one(pool, deadline_ms, err, err_size);
    s->timeout_ms = 0; /* the command's own is set before it is sent */
    return s->ctx != NULL;
}

/* One attempt on s, connecting first if needed: the command's wait is the
 * command timeout or what is left before the deadline, whichever is less. */
static rl_status attempt(rl_redis_pool *pool, slot *s, uint64_t deadline_ms, int argc, const char **argv,
                         const size_t *argv_len, redisReply **reply, char *err, size_t err_size) {
    if (!ensure_connected(pool, s, deadline_ms, err, err_size)) return RL_BACKEND_ERROR;
    uint64_t left = left_ms(deadline_ms);
    if (left < MIN_ATTEMPT_MS) {
        rl__error_text(err, err_size, "redis %s: no answer before the deadline", pool->address);
        return RL_BACKEND_ERROR;
    }
    uint32_t timeout_ms = at_most(pool->command_timeout_ms, left);
    if (timeout_ms != s->timeout_ms) { /* usually unchanged: no system call */
        redisSetTimeout(s->ctx, timeval_of(timeout_ms));
        s->timeout_ms = timeout_ms;
    }
    *reply = redisCommandArgv(s->ctx, argc, argv, argv_len);
    rl_status status = reply_status(pool, s->ctx, *reply, err, err_size);
    if (status != RL_OK && *reply != NULL) {
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return status;
}

uint64_t rl_redis_pool_deadline_ms(const rl_redis_pool *pool, uint64_t since_ms) {
    return (since_ms != 0 ? since_ms : monotonic_ms()) + pool->connect_timeout_ms + pool->command_timeout_ms;
}

rl_status rl_redis_command(rl_redis_pool *pool, uint64_t deadline_ms, int argc, const char **argv,
                           const size_t *argv_len, redisReply **reply, char *err, size_t err_size) {
    *reply = NULL;
    slot *s = acquire(pool, deadline_ms);
    if (s == NULL) {
        rl__error_text(err, err_size, "redis %s: every connection stayed busy until the deadline", pool->address);
        return RL_BACKEND_ERROR;
    }
    rl_status status = attempt(pool, s, deadline_ms, argc, argv, argv_len, reply, err, err_size);
    if (status != RL_OK && broken(s)) {
        disconnect(s);
        /* A connection that broke (Redis restarted, a load balancer cut it)
         * may be the only trouble: try once more on a fresh one, in the time
         * that is left. */
        if (left_ms(deadline_ms) >= MIN_ATTEMPT_MS) {
            status = attempt(pool, s, deadline_ms, argc, argv, argv_len, reply, err, err_size);
            if (status != RL_OK && broken(s)) disconnect(s);
        }
    }
    release_slot(pool, s);
    return status;
}

static const char *const script_names[RL_SCRIPT_COUNT] = {
    [RL_SCRIPT_RESERVE] = "reserve.lua", [RL_SCRIPT_COMPLETE] = "complete.lua",
    [RL_SCRIPT_DEFINE] = "define.lua",   [RL_SCRIPT_USAGE] = "usage.lua",
    [RL_SCRIPT_SWEEP] = "sweep.lua",     [RL_SCRIPT_DEFINITIONS] = "definitions.lua",
    [RL_SCRIPT_CHANGES] = "changes.lua",   [RL_SCRIPT_AUDIT_PAGE] = "audit_page.lua",
    [RL_SCRIPT_ALLOT] = "allot.lua",     [RL_SCRIPT_SETTLE] = "settle.lua",
    [RL_SCRIPT_DELETE] = "delete.lua",   [RL_SCRIPT_TEMPLATE] = "template.lua",
};

/* Why a script call failed, for the operator: the callers answer their
 * clients backend_error and keep no sentence. Said on stderr at most once a
 * second, and kept for /healthz unless it was an OOM answer (which /healthz
 * tells from Redis's memory, and forgets once Redis has room again). */
static void say_failure(rl_redis_pool *pool, rl_redis_script script, const char *err, bool oom) {
    uint64_t now_ms = monotonic_ms(), last_ms = atomic_load(&pool->last_said_ms);
    if (!oom) {
        pthread_mutex_lock(&pool->failure_lock);
        pool->last_failure_ms = now_ms;
        pool->failures_total++;
        snprintf(pool->last_failure, sizeof pool->last_failure, "%s: %s", script_names[script],
                 err[0] != '\0' ? err : "no reason given");
        pthread_mutex_unlock(&pool->failure_lock);
    }
    if (last_ms != 0 && now_ms - last_ms < 1000u) {
        atomic_fetch_add(&pool->failures_unsaid, 1);
        return;
    }
    if (!atomic_compare_exchange_strong(&pool->last_said_ms, &last_ms, now_ms)) {
        atomic_fetch_add(&pool->failures_unsaid, 1);
        return;
    }
    uint64_t unsaid = atomic_exchange(&pool->failures_unsaid, 0);
    char more[64] = "";
    if (unsaid > 0) snprintf(more, sizeof more, " (and %llu more failed calls)", (unsigned long long)unsaid);
    fprintf(stderr, "ratelimiterd: redis %s: %s failed: %s%s\n", pool->address, script_names[script],
            err[0] != '\0' ? err : "no reason given", more);
}

rl_status rl_redis_eval(rl_redis_pool *pool, uint64_t deadline_ms, rl_redis_script script, int argc,
                        const char **argv, const size_t *argv_len, redisReply **reply, char *err,
                        size_t err_size) {
    if (err_size > 0) err[0] = '\0';
    atomic_fetch_add_explicit(&pool->script_calls, 1, memory_order_relaxed);
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
    uint64_t oom_before_ms = atomic_load(&pool->last_oom_ms);
    for (int attempt_no = 0; attempt_no < 2; attempt_no++) {
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
        status = rl_redis_command(pool, deadline_ms, argc + extra, full, full_len, reply, err, err_size);
        if (status == RL_OK || strstr(err, "NOSCRIPT") == NULL) break;
        /* Redis lost its scripts (a restart, SCRIPT FLUSH): load them again. */
        slot *s = acquire(pool, deadline_ms);
        if (s == NULL) break;
        rl_status loaded = ensure_connected(pool, s, deadline_ms, err, err_size)
                               ? load_scripts(pool, s->ctx, err, err_size)
                               : RL_BACKEND_ERROR;
        if (loaded != RL_OK && broken(s)) disconnect(s);
        release_slot(pool, s);
        if (loaded != RL_OK) {
            status = loaded;
            break;
        }
    }
    free(full);
    free(full_len);
    if (status != RL_OK) {
        atomic_fetch_add_explicit(&pool->script_failures, 1, memory_order_relaxed);
        say_failure(pool, script, err, atomic_load(&pool->last_oom_ms) != oom_before_ms);
    }
    return status;
}

void rl_redis_pool_stats(rl_redis_pool *pool, rl_backend_stats *out) {
    out->redis = 1;
    out->redis_script_calls += atomic_load_explicit(&pool->script_calls, memory_order_relaxed);
    out->redis_errors += atomic_load_explicit(&pool->script_failures, memory_order_relaxed);
}

uint64_t rl_redis_pool_last_oom_ms(rl_redis_pool *pool) { return atomic_load(&pool->last_oom_ms); }

bool rl_redis_pool_recent_failure(rl_redis_pool *pool, uint64_t recent_ms, char *out, size_t out_size) {
    uint64_t now_ms = monotonic_ms();
    pthread_mutex_lock(&pool->failure_lock);
    bool recent = pool->last_failure_ms != 0 && now_ms - pool->last_failure_ms < recent_ms;
    if (recent)
        rl__error_text(out, out_size, "a Redis script call failed %llu.%llu s ago (%llu such failures since start): %s",
                       (unsigned long long)((now_ms - pool->last_failure_ms) / 1000u),
                       (unsigned long long)((now_ms - pool->last_failure_ms) % 1000u / 100u),
                       (unsigned long long)pool->failures_total, pool->last_failure);
    pthread_mutex_unlock(&pool->failure_lock);
    return recent;
}

const char *rl_redis_pool_address(const rl_redis_pool *pool) { return pool->address; }

bool rl_redis_pool_allows_eviction(const rl_redis_pool *pool) { return pool->allow_eviction; }

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
    pool->allow_eviction = options->allow_eviction;
    atomic_init(&pool->last_oom_ms, 0);
    atomic_init(&pool->last_said_ms, 0);
    atomic_init(&pool->failures_unsaid, 0);
    pool->slot_count = options->connections != 0 ? options->connections : 4;
    pool->slots = calloc(pool->slot_count, sizeof *pool->slots);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_mutex_init(&pool->failure_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&pool->freed, &attr);
    pthread_condattr_destroy(&attr);
    if (pool->host == NULL || pool->slots == NULL) {
        rl_redis_pool_destroy(pool);
        return RL_NO_MEMORY;
    }
    bool ipv6 = strchr(pool->host, ':') != NULL;
    snprintf(pool->address, sizeof pool->address, "%s%s%s:%u", ipv6 ? "[" : "", pool->host, ipv6 ? "]" : "",
             (unsigned)pool->port);
    /* Fail fast: a daemon pointed at no Redis, or at one that evicts, says so at start-up. */
    pool->slots[0].ctx = connect_one(pool, rl_redis_pool_deadline_ms(pool, 0), err, err_size);
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
    for (uint32_t i = 0; pool->slots != NULL && i < pool->slot_count; i++) disconnect(&pool->slots[i]);
    free(pool->slots);
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->failure_lock);
    free(pool->host);
    free(pool->password);
    free(pool);
}
