/* redis/redis_allot.h — private: allotments of capacity in Redis for one
 * daemon (docs/allotments.md), through allot.lua: carved, refilled and
 * returned in one script call for a batch of keys. Rolling and concurrency
 * limits so far.
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
    /* carve: take min(want, free) but never less than floor (what is held
     * live from the allotment now), until duration_ms from now */
    uint64_t want, floor, duration_ms;
    /* give_back: what is still live from it, kept as entries of its own */
    const rl__allot_live *live;
    size_t live_count;
} rl__allot_op;

typedef enum rl__allot_status {
    RL__ALLOT_OK,
    RL__ALLOT_UNKNOWN,    /* no such limit */
    RL__ALLOT_KIND,       /* a kind without allotments (budgets, so far) */
    RL__ALLOT_GENERATION, /* the daemon lost track: return and carve again */
} rl__allot_status;

typedef struct rl__allot_result {
    rl__allot_status status;
    uint64_t amount;          /* held now (0 after a return) */
    uint64_t ends_in_ms;      /* from now: the daemon admits from it until then */
    uint64_t counted_for_ms;  /* from now: how long Redis counts it (end + window) */
    uint64_t free;            /* the limit's capacity in force not used, after the call */
    uint64_t capacity;        /* the capacity enforced */
} rl__allot_result;

/* Applies ops[0..count) for daemon_id (a text without spaces or ':') in one
 * script call on the redis backend; results[i] for ops[i]. RL_OK, or
 * RL_BACKEND_ERROR (Redis unreachable or refusing: nothing is known). A
 * retried call with the same generations changes nothing more. */
rl_status rl__redis_allot(rl_backend *redis, const char *daemon_id, const rl__allot_op *ops, size_t count,
                          rl__allot_result *results);

/* allot.lua's answer for count operations into results[0..count): true,
 * or false (results untouched) for anything it would not answer. Pure. */
bool rl__redis_allot_answer_read(const redisReply *reply, size_t count, rl__allot_result *results);

#endif
