/* core/counter.h — private: the arithmetic of every counter the backends
 * answer with (a limit's used, committed and totals, the sums over a
 * template's limits), in its one place. (A count read only as the
 * difference of two readings, a daemon's demand for its allotments, wraps
 * instead: a difference stays right across a wrap, not past a ceiling.)
 *
 * A counter saturates at RL_COUNTER_MAX (ratelimiter/types.h), it never
 * wraps: a limit that wrapped would read as empty and admit again, and
 * overage is the client's word (an actual of 2^53 on a lease of 1), so
 * nothing but the arithmetic bounds it. Where a counter is the sum of live
 * entries (a limit's used), an entry counts only what fitted when it was
 * added (rl__counter_fit), so that taking it out again takes out exactly
 * that: what did not fit is dropped, not owed. docs/api.md "Counters" says
 * what the JSON shows. Redis's scripts keep the same rule in Lua
 * (common.lua's counter_add), with the ceiling the pool prepends to them.
 *
 * The ceiling is 2^53, the largest amount: every JSON reader and Lua's
 * doubles hold it exactly, and two counters or a counter and an amount add
 * up without overflow in 64 bits. All functions are pure and thread-safe.
 */
#ifndef RL_CORE_COUNTER_H
#define RL_CORE_COUNTER_H

#include <stdint.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/types.h"

/* counter + amount, or RL_COUNTER_MAX if that is more (any inputs). */
static inline uint64_t rl__counter_add(uint64_t counter, uint64_t amount) {
    if (counter >= RL_COUNTER_MAX || amount >= RL_COUNTER_MAX - counter) return RL_COUNTER_MAX;
    return counter + amount;
}

/* Of amount, what can still be added to counter without passing the
 * ceiling: what an entry added now counts. */
static inline uint64_t rl__counter_fit(uint64_t counter, uint64_t amount) {
    uint64_t room = counter < RL_COUNTER_MAX ? RL_COUNTER_MAX - counter : 0;
    return amount < room ? amount : room;
}

/* Of extra units charged on top of used, the part above capacity: what
 * overage adds to a limit's debt_total (used + extra need not fit in a
 * counter: used and extra are each at most 2^53). */
static inline uint64_t rl__counter_above(uint64_t used, uint64_t extra, uint64_t capacity) {
    uint64_t above_before = used > capacity ? used - capacity : 0;
    uint64_t above_after = used + extra > capacity ? used + extra - capacity : 0;
    return above_after - above_before;
}

/* One more limit made from a template into its sums: its capacity
 * enforced, used, and a budget's committed and reserved (0 for other
 * kinds); available and debt follow from capacity and used as a limit's
 * usage says them. Each sum saturates: a million limits of 2^53 do not
 * wrap. */
static inline void rl__template_usage_add(rl_template_usage *sums, uint64_t capacity, uint64_t used,
                                          uint64_t committed, uint64_t reserved) {
    sums->limits++;
    sums->capacity = rl__counter_add(sums->capacity, capacity);
    sums->used = rl__counter_add(sums->used, used);
    sums->available = rl__counter_add(sums->available, used < capacity ? capacity - used : 0);
    sums->debt = rl__counter_add(sums->debt, used > capacity ? used - capacity : 0);
    sums->committed = rl__counter_add(sums->committed, committed);
    sums->reserved = rl__counter_add(sums->reserved, reserved);
}

#endif
