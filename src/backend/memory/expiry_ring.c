/* expiry_ring.c — FIFO of rolling reservations (see expiry_ring.h). */
#include "backend/memory/expiry_ring.h"

#include "backend/memory/pages.h"

void rl__expiry_ring_init(rl_expiry_ring *ring) {
    ring->slots = NULL;
    ring->mask = 0;
    ring->head_seq = 0;
    ring->tail_seq = 0;
    ring->live = 0;
}

static uint64_t capacity_of(const rl_expiry_ring *ring) { return ring->slots == NULL ? 0 : ring->mask + 1; }

/* Frees the ring's slots unless they are its first ones. */
static void slots_free(rl_expiry_ring *ring) {
    if (ring->slots != ring->first_slots) rl__mem_pages_free(ring->slots, capacity_of(ring) * sizeof *ring->slots);
}

void rl__expiry_ring_free(rl_expiry_ring *ring) {
    slots_free(ring);
    rl__expiry_ring_init(ring);
}

/* Re-homes every queued slot: a slot's place is its sequence number modulo
 * the capacity, so sequence numbers stay valid across a resize. */
static bool resize(rl_expiry_ring *ring, uint64_t capacity) {
    rl_expiry_slot *slots = capacity == RL_EXPIRY_RING_FIRST_SLOTS ? ring->first_slots
                                                                   : rl__mem_pages_alloc(capacity * sizeof *slots);
    if (slots == NULL) return false;
    for (uint64_t seq = ring->head_seq; seq < ring->tail_seq; seq++)
        slots[seq & (capacity - 1)] = ring->slots[seq & ring->mask];
    slots_free(ring);
    ring->slots = slots;
    ring->mask = capacity - 1;
    return true;
}

bool rl__expiry_ring_reserve_one(rl_expiry_ring *ring) {
    uint64_t queued = ring->tail_seq - ring->head_seq;
    uint64_t capacity = capacity_of(ring);
    if (queued < capacity) return true;
    return resize(ring, capacity == 0 ? RL_EXPIRY_RING_FIRST_SLOTS : capacity * 2);
}

uint64_t rl__expiry_ring_tail_ms(const rl_expiry_ring *ring) { return rl_expiry_ring_tail_ms(ring); }

uint64_t rl__expiry_ring_push(rl_expiry_ring *ring, uint64_t amount, uint64_t at_ms) {
    return rl_expiry_ring_push(ring, amount, at_ms);
}

void rl__expiry_ring_remove(rl_expiry_ring *ring, uint64_t seq) {
    ring->slots[seq & ring->mask].amount = 0;
    ring->live--;
}

static void drop_head(rl_expiry_ring *ring) {
    ring->head_seq++;
    /* Give memory back after a burst, keeping a quarter free for the next. */
    uint64_t capacity = capacity_of(ring);
    uint64_t queued = ring->tail_seq - ring->head_seq;
    if (capacity > 1024 && queued < capacity / 8) resize(ring, capacity / 4);
}

const rl_expiry_slot *rl__expiry_ring_front(rl_expiry_ring *ring) {
    while (ring->head_seq < ring->tail_seq) {
        const rl_expiry_slot *slot = &ring->slots[ring->head_seq & ring->mask];
        if (slot->amount != 0) return slot;
        drop_head(ring);
    }
    return NULL;
}

void rl__expiry_ring_pop(rl_expiry_ring *ring) {
    ring->live--;
    drop_head(ring);
}
