/* redis/redis_pool.h — connections to one Redis, and script calls on them.
 *
 * A fixed pool of hiredis connections, each used by one thread at a time,
 * with connect and command timeouts so that a missing or slow Redis turns
 * into RL_BACKEND_ERROR within a bounded time instead of a hang. A broken
 * connection is dropped and the call retried once on a fresh one (every
 * script is idempotent: lease ids make a replayed reserve or complete a
 * no-op). Scripts are loaded with SCRIPT LOAD and called with EVALSHA; a
 * NOSCRIPT answer (Redis restarted or flushed its scripts) reloads them.
 * Thread-safe.
 */
#ifndef RL_REDIS_POOL_H
#define RL_REDIS_POOL_H

#include <hiredis/hiredis.h>

#include "ratelimiter/redis.h"

typedef enum rl_redis_script {
    RL_SCRIPT_RESERVE,
    RL_SCRIPT_COMPLETE,
    RL_SCRIPT_DEFINE,
    RL_SCRIPT_USAGE,
    RL_SCRIPT_SWEEP,
    RL_SCRIPT_DEFINITIONS,
    RL_SCRIPT_COUNT
} rl_redis_script;

typedef struct rl_redis_pool rl_redis_pool;

/* Connects one connection (to fail fast at start-up) and loads the scripts.
 * The options' strings are copied. */
rl_status rl_redis_pool_create(const rl_redis_options *options, rl_redis_pool **out, char *err, size_t err_size);
void rl_redis_pool_destroy(rl_redis_pool *pool);

/* Runs a command given as argv (argc strings with their lengths). On RL_OK
 * *reply is the reply, owned by the caller (freeReplyObject); an error reply
 * from Redis is RL_BACKEND_ERROR with its text in err. */
rl_status rl_redis_command(rl_redis_pool *pool, int argc, const char **argv, const size_t *argv_len,
                           redisReply **reply, char *err, size_t err_size);

/* EVALSHA script 0 args...: argv holds only the script's ARGV. */
rl_status rl_redis_eval(rl_redis_pool *pool, rl_redis_script script, int argc, const char **argv,
                        const size_t *argv_len, redisReply **reply, char *err, size_t err_size);

#endif
