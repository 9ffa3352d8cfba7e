/* ratelimiter/redis.h — the redis backend: many ratelimiterd instances
 * sharing one Redis 7 (docs/redis.md).
 *
 * The same semantics as the memory backend, enforced by Lua scripts that run
 * atomically inside Redis (loaded with SCRIPT LOAD, called with EVALSHA,
 * reloaded on NOSCRIPT): all-or-nothing reserve, expiry, holds with timeout,
 * reconcile, overage, capacity decrease, idempotent lease ids, retry_after_ms.
 * Time is Redis's own (TIME), so instances with skewed clocks agree. Limit
 * definitions live in Redis too: a definition applied through one instance is
 * used by all from their next reserve. Every key that holds lease state has a
 * TTL (a budget's open reservations leave by the sweep instead: below), so
 * Redis memory stays bounded however many leases are never completed.
 *
 * Operations are thread-safe. When Redis is unreachable, stopped or slow,
 * an operation fails with RL_BACKEND_ERROR within connect_timeout_ms +
 * command_timeout_ms of when its caller began to wait (a lease queued in the
 * submitter counts from its arrival), whatever retries happen inside: fail
 * closed, nothing is admitted without the store. Such a reserve's outcome is
 * unknown (Redis may still apply it once it answers again): retry it with the
 * same lease id, which returns the first outcome. Completes that fail are
 * retried in the background (see below), so that a short outage does not
 * leave holds until their timeout.
 *
 * A Redis whose maxmemory-policy may evict keys is refused, at start and on
 * every reconnect, unless allow_eviction is set: an evicted lease record lets
 * a retried lease be admitted twice, an evicted reservation admits past
 * capacity. health() reports a Redis that refuses writes (at maxmemory) as
 * unable to serve, and one close to it as degraded.
 *
 * Budgets are counted by the memory backend's rules. Lua in Redis knows no
 * time zones: the daemon computes a budget's periods from tzdata and passes
 * them with each call, and the script takes the one holding Redis's time; a
 * daemon whose clock is more than a period off Redis's has such calls fail
 * with a sentence that says so. The audit log of spend (audit_query) is a
 * Redis Stream per limit, written by the script call that charges a
 * Complete or refunds a budget's reservation at its timeout, kept
 * audit_retention_days. A budget's open reservations have no TTL (each
 * refund is counted and audited): the sweep refunds them at their timeout.
 *
 * Each daemon follows the store's definitions (one script call a second) and
 * keeps what it has seen, so that when Redis comes back empty (restarted
 * without persistence, flushed) every daemon that knew a definition puts it
 * back: within a second by itself, and at once on a reserve that names it.
 *
 * Limit templates (put_template, backend.h) live in Redis too, followed by
 * every daemon in the same way (and put back the same way); a daemon names,
 * for each key of a call that a template matches, the most specific one,
 * and the script makes the key's limit from the template Redis holds when
 * the key has no limit of its own. A made limit is written once something
 * holds on it and forgotten once nothing does (deleted then, or ended by
 * TTLs that cover what it holds); it is never a definition: not listed,
 * counted, read by get_definition, deleted by delete_definition (unknown
 * key) or put back after a loss. With allotments, its leases are decided
 * by Redis (docs/allotments.md).
 * Usage lives only in Redis: the reservations, budget charges, lease records
 * and audit entries a Redis without persistence loses on a restart stay
 * lost. Run Redis with appendonly yes: appendfsync always loses nothing it
 * acknowledged; everysec up to about a second of them on a power loss or
 * kernel crash (docs/redis.md "Keeping usage and the audit log across a Redis restart").
 */
#ifndef RATELIMITER_REDIS_H
#define RATELIMITER_REDIS_H

#include "ratelimiter/export.h"

#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/submitter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_redis_options {
    const char *host;            /* default "127.0.0.1"; copied */
    uint16_t port;               /* default 6379 */
    const char *password;        /* NULL: no AUTH; copied */
    uint32_t db;                 /* SELECT db; default 0 */
    const char *key_prefix;      /* default "rl:"; lets tests and tenants share a server */
    uint32_t connections;        /* connections in the pool; default 4 */
    uint32_t connect_timeout_ms; /* default 200 */
    uint32_t command_timeout_ms; /* default 500 */
    uint32_t lease_memory_ms;    /* as the memory backend's; default 600000 */
    /* A Complete that cannot reach Redis is kept and retried in the
     * background for this long (then its holds time out on their own);
     * default 30000. At most max_pending_completes wait; beyond, Complete
     * fails with RL_BACKEND_ERROR. Default 100000. */
    uint32_t complete_retry_deadline_ms;
    uint32_t max_pending_completes;
    /* How often the background thread purges expired state; default 1000,
     * 0: never (scripts still purge every limit they touch). */
    uint32_t sweep_interval_ms;
    /* How long the audit log of spend (types.h) keeps an entry, in days:
     * 1..RL_AUDIT_MAX_RETENTION_DAYS, 0 for the default
     * RL_AUDIT_DEFAULT_RETENTION_DAYS (more is refused at create). It lives
     * in Redis's memory: about 70 bytes an entry (docs/redis.md "Sizing Redis"). */
    uint32_t audit_retention_days;
    /* Accept a Redis whose maxmemory-policy may evict keys (see above); default false. */
    bool allow_eviction;
    /* Tests only: read "now" from this clock instead of Redis TIME, so that a
     * manual clock drives expiry. NULL in production. Borrowed. */
    const rl_clock *clock;
} rl_redis_options;

RL_API void rl_redis_options_default(rl_redis_options *options);

/* Connects (failing fast if Redis is not there: RL_BACKEND_ERROR, err says
 * why), loads the scripts, and returns a backend the caller frees with
 * rl_backend_destroy. */
RL_API rl_status rl_redis_backend_create(const rl_redis_options *options, rl_backend **out, char *err, size_t err_size);

/* ---- allotments: a fleet that decides locally (docs/allotments.md) ----
 *
 * A redis backend that takes, for each limit it serves, an allotment: an
 * amount of the limit's capacity that Redis sets aside for this daemon
 * (counted there like a reservation of that size, until its end plus the
 * limit's window or hold timeout), and decides reserves from it in memory,
 * with no call to Redis. A lease is decided locally only if every one of
 * its keys has room in an allotment now; any other lease takes the
 * synchronous path (one script call, micro-batched), so that all or
 * nothing never spans the two, and its retries and Complete follow it.
 * Denials always come from Redis. Allotments are sized from each key's
 * demand, refilled by a background keeper before they run out, given back
 * when idle, near exhaustion (no daemon holds more than a share of what is
 * left: the last units are decided synchronously) and when the backend is
 * destroyed, and end by themselves if the daemon dies. The fleet never
 * admits more than a limit's capacity. Rolling and concurrency limits have
 * allotments; a lease that names a budget takes the synchronous path.
 *
 * A lease is known to the daemon that decided it: its retries and its
 * Complete should reach that daemon (a retry elsewhere may hold capacity a
 * second time until it expires, never beyond capacity; a Complete elsewhere
 * releases nothing early). */
typedef struct rl_allotment_options {
    /* How often the keeper looks after the allotments (refills, returns,
     * follows definition changes): default 50 ms. 0: only when a test calls
     * the keeper's step itself. */
    uint32_t tick_ms;
    /* How long an allotment lets the daemon admit from it after a carve
     * (the keeper carves again well before): how long a daemon goes on
     * deciding from what it holds when Redis cannot be reached. Default
     * 5000 ms. */
    uint32_t duration_ms;
    /* How much demand an allotment holds room for, ahead: default 500 ms
     * of the key's recent rate. */
    uint32_t horizon_ms;
    /* An allotment without demand for this long is given back: default
     * 2000 ms. */
    uint32_t idle_ms;
    /* The local decisions' lease table bound (0: the memory backend's). */
    uint64_t max_leases;
} rl_allotment_options;

RL_API void rl_allotment_options_default(rl_allotment_options *options);

/* Connects to Redis as rl_redis_backend_create does (redis's clock drives
 * the local decisions too), puts the submitter in front of the synchronous
 * path unless submitter is NULL or its max_leases is 1, starts the keeper,
 * and returns the backend (rl_backend_destroy gives back what it holds).
 * RL_OK, or an error with err saying why. */
RL_API rl_status rl_allotted_backend_create(const rl_redis_options *redis, const rl_submitter_options *submitter,
                                            const rl_allotment_options *allotments, rl_backend **out, char *err,
                                            size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
