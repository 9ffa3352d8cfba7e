/* redis/redis_allot.h — private: allotments of capacity in Redis for one
 * daemon (docs/allotments.md), through allot.lua: carved, refilled and
 * returned in one script call for a batch of keys; and what the Completes of
 * leases decided from them leave to the store (settle.lua). Rolling and
 * concurrency limits.
 *
 * An allotment is counted in the limit's usage as one reservation of its
 * amount, until its end plus the limit's window (or hold timeout): Redis's
 * figure is never below what the daemon may hold live from it, so that the
 * fleet never admits beyond capacity, whatever each daemon decides locally
 * from what it holds.
 *
 * Thread-safe (one script call through the backend's pool). */
#ifndef RL_REDIS_ALLOT_H
#define RL_REDIS_ALLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "ratelimiter/backend.h"

/* What the daemon still holds live from an allotment it returns: amount,
 * until remaining_ms from now. */
typedef struct rl__allot_live {
    uint64_t remaining_ms;
    uint64_t amount;
} rl__allot_live;

typedef struct rl__allot_op {
    const char *key;
    bool give_back;      /* return the allotment; else carve (or refill) it */
    uint64_t generation; /* the daemon's count of operations on it: one more than the last applied */
    uint64_t known_version; /* the version of key's definition the daemon has (0: none) */
    /* The incarnation of key's limit the daemon's mirror was made for
     * (rl__allot_result.incarnation), if it has a mirror: one of another
     * incarnation is of a limit deleted since, and the operation is
     * refused (RL__ALLOT_INCARNATION). */
    bool mirrored;
    uint64_t incarnation;
    /* carve: hold min(want, what it holds + its share) but never less than
     * floor (what it may hold live from the allotment now), until
     * duration_ms from now; no growth that leaves less than least of room
     * above floor; live: what it holds live from it now (for usage) */
    uint64_t want, floor, duration_ms;
    uint64_t least, live_now, live_entries;
    /* give_back: what is still live from it, kept as entries of its own */
    const rl__allot_live *live;
    size_t live_count;
} rl__allot_op;

typedef enum rl__allot_status {
    RL__ALLOT_OK,
    RL__ALLOT_UNKNOWN,    /* no such limit */
    RL__ALLOT_KIND,       /* a kind without allotments (budgets, so far) */
    RL__ALLOT_GENERATION, /* out of step: nothing changed; go on from the record's generation */
    /* The daemon's mirror is of a limit deleted since (key was defined again:
     * another incarnation): nothing changed, nothing it holds counts in the
     * new limit; the answer carries the new one's definition. */
    RL__ALLOT_INCARNATION,
} rl__allot_status;

/* The longest definition (JSON) an answer may carry. */
#define RL__ALLOT_DEFINITION_MAX 4096

typedef struct rl__allot_result {
    rl__allot_status status;
    uint64_t amount;          /* held now (0 after a return) */
    uint64_t ends_in_ms;      /* from now: the daemon admits from it until then */
    uint64_t counted_for_ms;  /* from now: how long Redis counts it (end + window) */
    uint64_t share;           /* what a carve could grow it by now (allot.lua's share rule) */
    uint64_t capacity;        /* the capacity enforced */
    uint64_t generation;      /* the record's, after the call */
    uint64_t version;         /* of key's definition in the store (0: none) */
    /* Of key's limit in the store: which limit it is, a key deleted and
     * defined again being another (0: never deleted, or no limit). */
    uint64_t incarnation;
    bool has_definition;      /* the version is not the one the daemon knew, or RL__ALLOT_INCARNATION: */
    rl_limit_def definition;  /*   the store's definition, decoded */
} rl__allot_result;

/* Applies ops[0..count) for daemon_id (a text without spaces or ':') in one
 * script call on the redis backend; results[i] for ops[i]. RL_OK, or
 * RL_BACKEND_ERROR (Redis unreachable or refusing: nothing is known). A
 * retried call with the same generations changes nothing more. */
rl_status rl__redis_allot(rl_backend *redis, const char *daemon_id, const rl__allot_op *ops, size_t count,
                          rl__allot_result *results);

/* allot.lua's answer for count operations into results[0..count): true,
 * or false (results untouched) for anything it would not answer, a
 * definition that does not decode included. Pure. */
bool rl__redis_allot_answer_read(const redisReply *reply, size_t count, rl__allot_result *results);

/* Completes relayed by complete.lua (Completes of leases Redis does not
 * know, forwarded by daemons that did not decide them): from now on redis
 * relays them, and rl__redis_relay_read reads them. */
void rl__redis_relay_on(rl_backend *redis);

/* One relayed Complete: its lease id and actuals (strings in the caller's
 * buffer). */
typedef struct rl__relayed {
    char lease_id[RL_ULID_LEN + 1];
    rl_actual actuals[RL_MAX_REQUIREMENTS];
    size_t actual_count;
    char keys[RL_MAX_REQUIREMENTS][RL_KEY_MAX_LEN + 1];
} rl__relayed;

/* The stream's last id now ("0-0" if empty) into last_id (64 bytes), so
 * that a daemon starting reads only what comes after. RL_OK or
 * RL_BACKEND_ERROR. */
rl_status rl__redis_relay_tail(rl_backend *redis, char last_id[64]);

/* Up to max relayed Completes after last_id into out (entries that do not
 * read as a Complete are skipped); last_id moves past what was read.
 * Returns how many, or -1 if Redis did not answer. */
long rl__redis_relay_read(rl_backend *redis, char last_id[64], rl__relayed *out, size_t max);

/* XREAD's answer for the relay stream into out (at most max), moving
 * last_id past every entry it holds (a well-formed id); entries that are
 * not a relayed Complete (a lease id, then 0..RL_MAX_REQUIREMENTS valid
 * keys, none twice, with amounts up to RL_AMOUNT_MAX: what
 * rl_complete_request_check takes) are skipped. Returns how many were
 * read. Pure. */
size_t rl__redis_relay_answer_read(const redisReply *reply, char last_id[64], rl__relayed *out, size_t max);

/* From now on hook(context, key) is called for every key the backend
 * learns was deleted: by this daemon (its delete_definition), or by
 * another (the follower reads the deletion within a second; a reserve or a
 * restore meets it first). Called from the thread that learned it, one
 * call at a time: it must be quick and call nothing of this backend's.
 * hook NULL: no more calls (one under way is finished when this returns). */
void rl__redis_on_deleted(rl_backend *redis, void (*hook)(void *context, const char *key), void *context);

/* How many definitions this daemon has seen (its definition cache): what
 * a daemon deciding from allotments says while Redis cannot tell. */
size_t rl__redis_known_definitions(rl_backend *redis);

/* True when key's limit is, as far as this daemon knows, made from a
 * template (lua/made.lua): a template of its copy matches key, and it has
 * seen no definition of the key's own. Such keys get no allotments: their
 * leases are decided by Redis (docs/allotments.md). Thread-safe; no call
 * to Redis, nothing but a flag read while there are no templates. */
bool rl__redis_made_from_template(rl_backend *redis, const char *key);

/* What one rolling key of a local Complete leaves to the store (settle.lua):
 * its audit entry, and an overage to charge by the limit's policy. A spend
 * of a limit deleted since (incarnation not the store's) leaves nothing. */
typedef struct rl__allot_spend {
    const char *key;
    const char *lease_id;
    const char *job_id; /* "" if none */
    uint64_t reserved, actual;
    uint64_t overage, overage_for_ms;
    uint64_t incarnation; /* of the limit the lease was decided from */
} rl__allot_spend;

/* Applies count spends in one script call. RL_OK or RL_BACKEND_ERROR
 * (nothing is known: send them again; the audit entries of a call applied
 * twice are written twice). */
rl_status rl__redis_settle(rl_backend *redis, const rl__allot_spend *spends, size_t count);

#endif
