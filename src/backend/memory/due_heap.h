/* memory/due_heap.h — a min-heap of (due time, item) kept in one array.
 *
 * For leases, which only ever leave from the top (due or evicted first): no
 * back-index in the items, so a pop touches the array alone. Not thread-safe.
 */
#ifndef RL_MEMORY_DUE_HEAP_H
#define RL_MEMORY_DUE_HEAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rl_due_slot {
    uint64_t at_ms;
    void *item;
    uint64_t hash; /* the item's, carried so that its index slot can be prefetched */
} rl_due_slot;

typedef struct rl_due_heap {
    rl_due_slot *slots;
    uint64_t count;
    uint64_t capacity;
} rl_due_heap;

void rl__due_heap_init(rl_due_heap *heap);
void rl__due_heap_free(rl_due_heap *heap);
bool rl__due_heap_reserve_one(rl_due_heap *heap); /* false on allocation failure */
void rl__due_heap_push(rl_due_heap *heap, void *item, uint64_t hash, uint64_t at_ms); /* room reserved */
static inline const rl_due_slot *rl_due_heap_top(const rl_due_heap *heap) {
    return heap->count > 0 ? &heap->slots[0] : 0;
}
void rl__due_heap_pop(rl_due_heap *heap);

#endif
