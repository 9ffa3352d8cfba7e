/* due_queue.c — FIFO rings per lifetime, a heap for the rest (see due_queue.h). */
#include "backend/memory/due_queue.h"

#include "backend/memory/pages.h"

void rl__due_queue_init(rl_due_queue *queue) {
    for (int r = 0; r < RL_DUE_QUEUE_RINGS; r++)
        queue->rings[r] = (rl_due_ring){0, NULL, 0, 0, 0};
    queue->rings_used = 0;
    rl__due_heap_init(&queue->overflow);
}

/* A ring's slots, as pages.h has them (its capacity is mask + 1). */
static void ring_slots_free(rl_due_ring *ring) {
    rl__mem_pages_free(ring->slots, (ring->mask + 1) * sizeof *ring->slots);
}

void rl__due_queue_free(rl_due_queue *queue) {
    for (int r = 0; r < RL_DUE_QUEUE_RINGS; r++) ring_slots_free(&queue->rings[r]);
    rl__due_heap_free(&queue->overflow);
    rl__due_queue_init(queue);
}

static inline bool ring_empty(const rl_due_ring *ring) { return ring->head == ring->tail; }

/* The ring of this lifetime; else an empty ring, re-keyed to it (lifetimes
 * change only when definitions do); else NULL: the heap takes it. */
static rl_due_ring *ring_for(rl_due_queue *queue, uint64_t lifetime_ms) {
    rl_due_ring *spare = NULL;
    for (int r = 0; r < queue->rings_used; r++) {
        rl_due_ring *ring = &queue->rings[r];
        if (ring->lifetime_ms == lifetime_ms) return ring;
        if (spare == NULL && ring_empty(ring)) spare = ring;
    }
    if (spare == NULL && queue->rings_used < RL_DUE_QUEUE_RINGS) spare = &queue->rings[queue->rings_used++];
    if (spare != NULL) spare->lifetime_ms = lifetime_ms;
    return spare;
}

static bool ring_resize(rl_due_ring *ring, uint64_t capacity) {
    rl_due_slot *slots = rl__mem_pages_alloc(capacity * sizeof *slots);
    if (slots == NULL) return false;
    for (uint64_t i = ring->head; i < ring->tail; i++) slots[i & (capacity - 1)] = ring->slots[i & ring->mask];
    ring_slots_free(ring);
    ring->slots = slots;
    ring->mask = capacity - 1;
    return true;
}

bool rl__due_queue_reserve_one(rl_due_queue *queue, uint64_t lifetime_ms) {
    rl_due_ring *ring = ring_for(queue, lifetime_ms);
    if (ring == NULL) return rl__due_heap_reserve_one(&queue->overflow);
    uint64_t capacity = ring->slots == NULL ? 0 : ring->mask + 1;
    if (ring->tail - ring->head < capacity) return true;
    return ring_resize(ring, capacity == 0 ? 1024 : capacity * 2);
}

void rl__due_queue_push(rl_due_queue *queue, void *item, uint64_t hash, uint64_t now_ms, uint64_t lifetime_ms) {
    uint64_t at_ms = now_ms + lifetime_ms;
    rl_due_ring *ring = ring_for(queue, lifetime_ms);
    if (ring == NULL) {
        rl__due_heap_push(&queue->overflow, item, hash, at_ms);
        return;
    }
    ring->slots[ring->tail++ & ring->mask] = (rl_due_slot){at_ms, item, hash};
}

const rl_due_slot *rl__due_queue_top(const rl_due_queue *queue) {
    const rl_due_slot *top = rl_due_heap_top(&queue->overflow);
    for (int r = 0; r < queue->rings_used; r++) {
        const rl_due_ring *ring = &queue->rings[r];
        if (ring_empty(ring)) continue;
        const rl_due_slot *front = &ring->slots[ring->head & ring->mask];
        if (top == NULL || front->at_ms < top->at_ms) top = front;
    }
    return top;
}

static void ring_pop(rl_due_ring *ring) {
    ring->head++;
    uint64_t capacity = ring->mask + 1;
    if (capacity > 4096 && ring->tail - ring->head < capacity / 8) ring_resize(ring, capacity / 4);
}

void rl__due_queue_pop(rl_due_queue *queue) {
    const rl_due_slot *top = rl__due_queue_top(queue);
    for (int r = 0; r < queue->rings_used; r++) {
        rl_due_ring *ring = &queue->rings[r];
        if (!ring_empty(ring) && top == &ring->slots[ring->head & ring->mask]) {
            ring_pop(ring);
            return;
        }
    }
    rl__due_heap_pop(&queue->overflow);
}

const rl_due_slot *rl__due_queue_front(const rl_due_queue *queue, int index) {
    if (index == RL_DUE_QUEUE_RINGS) return rl_due_heap_top(&queue->overflow);
    if (index < 0 || index >= queue->rings_used) return NULL;
    const rl_due_ring *ring = &queue->rings[index];
    return ring_empty(ring) ? NULL : &ring->slots[ring->head & ring->mask];
}

void rl__due_queue_pop_front(rl_due_queue *queue, int index) {
    if (index == RL_DUE_QUEUE_RINGS) rl__due_heap_pop(&queue->overflow);
    else ring_pop(&queue->rings[index]);
}

const rl_due_slot *rl__due_queue_after(const rl_due_queue *queue, const rl_due_slot *front, uint64_t n) {
    for (int r = 0; r < queue->rings_used; r++) {
        const rl_due_ring *ring = &queue->rings[r];
        if (ring_empty(ring) || front != &ring->slots[ring->head & ring->mask]) continue;
        return ring->tail - ring->head > n ? &ring->slots[(ring->head + n) & ring->mask] : NULL;
    }
    return NULL;
}

void rl__due_queue_shed(rl_due_queue *queue) {
    for (int r = 0; r < queue->rings_used; r++) {
        rl_due_ring *ring = &queue->rings[r];
        if (!ring_empty(ring) || ring->slots == NULL) continue;
        ring_slots_free(ring);
        ring->slots = NULL;
        ring->mask = 0;
    }
    if (queue->overflow.count == 0) rl__due_heap_free(&queue->overflow);
}
