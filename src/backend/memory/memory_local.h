/* memory/memory_local.h — private: the memory backend as the local decider
 * of a daemon that holds allotments of shared limits (backend/allot,
 * docs/allotments.md).
 *
 * Each limit here mirrors a shared limit's definition, but its capacity is
 * what the daemon's allotment of it lets it admit (0 without one), and it
 * admits only before an instant (admit_until_ms) chosen so that nothing
 * admitted here outlives what the shared store counts for the allotment.
 * A lease is decided here only if every one of its keys has room now;
 * otherwise it is not decided at all but *forwarded*: the caller sends it to
 * the shared store (the synchronous path), so that all-or-nothing never
 * spans the two. A forwarded lease is remembered as such, so that its
 * retries and its Complete are forwarded too: a lease id is decided in one
 * place. Denials therefore only ever come from the store.
 *
 * A local Complete releases holds and reconciles reservations here, and
 * leaves to the store what only the store may decide: the audit entry of
 * every rolling key charged, and overage (an actual above the reservation),
 * which the store charges by the limit's own policy against the whole
 * limit. Budgets are never decided here (their mirrors admit nothing).
 *
 * Thread-safe: every function takes the backend's lock.
 */
#ifndef RL_MEMORY_MEMORY_LOCAL_H
#define RL_MEMORY_MEMORY_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"

/* What the store must learn of one key of a local Complete. */
typedef struct rl__local_spend {
    char key[RL_KEY_MAX_LEN + 1];       /* the limit's (a copy: the mirror may be deleted meanwhile) */
    char lease_id[RL_ULID_LEN + 1];     /* upper case */
    char job_id[RL_JOB_ID_MAX_LEN + 1]; /* the reserve's, "" if none */
    uint64_t reserved, actual;          /* for the audit entry: what it held, what the call cost */
    uint64_t overage;                   /* actual above reserved, for the store to charge (0: none) */
    uint64_t overage_for_ms;            /* how long the reservation had left to live */
    uint64_t incarnation;               /* of the shared limit the lease was decided from */
} rl__local_spend;

/* A memory backend for local decisions: no journal, no sweeper thread (the
 * caller's keeper sweeps), job ids kept for the audit entries. clock is
 * borrowed. RL_OK or RL_NO_MEMORY. */
rl_status rl__memory_local_create(const rl_clock *clock, uint32_t lease_memory_ms, uint64_t max_leases,
                                  rl_backend **out);

/* Decides each lease that fits now in every one of its limits here, as
 * reserve_batch does (a retried lease gets its first outcome); every other
 * lease is forwarded: forwarded[i] is set and results[i] is to be filled by
 * the store. A lease forwarded before is forwarded again. A forwarded
 * lease may name in results[i].status_key a key the caller should ask an
 * allotment of: one without a mirror here (status RL_UNKNOWN_LIMIT_KEY),
 * or one whose mirror lets nothing be admitted now and has not been named
 * since rl__memory_local_unwant (status RL_OK). A lease the lease table
 * has no room for (full of live leases) is forwarded, unremembered.
 * Requests are valid (backend.h). */
void rl__memory_local_reserve(rl_backend *local, const rl_reserve_request *requests, size_t count,
                              rl_reserve_result *results, bool *forwarded);

/* Completes the leases decided here (statuses[i] RL_OK) and sets
 * forwarded[i] for the others (forwarded, or unknown here: perhaps decided
 * by the store). spends has room for count * RL_MAX_REQUIREMENTS; returns
 * how many were written (one per rolling key charged). */
size_t rl__memory_local_complete(rl_backend *local, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, bool *forwarded, rl__local_spend *spends);

/* One mirror's state, for the keeper. */
typedef struct rl__local_state {
    uint64_t capacity;       /* what it may admit now */
    uint64_t used;           /* what it holds live */
    uint64_t entries;        /* in how many live entries */
    /* Read only as the difference of two readings (what was asked and
     * admitted since the keeper last looked), which stays right across a
     * wrap: these two wrap, where the counters answered to clients
     * saturate (core/counter.h). */
    uint64_t demand_total;   /* units asked of it, ever */
    uint64_t admitted_total; /* units it admitted, ever */
    uint64_t largest_amount; /* the largest amount asked since the last call (then reset) */
    uint64_t lifetime_ms;    /* how long what it admits lives: its window, or its hold timeout */
    uint64_t incarnation;    /* of the shared limit it mirrors (rl__memory_local_define) */
    rl_kind kind;
} rl__local_state;

/* False if key has no mirror. */
bool rl__memory_local_state(rl_backend *local, const char *key, rl__local_state *out);

/* Installs def as the mirror of its key, of the shared limit's incarnation
 * (a new one admits nothing), or updates it keeping what it may admit. A
 * mirror of another incarnation is of a limit deleted since: forget it
 * first (rl__memory_local_forget), so that nothing it holds counts in the
 * new one. RL_OK, RL_LIMIT_IN_USE (a kind change while it holds anything,
 * or a mirror of another incarnation: kept as it was) or RL_NO_MEMORY. */
rl_status rl__memory_local_define(rl_backend *local, const rl_limit_def *def, uint64_t incarnation);

/* Lets the mirror of key admit up to capacity (at most what the store
 * counts for the allotment) until admit_until_ms on the clock's monotonic
 * time. What it holds beyond a lower capacity stays (nothing more is
 * admitted until it fits). No-op for a key without a mirror. */
void rl__memory_local_allow(rl_backend *local, const char *key, uint64_t capacity, uint64_t admit_until_ms);

/* Lowers what the mirror of key may admit to max(target, what it holds),
 * at once; with stop, nothing more is admitted from now on. Returns the
 * capacity it has now (0 without a mirror): a floor for what the store
 * must go on counting. */
uint64_t rl__memory_local_shrink(rl_backend *local, const char *key, uint64_t target, bool stop);

/* What the mirror of key holds live, as at most max (remaining_ms, amount)
 * pairs by expiry: each entry's time left rounded up to a whole second,
 * pairs of the same second merged, and later pairs merged into the last
 * one if there are more than max (so that nothing is counted for less
 * time than it lives). Returns how many were written. */
size_t rl__memory_local_live(rl_backend *local, const char *key, uint64_t *remaining_ms, uint64_t *amounts,
                             size_t max);

/* The shared store had no definition of key when the keeper looked (its
 * call sent at sent_ms): until until_ms, a lease's optional requirement on
 * key is skipped here (as the store skips it) rather than forward the
 * lease, unless a mirror of key exists by then. A definition made
 * meanwhile is thus met here at most until_ms - sent_ms late (until_ms 0:
 * no longer skipped, the key was defined through this daemon). Keys kept
 * at most RL__LOCAL_ABSENT_MAX (more are not kept: their leases are
 * forwarded). */
#define RL__LOCAL_ABSENT_MAX 1024u
void rl__memory_local_absent(rl_backend *local, const char *key, uint64_t until_ms);

/* Drops the mirror of key and everything it holds (the shared limit was
 * deleted): rl__mem_limit_table_remove. The leases decided from it keep
 * their other entries; their Completes spend nothing on key. False if key
 * has no mirror. */
bool rl__memory_local_forget(rl_backend *local, const char *key);

/* Lets the next forwarded lease that names key name it again in its
 * result (the keeper forgot about key). */
void rl__memory_local_unwant(rl_backend *local, const char *key);

/* Expires what is due and forgets due leases (the keeper's sweep). */
void rl__memory_local_sweep(rl_backend *local);

#endif
