/* core/audit_log.h — private: the memory backend's audit log of spend
 * (rl_audit_entry, ratelimiter/types.h): files in a directory, appended to
 * by one writer thread, queried by any thread.
 *
 * Files: one record file (record_file.h) per UTC day, in parts of at most
 * RL__AUDIT_PART_MAX_BYTES (audit_part.h: "2026-11-25.audit",
 * "2026-11-25.1.audit", ...), each record one entry and its sequence
 * number (audit_record.h). An entry goes to the file of its at_unix_ms's
 * UTC day. The caller appends entries with at non-decreasing (queries
 * rely on it for their time order). Should one come late all the same, for
 * a day before the file being written, it goes to that newer file rather
 * than reopening an old one (files before the newest are never written
 * again): a query from before its at finds it, in the order appended, but
 * paging by next_since may pass over it or return it twice.
 *
 * Sequence numbers are the caller's (the memory backend's journal): they
 * increase strictly from append to append, and tie the log to the journal
 * after a crash (rl__audit_log_last_seq, rl__audit_log_last_group_after,
 * rl__audit_log_drop_after), as does the log's id (audit_id.h).
 *
 * Durability: an append is buffered in memory; rl__audit_log_flush writes
 * (and syncs) everything buffered. Opening reads only the newest part (and
 * the ones before it while it holds no entry: to find the last sequence
 * number), cuts its torn tail, and refuses damage with the file and the
 * offset, leaving the file as it is.
 *
 * One process at a time: opening takes the lock file RL__AUDIT_LOCK_NAME in
 * the directory (path_lock.h), held until close.
 *
 * Retention: rl__audit_log_expire deletes the parts of a day once the whole
 * day is older than retention_days; never the part being written, nor the
 * newest part holding entries (it holds the last sequence number a reopened
 * log starts from). The log's size is thus bounded by retention.
 *
 * Queries (rl__audit_log_query) read only what has been flushed, from the
 * part where their instant starts; one query looks at no more than
 * RL__AUDIT_QUERY_SCAN_MAX_BYTES of records (audit_query.h).
 *
 * Threading: one writer thread calls append, flush, last_seq, drop_after
 * and expire, one call at a time; any thread may query at the same time.
 * The writer and the queries share only a short list of the files (what a
 * query may read of each), behind a mutex held for copying it: the writer
 * never waits for a query's reading. Open and close are the owner's, with
 * no other call running.
 */
#ifndef RL_CORE_AUDIT_LOG_H
#define RL_CORE_AUDIT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"
#include "ratelimiter/types.h"

#define RL__AUDIT_LOCK_NAME "audit.lock"

typedef struct rl__audit_log rl__audit_log;

/* Opens the log in dir (made with its parents if missing), keeping entries
 * retention_days (1..RL_AUDIT_MAX_RETENTION_DAYS; the caller supplies the
 * default), and applies retention at now_unix_ms. RL_OK; RL_INVALID_REQUEST
 * for a retention out of range; RL_IO_ERROR (the file system, a damaged
 * newest part: err names the file and the offset, or another process on the
 * log: err names its PID); RL_NO_MEMORY. *out is
 * the caller's, for rl__audit_log_close. Owner's thread. */
rl_status rl__audit_log_open(const char *dir, uint32_t retention_days, uint64_t now_unix_ms, rl__audit_log **out,
                             char *err, size_t err_size);

/* The log's id (audit_id.h), and whether this open made it. Any thread. */
void rl__audit_log_id(const rl__audit_log *log, uint64_t *hi, uint64_t *lo, bool *made);

/* Buffers entry with seq (above every seq appended before), marked as the
 * one that opens its group when opens_group (audit_record.h). No I/O.
 * RL_INVALID_REQUEST when seq is not above rl__audit_log_last_seq or the
 * entry breaks a rule of audit_record.h (a bad key or lease id, an expired
 * entry with an actual, ...), RL_NO_MEMORY; nothing is buffered then. The
 * entry is copied. Writer thread. */
rl_status rl__audit_log_append(rl__audit_log *log, uint64_t seq, const rl_audit_entry *entry, bool opens_group);

/* Writes everything buffered, starting new files as days change and parts
 * fill, and with sync fdatasyncs them: on RL_OK with sync every entry
 * appended so far is on disk, and visible to queries. RL_IO_ERROR keeps
 * what was not written buffered, for the next flush to retry; RL_NO_MEMORY
 * likewise. Writer thread. */
rl_status rl__audit_log_flush(rl__audit_log *log, bool sync, char *err, size_t err_size);

/* Descriptors (dups: the caller fdatasyncs and closes each) of what was
 * written without sync: the part being written and the parts that ended
 * since the last call. At most max, which should be
 * RL__AUDIT_LOG_SYNC_HANDLES_MAX; returns how many. Lets the writer sync
 * outside its own lock (journal.h, everysec). Writer thread. */
#define RL__AUDIT_LOG_SYNC_HANDLES_MAX 8
size_t rl__audit_log_sync_handles(rl__audit_log *log, int *fds, size_t max);

/* The highest seq appended (written or buffered), or found in the files at
 * open; 0 for a log without entries. Writer thread. */
uint64_t rl__audit_log_last_seq(const rl__audit_log *log);

/* Whether the entries above seq are the log's last group (audit_record.h):
 * the entry seq + 1 opens a group and none after it does, so that they
 * were all written after the journal last held everything before them.
 * False also when no entry is above seq. Flushes first (without sync);
 * reads the newest parts back to the one holding seq + 1. RL_OK,
 * RL_IO_ERROR (a damaged part: err names it), RL_NO_MEMORY. Writer
 * thread. */
rl_status rl__audit_log_last_group_after(rl__audit_log *log, uint64_t seq, bool *last_group, char *err,
                                         size_t err_size);

/* Crash repair, when the log got ahead of the journal: removes every entry
 * with a seq above seq, buffered or written. They can only be in the newest
 * parts: each newest part wholly above seq is deleted, then the one holding
 * seq rewritten without the entries after it, atomically (record_file's
 * rewrite); a crash in between leaves some of them, for the next repair.
 * Flushes first (without sync). A query running meanwhile may still return
 * what it removes: repair belongs before queries are served. RL_OK,
 * RL_IO_ERROR, RL_NO_MEMORY. Writer thread. */
rl_status rl__audit_log_drop_after(rl__audit_log *log, uint64_t seq, char *err, size_t err_size);

/* Retention: deletes the parts of every UTC day that ended retention_days
 * or more before now_unix_ms (see above for the two it keeps). A file that
 * cannot be deleted is left on disk, with one line on stderr, and deleted
 * at a later start. Writer thread. */
void rl__audit_log_expire(rl__audit_log *log, uint64_t now_unix_ms);

/* The same in two steps, so that the files are deleted outside whatever
 * lock makes a thread the writer (deleting a large file takes
 * milliseconds): takes up to max parts past retention out of the log (no
 * query sees them from then on) and gives their paths (owned by the
 * caller); rl__audit_log_delete_parts then deletes and frees them, on any
 * thread. _take: writer thread. */
#define RL__AUDIT_EXPIRE_BATCH 64u
size_t rl__audit_log_expire_take(rl__audit_log *log, uint64_t now_unix_ms, char **paths, size_t max);
void rl__audit_log_delete_parts(char **paths, size_t count);

/* query->key's entries with at_unix_ms >= query->since_unix_ms, oldest
 * first, at most query->limit (1..RL_AUDIT_QUERY_MAX) into page->entries,
 * and where the next page starts (audit_query.h says exactly). Reads only
 * flushed entries. RL_OK (count 0 too); RL_INVALID_REQUEST for a bad key or
 * limit; RL_IO_ERROR for a damaged file (err names it and the offset) or
 * the file system; RL_NO_MEMORY. page->count is 0 on failure. Any thread,
 * at the same time as the writer and other queries. */
rl_status rl__audit_log_query(rl__audit_log *log, const rl_audit_query *query, rl_audit_page *page, char *err,
                              size_t err_size);

/* The same, listing no entry at or after before_unix_ms, for a writer that
 * knows every entry before it has been flushed (audit_query.h): a page then
 * ends where the data ends. */
rl_status rl__audit_log_query_before(rl__audit_log *log, const rl_audit_query *query, uint64_t before_unix_ms,
                                     rl_audit_page *page, char *err, size_t err_size);

/* Closes without flushing (flush first what must be kept). NULL is
 * allowed. Owner's thread, nothing else running. */
void rl__audit_log_close(rl__audit_log *log);

#endif
