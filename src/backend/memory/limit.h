/* memory/limit.h — one limit's live state in the memory backend, and the
 * table that finds it by key.
 *
 * A limit holds its current definition, the capacity it enforces now (which
 * lags the definition while a decrease waits for usage to fall), and its
 * live entries in expiry order: rolling reservations in a ring, concurrency
 * holds in a min-heap. `used` is always the sum of the live entries' amounts.
 * Every counter here saturates at RL_COUNTER_MAX (core/counter.h): an entry
 * holds, and gives back when it leaves, what fitted under it when it was
 * added or grown, so that used never wraps and never drifts from that sum.
 *
 * A limit may leave the table (rl__mem_limit_table_remove: a deleted limit,
 * and any limit its owner wants forgotten). Pointers to it stay valid as
 * long as their holders need them: each lease entry that points at it and
 * each remembered denial that names it counts as a holder, and a removed
 * limit is freed when the last one lets go (rl_mem_limit_let_go).
 * Not thread-safe: the backend's mutex guards everything here.
 */
#ifndef RL_MEMORY_LIMIT_H
#define RL_MEMORY_LIMIT_H

#include "backend/memory/expiry_ring.h"
#include "backend/memory/heap.h"
#include "ratelimiter/types.h"

struct rl_mem_lease;

/* One requirement of an admitted lease, queued in its limit: a rolling
 * reservation in the limit's expiry ring, a concurrency hold in its heap
 * (holds mostly leave early, on Complete, which a heap does in O(log n)). */
typedef struct rl_mem_entry {
    rl_heap_node expiry;         /* at_ms = when it frees itself; index for holds */
    union {
        uint64_t ring_seq;              /* rolling: place in the ring */
        uint64_t period_start_unix_ms;  /* budget: the period it belongs to */
    };
    /* NULL once released (a hold also when it expires); else it holds the
     * limit (rl_mem_limit.holders), also once an expired rolling entry no
     * longer counts in it, until let go of (rl_mem_entry_let_go). */
    struct rl_mem_limit *limit;
    uint64_t amount;             /* holds only: a reservation's amount is in its ring slot */
    rl_kind kind;                /* the kind when reserved: Complete follows it */
    uint8_t index;               /* its place in its lease's entries (rl_mem_entry_lease) */
} rl_mem_entry;

/* Who hears of a budget reservation refunded by its timeout (the journal
 * and the audit log); owned by the backend, shared by all its limits. */
typedef struct rl_mem_observer {
    /* Called before entry, live and of a budget, is released by its
     * timeout (its limit expiring, or its lease being forgotten). */
    void (*budget_timed_out)(struct rl_mem_observer *observer, rl_mem_entry *entry);
    /* While a journal is replayed, budgets time out only through its
     * records (journal_record.h): none is refunded by the clock. */
    bool replaying;
} rl_mem_observer;

/* What a limit counts by: its definition but for the text it never reads
 * (unit, description), so that a limit costs a few hundred bytes, not the
 * 1.4 KB of an rl_limit_def: a million tenants' limits made from a template
 * are a million of these. A limit of its own definition keeps the whole of
 * it beside (rl_mem_limit.own). */
typedef struct rl_mem_def {
    const char *key; /* the limit's own key_text */
    rl_kind kind;
    rl_overage overage;
    rl_period period;
    uint32_t window_seconds, timeout_seconds;
    uint64_t capacity;
    char timezone[RL_TIMEZONE_MAX_LEN + 1];
} rl_mem_def;

/* def's fields into out, but for out->key. */
void rl__mem_def_set(rl_mem_def *out, const rl_limit_def *def);

typedef struct rl_mem_limit {
    /* The next limit in its bucket's chain; once removed, the next in the
     * table's list of removed limits still held (pprev_removed: the link
     * that points at this one there, so that it leaves in O(1)). */
    struct rl_mem_limit *next_in_bucket;
    struct rl_mem_limit **pprev_removed;
    uint64_t key_hash;
    /* rl__lease_fingerprint_key(def.key): a lease's fingerprint from its
     * limits without hashing each key's text again (its key never changes). */
    uint64_t key_fingerprint;
    rl_mem_def def;
    /* The whole definition of a limit of its own (apply_definition: what
     * the journal's snapshot and a registry's check read of it); NULL for
     * one made from a template, a mirror (memory_local.h) or a removed
     * limit kept for its key. The memory backend sets it. */
    rl_limit_def *own;
    uint16_t key_len;
    uint64_t capacity_enforced;
    uint64_t pending_decrease_to; /* 0: not decreasing */
    uint64_t used;
    /* Lease entries pointing at it plus remembered denials naming it: a
     * removed limit is freed when this falls to 0. */
    uint64_t holders;
    bool removed; /* out of the table: no entry counts in it any more */
    bool forgotten; /* removed for being idle (memory_templates.c), not deleted: a late Complete is still audited */
    /* Made from the template of this pattern (memory_templates.c) for a key
     * no definition of its own names: forgotten once idle, made again when
     * named. NULL: the key's own definition (apply_definition). The text
     * is kept after key_text, in the limit's own allocation: no block of
     * its own (rl__mem_limit_table_add_made). */
    char *template_pattern;
    uint64_t debt_total;
    uint64_t overage_denied_total;
    rl_expiry_ring reservations; /* rolling entries, in expiry order */
    rl_heap holds;               /* concurrency and budget entries */
    /* Budgets: the zone, the period counted now ([start, end), Unix ms; end 0
     * until the first expire), and the actuals charged in it. used is
     * committed + what this period's open reservations hold; reservations of
     * an earlier period stay in holds until completed or timed out, counted
     * nowhere now. */
    struct rl__calendar *calendar;
    uint64_t period_start_unix_ms, period_end_unix_ms;
    uint64_t committed;
    rl_mem_observer *observer; /* the table's, or NULL */
    /* Deciding for a daemon that holds allotments (memory_local.h): the
     * limit admits only before admit_until_ms (monotonic; 0: never), so that
     * nothing it admits outlives what the shared store counts for it;
     * demand_total counts every unit leases asked of it, admitted_total
     * those it admitted, and largest_amount the largest one asked since the
     * keeper last looked (for sizing allotments). Unused by the plain
     * memory backend. */
    uint64_t admit_until_ms;
    uint64_t demand_total;
    uint64_t admitted_total;
    uint64_t largest_amount;
    bool wanted; /* named by a forwarded lease since the keeper last looked */
    /* Which shared limit it mirrors: the store's incarnation of it (a key
     * deleted and defined again is another limit), for the spends of its
     * leases' Completes. */
    uint64_t incarnation;
    char key_text[]; /* the key, NUL-terminated: def.key points here */
} rl_mem_limit;

/* Frees every entry whose expiry is <= now_ms (used drops by their amount),
 * starts a budget's next period once now_unix_ms has reached its end, then
 * applies a pending decrease if usage now allows it. */
void rl__mem_limit_expire(rl_mem_limit *limit, uint64_t now_ms, uint64_t now_unix_ms);

/* rl__mem_limit_expire without a call when it would do nothing: not a
 * budget, no decrease pending, the oldest reservation live and later than
 * now, and so the oldest hold. Every reserve and Complete expires each
 * limit it names, and most of the time nothing is due. */
static inline void rl_mem_limit_expire(rl_mem_limit *limit, uint64_t now_ms, uint64_t now_unix_ms) {
    const rl_expiry_ring *ring = &limit->reservations;
    const rl_expiry_slot *oldest = ring->head_seq < ring->tail_seq ? rl_expiry_ring_at(ring, ring->head_seq) : NULL;
    if (limit->def.kind != RL_KIND_BUDGET && limit->pending_decrease_to == 0 &&
        (oldest == NULL || (oldest->amount != 0 && oldest->at_ms > now_ms)) &&
        (limit->holds.count == 0 || limit->holds.nodes[0]->at_ms > now_ms))
        return;
    rl__mem_limit_expire(limit, now_ms, now_unix_ms);
}

/* A budget's Complete: the hold is released and actual charged to the
 * period the reservation was made in, under the limit's overage policy
 * (debt: all of it; deny: what fits, the rest counted). A reservation of an
 * earlier period charges nothing now: that period is over. committed and
 * used take what fits under the counter ceiling; debt_total counts all the
 * debt, up to the ceiling too. */
void rl__mem_limit_charge(rl_mem_entry *entry, uint64_t actual);

/* Makes room for one more entry of the limit's current kind, so that
 * rl__mem_limit_hold cannot fail. False on allocation failure. */
bool rl__mem_limit_reserve_room(rl_mem_limit *limit);

/* When an entry queued now would expire: now + window (or timeout), or with
 * the latest queued reservation if that is later (only after a window was
 * shortened: erring long never over-admits, and it keeps the ring in order). */
uint64_t rl__mem_limit_next_expiry_ms(const rl_mem_limit *limit, uint64_t now_ms);

/* Queues entry, holding amount, for the limit's current kind, to expire at
 * at_ms, which must be what rl__mem_limit_next_expiry_ms said for this same
 * now (so that the ring stays in order). Room must be reserved. It holds
 * what fits under the counter ceiling: all of an admitted amount, as
 * capacity is at most the ceiling. */
void rl__mem_limit_hold(rl_mem_limit *limit, rl_mem_entry *entry, uint64_t amount, uint64_t at_ms);

/* Live entries (reservations + holds, a budget's of earlier periods too). */
static inline uint64_t rl_mem_limit_active(const rl_mem_limit *limit) {
    return limit->reservations.live + limit->holds.count;
}

/* Holds nothing and owes nothing (after an expire): no live entry, no
 * decrease waiting, no charge counted in a budget's period. Forgetting
 * such a limit loses only its totals (debt_total, overage_denied_total). */
static inline bool rl_mem_limit_is_idle(const rl_mem_limit *limit) {
    return limit->used == 0 && rl_mem_limit_active(limit) == 0 && limit->pending_decrease_to == 0 &&
           limit->committed == 0;
}

/* True while the entry still counts in its limit's usage. (This and the
 * two below are inline: Complete and forgetting ask them of every entry.) */
static inline bool rl_mem_entry_is_live(const rl_mem_entry *entry) {
    if (entry->limit == NULL) return false;
    return entry->kind != RL_KIND_ROLLING || rl_expiry_ring_holds(&entry->limit->reservations, entry->ring_seq);
}

/* Takes an entry out of its limit now, if still live (Complete, or
 * forgetting a lease), and lets go of the limit. */
void rl__mem_limit_release(rl_mem_entry *entry);

/* Frees a removed limit that nothing holds any more. */
void rl__mem_limit_free_removed(rl_mem_limit *limit);

/* One holder (an entry, a remembered denial) is done with limit. */
static inline void rl_mem_limit_let_go(rl_mem_limit *limit) {
    if (--limit->holders == 0 && limit->removed) rl__mem_limit_free_removed(limit);
}

/* Lets go of the limit an entry that is not live (expired, released, or of
 * a removed limit) still points at, if any. */
static inline void rl_mem_entry_let_go(rl_mem_entry *entry) {
    struct rl_mem_limit *limit = entry->limit;
    if (limit == NULL) return;
    entry->limit = NULL;
    rl_mem_limit_let_go(limit);
}

/* Releases a live entry whose time is up: a budget's through the observer
 * first (a refund the audit log must see). */
void rl__mem_limit_time_out(rl_mem_entry *entry);

/* A replayed entry (journal_record.h): queued as rl__mem_limit_hold does,
 * expiring at at_ms (later if the ring needs it), a budget's counted in the
 * period it was made in (counted now only if that is the current one).
 * Room must be reserved. */
void rl__mem_limit_restore(rl_mem_limit *limit, rl_mem_entry *entry, uint64_t amount, uint64_t at_ms,
                           uint64_t period_start_unix_ms);

/* Changes a live rolling reservation's amount (Complete's reconcile and
 * overage); 0 releases it. A growth holds what fits under the counter
 * ceiling: the rest is not counted. */
void rl__mem_limit_resize(rl_mem_entry *entry, uint64_t amount);

/* The amount a live entry holds. */
static inline uint64_t rl_mem_entry_amount(const rl_mem_entry *entry) {
    if (entry->kind == RL_KIND_ROLLING) return rl_expiry_ring_at(&entry->limit->reservations, entry->ring_seq)->amount;
    return entry->amount;
}

/* Applies a pending decrease if used <= the new capacity. */
static inline void rl_mem_limit_try_decrease(rl_mem_limit *limit) {
    if (limit->pending_decrease_to != 0 && limit->used <= limit->pending_decrease_to) {
        limit->capacity_enforced = limit->pending_decrease_to;
        limit->pending_decrease_to = 0;
    }
}

/* Milliseconds from now_ms until `amount` more would fit, walking expiries in
 * order (docs/concepts.md, retry_after_ms); for a budget, its open reservations'
 * timeouts, else the end of its period; at least 1. scratch as in
 * rl__heap_walk. */
uint64_t rl__mem_limit_retry_after_ms(const rl_mem_limit *limit, uint64_t amount, uint64_t now_ms,
                                      uint64_t now_unix_ms, uint32_t **scratch, uint32_t *scratch_capacity);

/* Installs a definition on a limit (new or existing): an increase applies at
 * once and cancels a pending decrease; a decrease applies at once only if
 * usage allows. *out_status is the resulting status. A change of kind needs
 * a limit that holds nothing (after expiring what is due): entries of the
 * old kind would go on by the old kind's rules (an hour's rolling
 * reservation on a limit whose holds time out in 5 s, which no Complete
 * releases), so while it holds any the answer is RL_LIMIT_IN_USE and
 * nothing changes. */
rl_status rl__mem_limit_apply(rl_mem_limit *limit, const rl_limit_def *def, uint64_t now_ms,
                              uint64_t now_unix_ms, rl_limit_status *out_status);

void rl__mem_limit_usage(const rl_mem_limit *limit, rl_limit_usage *out);

/* key -> limit. A limit found here stays valid while something holds it
 * (rl_mem_limit.holders), however it leaves the table. */
typedef struct rl_mem_limit_table {
    rl_mem_observer *observer; /* given to every limit added; may be NULL */
    rl_mem_limit **buckets;
    size_t bucket_count; /* a power of two; doubles when count passes it */
    size_t count;
    /* Times the buckets were laid anew (grown or shrunk): a walk that lets
     * go of the lock between buckets starts again when this changed. */
    uint64_t resizes;
    /* Removed limits that entries or denials still hold, freed with the
     * table if they are still held then. */
    rl_mem_limit *removed;
} rl_mem_limit_table;

bool rl__mem_limit_table_init(rl_mem_limit_table *table);
/* Frees the limits too, removed ones included (whoever held them is freed
 * first, without letting go). */
void rl__mem_limit_table_free(rl_mem_limit_table *table);
rl_mem_limit *rl__mem_limit_table_find(const rl_mem_limit_table *table, const char *key);
/* Fewer buckets once most limits have left (count under an eighth of
 * bucket_count): two for each limit, as after a growth, and never fewer
 * than an empty table has, so that a million tenants' buckets do not
 * outlive them. Moves every limit: for the owner to call off any walk of
 * the table and off the request path (the memory backend's sweep). */
void rl__mem_limit_table_shrink(rl_mem_limit_table *table);
/* Creates the limit for def->key (which must not exist yet). NULL on OOM
 * (or a budget's zone that cannot be read: validated definitions have one). */
rl_mem_limit *rl__mem_limit_table_add(rl_mem_limit_table *table, const rl_limit_def *def);
/* The same for a limit made from the template of pattern (its
 * template_pattern), in one allocation with it: a limit made for each of a
 * million tenants is one block, not also a small one beside it. Small
 * blocks freed from another thread (the sweep) wait in glibc's fastbins,
 * where they keep the blocks around them from joining the free top of the
 * arena they came from, which malloc_trim does not give back (hand_back.h). */
rl_mem_limit *rl__mem_limit_table_add_made(rl_mem_limit_table *table, const rl_limit_def *def, const char *pattern);

/* Takes limit (found in table) out of it, with everything it counts:
 *   - its rolling reservations: the ring is dropped, so every entry that
 *     points at the limit is no longer live (rl_mem_entry_is_live), an
 *     expired one as well as one whose window runs on;
 *   - its concurrency holds and budget reservations: each entry in its heap
 *     is let go of (its limit NULL), as a release would, but nothing is
 *     charged, refunded or told to the observer (no audit entry);
 *   - its counters and its calendar.
 * A key found again later is a new limit, starting empty. The leases that
 * held entries of it keep their other entries; a Complete skips an entry
 * of a removed limit (lets go of it, charges nothing). Entries and
 * remembered denials that point at it keep it as a removed limit
 * (limit->removed) until the last lets go, then it is freed; if nothing
 * holds it, it is freed now. Any limit may be removed so: a deleted one,
 * and one its owner forgets because it holds nothing. O(entries it holds). */
void rl__mem_limit_table_remove(rl_mem_limit_table *table, rl_mem_limit *limit);

/* A removed limit holding only key, for a replayed denial whose limit no
 * longer exists (its key must live as long as the denial is remembered).
 * It is freed once let go of: the caller holds it. NULL on OOM. */
rl_mem_limit *rl__mem_limit_table_add_removed(rl_mem_limit_table *table, const char *key);

#define RL_MEM_FOR_EACH_LIMIT(table, var)                               \
    for (size_t var##_bucket = 0; var##_bucket < (table)->bucket_count; var##_bucket++) \
        for (rl_mem_limit *var = (table)->buckets[var##_bucket]; var != NULL; var = var->next_in_bucket)

#endif
