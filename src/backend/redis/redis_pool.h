/* redis/redis_pool.h — connections to one Redis, and script calls on them.
 *
 * A fixed pool of hiredis connections, each used by one thread at a time.
 * Every call has one deadline (CLOCK_MONOTONIC ms) that bounds all of it:
 * waiting for a free connection, connecting, the command, a retry. A missing,
 * stopped or slow Redis turns into RL_BACKEND_ERROR by the deadline instead
 * of a hang or of timeouts that add up. A broken connection is dropped and
 * the call retried once on a fresh one while time remains (every script is
 * idempotent: lease ids make a replayed reserve or complete a no-op).
 * Scripts are loaded with SCRIPT LOAD and called with EVALSHA; a NOSCRIPT
 * answer (Redis restarted or flushed its scripts) reloads them.
 *
 * Every new connection (at start and on every reconnect) reads INFO memory:
 * a Redis whose maxmemory-policy evicts keys is refused (the connection
 * fails with a sentence that says why) unless the options allow eviction
 * (redis_memory.h). The pool remembers when Redis last refused a write for
 * lack of memory (an OOM error), for /healthz.
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
    RL_SCRIPT_CHANGES,
    RL_SCRIPT_AUDIT_PAGE,
    RL_SCRIPT_ALLOT,
    RL_SCRIPT_SETTLE,
    RL_SCRIPT_DELETE,
    RL_SCRIPT_TEMPLATE,
    RL_SCRIPT_COUNT
} rl_redis_script;

typedef struct rl_redis_pool rl_redis_pool;

/* Connects one connection (to fail fast at start-up: Redis missing, or
 * evicting) and loads the scripts. The options' strings are copied. */
rl_status rl_redis_pool_create(const rl_redis_options *options, rl_redis_pool **out, char *err, size_t err_size);
void rl_redis_pool_destroy(rl_redis_pool *pool);

/* The deadline of a call whose caller began to wait at since_ms (0: now),
 * CLOCK_MONOTONIC ms: since + connect_timeout_ms + command_timeout_ms. */
uint64_t rl_redis_pool_deadline_ms(const rl_redis_pool *pool, uint64_t since_ms);

/* Runs a command given as argv (argc strings with their lengths), done or
 * failed by deadline_ms. On RL_OK *reply is the reply, owned by the caller
 * (freeReplyObject); an error reply from Redis, a timeout or a lost
 * connection is RL_BACKEND_ERROR with a sentence in err. */
rl_status rl_redis_command(rl_redis_pool *pool, uint64_t deadline_ms, int argc, const char **argv,
                           const size_t *argv_len, redisReply **reply, char *err, size_t err_size);

/* EVALSHA script 0 args... by deadline_ms: argv holds only the script's ARGV.
 * A failure is also said on stderr with its sentence and the script's name,
 * at most one line a second (counting the calls not said), and kept for
 * /healthz (rl_redis_pool_recent_failure), so that the operator learns why
 * clients got backend_error. */
rl_status rl_redis_eval(rl_redis_pool *pool, uint64_t deadline_ms, rl_redis_script script, int argc,
                        const char **argv, const size_t *argv_len, redisReply **reply, char *err,
                        size_t err_size);

/* CLOCK_MONOTONIC ms of the last OOM error Redis answered (a write refused
 * at maxmemory), or 0 if none. */
uint64_t rl_redis_pool_last_oom_ms(rl_redis_pool *pool);

/* The last failed script call if it is less than recent_ms old: a
 * sentence with its age, the count of failed calls since the pool was made (OOM answers left out:
 * rl_redis_pool_last_oom_ms tells those),
 * the script's name and Redis's own words, into out; false (out untouched)
 * when there is none that recent. Thread-safe. */
bool rl_redis_pool_recent_failure(rl_redis_pool *pool, uint64_t recent_ms, char *out, size_t out_size);

/* "HOST:PORT" of the pool's Redis, for messages. Valid for the pool's life. */
const char *rl_redis_pool_address(const rl_redis_pool *pool);

/* Adds the script calls made (rl_redis_eval) and those that failed
 * (unreachable, timed out, refused: after the NOSCRIPT retry) into out and
 * sets out->redis. Any thread, no lock. */
void rl_redis_pool_stats(rl_redis_pool *pool, rl_backend_stats *out);

/* Whether the options allow an evicting Redis (redis.allow_eviction). */
bool rl_redis_pool_allows_eviction(const rl_redis_pool *pool);

#endif
