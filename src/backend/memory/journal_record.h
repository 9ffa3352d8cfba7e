/* memory/journal_record.h — the records of the memory backend's journal,
 * as bytes and back (the framing and checksums are record_file.h's).
 *
 * The journal says what changed usage, in the order it changed, with the
 * wall-clock time of each change, so that replaying it rebuilds every
 * window, budget, hold and remembered lease (journal.h says when records
 * reach the disk; memory_journal.c writes and replays them):
 *
 *   DEFINE    a definition applied (PUT): replayed through the same rules;
 *   LEASE     a decided lease: its outcome and every entry it holds, with
 *             the entry's expiry as a Unix time (a restart changes the
 *             monotonic clock); also a snapshot's way to carry a lease;
 *   COMPLETE  a Complete of an admitted lease, with its actuals, and the
 *             audit sequence after it;
 *   EXPIRE    a budget reservation refunded by its timeout, with its audit
 *             sequence: during a replay budgets time out only through these,
 *             so that every refund is in the audit log exactly once;
 *   LIMIT     a snapshot's counters of one limit (capacity enforced, a
 *             pending decrease, a budget's period and committed, totals);
 *   CURSOR    a snapshot's audit sequence and time (first in a snapshot of
 *             a journal without an audit log), and the two marks around a
 *             snapshot's state: second in the file and after its last
 *             lease (the records since the snapshot's cut follow);
 *   AUDIT_LINK the audit log the sequence numbers that follow belong to
 *             (its id, audit_id.h), with the sequence and time to go on
 *             from: written when the journal starts beside a log it was
 *             not linked to, and first in a snapshot in CURSOR's place;
 *   DELETE    a limit deleted (DELETE /v1/admin/limits/{key}): replayed
 *             through the same removal, so that neither the limit nor what
 *             it held comes back (a snapshot has no limit that is gone);
 *   TEMPLATE  a template put (PUT /v1/admin/templates), its definition keyed
 *             by its pattern; a snapshot's templates come before its limits,
 *             so that a limit made from one (a LIMIT without its DEFINE, a
 *             LEASE naming a key no DEFINE gave) is made again from it;
 *   UNTEMPLATE a template deleted, with the limits made from it.
 *
 * Every integer is little-endian, every string a 2-byte length and its
 * bytes. Each record starts with its type and the format version (1).
 * Decoding checks every length, count, enum and string against the
 * project's rules (a key, a ULID's value, a job id), so a record that
 * decodes can be applied without further checks; a definition is checked
 * by the replay with rl_limit_def_validate (which reads tzdata).
 *
 * Pure functions: thread-safe.
 */
#ifndef RL_MEMORY_JOURNAL_RECORD_H
#define RL_MEMORY_JOURNAL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

#define RL__JOURNAL_FORMAT 1u

typedef enum rl__jrec_type {
    RL__JREC_DEFINE = 1,
    RL__JREC_LEASE = 2,
    RL__JREC_COMPLETE = 3,
    RL__JREC_EXPIRE = 4,
    RL__JREC_LIMIT = 5,
    RL__JREC_CURSOR = 6,
    RL__JREC_DELETE = 7,
    RL__JREC_TEMPLATE = 8,   /* as DEFINE: define.def.key is the pattern */
    RL__JREC_UNTEMPLATE = 9, /* as DELETE: deleted.key is the pattern */
    RL__JREC_AUDIT_LINK = 10, /* as CURSOR, with the log's id */
} rl__jrec_type;

typedef struct rl__jrec_entry {
    char key[RL_KEY_MAX_LEN + 1];
    rl_kind kind;
    bool live;                     /* false: released or expired (kept for its place) */
    uint64_t amount;
    uint64_t expires_at_unix_ms;
    uint64_t period_start_unix_ms; /* budgets */
} rl__jrec_entry;

typedef struct rl__jrec_lease {
    uint64_t id_hi, id_lo;
    uint64_t at_unix_ms;        /* when it was decided */
    uint64_t forget_at_unix_ms; /* when it is forgotten */
    uint64_t fingerprint;
    bool allowed, completed;
    rl_status status;
    char status_key[RL_KEY_MAX_LEN + 1]; /* "" for none */
    uint64_t retry_after_ms;
    uint64_t denied_available, denied_capacity, denied_period_end_unix_ms;
    char job_id[RL_JOB_ID_MAX_LEN + 1];
    uint16_t entry_count;
    rl__jrec_entry entries[RL_MAX_REQUIREMENTS];
} rl__jrec_lease;

typedef struct rl__jrec_complete {
    uint64_t id_hi, id_lo;
    uint64_t at_unix_ms;
    uint64_t audit_seq_after;
    uint16_t actual_count;
    char keys[RL_MAX_REQUIREMENTS][RL_KEY_MAX_LEN + 1];
    uint64_t amounts[RL_MAX_REQUIREMENTS];
} rl__jrec_complete;

typedef struct rl__jrec_expire {
    uint64_t id_hi, id_lo;
    uint64_t at_unix_ms;
    uint16_t entry_index;
    uint64_t audit_seq;
} rl__jrec_expire;

typedef struct rl__jrec_limit {
    char key[RL_KEY_MAX_LEN + 1];
    uint64_t capacity_enforced, pending_decrease_to;
    uint64_t debt_total, overage_denied_total;
    uint64_t committed, period_start_unix_ms, period_end_unix_ms;
} rl__jrec_limit;

typedef struct rl__jrec_cursor {
    uint64_t audit_seq;
    uint64_t audit_at_unix_ms;
    uint64_t log_id_hi, log_id_lo; /* AUDIT_LINK: the audit log's id, a ULID's value */
} rl__jrec_cursor;

typedef struct rl__jrec_define {
    uint64_t at_unix_ms;
    rl_limit_def def;
} rl__jrec_define;

typedef struct rl__jrec_delete {
    uint64_t at_unix_ms;
    char key[RL_KEY_MAX_LEN + 1];
} rl__jrec_delete;

/* One decoded record: type says which member. */
typedef struct rl__jrec {
    rl__jrec_type type;
    union {
        rl__jrec_define define;
        rl__jrec_lease lease;
        rl__jrec_complete complete;
        rl__jrec_expire expire;
        rl__jrec_limit limit;
        rl__jrec_cursor cursor;
        rl__jrec_delete deleted;
    };
} rl__jrec;

/* The most bytes one encoded record takes (a lease of 32 entries with the
 * longest keys and job id). */
#define RL__JREC_MAX_BYTES                                                                      \
    (64u + 2u * (RL_KEY_MAX_LEN + 2u) + RL_JOB_ID_MAX_LEN + 2u +                              \
     RL_MAX_REQUIREMENTS * (RL_KEY_MAX_LEN + 2u + 32u) + RL_DESCRIPTION_MAX_LEN + 256u)

/* Encodes record into out (room for RL__JREC_MAX_BYTES); returns the bytes
 * written. The record must hold what decoding accepts. */
size_t rl__jrec_encode(const rl__jrec *record, unsigned char *out);

/* Decodes data[0..len) into *out: true, or false with a sentence in why. */
bool rl__jrec_decode(const unsigned char *data, size_t len, rl__jrec *out, char *why, size_t why_size);

#endif
