/* heap.c — intrusive binary min-heap (see heap.h). */
#include "backend/memory/heap.h"

#include <stdlib.h>

void rl__heap_init(rl_heap *heap) {
    heap->nodes = NULL;
    heap->count = 0;
    heap->capacity = 0;
}

void rl__heap_free(rl_heap *heap) {
    free(heap->nodes);
    rl__heap_init(heap);
}

bool rl__heap_reserve_one(rl_heap *heap) {
    if (heap->count < heap->capacity) return true;
    if (heap->capacity >= UINT32_MAX / 2) return false;
    uint32_t capacity = heap->capacity == 0 ? 16 : heap->capacity * 2;
    rl_heap_node **nodes = realloc(heap->nodes, (size_t)capacity * sizeof *nodes);
    if (nodes == NULL) return false;
    heap->nodes = nodes;
    heap->capacity = capacity;
    return true;
}

static inline void place(rl_heap *heap, uint32_t index, rl_heap_node *node) {
    heap->nodes[index] = node;
    node->index = index;
}

static void sift_up(rl_heap *heap, uint32_t index) {
    rl_heap_node *node = heap->nodes[index];
    while (index > 0) {
        uint32_t parent = (index - 1) / 2;
        if (heap->nodes[parent]->at_ms <= node->at_ms) break;
        place(heap, index, heap->nodes[parent]);
        index = parent;
    }
    place(heap, index, node);
}

static void sift_down(rl_heap *heap, uint32_t index) {
    rl_heap_node *node = heap->nodes[index];
    for (;;) {
        uint32_t child = 2 * index + 1;
        if (child >= heap->count) break;
        if (child + 1 < heap->count && heap->nodes[child + 1]->at_ms < heap->nodes[child]->at_ms)
            child++;
        if (node->at_ms <= heap->nodes[child]->at_ms) break;
        place(heap, index, heap->nodes[child]);
        index = child;
    }
    place(heap, index, node);
}

bool rl__heap_push(rl_heap *heap, rl_heap_node *node) {
    if (!rl__heap_reserve_one(heap)) return false;
    place(heap, heap->count++, node);
    sift_up(heap, node->index);
    return true;
}

void rl__heap_remove(rl_heap *heap, rl_heap_node *node) {
    uint32_t index = node->index;
    node->index = RL_HEAP_NOT_QUEUED;
    rl_heap_node *last = heap->nodes[--heap->count];
    if (index == heap->count) return; /* it was the last one */
    place(heap, index, last);
    if (index > 0 && heap->nodes[(index - 1) / 2]->at_ms > last->at_ms)
        sift_up(heap, index);
    else
        sift_down(heap, index);
}

/* The walk keeps a second, small min-heap of candidate indices: the children
 * of every visited node are the only nodes that can come next. */
static bool scratch_push(const rl_heap *heap, uint32_t **scratch, uint32_t *capacity,
                         uint32_t *count, uint32_t index) {
    if (*count == *capacity) {
        uint32_t grown = *capacity == 0 ? 64 : *capacity * 2;
        uint32_t *bigger = realloc(*scratch, (size_t)grown * sizeof *bigger);
        if (bigger == NULL) return false;
        *scratch = bigger;
        *capacity = grown;
    }
    uint32_t *items = *scratch;
    uint32_t at = (*count)++;
    while (at > 0) {
        uint32_t parent = (at - 1) / 2;
        if (heap->nodes[items[parent]]->at_ms <= heap->nodes[index]->at_ms) break;
        items[at] = items[parent];
        at = parent;
    }
    items[at] = index;
    return true;
}

static uint32_t scratch_pop(const rl_heap *heap, uint32_t *items, uint32_t *count) {
    uint32_t top = items[0];
    uint32_t last = items[--(*count)];
    uint32_t at = 0;
    for (;;) {
        uint32_t child = 2 * at + 1;
        if (child >= *count) break;
        if (child + 1 < *count && heap->nodes[items[child + 1]]->at_ms < heap->nodes[items[child]]->at_ms)
            child++;
        if (heap->nodes[last]->at_ms <= heap->nodes[items[child]]->at_ms) break;
        items[at] = items[child];
        at = child;
    }
    if (*count > 0) items[at] = last;
    return top;
}

const rl_heap_node *rl__heap_walk(const rl_heap *heap, rl_heap_visit_fn visit, void *context,
                                  uint32_t **scratch, uint32_t *scratch_capacity) {
    uint32_t count = 0;
    if (heap->count == 0 || !scratch_push(heap, scratch, scratch_capacity, &count, 0)) return NULL;
    while (count > 0) {
        uint32_t index = scratch_pop(heap, *scratch, &count);
        const rl_heap_node *node = heap->nodes[index];
        if (visit(node, context)) return node;
        for (uint32_t child = 2 * index + 1; child <= 2 * index + 2 && child < heap->count; child++) {
            /* On allocation failure, stop early: the caller treats a walk
             * that found nothing as "retry at the latest expiry". */
            if (!scratch_push(heap, scratch, scratch_capacity, &count, child)) return NULL;
        }
    }
    return NULL;
}
