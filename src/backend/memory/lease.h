/* memory/lease.h — remembered leases: the outcome of every decided lease id,
 * and the entries an admitted lease holds.
 *
 * A lease is remembered so that a retried lease id gets its first outcome
 * (idempotent lease ids: docs/concepts.md) until it is due to be forgotten: its last
 * entry's expiry plus the configured lease memory. The table is bounded: when
 * full, the lease due first goes early, if it holds nothing live.
 * Lookups go through an open-addressing index of (id, lease) pairs so that a
 * new lease id costs one cache line; leases leave only in due order.
 * Not thread-safe: the backend's mutex guards everything here.
 */
#ifndef RL_MEMORY_LEASE_H
#define RL_MEMORY_LEASE_H

#include "backend/memory/due_queue.h"
#include "backend/memory/limit.h"

typedef struct rl_mem_lease {
    uint64_t id_hi, id_lo;       /* the ULID's 128-bit value: case-insensitive */
    bool allowed;
    bool completed;
    /* Not decided here: sent to the shared store (memory_local.h), as its
     * retries and its Complete are. */
    bool forwarded;
    uint16_t entry_count;        /* 0 for a denied lease */
    rl_status status;            /* why it was denied (or RL_OK) */
    /* The limit that denied it, whose key status and denied_by name alike
     * (a plain denial's status names none), or NULL. It holds the limit
     * (rl_mem_limit.holders) until forgotten, so that a retry gets the
     * first outcome also once the limit is removed. */
    struct rl_mem_limit *status_limit;
    uint64_t retry_after_ms;
    union {
        uint64_t reserved_at_unix_ms; /* admitted */
        uint64_t denied_available;    /* denied: denied_by.available */
    };
    uint64_t denied_capacity;    /* denied: denied_by.capacity */
    uint64_t denied_period_end_unix_ms; /* denied: denied_by.period_end_unix_ms */
    uint64_t fingerprint;        /* of its requirements: a retry must match (core/lease_fingerprint.h) */
    uint64_t at_unix_ms;         /* when it was decided (a snapshot keeps leases in that order) */
    char *job_id;                /* the reserve's job id (malloc'd, for the audit log), or NULL */
    rl_mem_entry entries[];
} rl_mem_lease;

/* The lease an entry belongs to. */
static inline rl_mem_lease *rl_mem_entry_lease(rl_mem_entry *entry) {
    return (rl_mem_lease *)(void *)((char *)(entry - entry->index) - offsetof(rl_mem_lease, entries));
}

typedef struct rl_mem_lease_slot {
    uint64_t hash;       /* of the id: probing and moving slots never touch the lease */
    rl_mem_lease *lease; /* NULL: empty */
} rl_mem_lease_slot;

/* Forgotten leases kept for reuse, one list per entry count: in a steady
 * state every forgotten lease is replaced by a new one, and recycling them
 * saves malloc, free and the page faults of fresh memory. */
#define RL_MEM_LEASE_RECYCLE_MAX 1024u

typedef struct rl_mem_lease_recycler {
    rl_mem_lease *lists[RL_MAX_REQUIREMENTS + 1]; /* linked through status_limit */
    uint32_t lengths[RL_MAX_REQUIREMENTS + 1];
} rl_mem_lease_recycler;

typedef struct rl_mem_lease_table {
    rl_mem_lease_recycler recycler;
    rl_mem_lease_slot *slots;
    uint64_t mask; /* slot count - 1, a power of two; kept at most half full */
    uint64_t count;
    rl_due_queue by_forget_at;
} rl_mem_lease_table;

static inline uint64_t rl_mem_lease_hash(uint64_t id_hi, uint64_t id_lo) {
    /* The low 80 bits of a ULID are random, but the mix keeps ids made by a
     * poor generator (counters) spread too. */
    uint64_t h = (id_lo ^ (id_hi * 0x9e3779b97f4a7c15u)) * 0xff51afd7ed558ccdu;
    return h ^ (h >> 33);
}

/* Asks for the index slot where a lookup of the id starts, for a lookup
 * to come: a new id's slot is out of cache (the index of a busy table is
 * tens of MB), so the caller does other work meanwhile. */
static inline void rl_mem_lease_prefetch(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo) {
    __builtin_prefetch(&table->slots[rl_mem_lease_hash(id_hi, id_lo) & table->mask]);
}

bool rl__mem_lease_table_init(rl_mem_lease_table *table);
/* Frees every lease without touching limits (they are freed too). */
void rl__mem_lease_table_free(rl_mem_lease_table *table);

/* Lets go of what is kept for a load that has passed: the forgotten leases
 * kept for reuse and the slots of the forget queue's empty rings. For the
 * owner to call once the load has fallen (the sweep, before memory is
 * handed back: hand_back.h); a busy table only takes them again. */
void rl__mem_lease_table_shed(rl_mem_lease_table *table);

rl_mem_lease *rl__mem_lease_find(const rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo);

/* Allocates a lease with room for entry_count entries (holding nothing), to be
 * forgotten lifetime_ms after now_ms (which must not go back between calls),
 * and links it in. NULL on allocation failure (nothing changed). */
rl_mem_lease *rl__mem_lease_add(rl_mem_lease_table *table, uint64_t id_hi, uint64_t id_lo,
                                uint16_t entry_count, uint64_t now_ms, uint64_t lifetime_ms);

/* Forgets leases due at or before now_ms, at most max_count (0: all); each
 * releases whatever it still holds and lets go of every limit it points at.
 * Returns how many were forgotten. */
size_t rl__mem_lease_forget_due(rl_mem_lease_table *table, uint64_t now_ms, size_t max_count);

/* Makes room for one more lease under max_leases by forgetting early a
 * lease that holds nothing live at now_ms: the one due first of some
 * lifetime. Returns false if every such lease still holds capacity. */
bool rl__mem_lease_make_room(rl_mem_lease_table *table, uint64_t max_leases, uint64_t now_ms);

#endif
