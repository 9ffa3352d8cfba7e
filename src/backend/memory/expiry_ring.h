/* memory/expiry_ring.h — a FIFO of rolling reservations in expiry order.
 *
 * Every reservation of a rolling limit lives for the same window, and time
 * only moves forward, so they expire in the order they were made: a ring
 * (push at the tail, expire from the head) replaces a heap, with O(1) work
 * and sequential memory instead of O(log n) cache misses. A slot carries the
 * amount itself, so expiring never touches the reservation it stands for.
 * The rare entry that leaves early (Complete with actual 0) becomes a
 * tombstone (amount 0), addressed by the sequence number it was given. The caller keeps expiries
 * non-decreasing (see rl__expiry_ring_tail_ms). Not thread-safe.
 */
#ifndef RL_MEMORY_EXPIRY_RING_H
#define RL_MEMORY_EXPIRY_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rl_expiry_slot {
    uint64_t at_ms;
    uint64_t amount; /* 0: a tombstone */
} rl_expiry_slot;

/* A ring's first slots are in the ring itself: most limits (a million
 * tenants' made from a template) hold a reservation or two, and a block of
 * their own that small would be one of glibc's fastbin blocks, which keep
 * the free memory around them from being given back (limit.h:
 * rl__mem_limit_table_add_made). A ring is not moved once it holds them. */
#define RL_EXPIRY_RING_FIRST_SLOTS 2u

typedef struct rl_expiry_ring {
    rl_expiry_slot *slots; /* first_slots, or a block of its own once more are queued */
    uint64_t mask;     /* capacity - 1, capacity a power of two (0 when empty) */
    uint64_t head_seq; /* sequence number of the oldest slot */
    uint64_t tail_seq; /* sequence number the next push gets */
    uint64_t live;     /* slots that are not tombstones */
    rl_expiry_slot first_slots[RL_EXPIRY_RING_FIRST_SLOTS];
} rl_expiry_ring;

void rl__expiry_ring_init(rl_expiry_ring *ring);
void rl__expiry_ring_free(rl_expiry_ring *ring);

/* Makes room so that the next push cannot fail; false on allocation failure. */
bool rl__expiry_ring_reserve_one(rl_expiry_ring *ring);

/* The latest expiry queued (0 if empty): a push must not go below it. */
uint64_t rl__expiry_ring_tail_ms(const rl_expiry_ring *ring);

/* Appends amount (>= 1) expiring at at_ms (>= tail). Room must have been
 * reserved. Returns the slot's sequence number. */
uint64_t rl__expiry_ring_push(rl_expiry_ring *ring, uint64_t amount, uint64_t at_ms);

/* The three above inline, as every admitted reservation asks them (the
 * functions are the same, for callers elsewhere): room is only made when
 * the ring is full. */
static inline bool rl_expiry_ring_reserve_one(rl_expiry_ring *ring) {
    if (ring->slots != NULL && ring->tail_seq - ring->head_seq <= ring->mask) return true;
    return rl__expiry_ring_reserve_one(ring);
}

static inline uint64_t rl_expiry_ring_tail_ms(const rl_expiry_ring *ring) {
    if (ring->tail_seq == ring->head_seq) return 0;
    return ring->slots[(ring->tail_seq - 1) & ring->mask].at_ms;
}

static inline uint64_t rl_expiry_ring_push(rl_expiry_ring *ring, uint64_t amount, uint64_t at_ms) {
    uint64_t seq = ring->tail_seq++;
    rl_expiry_slot *slot = &ring->slots[seq & ring->mask];
    slot->at_ms = at_ms;
    slot->amount = amount;
    ring->live++;
    return seq;
}

/* True while the slot of seq has neither expired out nor been removed. */
static inline bool rl_expiry_ring_holds(const rl_expiry_ring *ring, uint64_t seq);

/* Turns a held slot into a tombstone. */
void rl__expiry_ring_remove(rl_expiry_ring *ring, uint64_t seq);

/* The oldest live slot, dropping tombstones in front of it; NULL if none. */
const rl_expiry_slot *rl__expiry_ring_front(rl_expiry_ring *ring);

/* Drops the front slot (after rl__expiry_ring_front returned it). */
void rl__expiry_ring_pop(rl_expiry_ring *ring);

/* rl__expiry_ring_front without a call when the oldest slot is live (or
 * the ring empty), as it mostly is: a limit is expired on every reserve
 * and Complete that names it. */
static inline const rl_expiry_slot *rl_expiry_ring_front(rl_expiry_ring *ring) {
    if (ring->head_seq == ring->tail_seq) return NULL;
    const rl_expiry_slot *slot = &ring->slots[ring->head_seq & ring->mask];
    return slot->amount != 0 ? slot : rl__expiry_ring_front(ring);
}

/* The slot at a sequence number in [head_seq, tail_seq). */
static inline rl_expiry_slot *rl_expiry_ring_at(const rl_expiry_ring *ring, uint64_t seq) {
    return &ring->slots[seq & ring->mask];
}

static inline bool rl_expiry_ring_holds(const rl_expiry_ring *ring, uint64_t seq) {
    return seq >= ring->head_seq && seq < ring->tail_seq && rl_expiry_ring_at(ring, seq)->amount != 0;
}

#endif
