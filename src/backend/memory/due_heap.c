/* due_heap.c — array min-heap of due times (see due_heap.h). */
#include "backend/memory/due_heap.h"

#include <string.h>

#include "backend/memory/pages.h"

void rl__due_heap_init(rl_due_heap *heap) {
    heap->slots = NULL;
    heap->count = 0;
    heap->capacity = 0;
}

void rl__due_heap_free(rl_due_heap *heap) {
    rl__mem_pages_free(heap->slots, heap->capacity * sizeof *heap->slots);
    rl__due_heap_init(heap);
}

/* Moves the slots to an array of capacity (>= count); false on allocation
 * failure (nothing changed). */
static bool resize(rl_due_heap *heap, uint64_t capacity) {
    rl_due_slot *slots = rl__mem_pages_alloc(capacity * sizeof *slots);
    if (slots == NULL) return false;
    if (heap->count > 0) memcpy(slots, heap->slots, heap->count * sizeof *slots);
    rl__mem_pages_free(heap->slots, heap->capacity * sizeof *heap->slots);
    heap->slots = slots;
    heap->capacity = capacity;
    return true;
}

bool rl__due_heap_reserve_one(rl_due_heap *heap) {
    if (heap->count < heap->capacity) return true;
    return resize(heap, heap->capacity == 0 ? 1024 : heap->capacity * 2);
}

void rl__due_heap_push(rl_due_heap *heap, void *item, uint64_t hash, uint64_t at_ms) {
    uint64_t at = heap->count++;
    while (at > 0) {
        uint64_t parent = (at - 1) / 2;
        if (heap->slots[parent].at_ms <= at_ms) break;
        heap->slots[at] = heap->slots[parent];
        at = parent;
    }
    heap->slots[at] = (rl_due_slot){at_ms, item, hash};
}

void rl__due_heap_pop(rl_due_heap *heap) {
    rl_due_slot last = heap->slots[--heap->count];
    uint64_t at = 0;
    for (;;) {
        uint64_t child = 2 * at + 1;
        if (child >= heap->count) break;
        if (child + 1 < heap->count && heap->slots[child + 1].at_ms < heap->slots[child].at_ms) child++;
        if (last.at_ms <= heap->slots[child].at_ms) break;
        heap->slots[at] = heap->slots[child];
        at = child;
    }
    if (heap->count > 0) heap->slots[at] = last;
    /* Give memory back after a burst (on allocation failure, later). */
    if (heap->capacity > 4096 && heap->count < heap->capacity / 8) (void)resize(heap, heap->capacity / 4);
}
