/* redis/redis_backend_internal.h — private to the redis backend's files: its
 * state, and the definitions half (redis_definitions.c) that the lease half
 * (redis_backend.c) calls. See ratelimiter/redis.h for the contract.
 */
#ifndef RL_REDIS_BACKEND_INTERNAL_H
#define RL_REDIS_BACKEND_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "backend/redis/budget_periods.h"
#include "backend/redis/complete_retry.h"
#include "backend/redis/definition_cache.h"
#include "backend/redis/redis_args.h"
#include "backend/redis/redis_pool.h"
#include "backend/redis/template_copy.h"
#include "ratelimiter/redis.h"

typedef struct redis_backend {
    rl_backend base;
    rl_redis_pool *pool;
    char *prefix;
    uint64_t lease_memory_ms;
    uint32_t sweep_interval_ms; /* 0: no sweeps (scripts still purge what they touch) */
    uint64_t next_sweep_ms;     /* the background thread's only */
    const rl_clock *clock;      /* tests only */
    rl_complete_retry *retry;   /* Completes waiting for Redis to come back; the periodic work */
    rl_definition_cache *definitions; /* to define again what a restarted Redis lost */
    rl_budget_periods *budgets;       /* the calendars of the budgets it knows (budget_periods.h) */
    rl__template_copy *templates;     /* the templates in Redis, as this daemon knows them (template_copy.h) */
    uint64_t audit_retention_ms;      /* how long the audit log keeps an entry (lua/audit.lua) */
    /* Completes of leases Redis does not know are relayed to the daemons
     * (complete.lua): set by a backend with allotments (redis_allot.h). */
    _Atomic bool relay_completes;
    /* The store's definitions as last followed (changes.lua): its epoch and
     * the number of its last change read. The background thread's only
     * (and creation's, before it starts). */
    char followed_epoch[64];
    uint64_t followed_version;
    /* Limit keys named by replayed outcomes that are not in the request at
     * hand: kept for the backend's life (limits are few, and a deleted one
     * is kept too), so that a result's status_key stays valid as
     * rl_reserve_result says. */
    pthread_mutex_t interned_lock;
    char **interned;
    size_t interned_count, interned_capacity;
    /* Told of every key this daemon learns was deleted (its own delete, or
     * another daemon's, followed): set by a backend with allotments, whose
     * mirror of the key must go (redis_allot.h). Under hook_lock, held
     * while the hook runs. */
    pthread_mutex_t hook_lock;
    void (*deleted_hook)(void *context, const char *key);
    void *deleted_context;
} redis_backend;

static inline redis_backend *rl_redis_backend_of(rl_backend *base) { return (redis_backend *)base; }

/* The deadline of the operation starting now: the pool's bound counted from
 * when its caller began to wait (core/call_wait.h), so that a lease queued
 * in the submitter does not get a fresh bound when its flush starts. */
uint64_t rl_redis_operation_deadline_ms(const redis_backend *backend);

/* A number in a script's answer: an integer, or a string of digits (the
 * scripts send as text the numbers a Lua-to-Redis integer would cut); 0
 * for anything else. */
static inline uint64_t rl__redis_number(const redisReply *item) {
    if (item->type == REDIS_REPLY_INTEGER) return item->integer > 0 ? (uint64_t)item->integer : 0;
    if (item->type == REDIS_REPLY_STRING) return strtoull(item->str, NULL, 10);
    return 0;
}

static inline uint64_t rl__redis_monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The daemon's Unix ms on clock (NULL: the system's), for budgets' period
 * bounds: the scripts check them against Redis's own time. */
static inline uint64_t rl__redis_unix_now_ms(const rl_clock *clock) {
    if (clock == NULL) clock = rl_clock_system();
    return clock->unix_ms(clock);
}

/* The script header (redis_args.h) of a call on clock (NULL: Redis TIME). */
static inline void rl__redis_push_header(rl_redis_args *a, const redis_backend *backend, const rl_clock *clock) {
    rl_redis_args_push_header(a, backend->prefix, clock, backend->audit_retention_ms);
}

/* The vtable's lease operations (ratelimiter/backend.h), each in its file:
 * redis_reserve.c, redis_complete.c, redis_upkeep.c, redis_audit.c. */
void rl__redis_reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                             rl_reserve_result *results);
void rl__redis_complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                              rl_status *statuses);
rl_status rl__redis_limit_usage(rl_backend *base, const char *key, rl_limit_usage *out);
rl_status rl__redis_audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page);
void rl__redis_sweep(rl_backend *base);
/* The template_usage op (backend.h): sweep.lua's walk of each template's
 * made limits, a page a call, summed here; at most
 * RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS read per template (then partial). */
#define RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS 2000u
rl_status rl__redis_template_usage(rl_backend *base, const char *const *patterns, size_t count,
                                   rl_template_usage *out);
/* One page of sweep.lua's usage answer (the cursor, then per live limit
 * its capacity, used, committed and reserved, decimals as the script
 * writes them, each at most RL_AMOUNT_MAX) added into *out, the cursor
 * into cursor; false, both untouched, for any other answer. Pure. */
#define RL__REDIS_USAGE_PAGE_FIELDS 4
bool rl__redis_usage_page_read(const redisReply *reply, char cursor[RL_REDIS_NUMBER_SIZE], rl_template_usage *out);
rl_status rl__redis_health(rl_backend *base, char *detail, size_t detail_size);
/* complete_retry.h's send (context: the backend): a kept Complete tried again. */
bool rl__redis_retry_send(void *context, const rl_complete_request *requests, size_t count);
/* complete_retry.h's step (context: the backend): definitions followed, a
 * sweep when one is due. */
void rl__redis_periodic(void *context);

/* One call of a script that walks a set a page at a time (sweep,
 * definitions): ARGV[5] = the cursor, ARGV[6] = members a page, and
 * ARGV[7] = which unless NULL (the set walked instead of the definitions':
 * sweep.lua's made from a template, definitions.lua's "templates"). Each
 * page has a deadline of its own. */
rl_status rl_redis_eval_page(redis_backend *backend, rl_redis_script script, const char *cursor,
                             const char *per_call, const char *which, redisReply **reply);

/* Decodes a JSON that Redis holds into *out, learning it (the definition
 * cache, the copy of the templates); RL_BACKEND_ERROR (said on stderr) for
 * one that does not decode. */
typedef rl_status (*rl_redis_decode_fn)(redis_backend *backend, const char *json, size_t len, rl_limit_def *out);

/* The six values every script that writes a definition takes first: key,
 * kind (r|c|b), capacity, lifetime ms (window or timeout), overage
 * (debt|deny), its JSON (borrowed until the call returns). */
void rl_redis_push_definition_head(rl_redis_args *a, const rl_limit_def *def, const char *json, size_t json_len);

/* decode(json, len, out, detail) of a JSON Redis holds: RL_OK, or
 * RL_BACKEND_ERROR with a line on stderr naming what (a "definition", a
 * "template") cannot be read, why, and how to replace it: a JSON every
 * build writes that does not decode was edited by hand, damaged, or
 * written by a build that knows more, and is an error, never an absence. */
rl_status rl_redis_decode_stored(const char *what, rl_status (*decode)(const char *, size_t, rl_limit_def *, char *),
                                 const char *json, size_t len, rl_limit_def *out);

/* Every JSON of definitions.lua's listing of which (NULL: the definitions)
 * decoded by learn, a page per script call, sorted by key, repeats
 * dropped, in one malloc'd array (NULL when empty). */
rl_status rl_redis_list_paged(redis_backend *backend, const char *which, rl_redis_decode_fn learn,
                              rl_limit_def **out, size_t *count);

/* ---- definitions (redis_definitions.c) ---- */

/* The vtable's definition operations. */
rl_status rl_redis_apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status);
rl_status rl_redis_restore_definition(rl_backend *base, const rl_limit_def *def);
rl_status rl_redis_delete_definition(rl_backend *base, const char *key);
rl_status rl_redis_get_definition(rl_backend *base, const char *key, rl_limit_def *out);
rl_status rl_redis_count_definitions(rl_backend *base, size_t *count);
rl_status rl_redis_list_definitions(rl_backend *base, rl_limit_def **out, size_t *count);

/* Defines key again, by deadline_ms, from what this daemon has seen of it,
 * if the store does not hold it (a Redis that restarted empty or was
 * flushed; if another daemon put it back first, its definition stays).
 * True if the store holds key afterwards. */
bool rl_redis_define_again(redis_backend *backend, const char *key, uint64_t deadline_ms);

/* How many times one operation reads a budget's definition again when a
 * script asks for bounds this daemon did not pass (another daemon may be
 * changing it meanwhile) before it fails. */
#define BOUNDS_READS_MAX 3

/* Reads key's definition from Redis again, by deadline_ms, so that this
 * daemon learns a budget's latest calendar (budget_periods.h) after a
 * script asked for bounds it did not pass; for a key with no definition of
 * its own that a template matches, the templates (its calendar is its
 * template's). True if Redis holds one that decodes. */
bool rl_redis_read_again(redis_backend *backend, const char *key, uint64_t deadline_ms);

/* Starts following the store's definitions from their current version
 * (what came before is what a listing reads). Called once at creation;
 * RL_BACKEND_ERROR with err if Redis does not answer. */
rl_status rl_redis_definitions_follow(redis_backend *backend, char *err, size_t err_size);

/* The background thread's periodic step: reads the definitions changed in
 * the store since the last step into the cache, so that this daemon can put
 * back a definition another daemon made; and when the store turns out to
 * have lost its definitions (restarted without persistence, flushed),
 * defines again every one this daemon knows that it lacks. Not thread-safe:
 * one thread calls it. */
void rl_redis_definitions_sync(redis_backend *backend);

/* ---- templates (redis_templates.c) ---- */

/* The vtable's template operations (ratelimiter/backend.h). */
rl_status rl_redis_put_template(rl_backend *base, const rl_limit_def *def);
rl_status rl_redis_delete_template(rl_backend *base, const char *pattern);
rl_status rl_redis_list_templates(rl_backend *base, rl_limit_def **out, size_t *count);

/* Reads every template into this daemon's copy (at creation, after the
 * definitions' version is taken: later changes are followed).
 * RL_BACKEND_ERROR with err if Redis does not answer. */
rl_status rl__redis_templates_load(redis_backend *backend, char *err, size_t err_size);

/* Reads the templates again (a script asked for the bounds of a budget
 * made from one this daemon may not know as it is). True if Redis answered. */
bool rl__redis_templates_read_again(redis_backend *backend);

/* The pattern named by a change the follower read (changes.lua), or NULL
 * when the change is a definition's. */
const char *rl__redis_template_change(const char *member);

/* A change of the template of pattern that the follower read: its JSON,
 * or empty for a template deleted. */
void rl__redis_template_followed(redis_backend *backend, const char *pattern, const char *json, size_t json_len);

/* Puts back every template this daemon knows that a store which lost its
 * definitions lacks (one deleted meanwhile stays deleted). */
void rl__redis_templates_restore(redis_backend *backend);

/* What a script call that names keys tells about them (reserve.lua,
 * usage.lua): the bounds of the budgets among them (budget.lua), then the
 * keys a template matches with its pattern (made.lua's TEMPLATES). Keys
 * are borrowed (they must live until the call returns); a call without
 * budgets or templates known allocates nothing. Not thread-safe: one per
 * call. */
typedef struct rl__redis_call_keys {
    uint64_t unix_now_ms;
    bool budgets_known, templates_known;
    rl_budget_bounds *bounds;
    const char **bounds_keys;
    size_t budgets;
    const char **made_keys;
    size_t *made_pattern; /* index in patterns */
    size_t made;
    char (*patterns)[RL_KEY_MAX_LEN + 1]; /* each pattern named once */
    size_t pattern_count, pattern_capacity;
    const char **seen; /* the keys added, hashed: each told once however many leases name it */
    size_t seen_mask;
} rl__redis_call_keys;

/* Room for max_keys keys. False when out of memory (free in any case). */
bool rl__redis_call_keys_init(redis_backend *backend, rl__redis_call_keys *c, size_t max_keys);
void rl__redis_call_keys_free(rl__redis_call_keys *c);
/* Adds key (max_keys keys in all, repeats counted; a repeat adds nothing). */
void rl__redis_call_keys_add(redis_backend *backend, rl__redis_call_keys *c, const char *key);
/* How many arguments rl__redis_call_keys_push pushes. */
size_t rl__redis_call_keys_argc(const rl__redis_call_keys *c);
/* The bounds section, then the templates section. */
void rl__redis_call_keys_push(rl_redis_args *a, const rl__redis_call_keys *c);

#endif
