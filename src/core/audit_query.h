/* core/audit_query.h — private: a query of the audit log (rl_audit_query,
 * ratelimiter/types.h) over its files, as a list of parts (audit_part.h)
 * taken from the log at one moment.
 *
 * What a page holds: key's entries with at_unix_ms >= since, in file order
 * (time order: the writer appends with at non-decreasing), at most limit,
 * from the part where since starts: the last part of since's day whose
 * first entry is before since (no part of entries before since is read
 * beyond that one), then every later part.
 *
 * Where the next page starts (next_since_unix_ms), so that paging by it
 * loses nothing:
 *   - entries returned: the last one's at + 1. A page never ends inside a
 *     millisecond that may hold more of key's entries: unless the scan saw
 *     a record of a later millisecond after the page's last entry, that
 *     entry's millisecond is left out of the page (it comes whole in the
 *     next one). That is the case when the page is full and the next of
 *     key's entries is of the same millisecond, when the scan stopped at
 *     its bound, and at the end of what has been flushed, where the writer
 *     may still add to the newest millisecond. The one exception: when the
 *     page holds nothing but that millisecond, it is returned, and entries
 *     of it that the page could not hold (more than limit of them), or that
 *     were flushed after the query, are not in any page: ask with a limit
 *     above what a key can spend in one millisecond.
 *   - none returned: since, "ask again later"; or, when the scan stopped at
 *     its bound, the at + 1 of the last record it looked at (every record
 *     of that millisecond was looked at), so that the next query goes on
 *     from there.
 *
 * The bound: one query looks at RL__AUDIT_QUERY_SCAN_MAX_BYTES of records
 * (the frames of every key's entries, those before since included), and
 * then at the rest of the millisecond it is in; it reads the files one at a
 * time, each whole up to what the list says was written (at most
 * RL__AUDIT_PART_READ_MAX_BYTES of memory). Since a part holds less than
 * the bound, a query always gets past since's part: paging never stalls.
 *
 * Thread-safe: reads files only, shares nothing. A part deleted meanwhile
 * (retention) is skipped.
 */
#ifndef RL_CORE_AUDIT_QUERY_H
#define RL_CORE_AUDIT_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "core/audit_part.h"
#include "ratelimiter/status.h"
#include "ratelimiter/types.h"

#define RL__AUDIT_QUERY_SCAN_MAX_BYTES (64u << 20)

/* Checks query and page: a valid key, limit 1..RL_AUDIT_QUERY_MAX, room
 * for the entries. RL_OK or RL_INVALID_REQUEST with a sentence in err. */
rl_status rl__audit_query_check(const rl_audit_query *query, const rl_audit_page *page, char *err, size_t err_size);

/* Runs a checked query over parts[0..count) (sorted; parts of days before
 * since's are passed over) in dir, listing no entry at or after
 * before_unix_ms: the caller's promise that every entry before it has been
 * flushed, so that the end of the data ends no millisecond early
 * (UINT64_MAX: no such promise, the rules above). RL_OK, RL_IO_ERROR (a damaged file: err
 * names it and the offset; or the file system), RL_NO_MEMORY; page->count
 * is 0 on failure. */
rl_status rl__audit_query_run(const char *dir, const rl__audit_part *parts, size_t count, const rl_audit_query *query,
                              uint64_t before_unix_ms, rl_audit_page *page, char *err, size_t err_size);

#endif
