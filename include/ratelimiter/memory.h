/* ratelimiter/memory.h — the in-memory backend, the embedded default.
 *
 * One process, no other software. All state sits behind one mutex; each
 * limit keeps a min-heap of its live reservations by expiry, and every lease
 * is remembered (for idempotent retries) until its last reservation has
 * expired and lease_memory_ms has passed, or until max_leases forces the
 * oldest decided-and-finished leases out.
 *
 * With a journal (journal_path) usage survives a restart, kill -9 included:
 * every change to usage (a lease decided, a Complete, a budget refund, a
 * definition applied) is in the journal before its answer is given, and
 * opening the backend replays it, applying what fell due meanwhile. The
 * journal is compacted (a snapshot of the live state replaces it) without
 * stopping answers: a child process (fork) writes the snapshot, as Redis
 * rewrites its append-only file, and dies with the journal's thread; an
 * application embedding the backend sees that child come and go. With an audit log (audit_dir), every charge and every
 * budget refund is kept there (types.h, "the audit log of spend"), written
 * before the journal records of the same changes.
 */
#ifndef RATELIMITER_MEMORY_H
#define RATELIMITER_MEMORY_H

#include "ratelimiter/export.h"

#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* When the journal reaches the disk (memory.journal_fsync). Every mode
 * writes a change before its answer, so a killed process loses nothing;
 * they differ on a power loss. Changes of definitions (limits, templates)
 * are synced before their answer whatever the mode. */
typedef enum rl_journal_fsync {
    RL_JOURNAL_FSYNC_ALWAYS = 0, /* synced before each answer: one fdatasync for all the answers ready (group commit) */
    RL_JOURNAL_FSYNC_EVERYSEC,   /* the default: synced once a second, off the answers' path; a power loss may lose the last second */
    RL_JOURNAL_FSYNC_OFF,        /* never synced: the kernel decides */
} rl_journal_fsync;

typedef struct rl_memory_options {
    const rl_clock *clock;       /* NULL: rl_clock_system(); borrowed, must outlive the backend */
    uint32_t sweep_interval_ms;  /* > 0: a thread sweeps expired state this often; 0: no thread */
    uint32_t lease_memory_ms;    /* how long a decided lease is remembered after its state is gone */
    uint64_t max_leases;         /* bound on remembered leases; 0: default */
    /* Usage that survives a restart: every change to usage is in the
     * journal at path before its answer (fsync as journal_fsync says), and
     * opening the backend replays it. NULL: usage lives in memory only. */
    const char *journal_path;    /* borrowed for the call that opens */
    rl_journal_fsync journal_fsync;
    /* The journal is compacted (rewritten as a snapshot of the live state)
     * once it is larger than this and at least half of it is garbage
     * (twice what a snapshot would write); 0: 64 MiB. */
    uint64_t journal_compact_bytes;
    /* The audit log of spend (types.h), one file a day in this directory,
     * kept audit_retention_days (0: default). NULL: none is kept. */
    const char *audit_dir;       /* borrowed for the call that opens */
    uint32_t audit_retention_days;
} rl_memory_options;

#define RL_MEMORY_DEFAULT_SWEEP_INTERVAL_MS 1000u
#define RL_MEMORY_DEFAULT_LEASE_MEMORY_MS 600000u /* 10 minutes of retries */
#define RL_MEMORY_DEFAULT_MAX_LEASES 4000000u

/* Fills options with the defaults above (system clock, sweeper on, no
 * journal, no audit log; journal_fsync everysec for a journal set later). */
RL_API void rl_memory_options_default(rl_memory_options *options);

/* Creates a memory backend. *out is owned by the caller: free it with
 * rl_backend_destroy. Returns RL_OK or RL_NO_MEMORY. */
RL_API rl_status rl_memory_backend_create(const rl_memory_options *options, rl_backend **out);

/* rl_memory_backend_create, also for a journal or an audit log: replays the
 * journal (a torn tail is cut with one line on stderr; damage before it
 * fails with RL_IO_ERROR naming the file and the offset, leaving it
 * untouched). RL_OK, RL_IO_ERROR or RL_NO_MEMORY, with a sentence in err. */
RL_API rl_status rl_memory_backend_open(const rl_memory_options *options, rl_backend **out, char *err,
                                        size_t err_size);

/* Every definition a memory backend holds (as applied: its journal's
 * included), sorted by key, in one malloc'd array the caller frees with
 * free(); *count may be 0 (then *out is NULL). A daemon's registry is the
 * authority on which limits exist, and checks at start that the backend
 * holds no other (limits made from templates are not definitions). Returns RL_OK, RL_NO_MEMORY, or RL_INVALID_REQUEST for a
 * backend that is not a memory backend. Thread-safe. */
RL_API rl_status rl_memory_backend_definitions(rl_backend *backend, rl_limit_def **out, size_t *count);

/* The same for its templates (backend.h: put_template), sorted by pattern
 * (def.key); the limits made from them are in neither list. */
RL_API rl_status rl_memory_backend_templates(rl_backend *backend, rl_limit_def **out, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
