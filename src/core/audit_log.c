/* audit_log.c — see audit_log.h. The writer's side; the reading of a query
 * is audit_query.c, the files audit_part.c. */
#include "core/audit_log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/audit_id.h"
#include "core/audit_part.h"
#include "core/audit_query.h"
#include "core/audit_record.h"
#include "core/error_text.h"
#include "core/path_lock.h"
#include "core/record_file.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* An entry appended and not yet handed to a file: buffer[offset..+len). */
typedef struct pending {
    int64_t day;
    size_t offset;
    size_t len;
} pending;

struct rl__audit_log {
    char *dir;
    rl__path_lock *writer_lock; /* <dir>/audit.lock: one process on this log */
    uint64_t id_hi, id_lo;       /* the log's id (audit_id.h) */
    bool id_made;                /* made at this open */
    uint64_t retention_ms;

    /* ---- the writer's ---- */
    rl__record_file *file; /* the newest part, parts[part_count - 1], or NULL (no part yet) */
    uint64_t last_seq;
    bool anchored; /* the newest part holding entries, which retention keeps: */
    int64_t anchor_day;
    uint32_t anchor_index;
    unsigned char *buffer; /* encoded entries, not yet handed to a file */
    size_t buffer_len, buffer_cap;
    pending *pending;
    size_t pending_count, pending_cap;
    /* Parts ended by a flush without sync, kept open (dups) until the
     * next rl__audit_log_sync_handles hands them over to be synced. */
    int ended_unsynced[RL__AUDIT_LOG_SYNC_HANDLES_MAX - 1];
    size_t ended_unsynced_count;

    /* ---- shared with queries: written under lock by the writer alone, so
     * the writer reads them without it ---- */
    pthread_mutex_t lock;
    rl__audit_part *parts; /* sorted; the last one is the one written */
    size_t part_count, part_cap;
};

/* ---- the list of parts ------------------------------------------------------------ */

static rl__audit_part *newest(rl__audit_log *log) {
    return log->part_count > 0 ? &log->parts[log->part_count - 1] : NULL;
}

static bool push_part(rl__audit_log *log, int64_t day, uint32_t index, uint64_t size) {
    pthread_mutex_lock(&log->lock);
    bool ok = true;
    if (log->part_count == log->part_cap) {
        size_t cap = log->part_cap > 0 ? log->part_cap * 2 : 64;
        rl__audit_part *grown = realloc(log->parts, cap * sizeof *grown);
        if (grown == NULL) {
            ok = false;
        } else {
            log->parts = grown;
            log->part_cap = cap;
        }
    }
    if (ok) log->parts[log->part_count++] = (rl__audit_part){day, index, size};
    pthread_mutex_unlock(&log->lock);
    return ok;
}

/* What queries may read of the part being written: what it has written
 * (and synced, when the flush was asked to), after a flush that succeeded. */
static void publish_size(rl__audit_log *log) {
    if (log->file == NULL) return;
    pthread_mutex_lock(&log->lock);
    newest(log)->size = rl__record_file_size(log->file);
    pthread_mutex_unlock(&log->lock);
}

static void remove_part(rl__audit_log *log, size_t i) {
    pthread_mutex_lock(&log->lock);
    memmove(&log->parts[i], &log->parts[i + 1], (log->part_count - i - 1) * sizeof *log->parts);
    log->part_count--;
    pthread_mutex_unlock(&log->lock);
}

static bool is_anchor(const rl__audit_log *log, const rl__audit_part *part) {
    return log->anchored && part->day == log->anchor_day && part->index == log->anchor_index;
}

static void set_anchor(rl__audit_log *log, const rl__audit_part *part) {
    log->anchored = true;
    log->anchor_day = part->day;
    log->anchor_index = part->index;
}

/* ---- reading back the newest entries ---------------------------------------------- */

typedef struct tally {
    size_t entries;
    uint64_t min_seq, max_seq;
    bool disorder; /* a seq not above the one before it */
    uint64_t disorder_at;
} tally;

static bool count_entry(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)frame_bytes;
    tally *t = context;
    if (t->entries > 0 && view->seq <= t->max_seq) {
        t->disorder = true;
        t->disorder_at = offset;
        return false;
    }
    if (t->entries == 0) t->min_seq = view->seq;
    t->max_seq = view->seq;
    t->entries++;
    return true;
}

/* The entries of parts[i]: how many and their sequence numbers. */
static rl_status tally_part(rl__audit_log *log, size_t i, tally *t, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    char *path = rl__audit_part_path(log->dir, log->parts[i].day, log->parts[i].index);
    if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    bool missing;
    rl_status status = rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, count_entry, t, &missing, err, err_size);
    if (status == RL_OK && t->disorder)
        status = fail(RL_IO_ERROR, err, err_size,
                      "%s: damaged at offset %" PRIu64
                      " (an entry whose sequence number is not above the one before it); the file is left as it is",
                      path, t->disorder_at);
    free(path);
    return status;
}

/* After open or a repair: the newest part open for appending, and the
 * last sequence number from the newest part holding entries. */
static rl_status adopt_newest(rl__audit_log *log, char *err, size_t err_size) {
    log->last_seq = 0;
    log->anchored = false;
    if (log->part_count == 0) return RL_OK;
    for (size_t i = log->part_count; i-- > 0;) {
        tally t;
        rl_status status = tally_part(log, i, &t, err, err_size);
        if (status != RL_OK) return status;
        if (t.entries > 0) {
            log->last_seq = t.max_seq;
            set_anchor(log, &log->parts[i]);
            break;
        }
    }
    if (log->file == NULL) {
        char *path = rl__audit_part_path(log->dir, newest(log)->day, newest(log)->index);
        if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
        rl_status status = rl__record_file_open(path, NULL, NULL, &log->file, err, err_size); /* cuts a torn tail */
        free(path);
        if (status != RL_OK) return status;
    }
    publish_size(log);
    return RL_OK;
}

/* ---- open and close --------------------------------------------------------------- */

rl_status rl__audit_log_open(const char *dir, uint32_t retention_days, uint64_t now_unix_ms, rl__audit_log **out,
                             char *err, size_t err_size) {
    *out = NULL;
    if (retention_days < 1 || retention_days > RL_AUDIT_MAX_RETENTION_DAYS)
        return fail(RL_INVALID_REQUEST, err, err_size, "audit retention_days must be 1..%u, not %" PRIu32,
                    RL_AUDIT_MAX_RETENTION_DAYS, retention_days);
    if (rl__make_directories(dir) != 0)
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot create directory: %s", dir, strerror(errno));
    rl__audit_log *log = calloc(1, sizeof *log);
    if (log == NULL || (log->dir = strdup(dir)) == NULL) {
        free(log);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", dir);
    }
    pthread_mutex_init(&log->lock, NULL);
    log->retention_ms = (uint64_t)retention_days * RL__AUDIT_DAY_MS;
    char *lock_path = NULL;
    rl_status status = asprintf(&lock_path, "%s/" RL__AUDIT_LOCK_NAME, dir) >= 0
                           ? rl__path_lock_acquire(lock_path, dir, &log->writer_lock, err, err_size)
                           : fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", dir);
    if (lock_path != NULL) free(lock_path);
    if (status == RL_OK) status = rl__audit_id_load(dir, &log->id_hi, &log->id_lo, &log->id_made, err, err_size);
    if (status == RL_OK) status = rl__audit_parts_list(dir, &log->parts, &log->part_count, err, err_size);
    log->part_cap = log->part_count;
    if (status == RL_OK) status = adopt_newest(log, err, err_size);
    if (status != RL_OK) {
        rl__audit_log_close(log);
        return status;
    }
    rl__audit_log_expire(log, now_unix_ms);
    *out = log;
    return RL_OK;
}

void rl__audit_log_close(rl__audit_log *log) {
    if (log == NULL) return;
    for (size_t i = 0; i < log->ended_unsynced_count; i++) {
        (void)fdatasync(log->ended_unsynced[i]); /* the last chance: nothing waits for it */
        close(log->ended_unsynced[i]);
    }
    rl__record_file_close(log->file);
    rl__path_lock_release(log->writer_lock);
    pthread_mutex_destroy(&log->lock);
    free(log->parts);
    free(log->pending);
    free(log->buffer);
    free(log->dir);
    free(log);
}

/* ---- appending -------------------------------------------------------------------- */

uint64_t rl__audit_log_last_seq(const rl__audit_log *log) { return log->last_seq; }

void rl__audit_log_id(const rl__audit_log *log, uint64_t *hi, uint64_t *lo, bool *made) {
    *hi = log->id_hi;
    *lo = log->id_lo;
    if (made != NULL) *made = log->id_made;
}

rl_status rl__audit_log_append(rl__audit_log *log, uint64_t seq, const rl_audit_entry *entry, bool opens_group) {
    if (seq <= log->last_seq) return RL_INVALID_REQUEST;
    if (log->buffer_cap - log->buffer_len < RL__AUDIT_RECORD_MAX_BYTES) {
        size_t cap = log->buffer_cap > 0 ? log->buffer_cap * 2 : 64 * 1024;
        unsigned char *grown = realloc(log->buffer, cap);
        if (grown == NULL) return RL_NO_MEMORY;
        log->buffer = grown;
        log->buffer_cap = cap;
    }
    if (log->pending_count == log->pending_cap) {
        size_t cap = log->pending_cap > 0 ? log->pending_cap * 2 : 256;
        pending *grown = realloc(log->pending, cap * sizeof *grown);
        if (grown == NULL) return RL_NO_MEMORY;
        log->pending = grown;
        log->pending_cap = cap;
    }
    size_t len = rl__audit_record_encode(log->buffer + log->buffer_len, seq, entry, NULL);
    if (len == 0) return RL_INVALID_REQUEST;
    if (opens_group) rl__audit_record_open_group(log->buffer + log->buffer_len);
    log->pending[log->pending_count++] = (pending){rl__audit_day_of(entry->at_unix_ms), log->buffer_len, len};
    log->buffer_len += len;
    log->last_seq = seq;
    return RL_OK;
}

/* A part ended without a sync stays open (a dup) for the next sync, made
 * by whoever calls rl__audit_log_sync_handles; here only if there are
 * more such parts than that call can take (a burst of full parts). */
static void keep_for_sync(rl__audit_log *log, const rl__record_file *file) {
    if (file == NULL) return;
    int fd = rl__record_file_sync_handle(file);
    if (fd >= 0 && log->ended_unsynced_count < RL__AUDIT_LOG_SYNC_HANDLES_MAX - 1) {
        log->ended_unsynced[log->ended_unsynced_count++] = fd;
        return;
    }
    if (fd >= 0) {
        (void)fdatasync(fd);
        close(fd);
    }
}

size_t rl__audit_log_sync_handles(rl__audit_log *log, int *fds, size_t max) {
    size_t count = 0;
    for (size_t i = 0; i < log->ended_unsynced_count; i++) {
        if (count < max) {
            fds[count++] = log->ended_unsynced[i];
        } else { /* a max below the one asked for */
            (void)fdatasync(log->ended_unsynced[i]);
            close(log->ended_unsynced[i]);
        }
    }
    log->ended_unsynced_count = 0;
    if (log->file != NULL && count < max) {
        int fd = rl__record_file_sync_handle(log->file);
        if (fd >= 0) fds[count++] = fd;
    }
    return count;
}

/* Ends the part being written (writing what it holds) and starts the part
 * of day after it: the next of the same day, or the day's first. On
 * failure the old part goes on being the one written. */
static rl_status start_part(rl__audit_log *log, int64_t day, bool sync, char *err, size_t err_size) {
    const rl__audit_part *old = newest(log);
    uint32_t index = old != NULL && old->day == day ? old->index + 1 : 0;
    if (log->file != NULL) {
        rl_status status = rl__record_file_flush(log->file, sync, err, err_size);
        if (status != RL_OK) return status;
        publish_size(log);
    }
    char *path = rl__audit_part_path(log->dir, day, index);
    if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    rl__record_file *file = NULL;
    rl_status status = rl__record_file_open(path, NULL, NULL, &file, err, err_size);
    free(path);
    if (status != RL_OK) return status;
    if (!push_part(log, day, index, rl__record_file_size(file))) {
        rl__record_file_close(file);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    }
    if (!sync) keep_for_sync(log, log->file);
    rl__record_file_close(log->file);
    log->file = file;
    return RL_OK;
}

/* Hands pending entries to files, in order, starting parts as needed;
 * returns how many were handed. */
static size_t hand_over(rl__audit_log *log, bool sync, rl_status *status, char *err, size_t err_size) {
    size_t i = 0;
    for (; i < log->pending_count; i++) {
        const pending *p = &log->pending[i];
        const rl__audit_part *part = newest(log);
        int64_t day = p->day;
        if (part != NULL && part->day > day) day = part->day; /* late: into the newer file */
        bool full = log->file != NULL && rl__record_file_size(log->file) + rl__record_file_pending_bytes(log->file) >=
                                              RL__AUDIT_PART_MAX_BYTES;
        if (log->file == NULL || part->day != day || full) {
            *status = start_part(log, day, sync, err, err_size);
            if (*status != RL_OK) break;
        }
        *status = rl__record_file_append(log->file, log->buffer + p->offset, p->len);
        if (*status != RL_OK) {
            rl__error_text(err, err_size, "%s: out of memory", log->dir);
            break;
        }
        set_anchor(log, newest(log));
    }
    return i;
}

rl_status rl__audit_log_flush(rl__audit_log *log, bool sync, char *err, size_t err_size) {
    rl_status status = RL_OK;
    size_t handed = hand_over(log, sync, &status, err, err_size);
    if (handed > 0) { /* the file holds them now, also when writing them failed */
        size_t left = log->pending_count - handed;
        size_t bytes = left > 0 ? log->pending[handed].offset : log->buffer_len;
        memmove(log->buffer, log->buffer + bytes, log->buffer_len - bytes);
        log->buffer_len -= bytes;
        for (size_t i = 0; i < left; i++) {
            log->pending[i] = log->pending[handed + i];
            log->pending[i].offset -= bytes;
        }
        log->pending_count = left;
    }
    if (log->file != NULL) {
        rl_status written = rl__record_file_flush(log->file, sync, err, err_size);
        if (written == RL_OK) publish_size(log); /* queries see what is written, and synced when asked */
        if (status == RL_OK) status = written;
    }
    return status;
}

/* ---- retention -------------------------------------------------------------------- */

size_t rl__audit_log_expire_take(rl__audit_log *log, uint64_t now_unix_ms, char **paths, size_t max) {
    if (now_unix_ms < log->retention_ms) return 0;
    /* Days before this one ended retention_ms or more before now. */
    int64_t first_kept = rl__audit_day_of(now_unix_ms - log->retention_ms);
    size_t i = 0, taken = 0;
    while (taken < max && i < log->part_count && log->parts[i].day < first_kept) {
        const rl__audit_part *part = &log->parts[i];
        bool written = log->file != NULL && i == log->part_count - 1;
        char *path = written || is_anchor(log, part) ? NULL : rl__audit_part_path(log->dir, part->day, part->index);
        if (path == NULL) { /* kept (or out of memory: tried again next time) */
            i++;
            continue;
        }
        paths[taken++] = path;
        remove_part(log, i);
    }
    return taken;
}

void rl__audit_log_delete_parts(char **paths, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (unlink(paths[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "ratelimiter: %s: cannot delete after retention: %s (tried again at the next start)\n",
                    paths[i], strerror(errno));
        free(paths[i]);
    }
}

void rl__audit_log_expire(rl__audit_log *log, uint64_t now_unix_ms) {
    char *paths[RL__AUDIT_EXPIRE_BATCH];
    size_t taken;
    while ((taken = rl__audit_log_expire_take(log, now_unix_ms, paths, RL__AUDIT_EXPIRE_BATCH)) > 0)
        rl__audit_log_delete_parts(paths, taken);
}

/* ---- crash repair ----------------------------------------------------------------- */

typedef struct keeping {
    rl__record_sink *sink;
    uint64_t seq;
    bool failed;
} keeping;

static bool keep_up_to(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)offset;
    (void)frame_bytes;
    keeping *k = context;
    if (view->seq > k->seq) return false;
    if (!rl__record_sink_add(k->sink, view->record, view->record_len)) k->failed = true;
    return !k->failed;
}

typedef struct rewriting {
    const char *path;
    uint64_t seq;
} rewriting;

/* The source of the newest part's rewrite: its entries up to seq. */
static bool add_kept(rl__record_sink *sink, void *context) {
    const rewriting *r = context;
    keeping k = {sink, r->seq, false};
    bool missing;
    rl_status status = rl__audit_part_read(r->path, RL__AUDIT_PART_SIZE_ALL, keep_up_to, &k, &missing, NULL, 0);
    if (status != RL_OK || missing) errno = EIO;
    return status == RL_OK && !missing && !k.failed;
}

static rl_status rewrite_newest(rl__audit_log *log, uint64_t seq, char *err, size_t err_size) {
    char *path = rl__audit_part_path(log->dir, newest(log)->day, newest(log)->index);
    if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    rl_status status = RL_OK;
    if (log->file == NULL) status = rl__record_file_open(path, NULL, NULL, &log->file, err, err_size);
    rewriting r = {path, seq};
    if (status == RL_OK) status = rl__record_file_rewrite(log->file, add_kept, &r, err, err_size);
    free(path);
    publish_size(log);
    return status;
}

static rl_status delete_newest(rl__audit_log *log, char *err, size_t err_size) {
    char *path = rl__audit_part_path(log->dir, newest(log)->day, newest(log)->index);
    if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    rl_status status = RL_OK;
    if (unlink(path) != 0 && errno != ENOENT) {
        status = fail(RL_IO_ERROR, err, err_size, "%s: cannot delete: %s", path, strerror(errno));
    } else {
        rl__record_file_close(log->file);
        log->file = NULL;
        remove_part(log, log->part_count - 1);
    }
    free(path);
    return status;
}

rl_status rl__audit_log_drop_after(rl__audit_log *log, uint64_t seq, char *err, size_t err_size) {
    if (log->last_seq <= seq) return RL_OK;
    rl_status status = rl__audit_log_flush(log, false, err, err_size);
    while (status == RL_OK && log->part_count > 0) {
        tally t;
        status = tally_part(log, log->part_count - 1, &t, err, err_size);
        if (status != RL_OK || (t.entries > 0 && t.max_seq <= seq)) break;
        if (t.entries > 0 && t.min_seq <= seq) {
            status = rewrite_newest(log, seq, err, err_size);
            break;
        }
        status = delete_newest(log, err, err_size); /* wholly above seq */
    }
    if (status != RL_OK) return status;
    return adopt_newest(log, err, err_size);
}

/* What the entries above a sequence number are, read from the newest part back. */
typedef struct above {
    uint64_t seq;
    bool first_opens_group; /* seq + 1 is there and opens its group */
    bool later_group;       /* an entry above seq + 1 opens a group */
    uint64_t part_min_seq;  /* of the part being read */
} above;

static bool look_above(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)offset;
    (void)frame_bytes;
    above *a = context;
    if (view->seq < a->part_min_seq) a->part_min_seq = view->seq;
    if (view->seq == a->seq + 1 && view->opens_group) a->first_opens_group = true;
    if (view->seq > a->seq + 1 && view->opens_group) a->later_group = true;
    return true;
}

rl_status rl__audit_log_last_group_after(rl__audit_log *log, uint64_t seq, bool *last_group, char *err,
                                         size_t err_size) {
    *last_group = false;
    if (log->last_seq <= seq) return RL_OK;
    rl_status status = rl__audit_log_flush(log, false, err, err_size);
    above a = {seq, false, false, UINT64_MAX};
    for (size_t i = log->part_count; status == RL_OK && i-- > 0 && !a.later_group;) {
        char *path = rl__audit_part_path(log->dir, log->parts[i].day, log->parts[i].index);
        if (path == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
        bool missing;
        a.part_min_seq = UINT64_MAX;
        status = rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, look_above, &a, &missing, err, err_size);
        free(path);
        if (a.part_min_seq <= seq + 1) break; /* the parts before hold nothing above seq + 1 */
    }
    if (status == RL_OK) *last_group = a.first_opens_group && !a.later_group;
    return status;
}

/* ---- queries ---------------------------------------------------------------------- */

rl_status rl__audit_log_query(rl__audit_log *log, const rl_audit_query *query, rl_audit_page *page, char *err,
                              size_t err_size) {
    return rl__audit_log_query_before(log, query, UINT64_MAX, page, err, err_size);
}

rl_status rl__audit_log_query_before(rl__audit_log *log, const rl_audit_query *query, uint64_t before_unix_ms,
                                     rl_audit_page *page, char *err, size_t err_size) {
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    rl_status status = rl__audit_query_check(query, page, err, err_size);
    if (status != RL_OK) return status;
    int64_t day = rl__audit_day_of(query->since_unix_ms);
    /* A copy of the parts from since's day on: the writer waits for this copy only. */
    pthread_mutex_lock(&log->lock);
    size_t lo = 0, hi = log->part_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->parts[mid].day < day)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t count = log->part_count - lo;
    rl__audit_part *parts = malloc(count > 0 ? count * sizeof *parts : 1);
    if (parts != NULL && count > 0) memcpy(parts, &log->parts[lo], count * sizeof *parts);
    pthread_mutex_unlock(&log->lock);
    if (parts == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", log->dir);
    status = rl__audit_query_run(log->dir, parts, count, query, before_unix_ms, page, err, err_size);
    free(parts);
    return status;
}
