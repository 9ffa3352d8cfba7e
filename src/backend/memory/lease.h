/* memory/lease.h — remembered leases: the outcome of every decided lease id,
 * and the entries an admitted lease holds.
 *
 * A lease is remembered so that a retried lease id gets its first outcome
 * (DESIGN.md "Idempotency") until forget_at_ms: its last entry's expiry plus
 * the configured lease memory. The table is bounded: when full, the lease
 * that is due to be forgotten first goes early, if it holds nothing live.
 * Not thread-safe: the backend's mutex guards everything here.
 */
#ifndef RL_MEMORY_LEASE_H
#define RL_MEMORY_LEASE_H

#include "backend/memory/heap.h"
#include "backend/memory/limit.h"

typedef struct rl_mem_lease {
    struct rl_mem_lease *next_in_bucket;
    uint64_t id_hi, id_lo;       /* the ULID's 128-bit value: case-insensitive */
    rl_heap_node forget;         /* at_ms = when the table may drop it */
    bool allowed;
    bool completed;
    uint16_t entry_count;        /* 0 for a denied lease */
    rl_status status;            /* why it was denied (or RL_OK) */
    const char *status_key;      /* a limit's key (limits are never freed) */
    uint64_t retry_after_ms;
    uint64_t reserved_at_unix_ms;
    rl_mem_entry entries[];
} rl_mem_lease;

typedef struct rl_mem_lease_table {
    rl_mem_lease **buckets;
    size_t bucket_count; /* a power of two */
    size_t count;
    rl_heap by_forget_at;
} rl_mem_lease_table;

bool rl_mem_lease_table_init(rl_mem_lease_table *table);
/* Frees every lease (their entries must already be out of their limits, or
 * the limits freed). */
void rl_mem_lease_table_free(rl_mem_lease_table *table);

rl_mem_lease *rl_mem_lease_find(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo);

/* Allocates a lease with room for entry_count entries (uninitialised) and
 * links it into the table and the forget heap. NULL on allocation failure. */
rl_mem_lease *rl_mem_lease_add(rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo,
                               uint16_t entry_count, uint64_t forget_at_ms);

/* Drops a lease: releases its live entries from their limits, unlinks, frees. */
void rl_mem_lease_forget(rl_mem_lease_table *table, rl_mem_lease *lease);

/* Forgets leases due at or before now_ms, at most max_count of them (0: all).
 * Returns how many were forgotten. */
size_t rl_mem_lease_forget_due(rl_mem_lease_table *table, uint64_t now_ms, size_t max_count);

/* Makes room for one more lease under max_leases by forgetting the lease due
 * first, if it holds nothing live at now_ms. Returns false if the table is
 * full of leases that still hold capacity. */
bool rl_mem_lease_make_room(rl_mem_lease_table *table, uint64_t max_leases, uint64_t now_ms);

#endif
