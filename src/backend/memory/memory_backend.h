/* memory/memory_backend.h — private: the memory backend's state, shared by
 * its operations (memory_backend.c) and its journal (memory_journal.c).
 *
 * Everything is guarded by lock, except what the journal and the audit log
 * guard themselves (journal.h).
 */
#ifndef RL_MEMORY_MEMORY_BACKEND_H
#define RL_MEMORY_MEMORY_BACKEND_H

#include <pthread.h>

#include "backend/memory/hand_back.h"
#include "backend/memory/journal.h"
#include "backend/memory/lease.h"
#include "backend/memory/limit.h"
#include "core/audit_log.h"
#include "core/template_set.h"
#include "ratelimiter/memory.h"

typedef struct memory_backend {
    rl_backend base;
    rl_backend_ops ops; /* memory_ops and what a journal adds (base.ops points here then) */
    pthread_mutex_t lock;
    const rl_clock *clock;
    uint64_t lease_memory_ms;
    uint64_t max_leases;
    bool keep_job_ids; /* for a daemon's local decisions (memory_local.h): its Completes are audited elsewhere */
    rl_mem_limit_table limits;
    /* A local decider's keys the shared store does not define, each until
     * its admit_until_ms (memory_local.h: rl__memory_local_absent); NULL
     * otherwise. */
    rl_mem_limit_table *absent;
    rl_mem_lease_table leases;
    /* The templates in force (memory_templates.c): a key no definition
     * names that one matches is a limit made from it. NULL: none yet. */
    rl__template_set *templates;
    rl_mem_hand_back hand_back; /* when the sweep gives freed memory back to the kernel */
    uint32_t *walk_scratch; /* for retry_after walks, under lock */
    uint32_t walk_scratch_capacity;

    uint32_t sweep_interval_ms;
    bool sweeper_running;
    bool stopping;
    pthread_t sweeper;
    pthread_cond_t sweeper_wake;

    /* Durability (memory_journal.c); NULL when not kept. */
    rl__journal *journal;
    rl__audit_log *audit;
    rl_mem_observer observer;
    uint64_t audit_seq;        /* the last audit entry's sequence number */
    uint64_t audit_at_unix_ms; /* the last audit entry's time: entries never go back */
    rl__jrec scratch_record;   /* a change's record being written, under lock (too big for a stack) */
    /* While replaying: monotonic = unix + replay_offset_ms, never going back
     * (replay_now_ms), and the audit entries the log has not got yet
     * (sequence > audit_on_disk), written once the journal runs. */
    int64_t replay_offset_ms;
    uint64_t replay_now_ms;
    uint64_t audit_on_disk;
    rl__journal_audit *replay_audit;
    size_t replay_audit_count, replay_audit_capacity;
    /* The audit log the journal's sequence numbers belong to, as its last
     * AUDIT_LINK record says (journal_linked false: none). */
    bool journal_linked;
    uint64_t journal_log_hi, journal_log_lo;
    /* What start-up found of the audit log beside the journal
     * (memory_audit_link.c), for the stats: fixed once open. */
    uint64_t audit_journal_mismatch;  /* 1: the journal is not this log's, or is behind it */
    uint64_t audit_entries_unmatched; /* entries kept that the journal's usage does not hold */
} memory_backend;

/* ---- memory_backend.c, for the replay and the local decisions ---- */

/* A lease decided before, asked again: its first outcome, denied_by
 * included, or a lease_id_conflict if the request is another. */
void rl__mem_replay(const rl_mem_lease *lease, const rl_reserve_request *request, rl_reserve_result *result);

/* The part of request that is reserved: the requirements whose limit is
 * known (limits[i] not NULL), copied into held and its arrays kept, limits
 * compacted in place alike; the optional ones without a limit skipped
 * (types.h). */
void rl__mem_skip_undefined(const rl_reserve_request *request, rl_mem_limit **limits, rl_reserve_request *held,
                            rl_requirement *kept);

/* rl__lease_fingerprint of request, from its limits' parts when they are
 * resolved (limits[i] the limit of requirements[i].key; NULL: hashed from
 * the keys): a lease's keys are not hashed a second time. */
uint64_t rl__mem_fingerprint(const rl_reserve_request *request, rl_mem_limit *const *limits);

/* Remembers the lease of (id_hi, id_lo), new, decided now as result says,
 * with the fingerprint of the request as it came: admitted, request's
 * requirements (those it holds: the optional ones without a definition
 * left out) held in limits[i] until expires_at_ms[i]; forgotten
 * lifetime_ms plus the lease memory from now. limits is the limit of every
 * requirement, or NULL (a lease not admitted, some of its keys unknown).
 * Under lock. On failure (the lease table full of live leases, no memory)
 * result becomes that error, nothing is held and NULL is returned. */
rl_mem_lease *rl__mem_record(memory_backend *backend, const rl_reserve_request *request, uint64_t fingerprint,
                             uint64_t id_hi, uint64_t id_lo, rl_mem_limit *const *limits,
                             const uint64_t *expires_at_ms, uint64_t lifetime_ms, uint64_t now_ms,
                             uint64_t now_unix_ms, rl_reserve_result *result);

/* Completes one valid request at now (under lock, or while replaying).
 * *now_unix_ms is the wall clock, or RL__MEM_UNIX_UNREAD: then it is read
 * (into *now_unix_ms, for the rest of a batch) only if this Complete needs
 * it, for a budget, the audit log or the journal. Most need only the
 * monotonic clock, and a read of the wall clock costs about 20 ns. */
#define RL__MEM_UNIX_UNREAD UINT64_MAX
rl_status rl__mem_complete_one(memory_backend *backend, const rl_complete_request *request, uint64_t now_ms,
                               uint64_t *now_unix_ms);
/* Applies a definition at now (under lock, or while replaying). */
rl_status rl__mem_apply_locked(memory_backend *backend, const rl_limit_def *def, uint64_t now_ms,
                               uint64_t now_unix_ms, rl_limit_status *out_status);
/* Deletes the limit of key and everything it holds (under lock, or while
 * replaying): rl__mem_limit_table_remove. RL_OK or RL_UNKNOWN_LIMIT_KEY. */
rl_status rl__mem_delete_locked(memory_backend *backend, const char *key);

/* ---- memory_templates.c: limits made from templates, under lock (or while replaying) ---- */

/* A limit made now for key (which has none) from the template that matches
 * it (most specific first), or NULL when none does. A limit made so is
 * forgotten once idle (rl__mem_forget_idle) and made again when named. */
rl_mem_limit *rl__mem_limit_made(memory_backend *backend, const char *key);

/* The limit of key: its own, or one made now from a template, or NULL.
 * Inline: every requirement of every reserve asks, and most keys are
 * there already. */
static inline rl_mem_limit *rl__mem_limit_of(memory_backend *backend, const char *key) {
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    return limit != NULL || backend->templates == NULL ? limit : rl__mem_limit_made(backend, key);
}

/* Puts def (def->key its pattern) as put_template does (backend.h), the
 * limits made from that pattern following it, and journals it. RL_OK,
 * RL_INVALID_REQUEST (err says why), RL_LIMIT_IN_USE, RL_NO_MEMORY. */
rl_status rl__mem_put_template_locked(memory_backend *backend, const rl_limit_def *def, uint64_t now_ms,
                                      uint64_t now_unix_ms, char *err, size_t err_size);

/* Removes the template of pattern and the limits made from it, journaled.
 * RL_OK, RL_UNKNOWN_LIMIT_KEY, RL_NO_MEMORY (the journal could not take it:
 * nothing changed). */
rl_status rl__mem_delete_template_locked(memory_backend *backend, const char *pattern, uint64_t now_unix_ms);

/* A limit made from a template that holds nothing (just expired) is as if
 * made anew, whether or not the sweep has forgotten it yet: its totals
 * (debt_total, overage_denied_total) go, as they would with it. Called
 * wherever a limit is reached after its expire (a reserve, a usage read,
 * a replayed lease): the totals a limit made again shows never depend on
 * when the sweep ran, nor on a restart. Inline: every reserve asks. */
static inline void rl__mem_made_read(rl_mem_limit *limit) {
    if (limit->template_pattern == NULL || !rl_mem_limit_is_idle(limit)) return;
    limit->debt_total = limit->overage_denied_total = 0;
}

/* Forgets every limit made from a template that is idle at now (the
 * sweep); returns how many. */
size_t rl__mem_forget_idle(memory_backend *backend, uint64_t now_ms, uint64_t now_unix_ms);

/* ---- memory_journal.c: all under lock ---- */

/* Opens the audit log and the journal of options (either may be absent),
 * replays the journal into backend (empty, with its limits table's
 * observer set), repairs the audit log, refunds what fell due meanwhile,
 * and starts the writer. RL_OK when neither is configured. */
rl_status rl__mem_journal_open(memory_backend *backend, const rl_memory_options *options, char *err, size_t err_size);
/* Writes everything, stops the writer, closes both. */
void rl__mem_journal_close(memory_backend *backend);

/* ---- memory_audit_link.c: the audit log and the journal at start ---- */

/* After the replay, before the journal's writer starts: ties the audit log
 * to the journal (journal_path NULL: none). Entries above the journal's
 * sequence are dropped only when the journal is this log's (the same id)
 * and they are the log's last group (a crash between the two writes: never
 * acknowledged); entries the journal holds and the log lost are kept for
 * the writer (replay_audit). In every other case every entry is kept, the
 * sequence goes on from the log's last, what does not match is said on
 * stderr and in the stats, and *link is set: the journal must get an
 * AUDIT_LINK record (rl__mem_audit_link_record) once it runs. RL_OK,
 * RL_IO_ERROR, RL_NO_MEMORY (err says why). */
rl_status rl__mem_audit_link(memory_backend *backend, const char *journal_path, const char *audit_dir, bool *link,
                             char *err, size_t err_size);

/* The AUDIT_LINK record of the backend's audit log and sequence, into
 * record (a snapshot's first, or a journal linked at start). */
void rl__mem_audit_link_record(const memory_backend *backend, rl__jrec *record);

/* The records of each change; false: no memory (the caller refuses it).
 * Each of these does nothing (true) without its journal or audit log: a
 * caller on the hot path asks backend->journal / backend->audit first and
 * spares the plain backend a call per lease and per entry. */
bool rl__mem_journal_define(memory_backend *backend, const rl_limit_def *def, uint64_t now_unix_ms);
/* A template put (def->key its pattern), or deleted. */
bool rl__mem_journal_template(memory_backend *backend, const rl_limit_def *def, uint64_t now_unix_ms);
bool rl__mem_journal_untemplate(memory_backend *backend, const char *pattern, uint64_t now_unix_ms);
bool rl__mem_journal_delete(memory_backend *backend, const char *key, uint64_t now_unix_ms);
bool rl__mem_journal_lease(memory_backend *backend, const rl_mem_lease *lease, uint64_t now_ms, uint64_t now_unix_ms);
/* A Complete's record, after its audit entries (rl__mem_audit). */
bool rl__mem_journal_complete(memory_backend *backend, const rl_mem_lease *lease,
                              const rl_complete_request *request, uint64_t now_unix_ms);
/* One audit entry of entry (of lease, on the limit keyed key): reserved,
 * actual charged, or expired when refunded by timeout, at now. */
void rl__mem_audit(memory_backend *backend, const rl_mem_lease *lease, const rl_mem_entry *entry, const char *key,
                   uint64_t reserved, uint64_t actual, bool expired, uint64_t now_unix_ms);

/* The ticket an answer given now must wait for (0 without a journal). */
static inline uint64_t rl_mem_journal_ticket(memory_backend *backend) {
    return backend->journal != NULL ? rl__journal_ticket(backend->journal) : 0;
}

#endif
