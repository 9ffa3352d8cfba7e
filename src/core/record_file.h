/* core/record_file.h — private: a file of checksummed records, appended to
 * and read back after a crash: the storage under the memory backend's
 * journal and the audit log.
 *
 * Layout: an 8-byte header "rlrec01\n", then records, each a 4-byte
 * little-endian length (1..RL__RECORD_MAX_BYTES), the 4-byte little-endian
 * CRC-32C of those length bytes and the payload, then the payload.
 *
 * Reading back tells three cases apart:
 *   - whole: every byte belongs to a record;
 *   - a torn tail: the file ends inside its last record (a crash while
 *     appending), or in zeros a file system left after it, or its last
 *     record's checksum fails, and no whole record (a length in range, a
 *     frame that fits, a matching checksum) starts at any later byte: what
 *     was never acknowledged. It is cut at the last whole record, with one
 *     line on stderr;
 *   - damage: anything else (a bad checksum or length with records after
 *     it, a length that runs past the end with whole records after it, a
 *     wrong header). Opening fails with a sentence naming the file and the
 *     offset, and the file is left exactly as it was.
 *
 * Appends are buffered until rl__record_file_flush, which writes them and,
 * when asked, fdatasyncs: one sync for all the records a caller has ready
 * (group commit). A rewrite (compaction) replaces the file atomically
 * (atomic_file.h) with the records a source writes, then the ones still
 * buffered.
 *
 * Threading: an rl__record_file belongs to one thread at a time; the scan
 * is pure and thread-safe.
 */
#ifndef RL_CORE_RECORD_FILE_H
#define RL_CORE_RECORD_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"

#define RL__RECORD_FILE_HEADER "rlrec01\n"
#define RL__RECORD_FILE_HEADER_BYTES 8u
#define RL__RECORD_FRAME_BYTES 8u /* length + checksum before each payload */
#define RL__RECORD_MAX_BYTES (1u << 20)

/* One record read back, in file order; false stops the reading, which then
 * fails as damage at that record's offset (a record the reader does not
 * understand). */
typedef bool (*rl__record_fn)(const unsigned char *record, size_t len, uint64_t offset, void *context);

/* ---- reading bytes (pure) --------------------------------------------------- */

typedef enum rl__records_verdict {
    RL__RECORDS_WHOLE,
    RL__RECORDS_TORN_TAIL,
    RL__RECORDS_DAMAGED,
} rl__records_verdict;

typedef struct rl__records_scan {
    rl__records_verdict verdict;
    size_t whole_bytes; /* header and whole records: where a torn tail is cut */
    size_t records;     /* whole records read */
    size_t bad_offset;  /* TORN_TAIL, DAMAGED: where it starts */
    char why[160];      /* TORN_TAIL, DAMAGED: what was found there */
} rl__records_scan;

/* Reads data[0..len): the header, then every record through each (NULL: none
 * called). len 0 is a whole, empty file. */
void rl__records_read(const unsigned char *data, size_t len, rl__record_fn each, void *context,
                      rl__records_scan *out);

/* Writes one framed record into out, which has room for
 * RL__RECORD_FRAME_BYTES + len bytes; len must be 1..RL__RECORD_MAX_BYTES.
 * Returns the bytes written. */
size_t rl__record_frame(unsigned char *out, const void *record, size_t len);

/* ---- a file ---------------------------------------------------------------- */

typedef struct rl__record_file rl__record_file;

/* Opens path for appending, reading every whole record first through each:
 * a missing file is made (with its directory), a torn tail is cut. RL_OK,
 * RL_IO_ERROR (damage, or the file system: err says which, with the file
 * and the offset), RL_NO_MEMORY. */
rl_status rl__record_file_open(const char *path, rl__record_fn each, void *context, rl__record_file **out,
                               char *err, size_t err_size);

/* Buffers one record. RL_INVALID_REQUEST for a length outside
 * 1..RL__RECORD_MAX_BYTES, RL_NO_MEMORY; nothing buffered then. */
rl_status rl__record_file_append(rl__record_file *file, const void *record, size_t len);

/* Writes what is buffered and, with sync, fdatasyncs: on RL_OK with sync,
 * every record appended so far is on disk. On RL_IO_ERROR the records stay
 * buffered (a retry writes them again after cutting what a short write
 * left). */
rl_status rl__record_file_flush(rl__record_file *file, bool sync, char *err, size_t err_size);

/* A descriptor of the file as written so far (a dup: the caller closes
 * it), for an fdatasync made outside the lock that serialises the writer
 * (journal.h: the sync once a second), which may meanwhile go on appending
 * or replace the file. -1 with errno on failure. Writer's thread. */
int rl__record_file_sync_handle(const rl__record_file *file);

/* Drops the records buffered and not yet written: a group its writer gave
 * up on (the registry's, when a write failed). */
void rl__record_file_discard(rl__record_file *file);

/* Bytes buffered, not yet written. */
size_t rl__record_file_pending_bytes(const rl__record_file *file);

/* The file's size on disk, as far as this file has written it. */
uint64_t rl__record_file_size(const rl__record_file *file);

/* Replaces the file's records by those source adds (rl__record_file_add),
 * followed by the ones still buffered, atomically and durably, and goes on
 * appending to the new file. On failure the old file stays as it was, and
 * so does the buffer. */
typedef struct rl__record_sink rl__record_sink;
typedef bool (*rl__record_source_fn)(rl__record_sink *sink, void *context);
bool rl__record_sink_add(rl__record_sink *sink, const void *record, size_t len);
rl_status rl__record_file_rewrite(rl__record_file *file, rl__record_source_fn source, void *context, char *err,
                                  size_t err_size);

/* A sink of its own on path, for a record file written beside this one: a
 * new file, its header first (start), or records appended to one. Records
 * go out in chunks, so a file of any size is written without a copy of it
 * in memory. NULL if path cannot be opened (errno) or for want of memory.
 * Close writes what is left and fdatasyncs: true if every record added
 * reached the disk. One thread. */
rl__record_sink *rl__record_sink_open(const char *path, bool start);
bool rl__record_sink_close(rl__record_sink *sink);

/* Replaces the file by the record file at tmp_path (written and synced by
 * someone else: a compaction in a child process), after appending to it
 * the records still buffered here, then syncing it, renaming it over the
 * file and syncing the directory; goes on appending to the new file. On a
 * failure before the rename the old file stays, and so does the buffer.
 * replaced_fd gets the old file's descriptor (or -1), for the caller to
 * close outside its locks: closing the last descriptor of a file renamed
 * over frees its blocks, which takes as long as the file was large (tens
 * of milliseconds for a hundred megabytes).
 * sync false leaves out both syncs, for a caller that makes them later
 * (journal.h, everysec: the new file's last records and its name may be
 * lost to a power loss until then, as anything written in that second). */
rl_status rl__record_file_adopt(rl__record_file *file, const char *tmp_path, bool sync, int *replaced_fd, char *err,
                                size_t err_size);

/* Closes without flushing (flush first what must be kept). NULL is allowed. */
void rl__record_file_close(rl__record_file *file);

#endif
