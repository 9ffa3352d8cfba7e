/* lease.c — the table of remembered leases (see lease.h). */
#include "backend/memory/lease.h"

#include <stddef.h>
#include <stdlib.h>

#define LEASE_OF(node) ((rl_mem_lease *)((char *)(node) - offsetof(rl_mem_lease, forget)))

static inline size_t bucket_of(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo) {
    /* The low 80 bits of a ULID are random, but the mix keeps ids made by a
     * poor generator (counters) spread too. */
    uint64_t h = (id_lo ^ (id_hi * 0x9e3779b97f4a7c15u)) * 0xff51afd7ed558ccdu;
    return (size_t)(h ^ (h >> 33)) & (table->bucket_count - 1);
}

bool rl_mem_lease_table_init(rl_mem_lease_table *table) {
    table->bucket_count = 1024;
    table->count = 0;
    rl_heap_init(&table->by_forget_at);
    table->buckets = calloc(table->bucket_count, sizeof *table->buckets);
    return table->buckets != NULL;
}

void rl_mem_lease_table_free(rl_mem_lease_table *table) {
    if (table->buckets == NULL) return;
    for (size_t b = 0; b < table->bucket_count; b++) {
        rl_mem_lease *lease = table->buckets[b];
        while (lease != NULL) {
            rl_mem_lease *next = lease->next_in_bucket;
            free(lease);
            lease = next;
        }
    }
    free(table->buckets);
    rl_heap_free(&table->by_forget_at);
    table->buckets = NULL;
    table->bucket_count = 0;
    table->count = 0;
}

rl_mem_lease *rl_mem_lease_find(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo) {
    for (rl_mem_lease *lease = table->buckets[bucket_of(table, id_hi, id_lo)]; lease != NULL;
         lease = lease->next_in_bucket) {
        if (lease->id_lo == id_lo && lease->id_hi == id_hi) return lease;
    }
    return NULL;
}

static void grow(rl_mem_lease_table *table) {
    size_t old_count = table->bucket_count;
    rl_mem_lease **old = table->buckets;
    rl_mem_lease **buckets = calloc(old_count * 2, sizeof *buckets);
    if (buckets == NULL) return; /* longer chains, still correct */
    table->buckets = buckets;
    table->bucket_count = old_count * 2;
    for (size_t b = 0; b < old_count; b++) {
        rl_mem_lease *lease = old[b];
        while (lease != NULL) {
            rl_mem_lease *next = lease->next_in_bucket;
            size_t at = bucket_of(table, lease->id_hi, lease->id_lo);
            lease->next_in_bucket = buckets[at];
            buckets[at] = lease;
            lease = next;
        }
    }
    free(old);
}

rl_mem_lease *rl_mem_lease_add(rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo,
                               uint16_t entry_count, uint64_t forget_at_ms) {
    if (!rl_heap_reserve_one(&table->by_forget_at)) return NULL;
    rl_mem_lease *lease = malloc(sizeof *lease + (size_t)entry_count * sizeof(rl_mem_entry));
    if (lease == NULL) return NULL;
    lease->id_hi = id_hi;
    lease->id_lo = id_lo;
    lease->allowed = false;
    lease->completed = false;
    lease->entry_count = entry_count;
    lease->status = RL_OK;
    lease->status_key = NULL;
    lease->retry_after_ms = 0;
    lease->reserved_at_unix_ms = 0;
    lease->forget.at_ms = forget_at_ms;
    rl_heap_push(&table->by_forget_at, &lease->forget); /* cannot fail: reserved above */
    if (table->count + 1 > table->bucket_count) grow(table);
    size_t at = bucket_of(table, id_hi, id_lo);
    lease->next_in_bucket = table->buckets[at];
    table->buckets[at] = lease;
    table->count++;
    return lease;
}

void rl_mem_lease_forget(rl_mem_lease_table *table, rl_mem_lease *lease) {
    for (uint16_t i = 0; i < lease->entry_count; i++) rl_mem_limit_release(&lease->entries[i]);
    rl_heap_remove(&table->by_forget_at, &lease->forget);
    rl_mem_lease **link = &table->buckets[bucket_of(table, lease->id_hi, lease->id_lo)];
    while (*link != lease) link = &(*link)->next_in_bucket;
    *link = lease->next_in_bucket;
    table->count--;
    free(lease);
}

size_t rl_mem_lease_forget_due(rl_mem_lease_table *table, uint64_t now_ms, size_t max_count) {
    size_t forgotten = 0;
    rl_heap_node *top;
    while ((max_count == 0 || forgotten < max_count) &&
           (top = rl_heap_top(&table->by_forget_at)) != NULL && top->at_ms <= now_ms) {
        rl_mem_lease_forget(table, LEASE_OF(top));
        forgotten++;
    }
    return forgotten;
}

static bool holds_live_entries(const rl_mem_lease *lease, uint64_t now_ms) {
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        const rl_mem_entry *entry = &lease->entries[i];
        if (entry->limit != NULL && entry->expiry.at_ms > now_ms) return true;
    }
    return false;
}

bool rl_mem_lease_make_room(rl_mem_lease_table *table, uint64_t max_leases, uint64_t now_ms) {
    if (table->count < max_leases) return true;
    rl_heap_node *top = rl_heap_top(&table->by_forget_at);
    if (top == NULL || holds_live_entries(LEASE_OF(top), now_ms)) return false;
    rl_mem_lease_forget(table, LEASE_OF(top));
    return true;
}
