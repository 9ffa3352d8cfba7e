/* memory/journal.h — when the memory backend's changes reach the disk: the
 * journal's writer, its group commit and its compaction.
 *
 * The backend adds records (journal_record.h) and audit entries under its
 * own lock, in the order it changes usage; each addition moves a ticket
 * forward. An answer may be given once the journal is durable up to the
 * ticket of the last change it saw (rl__journal_when_durable):
 *   always    a flusher thread writes everything added, the audit entries
 *             first, fdatasyncs, then answers all the waiters whose ticket
 *             that covers: one sync for every answer ready (group commit);
 *   everysec  the answering thread writes (the kernel has it: a kill -9
 *             loses nothing) and answers; the flusher syncs once a second
 *             (a power loss may cost the last second), outside the lock
 *             the answers write under, so that no answer waits for a sync;
 *   off       the same writes, never synced.
 * Definitions (rl__journal_wait_synced) are synced before their answer
 * whatever the mode.
 * Audit entries are written (and synced) before the journal records added
 * with them, so the audit log is never behind an acknowledged journal.
 *
 * Compaction: when the file has grown past compact_bytes, to twice what a
 * snapshot would write (the owner's live records at the average size of
 * the lease records added: at least half of the file is then garbage) and
 * half again its last snapshot, the flusher forks under the owner's lock;
 * the child writes a snapshot of the live state to <path>.tmp (synced,
 * streamed as it is encoded) while the parent goes
 * on answering into the old file and keeps a copy of what comes after the
 * fork; then that copy is appended to the new file and synced, outside the
 * lock answers write under, and what came meanwhile is appended under it
 * before the new file is renamed over the old one (record_file.h; synced
 * there with always, by the next second's sync with everysec). Answers
 * pause only for the fork and that last short step. A crash at any point
 * leaves the old file or the new one whole.
 *
 * If a write fails, the records stay buffered (retried by the next flush),
 * the waiters covered are answered with durable = false, and
 * rl__journal_failing says so until a flush succeeds.
 *
 * Threading: rl__journal_add*, rl__journal_ticket under
 * the owner's lock; rl__journal_when_durable and rl__journal_wait_durable
 * from any thread, never under the owner's lock (a flush may need it for a
 * snapshot). open, start and close from one thread.
 */
#ifndef RL_MEMORY_JOURNAL_H
#define RL_MEMORY_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/memory/journal_record.h"
#include "core/audit_log.h"
#include "core/record_file.h"
#include "ratelimiter/backend.h"
#include "ratelimiter/memory.h"

typedef struct rl__journal rl__journal;

/* One audit entry waiting to be written, with its sequence number. */
typedef struct rl__journal_audit {
    uint64_t seq;
    rl_audit_entry entry;
} rl__journal_audit;

typedef struct rl__journal_owner {
    /* Writes entries[0..count) to the audit log and flushes it (synced if
     * sync); false with a sentence in err on failure (they must stay
     * buffered for the retry). opens_group: the journal holds (has
     * written) the records of every entry before these, so the first of
     * them opens a group (audit_record.h: what start-up may drop after a
     * crash). NULL: no audit log. */
    bool (*write_audit)(void *context, const rl__journal_audit *entries, size_t count, bool opens_group, bool sync,
                        char *err, size_t err_size);
    /* The owner's lock, held around the fork of a compaction. */
    void (*lock)(void *context);
    void (*unlock)(void *context);
    /* In the compaction's child process (a copy of the state, the owner's
     * lock held by the fork): adds every live record through
     * rl__journal_snapshot_add. Must take no lock and start no thread.
     * False if it could not (no memory). */
    bool (*snapshot)(void *context, rl__journal *journal);
    /* Under the lock the writes are made under, after a write without
     * sync: descriptors (dups, closed by the journal) of the audit log's
     * files to fdatasync outside it, at most max (audit_log.h,
     * rl__audit_log_sync_handles). NULL: nothing. */
    size_t (*sync_handles)(void *context, int *fds, size_t max);
    /* The number of records a snapshot would write now (leases, limits,
     * templates), called with the owner's lock held: what a compaction
     * would keep, against what it would drop. */
    uint64_t (*live_records)(void *context);
    /* Called on the flusher thread about once a second, outside every lock
     * of the journal (the audit log's retention: what it does as the audit
     * log's writer it does under rl__journal_writer_lock). NULL: nothing. */
    void (*tick)(void *context);
    void *context;
} rl__journal_owner;

#define RL__JOURNAL_DEFAULT_COMPACT_BYTES (64u * 1024u * 1024u)

/* Opens (or makes) the journal at path, holding "<path>.lock" until close
 * (path_lock.h: another process on it fails, naming its PID), and replays
 * every whole record through replay (record_file.h: a torn tail is cut,
 * damage fails naming file and offset). No thread yet, and nothing may be added before
 * rl__journal_start. path NULL: no file, only the audit entries are
 * written (an audit log without a journal). RL_OK, RL_IO_ERROR,
 * RL_NO_MEMORY. */
rl_status rl__journal_open(const char *path, rl_journal_fsync fsync, uint64_t compact_bytes, rl__record_fn replay,
                           void *replay_context, rl__journal **out, char *err, size_t err_size);

/* Starts the flusher thread, writing through owner from now on. */
rl_status rl__journal_start(rl__journal *journal, const rl__journal_owner *owner, char *err, size_t err_size);

/* Buffers a record / an audit entry. False on allocation failure (nothing
 * added: the caller refuses the change). */
bool rl__journal_add(rl__journal *journal, const rl__jrec *record);
bool rl__journal_add_audit(rl__journal *journal, uint64_t seq, const rl_audit_entry *entry);

/* The ticket of everything added so far. */
uint64_t rl__journal_ticket(const rl__journal *journal);

/* done(context, durable) once everything up to ticket is as durable as the
 * fsync mode promises (durable false: a write failed). Called on this
 * thread before returning when that is already so, or when the mode lets
 * this thread write it (everysec, off); else on the flusher thread. */
void rl__journal_when_durable(rl__journal *journal, uint64_t ticket, void (*done)(void *context, bool durable),
                              void *context);

/* The same, waiting on this thread: true, or false if a write failed. */
bool rl__journal_wait_durable(rl__journal *journal, uint64_t ticket);

/* Waits until everything up to ticket is written and fdatasynced, in every
 * mode (with everysec and off, this thread syncs, outside the journal's
 * locks): for changes of definitions, rare and expected to survive a
 * power loss. True, or false if a write or the sync failed. */
bool rl__journal_wait_synced(rl__journal *journal, uint64_t ticket);

/* The snapshot's side (inside owner.snapshot, in the child): adds one
 * record to the new file's content; false on allocation failure. */
bool rl__journal_snapshot_add(rl__journal *journal, const rl__jrec *record);

/* A compaction asked for now, whatever the file's size: the flusher starts
 * one at its next turn (after the one under way, if any), and this returns
 * once its snapshot is taken, with a number for rl__journal_compaction_wait;
 * answers and additions go on meanwhile (they reach the new file as
 * records since the cut). 0 without a file or once closing. For tests that
 * compact at a chosen step. Any thread but the flusher. */
uint64_t rl__journal_compaction_start(rl__journal *journal);

/* Waits until compaction number (rl__journal_compaction_start) is over:
 * true if its file took the journal's place. Any thread but the flusher. */
bool rl__journal_compaction_wait(rl__journal *journal, uint64_t number);

/* The lock every write of the file and of the audit log is made under
 * (io_lock): whoever holds it is the audit log's one writer. For the
 * owner's tick; held briefly, answers wait on it. */
void rl__journal_writer_lock(rl__journal *journal);
void rl__journal_writer_unlock(rl__journal *journal);

/* True while the last flush failed; err gets why. */
bool rl__journal_failing(rl__journal *journal, char *err, size_t err_size);

/* Writes and syncs everything, answers every waiter, stops the thread,
 * closes the file. NULL is allowed. */
void rl__journal_close(rl__journal *journal);

/* Adds the journal's counters (syncs and their time, bytes written, failed
 * flushes) into out and sets out->journal. Any thread, no lock. */
void rl__journal_stats(const rl__journal *journal, rl_backend_stats *out);

#endif
