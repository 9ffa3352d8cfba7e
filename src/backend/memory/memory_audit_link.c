/* memory_audit_link.c — the audit log and the journal, tied at start.
 *
 * The audit log is the record of spend: it is kept for its retention,
 * whatever happens to the journal. The journal numbers the entries it
 * makes and names the log they belong to (an AUDIT_LINK record carrying the
 * log's id, audit_id.h), and the audit entries of a change are written
 * before its journal records. So a crash between the two writes leaves the
 * log one group ahead of the journal (audit_record.h), and those entries
 * alone may go: their Completes were never acknowledged and will come
 * again. Anything else that finds the log ahead of the journal, or the
 * journal not this log's, is not that crash: no journal, a new one, one
 * moved away after damage, another log's, an older copy. Then every entry
 * stays, the numbering goes on from the log's last one, and the mismatch
 * is said on stderr and kept for /metrics (rl_backend_stats), since the
 * counters no longer hold what the log holds.
 *
 * Runs once, after the replay and before the journal's writer starts, on
 * the thread that opens the backend.
 */
#include <inttypes.h>
#include <stdio.h>

#include "backend/memory/memory_backend.h"
#include "core/ulid_text.h"

typedef struct found {
    const char *dir;          /* the audit log's */
    const char *journal_path; /* NULL: none */
    uint64_t log_hi, log_lo;  /* the audit log's id */
    uint64_t log_last;        /* its last sequence number at open */
} found;

static void mismatch(memory_backend *backend, uint64_t unmatched) {
    backend->audit_journal_mismatch = 1;
    backend->audit_entries_unmatched = unmatched;
}

/* The journal is not this log's: the log is kept whole and numbered on. */
static void keep_apart(memory_backend *backend, const found *f) {
    char log_id[RL_ULID_TEXT_SIZE], other[RL_ULID_TEXT_SIZE];
    rl__ulid_text(f->log_hi, f->log_lo, log_id);
    if (f->journal_path == NULL) {
        if (f->log_last > 0)
            fprintf(stderr,
                    "ratelimiterd: audit log %s: its entries (numbered up to %" PRIu64
                    ") are kept and numbering goes on after them; with no journal, usage starts from zero and "
                    "does not hold them\n",
                    f->dir, f->log_last);
    } else if (backend->journal_linked) {
        rl__ulid_text(backend->journal_log_hi, backend->journal_log_lo, other);
        fprintf(stderr,
                "ratelimiterd: audit log %s (id %s): the journal %s belongs to audit log %s, not this one; this "
                "log's entries (numbered up to %" PRIu64
                ") are kept and numbering goes on after them, and usage is the journal's\n",
                f->dir, log_id, f->journal_path, other, f->log_last);
    } else if (f->log_last > 0) {
        fprintf(stderr,
                "ratelimiterd: audit log %s: its entries (numbered up to %" PRIu64
                ") are kept and numbering goes on after them; the journal %s is new (or was written before "
                "journals named their audit log), so its usage does not hold them\n",
                f->dir, f->log_last, f->journal_path);
    }
    if (f->log_last > 0 || backend->journal_linked) mismatch(backend, f->log_last);
    backend->audit_seq = f->log_last;
    backend->replay_audit_count = 0; /* made for another log, or for none */
}

/* The journal is this log's, and the log goes on past it. *link: the
 * entries stay, and the journal must go on from the log's last. */
static rl_status log_ahead(memory_backend *backend, const found *f, bool *link, char *err, size_t err_size) {
    uint64_t journal_last = backend->audit_seq;
    bool last_group = false;
    rl_status status = rl__audit_log_last_group_after(backend->audit, journal_last, &last_group, err, err_size);
    if (status != RL_OK) return status;
    if (!last_group) {
        fprintf(stderr,
                "ratelimiterd: audit log %s: entries %" PRIu64 "..%" PRIu64 " are kept although the journal %s "
                "stops at %" PRIu64
                ": they are more than the one group a crash between the two writes leaves (an older copy of the "
                "journal?); usage is the journal's, numbering goes on after them\n",
                f->dir, journal_last + 1, f->log_last, f->journal_path, journal_last);
        mismatch(backend, f->log_last - journal_last);
        backend->audit_seq = f->log_last;
        backend->replay_audit_count = 0;
        *link = true;
        return RL_OK;
    }
    status = rl__audit_log_drop_after(backend->audit, journal_last, err, err_size);
    if (status != RL_OK) return status;
    fprintf(stderr,
            "ratelimiterd: audit log %s: dropped entries %" PRIu64 "..%" PRIu64
            ", written just before a crash cut their journal records: those Completes were never acknowledged "
            "and will come again\n",
            f->dir, journal_last + 1, f->log_last);
    backend->audit_on_disk = journal_last;
    return RL_OK;
}

/* The journal is this log's and holds entries the log lost (a power loss
 * under everysec): the replay made them again, the writer writes them. */
static void log_behind(memory_backend *backend, const found *f) {
    uint64_t first_made = backend->audit_seq + 1;
    for (size_t i = 0; i < backend->replay_audit_count; i++)
        if (backend->replay_audit[i].seq > backend->audit_on_disk && backend->replay_audit[i].seq < first_made)
            first_made = backend->replay_audit[i].seq;
    if (first_made <= backend->audit_on_disk + 1) return;
    fprintf(stderr,
            "ratelimiterd: audit log %s: entries %" PRIu64 "..%" PRIu64
            " that the journal %s counts are missing from the log and cannot be made again\n",
            f->dir, backend->audit_on_disk + 1, first_made - 1, f->journal_path);
    mismatch(backend, 0);
}

rl_status rl__mem_audit_link(memory_backend *backend, const char *journal_path, const char *audit_dir, bool *link,
                             char *err, size_t err_size) {
    *link = false;
    if (backend->audit == NULL) return RL_OK;
    found f = {audit_dir, journal_path, 0, 0, backend->audit_on_disk};
    rl__audit_log_id(backend->audit, &f.log_hi, &f.log_lo, NULL);
    bool linked = journal_path != NULL && backend->journal_linked && backend->journal_log_hi == f.log_hi &&
                  backend->journal_log_lo == f.log_lo;
    if (!linked) {
        keep_apart(backend, &f);
        *link = journal_path != NULL;
        return RL_OK;
    }
    if (f.log_last > backend->audit_seq) return log_ahead(backend, &f, link, err, err_size);
    if (f.log_last < backend->audit_seq) log_behind(backend, &f);
    return RL_OK;
}

void rl__mem_audit_link_record(const memory_backend *backend, rl__jrec *record) {
    uint64_t hi, lo;
    rl__audit_log_id(backend->audit, &hi, &lo, NULL);
    record->type = RL__JREC_AUDIT_LINK;
    record->cursor = (rl__jrec_cursor){backend->audit_seq, backend->audit_at_unix_ms, hi, lo};
}
