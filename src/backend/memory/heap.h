/* memory/heap.h — an intrusive binary min-heap keyed by a time in ms.
 *
 * Nodes live inside the structures they order (reservations, leases), so a
 * node can be removed from the middle in O(log n) through its index: that is
 * what Complete needs to release a concurrency hold early. Not thread-safe:
 * the memory backend's mutex guards every heap.
 */
#ifndef RL_MEMORY_HEAP_H
#define RL_MEMORY_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RL_HEAP_NOT_QUEUED UINT32_MAX

typedef struct rl_heap_node {
    uint64_t at_ms;  /* the key: an expiry on the monotonic clock */
    uint32_t index;  /* position in the heap, RL_HEAP_NOT_QUEUED when out */
} rl_heap_node;

typedef struct rl_heap {
    rl_heap_node **nodes;
    uint32_t count;
    uint32_t capacity;
} rl_heap;

void rl__heap_init(rl_heap *heap);
void rl__heap_free(rl_heap *heap); /* frees the array, not the nodes */

/* Makes room for one more node so that the next push cannot fail.
 * Returns false on allocation failure (the heap is unchanged). */
bool rl__heap_reserve_one(rl_heap *heap);

/* Inserts node (not already queued). Returns false on allocation failure. */
bool rl__heap_push(rl_heap *heap, rl_heap_node *node);

static inline rl_heap_node *rl_heap_top(const rl_heap *heap) {
    return heap->count > 0 ? heap->nodes[0] : NULL;
}

/* Removes a queued node from anywhere in the heap. */
void rl__heap_remove(rl_heap *heap, rl_heap_node *node);

/* Visits nodes in ascending at_ms order, best-first without modifying the
 * heap, until visit returns true; returns the node that stopped the walk, or
 * NULL if all were visited. scratch is a caller-kept index buffer (grown as
 * needed, free with free()). Costs O(k log k) for the k nodes visited. */
typedef bool (*rl_heap_visit_fn)(const rl_heap_node *node, void *context);
const rl_heap_node *rl__heap_walk(const rl_heap *heap, rl_heap_visit_fn visit, void *context,
                                  uint32_t **scratch, uint32_t *scratch_capacity);

#endif
