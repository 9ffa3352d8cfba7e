/* allot/allotted_backend.h — private to the allotted backend's files: its
 * state. See ratelimiter/redis.h ("allotments") for the contract and
 * docs/allotments.md for the design.
 *
 * Three backends make it: the raw redis backend (allot.lua, settle.lua and
 * everything that is not a lease: definitions, usage, the audit log,
 * health), the synchronous path (the submitter over it, which owns it, or
 * the redis backend itself), and the local decider (memory_local.h). The
 * lease path (allotted_backend.c) runs on the caller's thread; the keeper
 * (allot_keeper.c) is one thread of its own; local Completes' spends go to
 * Redis through a batch lane (allot_settle.c).
 */
#ifndef RL_ALLOT_ALLOTTED_BACKEND_H
#define RL_ALLOT_ALLOTTED_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/memory/memory_local.h"
#include "core/batch_lane.h"
#include "ratelimiter/redis.h"

typedef struct allot_keeper allot_keeper; /* allot_keeper.c */

typedef struct allotted_backend {
    rl_backend base;
    rl_backend *redis; /* owned by sync (or sync itself) */
    rl_backend *sync;  /* owned */
    rl_backend *local; /* owned */
    const rl_clock *clock;
    char daemon_id[RL_ULID_LEN + 1];
    rl_allotment_options options;

    /* Keys leases asked for that have no mirror here yet, for the keeper
     * (bounded: a flood of unknown keys costs one lock each, no memory). */
    pthread_mutex_t inbox_lock;
    void *inbox; /* a GHashTable of keys (allot_keeper.c), created by the keeper's start */
    /* Keys Redis may have deleted, for the keeper to look at (as bounded),
     * under inbox_lock. */
    void *deleted;

    allot_keeper *keeper;
    /* For monitoring: the keys the keeper holds an allotment of, and their
     * amounts together, as of its last step (relaxed stores, its thread). */
    atomic_uint_fast64_t allotments_held, allotment_amount_held;

    /* Local Completes' spends on their way to Redis (allot_settle.c), and
     * those Redis did not take, retried by the keeper. */
    rl__batcher_lane settle;
    pthread_mutex_t unsettled_lock;
    rl__local_spend *unsettled;
    size_t unsettled_count;

    /* Figures for health and tests. */
    _Atomic uint64_t leases_local, leases_forwarded;
    _Atomic uint64_t admit_until_ms; /* the latest instant any allotment lets this daemon admit */
} allotted_backend;

static inline allotted_backend *rl__allotted_of(rl_backend *base) { return (allotted_backend *)base; }

#define RL__ALLOT_INBOX_MAX 1024u
#define RL__ALLOT_UNSETTLED_MAX 100000u

/* ---- allot_keeper.c ---- */

/* Starts the keeper (a thread unless options.tick_ms is 0). RL_OK or
 * RL_NO_MEMORY. */
rl_status rl__allot_keeper_start(allotted_backend *backend);

/* One step of the keeper now: the inbox taken, every key's allotment
 * looked after in one allot.lua call, unsettled spends sent again. Called
 * by the keeper's thread, or by tests when tick_ms is 0 (never both). */
void rl__allot_keeper_step(allotted_backend *backend);

/* Stops the thread, gives back every allotment (one last call), frees the
 * keeper. */
void rl__allot_keeper_stop(allotted_backend *backend);

/* Makes every key the keeper looks after due for a look in Redis at its
 * next step (a definition changed: allot.lua's answers bring it), and the
 * relayed Completes due for a read. Thread-safe. */
void rl__allot_keeper_recheck(allotted_backend *backend);

/* Asks the keeper for an allotment of key: a lease asked amount of it and
 * found none to be decided from. Thread-safe, never blocks for long. */
void rl__allot_want_key(allotted_backend *backend, const char *key, uint64_t amount);

/* A key Redis deleted (the redis backend's hook, rl__redis_on_deleted,
 * context the backend: this daemon's delete, or another's it learned of):
 * the keeper looks at it in Redis at its next step, whatever its mode, and
 * if Redis has no such limit, or another incarnation of it (deleted and
 * defined again), then drops its mirror with what it holds, so that no
 * lease is decided from it and no Complete spends on it. (Not at once: the
 * news may be older than a definition of the key made since, whose mirror
 * must keep what it admitted; allot.lua's answer is current.) Thread-safe,
 * never blocks for long. */
void rl__allot_key_deleted(void *backend, const char *key);

/* ---- allot_settle.c ---- */

/* The settle lane: RL_OK or RL_NO_MEMORY. */
rl_status rl__allot_settle_start(allotted_backend *backend);
void rl__allot_settle_stop(allotted_backend *backend);

/* Sends spends (a local Complete's) to Redis; done(context) once they are
 * there or kept to be sent again (from the lane's thread, or this one). */
void rl__allot_settle_async(allotted_backend *backend, const rl__local_spend *spends, size_t count,
                            void (*done)(void *context), void *context);

/* The same, waiting. */
void rl__allot_settle(allotted_backend *backend, const rl__local_spend *spends, size_t count);

/* Sends again what Redis did not take (the keeper's step). */
void rl__allot_settle_retry(allotted_backend *backend);

#endif
