/* journal.c — the memory backend's journal writer (see journal.h).
 *
 * Three locks, always taken in this order when nested:
 *   io_lock       one writer of the file at a time (a flush, a compaction);
 *   (the owner's lock, taken by owner.snapshot inside a compaction)
 *   pending_lock  the buffers records are added to; held for a copy or a
 *                 swap, never across I/O;
 *   state_lock    tickets, waiters, the flusher's wake-ups.
 */
#include "backend/memory/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/atomic_file.h"
#include "core/path_lock.h"

#define UNSHARED_MIN_BYTES (64u * 1024u) /* a buffer's first pages (grow_unshared) */
#define TICK_MS 100u
#define COMPACTION_POLL_MS 2u /* while a caller waits for a compaction (rl__journal_compaction_wait) */
#define TICKS_PER_SECOND 10u

/* Encoded records, each as a 4-byte length and its bytes. */
typedef struct record_buf {
    unsigned char *bytes;
    size_t len, capacity;
} record_buf;

typedef struct audit_buf {
    rl__journal_audit *entries;
    size_t count, capacity;
} audit_buf;

typedef struct waiter {
    uint64_t ticket;
    void (*done)(void *context, bool durable);
    void *context;
} waiter;

struct rl__journal {
    rl__path_lock *lock; /* <path>.lock: one process on this journal */
    rl__record_file *file;
    char *tmp_path;          /* where a compaction's child writes the snapshot */
    char *dir_path;          /* the journal's directory, synced after a rename (everysec) */
    rl_journal_fsync fsync;
    uint64_t compact_bytes;
    uint64_t snapshot_bytes; /* the file's size after the last compaction (or at open) */
    rl__journal_owner owner;

    pthread_mutex_t io_lock;
    record_buf writing; /* swapped out of pending by a flush; io_lock */
    audit_buf writing_audit;
    bool behind; /* io_lock: the last flush left records of written audit entries unwritten */
    rl__record_sink *snapshot_out; /* where owner.snapshot writes, in the child */
    unsigned char *snapshot_record; /* one record as it is encoded, in the child */
    pid_t child;         /* a compaction under way (the flusher's), or 0 */
    record_buf caught_up; /* the flusher's: records since the fork, on their way to the new file */
    bool dir_unsynced;    /* io_lock: a compaction renamed the file; its directory awaits the next sync */
    uint64_t compaction_started_ms, snapshot_taken_ms;

    pthread_mutex_t pending_lock;
    record_buf pending;
    audit_buf pending_audit;
    uint64_t added; /* the ticket: grows with every addition */
    bool capturing;     /* a compaction's child runs: additions go to since_cut too */
    uint64_t lease_record_bytes, lease_records; /* the LEASE records added, framed: their average size */
    record_buf since_cut;

    pthread_mutex_t state_lock;
    pthread_cond_t wake;    /* the flusher: waiters, or stop */
    pthread_cond_t synced;  /* rl__journal_wait_durable */
    uint64_t durable;       /* every addition up to this ticket is as durable as promised */
    uint64_t synced_upto;   /* everysec, off: every addition up to this ticket is fdatasynced */
    bool sync_failing;      /* the last sync made outside io_lock failed: */
    char sync_failure[256];
    uint64_t failed_upto;   /* additions up to this ticket were answered as failed */
    bool failing;
    char failure[256];
    waiter *waiters;
    size_t waiter_count, waiter_capacity;
    bool stopping, running;
    pthread_t thread;
    /* Compactions asked for (rl__journal_compaction_start): asked is taken
     * by the flusher when no child runs; started and finished count every
     * compaction, the last one's outcome in finished_ok. */
    bool compaction_asked;
    uint64_t compactions_started, compactions_finished;
    bool finished_ok;
    unsigned compaction_waiters; /* the flusher looks for the child's end every few ms, not every tick */
    /* Group commit, for the log line at close: syncs made for waiters, and
     * the answers they released. */
    uint64_t syncs, answers;
    /* For monitoring (rl__journal_stats): written under io_lock with
     * relaxed stores, read from any thread with relaxed loads. */
    rl_backend_stats stats;
};

/* ---- buffers ---- */

static bool grow(void **data, size_t *capacity, size_t needed, size_t item_size) {
    if (needed <= *capacity) return true;
    size_t capacity_new = *capacity ? *capacity : 16;
    while (capacity_new < needed) capacity_new *= 2;
    void *bigger = realloc(*data, capacity_new * item_size);
    if (bigger == NULL) return false;
    *data = bigger;
    *capacity = capacity_new;
    return true;
}

/* The buffers of records and audit entries live in pages of their own
 * that a compaction's child does not get (MADV_DONTFORK): it never reads
 * them, and every page of the parent's that the child shares costs a fault
 * at the parent's first write after the fork (15-20 µs a page on the VMs
 * measured, docs/benchmarks.md), which the answers writing these buffers,
 * and since_cut's tens of MB, paid at every compaction (half the p99 of
 * bench/http/tail.sh). As grow, in items of item_size. */
static bool grow_unshared(void **data, size_t *capacity, size_t needed, size_t item_size) {
    if (needed <= *capacity) return true;
    size_t capacity_new = *capacity != 0 ? *capacity : (UNSHARED_MIN_BYTES + item_size - 1) / item_size;
    while (capacity_new < needed) capacity_new *= 2;
    void *bigger = *data == NULL ? mmap(NULL, capacity_new * item_size, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                 : mremap(*data, *capacity * item_size, capacity_new * item_size,
                                          MREMAP_MAYMOVE); /* keeps the advice */
    if (bigger == MAP_FAILED) return false;
    if (*data == NULL) (void)madvise(bigger, capacity_new * item_size, MADV_DONTFORK); /* a hint */
    *data = bigger;
    *capacity = capacity_new;
    return true;
}

static void free_unshared(void *data, size_t capacity, size_t item_size) {
    if (data != NULL) munmap(data, capacity * item_size);
}

/* Encodes record at the end of buf. */
static bool buf_add(record_buf *buf, const rl__jrec *record) {
    if (!grow_unshared((void **)&buf->bytes, &buf->capacity, buf->len + 4 + RL__JREC_MAX_BYTES, 1)) return false;
    size_t len = rl__jrec_encode(record, buf->bytes + buf->len + 4);
    uint32_t len32 = (uint32_t)len;
    memcpy(buf->bytes + buf->len, &len32, 4);
    buf->len += 4 + len;
    return true;
}

/* Calls each(record, len) for every record of buf, stopping at a false. */
static bool buf_each(const record_buf *buf, bool (*each)(void *context, const void *record, size_t len),
                     void *context) {
    for (size_t at = 0; at < buf->len;) {
        uint32_t len;
        memcpy(&len, buf->bytes + at, 4);
        if (!each(context, buf->bytes + at + 4, len)) return false;
        at += 4 + len;
    }
    return true;
}

static void swap_records(record_buf *a, record_buf *b) {
    record_buf t = *a;
    *a = *b;
    *b = t;
}
static void swap_audit(audit_buf *a, audit_buf *b) {
    audit_buf t = *a;
    *a = *b;
    *b = t;
}

/* ---- adding (under the owner's lock) ---- */

bool rl__journal_add(rl__journal *journal, const rl__jrec *record) {
    pthread_mutex_lock(&journal->pending_lock);
    size_t len_before = journal->pending.len;
    bool ok = buf_add(&journal->pending, record);
    if (ok && record->type == RL__JREC_LEASE) {
        journal->lease_record_bytes += journal->pending.len - len_before;
        journal->lease_records++;
    }
    /* The new file needs what came after its snapshot; without memory for
     * it, the compaction is abandoned (the old file has everything). */
    if (ok && journal->capturing && !buf_add(&journal->since_cut, record)) journal->capturing = false;
    if (ok) journal->added++;
    pthread_mutex_unlock(&journal->pending_lock);
    return ok;
}

bool rl__journal_add_audit(rl__journal *journal, uint64_t seq, const rl_audit_entry *entry) {
    pthread_mutex_lock(&journal->pending_lock);
    audit_buf *buf = &journal->pending_audit;
    bool ok = grow_unshared((void **)&buf->entries, &buf->capacity, buf->count + 1, sizeof *buf->entries);
    if (ok) {
        buf->entries[buf->count].seq = seq;
        buf->entries[buf->count].entry = *entry;
        buf->count++;
        journal->added++;
    }
    pthread_mutex_unlock(&journal->pending_lock);
    return ok;
}

uint64_t rl__journal_ticket(const rl__journal *journal) {
    /* Written only under pending_lock, which the owner's lock orders:
     * reading it under the owner's lock sees every addition made there. */
    pthread_mutex_lock((pthread_mutex_t *)&journal->pending_lock);
    uint64_t ticket = journal->added;
    pthread_mutex_unlock((pthread_mutex_t *)&journal->pending_lock);
    return ticket;
}

/* ---- writing (under io_lock) ---- */

static bool append_one(void *context, const void *record, size_t len) {
    return rl__record_file_append(context, record, len) == RL_OK;
}

/* Writes the audit entries in writing_audit (and forgets them: a failed
 * write keeps them in the audit log's own buffer). */
static bool write_audit(rl__journal *journal, bool sync, char *err, size_t err_size) {
    audit_buf *audit = &journal->writing_audit;
    bool ok = true;
    if (audit->count > 0 && journal->owner.write_audit != NULL)
        ok = journal->owner.write_audit(journal->owner.context, audit->entries, audit->count, !journal->behind, sync,
                                        err, err_size);
    audit->count = 0;
    return ok;
}

static void set_outcome(rl__journal *journal, uint64_t ticket, bool ok, const char *err) {
    pthread_mutex_lock(&journal->state_lock);
    if (ok) {
        if (ticket > journal->durable) journal->durable = ticket;
        journal->failing = false;
    } else {
        if (ticket > journal->failed_upto) journal->failed_upto = ticket;
        journal->failing = true;
        snprintf(journal->failure, sizeof journal->failure, "%s", err);
    }
    pthread_cond_broadcast(&journal->synced);
    pthread_mutex_unlock(&journal->state_lock);
}

static uint64_t monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Written by a flush (io_lock) and by a sync outside it, read anywhere. */
static void count_stat(uint64_t *counter, uint64_t by) { __atomic_fetch_add(counter, by, __ATOMIC_RELAXED); }

static void count_flush(rl__journal *journal, size_t bytes, bool synced, uint64_t sync_us) {
    rl_backend_stats *stats = &journal->stats;
    count_stat(&stats->journal_bytes, bytes);
    if (!synced) return;
    count_stat(&stats->journal_syncs, 1);
    count_stat(&stats->journal_sync_us[rl_backend_stats_bucket(rl_backend_stats_sync_bounds_us,
                                                                RL_BACKEND_STATS_SYNC_BUCKETS, sync_us)],
               1);
    count_stat(&stats->journal_sync_us_sum, sync_us);
}

/* Writes everything added so far (and syncs it if sync). */
static void flush_locked(rl__journal *journal, bool sync) {
    pthread_mutex_lock(&journal->pending_lock);
    swap_records(&journal->pending, &journal->writing);
    swap_audit(&journal->pending_audit, &journal->writing_audit);
    uint64_t ticket = journal->added;
    pthread_mutex_unlock(&journal->pending_lock);

    char err[256] = "";
    bool ok = write_audit(journal, sync, err, sizeof err);
    /* Buffered in the file even if the audit failed: order is kept, and
     * the next flush writes them. */
    if (journal->file != NULL && !buf_each(&journal->writing, append_one, journal->file)) {
        ok = false;
        snprintf(err, sizeof err, "the journal is out of memory");
    }
    journal->writing.len = 0;
    if (ok && journal->file != NULL) {
        size_t bytes = rl__record_file_pending_bytes(journal->file);
        uint64_t started_us = sync ? monotonic_us() : 0;
        ok = rl__record_file_flush(journal->file, sync, err, sizeof err) == RL_OK;
        if (ok) count_flush(journal, bytes, sync, sync ? monotonic_us() - started_us : 0);
    }
    if (!ok) count_stat(&journal->stats.journal_write_errors, 1);
    journal->behind = !ok;
    set_outcome(journal, ticket, ok, err);
}

/* ---- syncing outside io_lock (everysec; admin writes in every mode) ----
 *
 * An fdatasync takes milliseconds, and answers wait on io_lock to write:
 * the sync must not run under it. Under io_lock, after a flush, the
 * journal takes descriptors (dups) of the files as written so far and the
 * ticket they cover; the fdatasync runs after the lock is released, while
 * answers go on writing. A dup stays valid whatever io_lock's holders do
 * meanwhile (a compaction renaming a new file over the journal, the audit
 * log starting a new part): it syncs what was written through it. */

#define SYNC_HANDLES_MAX (RL__AUDIT_LOG_SYNC_HANDLES_MAX + 1)

typedef struct sync_batch {
    int fds[SYNC_HANDLES_MAX];
    size_t count;
    int dir_fd; /* the journal's directory after a compaction's rename, or -1 */
    uint64_t ticket; /* the additions the sync makes durable */
    char err[256];   /* a descriptor that could not be taken, or "" */
} sync_batch;

/* Under io_lock, after a flush: what that flush wrote. */
static void take_sync_handles(rl__journal *journal, sync_batch *batch) {
    batch->count = 0;
    batch->dir_fd = -1;
    batch->err[0] = '\0';
    if (journal->dir_unsynced) {
        batch->dir_fd = open(journal->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (batch->dir_fd >= 0) journal->dir_unsynced = false;
    }
    if (journal->owner.sync_handles != NULL)
        batch->count = journal->owner.sync_handles(journal->owner.context, batch->fds, SYNC_HANDLES_MAX - 1);
    if (journal->file != NULL) {
        int fd = rl__record_file_sync_handle(journal->file);
        if (fd >= 0) {
            batch->fds[batch->count++] = fd;
        } else {
            snprintf(batch->err, sizeof batch->err, "the journal cannot be synced: %s", strerror(errno));
        }
    }
    pthread_mutex_lock(&journal->state_lock);
    batch->ticket = journal->durable;
    pthread_mutex_unlock(&journal->state_lock);
}

/* Outside every lock: fdatasyncs and closes the batch's descriptors (the
 * audit log's first, as every write orders them), then records the
 * outcome. True if everything synced. */
static bool sync_outside(rl__journal *journal, sync_batch *batch) {
    uint64_t started_us = monotonic_us();
    for (size_t i = 0; i < batch->count; i++) {
        if (fdatasync(batch->fds[i]) != 0 && batch->err[0] == '\0')
            snprintf(batch->err, sizeof batch->err, "%s cannot be synced: fdatasync: %s",
                     i + 1 == batch->count && journal->file != NULL ? "the journal" : "the audit log", strerror(errno));
        close(batch->fds[i]);
    }
    /* The file's new name last: it names a file whose records are synced. */
    if (batch->dir_fd >= 0) {
        if (fsync(batch->dir_fd) != 0 && errno != EINVAL && errno != ENOTSUP && batch->err[0] == '\0')
            snprintf(batch->err, sizeof batch->err, "the journal's directory cannot be synced: %s", strerror(errno));
        close(batch->dir_fd);
    }
    bool ok = batch->err[0] == '\0';
    if (ok) {
        uint64_t sync_us = monotonic_us() - started_us;
        count_stat(&journal->stats.journal_syncs, 1);
        count_stat(&journal->stats.journal_sync_us[rl_backend_stats_bucket(rl_backend_stats_sync_bounds_us,
                                                                            RL_BACKEND_STATS_SYNC_BUCKETS, sync_us)],
                   1);
        count_stat(&journal->stats.journal_sync_us_sum, sync_us);
    } else {
        count_stat(&journal->stats.journal_write_errors, 1);
    }
    pthread_mutex_lock(&journal->state_lock);
    bool was_failing = journal->sync_failing;
    if (ok && batch->ticket > journal->synced_upto) journal->synced_upto = batch->ticket;
    if (ok) journal->sync_failing = false;
    if (!ok) {
        journal->sync_failing = true;
        snprintf(journal->sync_failure, sizeof journal->sync_failure, "%s", batch->err);
    }
    pthread_cond_broadcast(&journal->synced);
    pthread_mutex_unlock(&journal->state_lock);
    if (!ok && !was_failing)
        fprintf(stderr, "ratelimiterd: %s; what was written since the last sync may not survive a power loss\n",
                batch->err);
    if (ok && was_failing) fprintf(stderr, "ratelimiterd: the journal syncs again\n");
    return ok;
}

void rl__journal_stats(const rl__journal *journal, rl_backend_stats *out) {
    const rl_backend_stats *stats = &journal->stats;
    out->journal = 1;
    out->journal_syncs += __atomic_load_n(&stats->journal_syncs, __ATOMIC_RELAXED);
    for (unsigned i = 0; i <= RL_BACKEND_STATS_SYNC_BUCKETS; i++)
        out->journal_sync_us[i] += __atomic_load_n(&stats->journal_sync_us[i], __ATOMIC_RELAXED);
    out->journal_sync_us_sum += __atomic_load_n(&stats->journal_sync_us_sum, __ATOMIC_RELAXED);
    out->journal_bytes += __atomic_load_n(&stats->journal_bytes, __ATOMIC_RELAXED);
    out->journal_write_errors += __atomic_load_n(&stats->journal_write_errors, __ATOMIC_RELAXED);
}

/* ---- compaction (the flusher's; starting it under io_lock) ----
 *
 * A child process writes the snapshot: fork() under the owner's lock gives
 * it a copy of the state at one instant, taken in the time fork copies the
 * page tables, and the owner's lock is released at once. The child encodes
 * every live record and writes them, synced, to <journal>.tmp. Meanwhile
 * the parent goes on answering and writing the old file, and keeps a copy
 * of every record added since the fork. When the child is done, the parent
 * appends those records to the new file and syncs it (catch_up, outside
 * io_lock), then, under io_lock, appends what came meanwhile and renames
 * it over the journal (record_file.h, rl__record_file_adopt). Until that rename the old
 * file holds everything; after it, the new one. The child only encodes and
 * writes: it takes no lock and starts no thread. */

bool rl__journal_snapshot_add(rl__journal *journal, const rl__jrec *record) {
    size_t len = rl__jrec_encode(record, journal->snapshot_record);
    return rl__record_sink_add(journal->snapshot_out, journal->snapshot_record, len);
}

/* In the child: the snapshot as a new record file at tmp_path, synced.
 * Written as it is encoded, never whole in memory: the child's memory is
 * the parent's until written, and every page it takes costs a fault. */
static bool write_snapshot(rl__journal *journal) {
    journal->snapshot_record = malloc(RL__JREC_MAX_BYTES);
    journal->snapshot_out = journal->snapshot_record != NULL ? rl__record_sink_open(journal->tmp_path, true) : NULL;
    if (journal->snapshot_out == NULL) return false;
    bool ok = journal->owner.snapshot(journal->owner.context, journal);
    return rl__record_sink_close(journal->snapshot_out) && ok;
}

static bool sink_one(void *context, const void *record, size_t len) {
    return rl__record_sink_add(context, record, len);
}

/* In the parent: what came since the fork, appended to tmp_path, synced. */
static bool append_to_snapshot(const rl__journal *journal, const record_buf *records) {
    rl__record_sink *sink = rl__record_sink_open(journal->tmp_path, false);
    if (sink == NULL) return false;
    bool ok = buf_each(records, sink_one, sink);
    return rl__record_sink_close(sink) && ok;
}

/* What a snapshot would write now, estimated: the owner's live records at
 * the average size of the lease records added since open (leases are
 * nearly all of a snapshot). Before any, the last snapshot's size. */
static uint64_t live_bytes_estimate(rl__journal *journal) {
    pthread_mutex_lock(&journal->pending_lock);
    uint64_t bytes = journal->lease_record_bytes, records = journal->lease_records;
    pthread_mutex_unlock(&journal->pending_lock);
    if (records == 0 || journal->owner.live_records == NULL) return journal->snapshot_bytes;
    journal->owner.lock(journal->owner.context);
    uint64_t live = journal->owner.live_records(journal->owner.context);
    journal->owner.unlock(journal->owner.context);
    return live * (bytes / records);
}

/* A compaction costs a copy of everything live, so it waits until at least
 * half of the file is garbage. Leases are remembered for lease_memory_ms
 * after their state is gone: under a steady stream of new leases the file
 * is nearly all live until the first are forgotten, and rewriting it each
 * time it doubled (as Redis rewrites its AOF) would copy the same leases
 * again and again for nothing. Half again the last snapshot at least, so
 * that an estimate too low cannot compact over and over. */
static bool wants_compaction(rl__journal *journal) {
    if (journal->file == NULL || journal->child != 0) return false;
    uint64_t size = rl__record_file_size(journal->file);
    if (size <= journal->compact_bytes || size < journal->snapshot_bytes + journal->snapshot_bytes / 2 ||
        rl__record_file_pending_bytes(journal->file) != 0)
        return false;
    return size > 2 * live_bytes_estimate(journal);
}

static uint64_t monotonic_ms(void);

/* Counts a compaction started, or one over (ok: its file took the
 * journal's place), for rl__journal_compaction_wait. */
static void count_compaction(rl__journal *journal, bool over, bool ok) {
    pthread_mutex_lock(&journal->state_lock);
    if (over) {
        journal->compactions_finished++;
        journal->finished_ok = ok;
    } else {
        journal->compactions_started++;
    }
    pthread_cond_broadcast(&journal->synced);
    pthread_mutex_unlock(&journal->state_lock);
}

static void start_compaction(rl__journal *journal) {
    journal->owner.lock(journal->owner.context);
    pthread_mutex_lock(&journal->pending_lock);
    journal->since_cut.len = 0;
    journal->capturing = true;
    pthread_mutex_unlock(&journal->pending_lock);
    uint64_t started_ms = monotonic_ms();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* A child outliving a daemon killed -9 would write the .tmp the
         * next daemon's compaction writes: it dies with its parent. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
        /* Background work, but work that ends: on a core the answers keep
         * busy (a daemon pinned to one), nice 10 gives the snapshot about a
         * tenth of it. At nice 19 (a sixtieth) it never ended under a
         * sustained load: what came since the fork, kept in memory for the
         * new file, grew without bound (measured with the journal growing
         * 16 MB a second: a snapshot of 50-70 MB took 2-3 s at nice 10, one
         * took 26 s at 19). */
        (void)setpriority(PRIO_PROCESS, 0, 10);
        _exit(write_snapshot(journal) ? 0 : 1);
    }
    journal->owner.unlock(journal->owner.context);
    journal->snapshot_taken_ms = monotonic_ms() - started_ms;
    journal->compaction_started_ms = started_ms;
    if (pid < 0) {
        fprintf(stderr, "ratelimiterd: journal compaction cannot start (fork: %s); the journal goes on growing\n",
                strerror(errno));
        pthread_mutex_lock(&journal->pending_lock);
        journal->capturing = false;
        pthread_mutex_unlock(&journal->pending_lock);
        journal->snapshot_bytes = rl__record_file_size(journal->file); /* not again at once */
        count_compaction(journal, false, false);
        count_compaction(journal, true, false);
        return;
    }
    journal->child = pid;
    count_compaction(journal, false, false);
}

/* The flusher, outside io_lock, once the child is done: what was added
 * since the fork so far goes to the new file, synced, while answers go on
 * writing the old one. What comes meanwhile is left for the short step
 * under io_lock, so that the lock is not held for a large write and its
 * sync (a second of records or more, as long as the snapshot took). */
static bool catch_up(rl__journal *journal) {
    pthread_mutex_lock(&journal->pending_lock);
    bool captured = journal->capturing;
    if (captured) swap_records(&journal->since_cut, &journal->caught_up);
    pthread_mutex_unlock(&journal->pending_lock);
    if (!captured) return false;
    bool ok = append_to_snapshot(journal, &journal->caught_up);
    journal->caught_up.len = 0;
    return ok;
}

/* The child is done: the new file gets what came since (most of it
 * outside io_lock), then takes the journal's place. */
static void finish_compaction(rl__journal *journal, bool child_ok) {
    journal->child = 0;
    char err[256] = "the snapshot could not be written";
    bool caught_up = child_ok && catch_up(journal);
    bool sync = journal->fsync == RL_JOURNAL_FSYNC_ALWAYS; /* else the next second's sync */
    pthread_mutex_lock(&journal->io_lock);
    /* Everything added so far goes to the new file (what came since the
     * fork) or is already in the old one: take it all out of pending. The
     * audit entries of those changes go first, as always. */
    flush_locked(journal, false);
    pthread_mutex_lock(&journal->pending_lock);
    bool captured = journal->capturing;
    journal->capturing = false;
    swap_records(&journal->since_cut, &journal->writing);
    journal->since_cut.len = 0;
    journal->pending.len = 0;
    swap_audit(&journal->pending_audit, &journal->writing_audit);
    uint64_t ticket = journal->added;
    pthread_mutex_unlock(&journal->pending_lock);
    bool ok = write_audit(journal, sync, err, sizeof err);
    if (!buf_each(&journal->writing, append_one, journal->file)) ok = false;
    ok = ok && caught_up && captured;
    int replaced_fd = -1; /* the old file's: closed outside io_lock, its blocks freed there */
    if (ok) ok = rl__record_file_adopt(journal->file, journal->tmp_path, sync, &replaced_fd, err, sizeof err) == RL_OK;
    journal->writing.len = 0;
    if (ok) {
        if (!sync) journal->dir_unsynced = true;
        uint64_t before = journal->snapshot_bytes;
        journal->snapshot_bytes = rl__record_file_size(journal->file);
        fprintf(stderr,
                "ratelimiterd: journal compacted to %llu bytes (the last snapshot was %llu; answers paused "
                "%llu ms for the fork, the snapshot took %llu ms)\n",
                (unsigned long long)journal->snapshot_bytes, (unsigned long long)before,
                (unsigned long long)journal->snapshot_taken_ms,
                (unsigned long long)(monotonic_ms() - journal->compaction_started_ms));
        journal->behind = false;
        set_outcome(journal, ticket, true, "");
        pthread_mutex_unlock(&journal->io_lock);
        if (replaced_fd >= 0) close(replaced_fd);
        count_compaction(journal, true, true);
        return;
    }
    /* The old file stays: the records taken out of pending go into it. */
    unlink(journal->tmp_path);
    fprintf(stderr, "ratelimiterd: journal compaction failed (%s); the journal goes on growing\n", err);
    bool flushed = rl__record_file_flush(journal->file, journal->fsync != RL_JOURNAL_FSYNC_OFF, err, sizeof err) == RL_OK;
    journal->behind = !flushed;
    set_outcome(journal, ticket, flushed, err);
    journal->snapshot_bytes = rl__record_file_size(journal->file); /* not again at once */
    pthread_mutex_unlock(&journal->io_lock);
    if (replaced_fd >= 0) close(replaced_fd);
    count_compaction(journal, true, false);
}

/* Whether the child is done; if so, finishes. The flusher's, outside
 * io_lock (finish_compaction takes it). */
static void poll_compaction(rl__journal *journal) {
    int status;
    pid_t done = waitpid(journal->child, &status, WNOHANG);
    if (done == 0 || (done < 0 && errno == EINTR)) return;
    finish_compaction(journal, done == journal->child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- answering ---- */

/* Answers the waiters whose ticket is settled (durable, or failed). */
static void answer_settled(rl__journal *journal) {
    pthread_mutex_lock(&journal->state_lock);
    size_t kept = 0, settled_count = 0;
    waiter settled[64];
    for (size_t i = 0; i < journal->waiter_count; i++) {
        waiter w = journal->waiters[i];
        bool done = w.ticket <= journal->durable || w.ticket <= journal->failed_upto;
        if (done && settled_count < 64) {
            settled[settled_count++] = w;
        } else {
            journal->waiters[kept++] = w;
        }
    }
    journal->waiter_count = kept;
    uint64_t durable = journal->durable;
    pthread_mutex_unlock(&journal->state_lock);
    if (settled_count > 0) {
        pthread_mutex_lock(&journal->state_lock);
        journal->answers += settled_count;
        pthread_mutex_unlock(&journal->state_lock);
    }
    for (size_t i = 0; i < settled_count; i++) settled[i].done(settled[i].context, settled[i].ticket <= durable);
    if (settled_count == 64) answer_settled(journal); /* more of them */
}

static bool settled(rl__journal *journal, uint64_t ticket, bool *durable) {
    pthread_mutex_lock(&journal->state_lock);
    bool is_settled = ticket <= journal->durable || ticket <= journal->failed_upto;
    *durable = ticket <= journal->durable;
    pthread_mutex_unlock(&journal->state_lock);
    return is_settled;
}

void rl__journal_when_durable(rl__journal *journal, uint64_t ticket, void (*done)(void *context, bool durable),
                              void *context) {
    bool durable;
    if (settled(journal, ticket, &durable) && durable) {
        done(context, true);
        return;
    }
    if (journal->fsync != RL_JOURNAL_FSYNC_ALWAYS) {
        /* Written by this thread (the kernel has it), or by whoever held
         * the lock and took ours along. */
        pthread_mutex_lock(&journal->io_lock);
        if (!settled(journal, ticket, &durable) || !durable) flush_locked(journal, false);
        pthread_mutex_unlock(&journal->io_lock);
        (void)settled(journal, ticket, &durable);
        done(context, durable);
        return;
    }
    pthread_mutex_lock(&journal->state_lock);
    if (ticket <= journal->durable) {
        pthread_mutex_unlock(&journal->state_lock);
        done(context, true);
        return;
    }
    if (!grow((void **)&journal->waiters, &journal->waiter_capacity, journal->waiter_count + 1,
              sizeof *journal->waiters)) {
        pthread_mutex_unlock(&journal->state_lock);
        done(context, false);
        return;
    }
    journal->waiters[journal->waiter_count++] = (waiter){ticket, done, context};
    pthread_cond_signal(&journal->wake);
    pthread_mutex_unlock(&journal->state_lock);
}

typedef struct sync_wait {
    rl__journal *journal;
    bool done, durable;
} sync_wait;

static void sync_done(void *context, bool durable) {
    sync_wait *wait = context;
    pthread_mutex_lock(&wait->journal->state_lock);
    wait->durable = durable;
    wait->done = true;
    pthread_cond_broadcast(&wait->journal->synced);
    pthread_mutex_unlock(&wait->journal->state_lock);
}

bool rl__journal_wait_durable(rl__journal *journal, uint64_t ticket) {
    sync_wait wait = {journal, false, false};
    rl__journal_when_durable(journal, ticket, sync_done, &wait);
    pthread_mutex_lock(&journal->state_lock);
    while (!wait.done) pthread_cond_wait(&journal->synced, &journal->state_lock);
    pthread_mutex_unlock(&journal->state_lock);
    return wait.durable;
}

bool rl__journal_wait_synced(rl__journal *journal, uint64_t ticket) {
    if (!rl__journal_wait_durable(journal, ticket)) return false;
    if (journal->fsync == RL_JOURNAL_FSYNC_ALWAYS) return true; /* durable is synced */
    pthread_mutex_lock(&journal->state_lock);
    bool done = ticket <= journal->synced_upto;
    pthread_mutex_unlock(&journal->state_lock);
    if (done) return true;
    sync_batch batch;
    pthread_mutex_lock(&journal->io_lock);
    take_sync_handles(journal, &batch); /* written up to ticket at least: waited for above */
    pthread_mutex_unlock(&journal->io_lock);
    return sync_outside(journal, &batch);
}

uint64_t rl__journal_compaction_start(rl__journal *journal) {
    pthread_mutex_lock(&journal->state_lock);
    if (journal->file == NULL || journal->stopping || !journal->running) {
        pthread_mutex_unlock(&journal->state_lock);
        return 0;
    }
    /* The next one to start is ours: one under way now started before. */
    uint64_t number = journal->compactions_started + 1;
    journal->compaction_asked = true;
    pthread_cond_signal(&journal->wake);
    while (journal->compactions_started < number && !journal->stopping)
        pthread_cond_wait(&journal->synced, &journal->state_lock);
    pthread_mutex_unlock(&journal->state_lock);
    return number;
}

bool rl__journal_compaction_wait(rl__journal *journal, uint64_t number) {
    if (number == 0) return false;
    pthread_mutex_lock(&journal->state_lock);
    journal->compaction_waiters++;
    pthread_cond_signal(&journal->wake);
    while (journal->compactions_finished < number && !journal->stopping)
        pthread_cond_wait(&journal->synced, &journal->state_lock);
    journal->compaction_waiters--;
    bool ok = journal->compactions_finished == number && journal->finished_ok;
    pthread_mutex_unlock(&journal->state_lock);
    return ok;
}

void rl__journal_writer_lock(rl__journal *journal) { pthread_mutex_lock(&journal->io_lock); }

void rl__journal_writer_unlock(rl__journal *journal) { pthread_mutex_unlock(&journal->io_lock); }

bool rl__journal_failing(rl__journal *journal, char *err, size_t err_size) {
    pthread_mutex_lock(&journal->state_lock);
    bool failing = journal->failing || journal->sync_failing;
    if (failing && err_size > 0) snprintf(err, err_size, "%s", journal->failing ? journal->failure : journal->sync_failure);
    pthread_mutex_unlock(&journal->state_lock);
    return failing;
}

/* ---- the flusher thread ---- */

static bool has_unwritten(rl__journal *journal) {
    uint64_t added = rl__journal_ticket(journal);
    pthread_mutex_lock(&journal->state_lock);
    bool unwritten = added > journal->durable;
    pthread_mutex_unlock(&journal->state_lock);
    return unwritten;
}

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits (state_lock held) for a waiter, a stop or until at_ms. */
static void wait_for_work(rl__journal *journal, uint64_t at_ms) {
    if (journal->waiter_count > 0 || journal->stopping || (journal->compaction_asked && journal->child == 0)) return;
    if (journal->compaction_waiters > 0 && journal->child != 0 && monotonic_ms() + COMPACTION_POLL_MS < at_ms)
        at_ms = monotonic_ms() + COMPACTION_POLL_MS;
    struct timespec deadline = {(time_t)(at_ms / 1000u), (long)(at_ms % 1000u) * 1000000L};
    pthread_cond_timedwait(&journal->wake, &journal->state_lock, &deadline);
}

static void *flusher_main(void *arg) {
    rl__journal *journal = arg;
    uint64_t next_tick_ms = monotonic_ms() + TICK_MS;
    unsigned ticks = 0;
    for (;;) {
        pthread_mutex_lock(&journal->state_lock);
        wait_for_work(journal, next_tick_ms);
        bool stopping = journal->stopping;
        bool asked = journal->compaction_asked && journal->child == 0 && journal->file != NULL;
        if (asked) journal->compaction_asked = false;
        bool awaited = journal->compaction_waiters > 0;
        pthread_mutex_unlock(&journal->state_lock);
        if (stopping) return NULL;

        /* Ticks by the clock, so that a steady stream of waiters does not
         * hold off syncs, compaction or retention. */
        bool ticked = monotonic_ms() >= next_tick_ms;
        if (ticked) next_tick_ms = monotonic_ms() + TICK_MS;
        bool second = ticked && ++ticks % TICKS_PER_SECOND == 0;
        bool sync_now = second && journal->fsync == RL_JOURNAL_FSYNC_EVERYSEC;
        sync_batch batch;
        pthread_mutex_lock(&journal->io_lock);
        if (journal->fsync == RL_JOURNAL_FSYNC_ALWAYS) {
            if (has_unwritten(journal)) {
                flush_locked(journal, true);
                pthread_mutex_lock(&journal->state_lock);
                journal->syncs++;
                pthread_mutex_unlock(&journal->state_lock);
            }
        } else if (second || has_unwritten(journal)) {
            flush_locked(journal, false);
        }
        if (sync_now) take_sync_handles(journal, &batch);
        if (asked || (ticked && wants_compaction(journal))) start_compaction(journal);
        pthread_mutex_unlock(&journal->io_lock);
        if ((ticked || awaited) && journal->child != 0) poll_compaction(journal);
        answer_settled(journal);
        if (sync_now) (void)sync_outside(journal, &batch);
        if (second && journal->owner.tick != NULL) journal->owner.tick(journal->owner.context);
    }
}

/* ---- life ---- */

rl_status rl__journal_open(const char *path, rl_journal_fsync fsync, uint64_t compact_bytes, rl__record_fn replay,
                           void *replay_context, rl__journal **out, char *err, size_t err_size) {
    *out = NULL;
    rl__journal *journal = calloc(1, sizeof *journal);
    if (journal == NULL) return RL_NO_MEMORY;
    rl_status status = RL_OK;
    if (path != NULL) {
        char *lock_path = rl__path_lock_beside(path);
        status = lock_path != NULL ? rl__path_lock_acquire(lock_path, path, &journal->lock, err, err_size)
                                   : RL_NO_MEMORY;
        free(lock_path);
    }
    if (status == RL_OK && path != NULL)
        status = rl__record_file_open(path, replay, replay_context, &journal->file, err, err_size);
    if (status != RL_OK) {
        rl__path_lock_release(journal->lock);
        free(journal);
        return status;
    }
    journal->fsync = fsync;
    if (path != NULL && asprintf(&journal->tmp_path, "%s.tmp", path) < 0) journal->tmp_path = NULL;
    if (path != NULL) journal->dir_path = rl__directory_of(path);
    journal->compact_bytes = compact_bytes != 0 ? compact_bytes : RL__JOURNAL_DEFAULT_COMPACT_BYTES;
    journal->snapshot_bytes = path != NULL ? rl__record_file_size(journal->file) : 0;
    pthread_mutex_init(&journal->io_lock, NULL);
    pthread_mutex_init(&journal->pending_lock, NULL);
    pthread_mutex_init(&journal->state_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&journal->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&journal->synced, NULL);
    *out = journal;
    return RL_OK;
}

rl_status rl__journal_start(rl__journal *journal, const rl__journal_owner *owner, char *err, size_t err_size) {
    journal->owner = *owner;
    if (pthread_create(&journal->thread, NULL, flusher_main, journal) != 0) {
        snprintf(err, err_size, "cannot start the journal's thread");
        return RL_NO_MEMORY;
    }
    journal->running = true;
    return RL_OK;
}

void rl__journal_close(rl__journal *journal) {
    if (journal == NULL) return;
    if (journal->running) {
        pthread_mutex_lock(&journal->state_lock);
        journal->stopping = true;
        pthread_cond_signal(&journal->wake);
        pthread_cond_broadcast(&journal->synced); /* compactions asked for or waited on: none will come */
        pthread_mutex_unlock(&journal->state_lock);
        pthread_join(journal->thread, NULL);
    }
    pthread_mutex_lock(&journal->io_lock);
    if (journal->child != 0) { /* a compaction half-way: the old file has everything */
        kill(journal->child, SIGKILL);
        waitpid(journal->child, NULL, 0);
        unlink(journal->tmp_path);
        journal->capturing = false;
        journal->child = 0;
        count_compaction(journal, true, false);
    }
    flush_locked(journal, journal->fsync == RL_JOURNAL_FSYNC_ALWAYS);
    sync_batch batch;
    bool sync_now = journal->fsync == RL_JOURNAL_FSYNC_EVERYSEC;
    if (sync_now) take_sync_handles(journal, &batch);
    pthread_mutex_unlock(&journal->io_lock);
    if (sync_now) (void)sync_outside(journal, &batch);
    answer_settled(journal);
    if (journal->syncs > 0)
        fprintf(stderr, "ratelimiterd: journal: %llu fdatasyncs answered %llu waiting calls (%.1f per sync)\n",
                (unsigned long long)journal->syncs, (unsigned long long)journal->answers,
                (double)journal->answers / (double)journal->syncs);
    rl__record_file_close(journal->file);
    rl__path_lock_release(journal->lock);
    pthread_cond_destroy(&journal->wake);
    pthread_cond_destroy(&journal->synced);
    pthread_mutex_destroy(&journal->io_lock);
    pthread_mutex_destroy(&journal->pending_lock);
    pthread_mutex_destroy(&journal->state_lock);
    free_unshared(journal->pending.bytes, journal->pending.capacity, 1);
    free_unshared(journal->writing.bytes, journal->writing.capacity, 1);
    free_unshared(journal->since_cut.bytes, journal->since_cut.capacity, 1);
    free_unshared(journal->caught_up.bytes, journal->caught_up.capacity, 1);
    free_unshared(journal->pending_audit.entries, journal->pending_audit.capacity, sizeof(rl__journal_audit));
    free_unshared(journal->writing_audit.entries, journal->writing_audit.capacity, sizeof(rl__journal_audit));
    free(journal->tmp_path);
    free(journal->dir_path);
    free(journal->waiters);
    free(journal);
}
