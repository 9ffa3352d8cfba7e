/* lease.c — the table of remembered leases (see lease.h). */
#include "backend/memory/lease.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/memory/pages.h"

#define INITIAL_SLOTS 1024u

/* forget's look ahead: how many leases on, and how much of one. */
#define FORGET_AHEAD 8u
#define LEASE_PREFETCH_BYTES (offsetof(rl_mem_lease, entries) + 4 * sizeof(rl_mem_entry))

static rl_mem_lease *lease_alloc(rl_mem_lease_table *table, uint16_t entry_count) {
    rl_mem_lease_recycler *recycler = &table->recycler;
    rl_mem_lease *lease = recycler->lists[entry_count];
    if (lease != NULL) {
        recycler->lists[entry_count] = (rl_mem_lease *)(void *)lease->status_limit;
        recycler->lengths[entry_count]--;
        return lease;
    }
    return malloc(sizeof *lease + (size_t)entry_count * sizeof(rl_mem_entry));
}

static void lease_free(rl_mem_lease_table *table, rl_mem_lease *lease) {
    free(lease->job_id);
    lease->job_id = NULL;
    rl_mem_lease_recycler *recycler = &table->recycler;
    uint16_t entry_count = lease->entry_count;
    if (entry_count <= RL_MAX_REQUIREMENTS && recycler->lengths[entry_count] < RL_MEM_LEASE_RECYCLE_MAX) {
        lease->status_limit = (rl_mem_limit *)(void *)recycler->lists[entry_count];
        recycler->lists[entry_count] = lease;
        recycler->lengths[entry_count]++;
    } else {
        free(lease);
    }
}

static void recycler_empty(rl_mem_lease_recycler *recycler) {
    for (uint32_t n = 0; n <= RL_MAX_REQUIREMENTS; n++) {
        while (recycler->lists[n] != NULL) {
            rl_mem_lease *next = (rl_mem_lease *)(void *)recycler->lists[n]->status_limit;
            free(recycler->lists[n]);
            recycler->lists[n] = next;
        }
        recycler->lengths[n] = 0;
    }
}

/* An index of count empty slots. One of many leases is read at random, a
 * page apart each time (a new id's slot, a forgotten lease's): in 2 MB
 * pages, where the system gives them on request, the pages of ~2M leases'
 * index (64 MB) fit the TLB instead of missing it on nearly every lookup.
 * Its memory is the index's own (pages.h), so the advice goes with it when
 * it is freed: in the allocator's heap it would outlive the index, and the
 * kernel would make whole 2 MB pages of whatever small allocations came to
 * lie there later. */
static rl_mem_lease_slot *slots_alloc(uint64_t count) {
    size_t size = (size_t)count * sizeof(rl_mem_lease_slot);
    rl_mem_lease_slot *slots = rl__mem_pages_alloc(size);
#ifdef MADV_HUGEPAGE
    if (slots != NULL && size >= RL_MEM_PAGES_HUGE_BYTES)
        (void)madvise(slots, size, MADV_HUGEPAGE); /* a hint: 4 KB pages work too */
#endif
    return slots;
}

static void slots_free(rl_mem_lease_slot *slots, uint64_t count) {
    rl__mem_pages_free(slots, (size_t)count * sizeof(rl_mem_lease_slot));
}

bool rl__mem_lease_table_init(rl_mem_lease_table *table) {
    memset(&table->recycler, 0, sizeof table->recycler);
    table->count = 0;
    table->mask = INITIAL_SLOTS - 1;
    rl__due_queue_init(&table->by_forget_at);
    table->slots = slots_alloc(INITIAL_SLOTS);
    return table->slots != NULL;
}

void rl__mem_lease_table_free(rl_mem_lease_table *table) {
    if (table->slots != NULL) {
        for (uint64_t i = 0; i <= table->mask; i++) {
            if (table->slots[i].lease != NULL) free(table->slots[i].lease->job_id);
            free(table->slots[i].lease);
        }
    }
    if (table->slots != NULL) slots_free(table->slots, table->mask + 1);
    table->slots = NULL;
    recycler_empty(&table->recycler);
    rl__due_queue_free(&table->by_forget_at);
    table->count = 0;
}

void rl__mem_lease_table_shed(rl_mem_lease_table *table) {
    recycler_empty(&table->recycler);
    rl__due_queue_shed(&table->by_forget_at);
}

rl_mem_lease *rl__mem_lease_find(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo) {
    uint64_t hash = rl_mem_lease_hash(id_hi, id_lo);
    for (uint64_t i = hash & table->mask;; i = (i + 1) & table->mask) {
        const rl_mem_lease_slot *slot = &table->slots[i];
        if (slot->lease == NULL) return NULL;
        if (slot->hash == hash && slot->lease->id_lo == id_lo && slot->lease->id_hi == id_hi) return slot->lease;
    }
}

static void insert_slot(rl_mem_lease_table *table, uint64_t hash, rl_mem_lease *lease) {
    uint64_t i = hash & table->mask;
    while (table->slots[i].lease != NULL) i = (i + 1) & table->mask;
    table->slots[i] = (rl_mem_lease_slot){hash, lease};
}

static bool resize(rl_mem_lease_table *table, uint64_t slot_count) {
    rl_mem_lease_slot *old = table->slots;
    uint64_t old_count = table->mask + 1;
    rl_mem_lease_slot *slots = slots_alloc(slot_count);
    if (slots == NULL) return false;
    table->slots = slots;
    table->mask = slot_count - 1;
    for (uint64_t i = 0; i < old_count; i++)
        if (old[i].lease != NULL) insert_slot(table, old[i].hash, old[i].lease);
    slots_free(old, old_count);
    return true;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
static void remove_slot(rl_mem_lease_table *table, uint64_t hash, const rl_mem_lease *lease) {
    uint64_t hole = hash & table->mask;
    while (table->slots[hole].lease != lease) hole = (hole + 1) & table->mask;
    for (uint64_t i = (hole + 1) & table->mask; table->slots[i].lease != NULL; i = (i + 1) & table->mask) {
        uint64_t home = table->slots[i].hash & table->mask;
        /* Move slot i into the hole if its home is not within (hole, i]. */
        if (((i - home) & table->mask) >= ((i - hole) & table->mask)) {
            table->slots[hole] = table->slots[i];
            hole = i;
        }
    }
    table->slots[hole] = (rl_mem_lease_slot){0, NULL};
}

rl_mem_lease *rl__mem_lease_add(rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo,
                                uint16_t entry_count, uint64_t now_ms, uint64_t lifetime_ms) {
    if ((table->count + 1) * 2 > table->mask + 1 && !resize(table, (table->mask + 1) * 2)) return NULL;
    if (!rl__due_queue_reserve_one(&table->by_forget_at, lifetime_ms)) return NULL;
    rl_mem_lease *lease = lease_alloc(table, entry_count);
    if (lease == NULL) return NULL;
    lease->id_hi = id_hi;
    lease->id_lo = id_lo;
    lease->allowed = false;
    lease->completed = false;
    lease->forwarded = false;
    lease->entry_count = entry_count;
    lease->status = RL_OK;
    lease->status_limit = NULL;
    lease->retry_after_ms = 0;
    lease->reserved_at_unix_ms = 0;
    lease->at_unix_ms = 0;
    lease->job_id = NULL;
    for (uint16_t i = 0; i < entry_count; i++) {
        lease->entries[i].limit = NULL; /* nothing held yet */
        lease->entries[i].index = (uint8_t)i;
    }
    uint64_t hash = rl_mem_lease_hash(id_hi, id_lo);
    insert_slot(table, hash, lease);
    rl__due_queue_push(&table->by_forget_at, lease, hash, now_ms, lifetime_ms);
    table->count++;
    return lease;
}

/* Forgets the lease of due: by_forget_at's top (front -1) or one of its
 * fronts (rl__due_queue_front). */
static void forget(rl_mem_lease_table *table, const rl_due_slot *due, int front) {
    rl_mem_lease *lease = due->item;
    uint64_t hash = due->hash;
    /* Leases made long ago are out of cache, and so are their index
     * slots. They fall due a millisecond's worth at a time, and a reserve
     * forgets up to four (memory_backend.c), so the next one is forgotten
     * right away as often as not: the memory of the lease FORGET_AHEAD
     * places on (all of a lease of four entries: its entries are read to
     * release them, and it is reused at once) and its slot are asked for
     * now, a reserve or two before they are needed. */
    const rl_due_slot *ahead = rl__due_queue_after(&table->by_forget_at, due, FORGET_AHEAD);
    if (ahead != NULL) {
        for (size_t at = 0; at < LEASE_PREFETCH_BYTES; at += 64)
            __builtin_prefetch((const char *)ahead->item + at, 1);
        __builtin_prefetch(&table->slots[ahead->hash & table->mask], 1);
    }
    if (front < 0) rl__due_queue_pop(&table->by_forget_at);
    else rl__due_queue_pop_front(&table->by_forget_at, front);
    /* And the next to forget, which may be of another lifetime. */
    const rl_due_slot *next = rl__due_queue_top(&table->by_forget_at);
    if (next != NULL) {
        __builtin_prefetch(next->item, 1);
        __builtin_prefetch(&table->slots[next->hash & table->mask], 1);
    }
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        rl_mem_entry *entry = &lease->entries[i];
        /* A live entry times out (and lets go of its limit); an expired
         * rolling one still points at its limit: let go of it. Most are
         * expired by now: no call for them. */
        if (rl_mem_entry_is_live(entry)) rl__mem_limit_time_out(entry);
        else rl_mem_entry_let_go(entry);
    }
    if (lease->status_limit != NULL) rl_mem_limit_let_go(lease->status_limit);
    remove_slot(table, hash, lease);
    table->count--;
    /* Shrink after a burst so that memory follows the live load. */
    if (table->mask + 1 > INITIAL_SLOTS && table->count * 8 < table->mask + 1)
        resize(table, (table->mask + 1) / 2);
    lease_free(table, lease);
}

size_t rl__mem_lease_forget_due(rl_mem_lease_table *table, uint64_t now_ms, size_t max_count) {
    size_t forgotten = 0;
    const rl_due_slot *top;
    while ((max_count == 0 || forgotten < max_count) && (top = rl__due_queue_top(&table->by_forget_at)) != NULL &&
           top->at_ms <= now_ms) {
        forget(table, top, -1);
        forgotten++;
    }
    return forgotten;
}

static bool holds_live_entries(const rl_mem_lease *lease, uint64_t now_ms) {
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        const rl_mem_entry *entry = &lease->entries[i];
        if (entry->expiry.at_ms > now_ms && rl_mem_entry_is_live(entry)) return true;
    }
    return false;
}

/* Any front will do, not only the earliest: the lease due first may still
 * hold a reservation while the front of another lifetime (denied leases,
 * lifetime 0, are all in one ring) holds nothing. */
bool rl__mem_lease_make_room(rl_mem_lease_table *table, uint64_t max_leases, uint64_t now_ms) {
    if (table->count < max_leases) return true;
    for (int front = 0; front < RL_DUE_QUEUE_FRONTS; front++) {
        const rl_due_slot *due = rl__due_queue_front(&table->by_forget_at, front);
        if (due == NULL || holds_live_entries(due->item, now_ms)) continue;
        forget(table, due, front);
        return true;
    }
    return false;
}
