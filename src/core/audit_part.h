/* core/audit_part.h — private: the files of the audit log (audit_log.h):
 * their names, the UTC day they hold, and reading one back.
 *
 * The log is one record file (record_file.h) per UTC day, of audit records
 * (audit_record.h): "2026-11-25.audit". A day whose file reaches
 * RL__AUDIT_PART_MAX_BYTES goes on in "2026-11-25.1.audit", ".2", ...: the
 * parts of the day. Parts keep a query's work bounded: a query finds the
 * part where its instant starts by the first record of each part, so that it
 * never reads more than one part of entries before that instant. Other
 * names in the directory are not the log's and are left alone.
 *
 * Reading trusts nothing in the file: a damaged record (record_file.h) or
 * one the audit decoder refuses fails with the file and the offset; a torn
 * tail ends the part (the writer cuts it when it opens the newest part; an
 * older part can keep one when a crash came before the bytes of a write
 * that was not synced reached the disk).
 *
 * All functions are thread-safe and share no state.
 */
#ifndef RL_CORE_AUDIT_PART_H
#define RL_CORE_AUDIT_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/audit_record.h"
#include "ratelimiter/status.h"

#define RL__AUDIT_DAY_MS UINT64_C(86400000)
/* A part ends at the first record that takes it past this size. */
#define RL__AUDIT_PART_MAX_BYTES (16u << 20)
/* What a reader reads of one file at the most: a part holds
 * RL__AUDIT_PART_MAX_BYTES and one more record, anything bigger was not
 * written by this log. */
#define RL__AUDIT_PART_READ_MAX_BYTES (RL__AUDIT_PART_MAX_BYTES + (1u << 20))
/* rl__audit_part.size of a part no longer written: read it to its end. */
#define RL__AUDIT_PART_SIZE_ALL UINT64_MAX
#define RL__AUDIT_PART_NAME_SIZE 32 /* "YYYY-MM-DD.NNNNNNNNNN.audit" and a NUL */

typedef struct rl__audit_part {
    int64_t day;    /* days since 1970-01-01, UTC */
    uint32_t index; /* its place in the day: 0, 1, ... */
    uint64_t size;  /* the bytes a reader may read (what has been written), or RL__AUDIT_PART_SIZE_ALL */
} rl__audit_part;

/* The UTC day of an instant. */
static inline int64_t rl__audit_day_of(uint64_t unix_ms) { return (int64_t)(unix_ms / RL__AUDIT_DAY_MS); }

/* The part's file name ("2026-11-25.audit", "2026-11-25.3.audit"). day
 * must be a day of the years 1970..9999. */
void rl__audit_part_name(int64_t day, uint32_t index, char out[RL__AUDIT_PART_NAME_SIZE]);

/* Reads a file name written by rl__audit_part_name (exactly: a real date,
 * no leading zeros in the index); false for any other name. size is set to
 * RL__AUDIT_PART_SIZE_ALL. */
bool rl__audit_part_parse(const char *name, rl__audit_part *out);

/* Day, then index: the order of the log. */
int rl__audit_part_compare(const rl__audit_part *a, const rl__audit_part *b);

/* "dir/name", malloc'd (NULL when out of memory). */
char *rl__audit_part_path(const char *dir, int64_t day, uint32_t index);

/* The parts in dir, sorted (*out malloc'd, NULL when there are none).
 * RL_OK, RL_IO_ERROR (err names dir), RL_NO_MEMORY. */
rl_status rl__audit_parts_list(const char *dir, rl__audit_part **out, size_t *count, char *err, size_t err_size);

/* One record read back, at offset in its file, taking frame_bytes there;
 * false stops the reading (no error). */
typedef bool (*rl__audit_each_fn)(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context);

/* Reads the records of the part file at path, in order, from its start to
 * size bytes (RL__AUDIT_PART_SIZE_ALL: to its end; never more than
 * RL__AUDIT_PART_READ_MAX_BYTES). A missing file is *missing and RL_OK,
 * with nothing read (retention deleted it). RL_OK, RL_IO_ERROR (damage or
 * the file system: err names the file, and the offset for damage),
 * RL_NO_MEMORY. */
rl_status rl__audit_part_read(const char *path, uint64_t size, rl__audit_each_fn each, void *context, bool *missing,
                              char *err, size_t err_size);

/* The instant of the part's first record, reading only its first bytes.
 * false when it has none, is missing, or its start cannot be read (the
 * reading of the whole part says why). */
bool rl__audit_part_first_at(const char *path, uint64_t size, uint64_t *at_unix_ms);

#endif
