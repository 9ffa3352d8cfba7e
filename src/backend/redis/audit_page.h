/* redis/audit_page.h — a page of a limit's audit log as Redis answers it
 * (lua/audit_page.lua: XRANGE of its stream, lua/audit.lua), read into an
 * rl_audit_page. Redis's answers are input like any other (a hand edit,
 * another build's entries): whatever is not an entry audit.lua writes is
 * refused, never half read. Pure; thread-safe.
 */
#ifndef RL_REDIS_AUDIT_PAGE_H
#define RL_REDIS_AUDIT_PAGE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "ratelimiter/types.h"

/* reply: XRANGE's answer for key from since_unix_ms on, asked with COUNT
 * limit + 1 (limit 1..RL_AUDIT_QUERY_MAX), so that a page cut inside one
 * millisecond shows. Fills page->entries (the caller's, room for limit),
 * page->count and page->next_since_unix_ms as rl_audit_page says, the
 * key copied into each entry: at most limit entries, oldest first; when
 * more follow in the same millisecond as the last, the page ends before
 * that millisecond (so that the next page, from its start, misses none),
 * unless that millisecond is all the page has: then its first limit
 * entries, and the next page starts at since_unix_ms again. False (count 0,
 * next = since) if the answer is not such an XRANGE answer: an entry
 * without l, j, r, a, p or x, an id that is not ms-seq, a lease id that is
 * no ULID, a job id the wire would refuse, an amount above RL_AMOUNT_MAX,
 * entries out of order or before since. */
bool rl__redis_audit_page_read(const redisReply *reply, const char *key, uint64_t since_unix_ms, uint32_t limit,
                               rl_audit_page *page);

#endif
