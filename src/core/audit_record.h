/* core/audit_record.h — private: one entry of the audit log of spend
 * (rl_audit_entry, ratelimiter/types.h) as the bytes of one record of a
 * record file (record_file.h), with the log's sequence number.
 *
 * Layout, version 1, integers little-endian, no padding:
 *
 *   offset  bytes  field
 *        0      1  version (1)
 *        1      1  flags: bit 0 expired; bit 1 opens a group (below);
 *                   the others 0
 *        2      1  job_id length, 0..RL_JOB_ID_MAX_LEN
 *        3      2  key length, 1..RL_KEY_MAX_LEN
 *        5      8  seq (>= 1)
 *       13      8  at_unix_ms
 *       21      8  reserved
 *       29      8  actual
 *       37      8  period_start_unix_ms
 *       45     26  lease_id, a ULID in upper case
 *       71      -  key, then job_id (no NULs)
 *
 * A group is the entries one flush of the memory backend's journal writes
 * (journal.h); its first entry opens it when the journal held every entry
 * before it. At start, entries above the journal's sequence that begin
 * with such an entry and hold no later one are that last group, whose
 * journal records the crash cut: never acknowledged (audit_log.h).
 *
 * The file is read back after crashes and by other versions, so the
 * decoder trusts nothing: a record is exactly its fields' length; the key
 * follows the project's key rule (rl_key_is_valid); the lease id is 26
 * Crockford base32 characters in the canonical upper case (what the writer
 * writes: one text per lease); job_id is bytes other than NUL (it was
 * checked as UTF-8 on the way in, but a stricter rule here would make an
 * old file unreadable if that rule ever changed); amounts are at most
 * RL_AMOUNT_MAX and instants before the year 10000 (a JSON double holds
 * them exactly, and a day file's name has four digits of year); an expired
 * entry has actual 0. Encoding then decoding gives back the same bytes.
 *
 * All functions are pure and thread-safe.
 */
#ifndef RL_CORE_AUDIT_RECORD_H
#define RL_CORE_AUDIT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

#define RL__AUDIT_RECORD_VERSION 1u
#define RL__AUDIT_RECORD_FIXED_BYTES 71u
#define RL__AUDIT_RECORD_MAX_BYTES (RL__AUDIT_RECORD_FIXED_BYTES + RL_KEY_MAX_LEN + RL_JOB_ID_MAX_LEN)
/* 10000-01-01T00:00:00Z: every instant in a record is before it. */
#define RL__AUDIT_INSTANT_END_MS UINT64_C(253402300800000)

/* A decoded record, pointing into the record's bytes (valid while they are). */
typedef struct rl__audit_view {
    const unsigned char *record; /* the record itself, record_len bytes */
    size_t record_len;
    uint64_t seq;
    uint64_t at_unix_ms;
    uint64_t reserved;
    uint64_t actual;
    uint64_t period_start_unix_ms;
    bool expired;
    bool opens_group;
    const char *lease_id; /* RL_ULID_LEN characters, not NUL-terminated */
    const char *key;
    size_t key_len;
    const char *job_id;
    size_t job_id_len;
} rl__audit_view;

/* Writes entry with seq into out (RL__AUDIT_RECORD_MAX_BYTES) and returns
 * its length; the lease id is written in upper case. 0 when the entry or
 * seq breaks a rule above (then *why, if why is not NULL, says which). */
size_t rl__audit_record_encode(unsigned char *out, uint64_t seq, const rl_audit_entry *entry, const char **why);

/* Marks an encoded record as the one that opens its group. */
void rl__audit_record_open_group(unsigned char *record);

/* Reads record[0..len) into *out. false, with a static phrase in *why
 * (why may be NULL), when it is not a valid version-1 record; *out is then
 * unspecified. */
bool rl__audit_record_decode(const unsigned char *record, size_t len, rl__audit_view *out, const char **why);

/* The view as an entry: strings copied and NUL-terminated. */
void rl__audit_view_to_entry(const rl__audit_view *view, rl_audit_entry *out);

/* True if the view's key is key[0..key_len). */
bool rl__audit_view_has_key(const rl__audit_view *view, const char *key, size_t key_len);

#endif
