/* memory/due_queue.h — leases in the order they are due to be forgotten.
 *
 * A lease is due its longest lifetime (window or hold timeout, plus the lease
 * memory) after it was decided. Leases with the same lifetime fall due in the
 * order they were made, so each distinct lifetime gets a FIFO ring: push at
 * the tail, take from the front, O(1) and sequential in memory. There are
 * only as many lifetimes as distinct windows in the limits (a handful), so a
 * few rings cover them; anything beyond goes to a heap. The next due lease is
 * the earliest of the ring fronts and the heap top. Not thread-safe.
 */
#ifndef RL_MEMORY_DUE_QUEUE_H
#define RL_MEMORY_DUE_QUEUE_H

#include "backend/memory/due_heap.h"

#define RL_DUE_QUEUE_RINGS 8

typedef struct rl_due_ring {
    uint64_t lifetime_ms; /* what every slot's at_ms is, minus when it was pushed */
    rl_due_slot *slots;
    uint64_t mask; /* capacity - 1; capacity a power of two, 0 slots when NULL */
    uint64_t head, tail;
} rl_due_ring;

typedef struct rl_due_queue {
    rl_due_ring rings[RL_DUE_QUEUE_RINGS];
    int rings_used; /* rings[0..rings_used) have ever held a lifetime: the rest need no look */
    rl_due_heap overflow;
} rl_due_queue;

void rl__due_queue_init(rl_due_queue *queue);
void rl__due_queue_free(rl_due_queue *queue);

/* Makes room for one item of this lifetime, so that the next push of it
 * cannot fail. False on allocation failure. */
bool rl__due_queue_reserve_one(rl_due_queue *queue, uint64_t lifetime_ms);

/* Queues item, due at now_ms + lifetime_ms. now_ms must not go back between
 * pushes. Room must have been reserved for this lifetime. */
void rl__due_queue_push(rl_due_queue *queue, void *item, uint64_t hash, uint64_t now_ms, uint64_t lifetime_ms);

/* The item due first, or NULL when empty. */
const rl_due_slot *rl__due_queue_top(const rl_due_queue *queue);

/* Removes the item rl__due_queue_top returned. */
void rl__due_queue_pop(rl_due_queue *queue);

/* The items that can leave without waiting for others: the front of each
 * ring and the heap's top, index 0..RL_DUE_QUEUE_FRONTS-1 (NULL for an empty
 * one). rl__due_queue_top is the earliest of them; a caller that must take
 * one out early (and cannot take the top) looks at the others. */
#define RL_DUE_QUEUE_FRONTS (RL_DUE_QUEUE_RINGS + 1)
const rl_due_slot *rl__due_queue_front(const rl_due_queue *queue, int index);

/* Removes the item rl__due_queue_front(queue, index) returned. */
void rl__due_queue_pop_front(rl_due_queue *queue, int index);

/* The item n places after front (the front of a ring, as rl__due_queue_top
 * or rl__due_queue_front gave it) in its ring, due no earlier, or NULL
 * (fewer items, or front the heap's): for a caller that takes items out in
 * order and asks for their memory ahead of time. */
const rl_due_slot *rl__due_queue_after(const rl_due_queue *queue, const rl_due_slot *front, uint64_t n);

/* Frees the slots of every empty ring and of an empty heap (each takes
 * them again at its next push): for when the load has fallen. */
void rl__due_queue_shed(rl_due_queue *queue);

#endif
