/* limit.c — accounting of one limit in the memory backend (see limit.h). */
#include "backend/memory/limit.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/memory/pages.h"
#include "core/calendar.h"
#include "core/counter.h"
#include "core/lease_fingerprint.h"

#define ENTRY_OF(node) ((rl_mem_entry *)((char *)(node) - offsetof(rl_mem_entry, expiry)))

void rl__mem_def_set(rl_mem_def *out, const rl_limit_def *def) {
    out->kind = def->kind;
    out->overage = def->overage;
    out->period = def->period;
    out->window_seconds = def->window_seconds;
    out->timeout_seconds = def->timeout_seconds;
    out->capacity = def->capacity;
    memcpy(out->timezone, def->timezone, sizeof out->timezone);
    out->timezone[sizeof out->timezone - 1] = '\0';
}

static uint64_t lifetime_ms(const rl_mem_def *def) {
    return (uint64_t)(def->kind == RL_KIND_ROLLING ? def->window_seconds : def->timeout_seconds) * 1000u;
}

bool rl__mem_limit_reserve_room(rl_mem_limit *limit) {
    return limit->def.kind == RL_KIND_ROLLING ? rl_expiry_ring_reserve_one(&limit->reservations)
                                              : rl__heap_reserve_one(&limit->holds);
}

uint64_t rl__mem_limit_next_expiry_ms(const rl_mem_limit *limit, uint64_t now_ms) {
    uint64_t at_ms = now_ms + lifetime_ms(&limit->def);
    if (limit->def.kind == RL_KIND_ROLLING) {
        uint64_t tail_ms = rl_expiry_ring_tail_ms(&limit->reservations);
        if (at_ms < tail_ms) at_ms = tail_ms;
    }
    return at_ms;
}

void rl__mem_limit_hold(rl_mem_limit *limit, rl_mem_entry *entry, uint64_t amount, uint64_t at_ms) {
    amount = rl__counter_fit(limit->used, amount); /* all of it when admitted: capacity is at most the ceiling */
    entry->limit = limit;
    entry->kind = limit->def.kind;
    entry->amount = amount;
    entry->expiry.at_ms = at_ms;
    if (entry->kind == RL_KIND_ROLLING) {
        entry->ring_seq = rl_expiry_ring_push(&limit->reservations, amount, entry->expiry.at_ms);
    } else {
        if (entry->kind == RL_KIND_BUDGET) entry->period_start_unix_ms = limit->period_start_unix_ms;
        rl__heap_push(&limit->holds, &entry->expiry);
    }
    limit->used += amount;
    limit->holders++;
}

void rl__mem_limit_restore(rl_mem_limit *limit, rl_mem_entry *entry, uint64_t amount, uint64_t at_ms,
                           uint64_t period_start_unix_ms) {
    uint64_t tail_ms = limit->def.kind == RL_KIND_ROLLING ? rl_expiry_ring_tail_ms(&limit->reservations) : 0;
    rl__mem_limit_hold(limit, entry, amount, at_ms > tail_ms ? at_ms : tail_ms);
    if (entry->kind == RL_KIND_BUDGET && period_start_unix_ms != limit->period_start_unix_ms) {
        entry->period_start_unix_ms = period_start_unix_ms; /* of an earlier period: counted nowhere now */
        limit->used -= entry->amount;
    }
}

/* Whether a live entry's amount is in its limit's used now: a budget's
 * reservation of an earlier period is not. */
static bool counted_now(const rl_mem_entry *entry) {
    return entry->kind != RL_KIND_BUDGET || entry->period_start_unix_ms == entry->limit->period_start_unix_ms;
}

void rl__mem_limit_release(rl_mem_entry *entry) {
    if (!rl_mem_entry_is_live(entry)) {
        rl_mem_entry_let_go(entry);
        return;
    }
    rl_mem_limit *limit = entry->limit;
    if (counted_now(entry)) limit->used -= rl_mem_entry_amount(entry);
    if (entry->kind == RL_KIND_ROLLING)
        rl__expiry_ring_remove(&limit->reservations, entry->ring_seq);
    else
        rl__heap_remove(&limit->holds, &entry->expiry);
    rl_mem_entry_let_go(entry);
}

void rl__mem_limit_time_out(rl_mem_entry *entry) {
    if (!rl_mem_entry_is_live(entry)) return;
    rl_mem_observer *observer = entry->limit->observer;
    if (entry->kind == RL_KIND_BUDGET && observer != NULL) observer->budget_timed_out(observer, entry);
    rl__mem_limit_release(entry);
}

void rl__mem_limit_resize(rl_mem_entry *entry, uint64_t amount) {
    if (amount == 0) {
        rl__mem_limit_release(entry);
        return;
    }
    rl_expiry_slot *slot = rl_expiry_ring_at(&entry->limit->reservations, entry->ring_seq);
    if (amount > slot->amount) amount = slot->amount + rl__counter_fit(entry->limit->used, amount - slot->amount);
    entry->limit->used = entry->limit->used - slot->amount + amount;
    slot->amount = amount;
}

/* The period holding now_unix_ms, into the limit (false: kept as it was;
 * rl__calendar_period_of writes only on success). */
static bool find_period(rl_mem_limit *limit, uint64_t now_unix_ms) {
    return rl__calendar_period_of(limit->calendar, limit->def.period, now_unix_ms, &limit->period_start_unix_ms,
                                  &limit->period_end_unix_ms);
}

/* A budget's period has ended: the next one starts with nothing charged
 * and nothing held (its open reservations belong to the one before). */
static void roll_period(rl_mem_limit *limit, uint64_t now_unix_ms) {
    if (!find_period(limit, now_unix_ms)) return;
    limit->committed = 0;
    limit->used = 0;
}

void rl__mem_limit_charge(rl_mem_entry *entry, uint64_t actual) {
    if (!rl_mem_entry_is_live(entry)) return;
    rl_mem_limit *limit = entry->limit;
    bool now = counted_now(entry);
    uint64_t reserved = entry->amount;
    rl__mem_limit_release(entry); /* the hold, out of used if it counts now */
    if (!now) return;
    uint64_t capacity = limit->capacity_enforced, charged = actual;
    if (actual > reserved) { /* overage (docs/concepts.md), as for rolling limits */
        if (limit->def.overage == RL_OVERAGE_DEBT) {
            /* used + reserved is what used was before the release */
            limit->debt_total =
                rl__counter_add(limit->debt_total, rl__counter_above(limit->used + reserved, actual - reserved, capacity));
        } else {
            uint64_t room = limit->used < capacity ? capacity - limit->used : 0;
            if (room < reserved) room = reserved; /* what it reserved was its own */
            charged = actual < room ? actual : room;
            limit->overage_denied_total = rl__counter_add(limit->overage_denied_total, actual - charged);
        }
    }
    /* committed is part of used: what fits under the ceiling fits both */
    charged = rl__counter_fit(limit->used, charged);
    limit->committed += charged;
    limit->used += charged;
}

void rl__mem_limit_expire(rl_mem_limit *limit, uint64_t now_ms, uint64_t now_unix_ms) {
    if (limit->removed) return; /* nothing counts in it, and a budget's calendar is gone */
    if (limit->def.kind == RL_KIND_BUDGET && now_unix_ms >= limit->period_end_unix_ms) roll_period(limit, now_unix_ms);
    const rl_expiry_slot *slot;
    while ((slot = rl_expiry_ring_front(&limit->reservations)) != NULL && slot->at_ms <= now_ms) {
        limit->used -= slot->amount; /* the entry learns it through rl_mem_entry_is_live */
        rl__expiry_ring_pop(&limit->reservations);
    }
    rl_heap_node *top;
    bool budget_waits = limit->def.kind == RL_KIND_BUDGET && limit->observer != NULL && limit->observer->replaying;
    while (!budget_waits && (top = rl_heap_top(&limit->holds)) != NULL && top->at_ms <= now_ms)
        rl__mem_limit_time_out(ENTRY_OF(top));
    rl_mem_limit_try_decrease(limit);
}

/* ---- retry_after: walk expiries in order until enough is freed ---- */

typedef struct retry_walk {
    uint64_t still_needed;
} retry_walk;

static bool take(retry_walk *walk, uint64_t amount) {
    if (amount >= walk->still_needed) return true;
    walk->still_needed -= amount;
    return false;
}

static bool visit_until_enough(const rl_heap_node *node, void *context) {
    return take(context, ENTRY_OF(node)->amount);
}

static bool visit_until_enough_now(const rl_heap_node *node, void *context) {
    const rl_mem_entry *entry = ENTRY_OF(node);
    return counted_now(entry) && take(context, entry->amount);
}

/* A budget: the soonest timeout of its open reservations that would make
 * room, else its period's end (what it committed only leaves with it). */
static uint64_t budget_retry_after_ms(const rl_mem_limit *limit, uint64_t amount, uint64_t now_ms,
                                      uint64_t now_unix_ms, uint32_t **scratch, uint32_t *scratch_capacity) {
    uint64_t capacity = limit->capacity_enforced;
    uint64_t needed = limit->used + amount - capacity;
    uint64_t reserved = limit->used - limit->committed;
    if (needed <= reserved) {
        retry_walk walk = {needed};
        const rl_heap_node *enough =
            rl__heap_walk(&limit->holds, visit_until_enough_now, &walk, scratch, scratch_capacity);
        if (enough != NULL) return enough->at_ms > now_ms ? enough->at_ms - now_ms : 1;
    }
    return limit->period_end_unix_ms > now_unix_ms ? limit->period_end_unix_ms - now_unix_ms : 1;
}

uint64_t rl__mem_limit_retry_after_ms(const rl_mem_limit *limit, uint64_t amount, uint64_t now_ms,
                                      uint64_t now_unix_ms, uint32_t **scratch, uint32_t *scratch_capacity) {
    /* used may exceed capacity by debt: all of that has to expire too. */
    uint64_t capacity = limit->capacity_enforced;
    if (limit->used + amount <= capacity) return 1;
    if (limit->def.kind == RL_KIND_BUDGET)
        return budget_retry_after_ms(limit, amount, now_ms, now_unix_ms, scratch, scratch_capacity);
    retry_walk walk = {limit->used + amount - capacity};
    uint64_t at_ms = 0;
    const rl_expiry_ring *ring = &limit->reservations;
    /* One queue at most holds live entries: a limit changes kind only while
     * it holds nothing (rl__mem_limit_apply). */
    if (limit->holds.count == 0) {
        for (uint64_t seq = ring->head_seq; seq < ring->tail_seq; seq++) {
            const rl_expiry_slot *slot = rl_expiry_ring_at(ring, seq);
            if (slot->amount != 0 && take(&walk, slot->amount)) {
                at_ms = slot->at_ms;
                break;
            }
        }
    } else {
        const rl_heap_node *enough =
            rl__heap_walk(&limit->holds, visit_until_enough, &walk, scratch, scratch_capacity);
        if (enough != NULL) at_ms = enough->at_ms;
    }
    if (at_ms == 0) {
        /* Only on allocation failure: the latest expiry frees everything. */
        at_ms = rl_expiry_ring_tail_ms(ring);
        for (uint32_t i = 0; i < limit->holds.count; i++)
            if (limit->holds.nodes[i]->at_ms > at_ms) at_ms = limit->holds.nodes[i]->at_ms;
    }
    return at_ms > now_ms ? at_ms - now_ms : 1;
}

/* The zone of a budget's definition, or NULL for other kinds; false if it
 * cannot be read. */
static bool calendar_for(const rl_limit_def *def, struct rl__calendar **out) {
    *out = NULL;
    if (def->kind != RL_KIND_BUDGET) return true;
    char err[160];
    return rl__calendar_open(def->timezone, out, err, sizeof err) == RL_OK;
}

rl_status rl__mem_limit_apply(rl_mem_limit *limit, const rl_limit_def *def, uint64_t now_ms,
                              uint64_t now_unix_ms, rl_limit_status *out_status) {
    rl__mem_limit_expire(limit, now_ms, now_unix_ms);
    *out_status = limit->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
    if (def->kind != limit->def.kind && rl_mem_limit_active(limit) > 0) return RL_LIMIT_IN_USE;
    struct rl__calendar *calendar;
    if (!calendar_for(def, &calendar)) return RL_INVALID_REQUEST;
    bool new_period = def->kind == RL_KIND_BUDGET &&
                      (limit->def.kind != RL_KIND_BUDGET || def->period != limit->def.period ||
                       strcmp(def->timezone, limit->def.timezone) != 0);
    rl__calendar_close(limit->calendar);
    limit->calendar = calendar;
    /* What a budget charged is no rolling use or hold (it holds nothing now). */
    if (def->kind != RL_KIND_BUDGET && limit->def.kind == RL_KIND_BUDGET) limit->used = 0;
    if (def->kind != RL_KIND_BUDGET) limit->committed = limit->period_start_unix_ms = limit->period_end_unix_ms = 0;
    rl__mem_def_set(&limit->def, def);
    /* Another period or zone: the period now counted is the new
     * definition's, and what the old one counted (charges and open
     * reservations) goes on counting in it, so a change never hands out a
     * fresh budget. */
    uint64_t old_start = limit->period_start_unix_ms;
    if (new_period && find_period(limit, now_unix_ms)) {
        for (uint32_t i = 0; i < limit->holds.count; i++) {
            rl_mem_entry *entry = ENTRY_OF(limit->holds.nodes[i]);
            if (entry->period_start_unix_ms == old_start) entry->period_start_unix_ms = limit->period_start_unix_ms;
        }
    }
    if (def->capacity >= limit->capacity_enforced) {
        limit->capacity_enforced = def->capacity;
        limit->pending_decrease_to = 0;
    } else {
        limit->pending_decrease_to = def->capacity;
        rl_mem_limit_try_decrease(limit);
    }
    *out_status = limit->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
    return RL_OK;
}

void rl__mem_limit_usage(const rl_mem_limit *limit, rl_limit_usage *out) {
    memset(out, 0, sizeof *out);
    out->status = limit->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
    out->capacity = limit->capacity_enforced;
    out->pending_decrease_to = limit->pending_decrease_to;
    out->used = limit->used;
    out->available = limit->used < limit->capacity_enforced ? limit->capacity_enforced - limit->used : 0;
    out->active = rl_mem_limit_active(limit);
    out->debt = limit->used > limit->capacity_enforced ? limit->used - limit->capacity_enforced : 0;
    out->debt_total = limit->debt_total;
    out->overage_denied_total = limit->overage_denied_total;
    if (limit->def.kind == RL_KIND_BUDGET) {
        out->period_start_unix_ms = limit->period_start_unix_ms;
        out->period_end_unix_ms = limit->period_end_unix_ms;
        out->committed = limit->committed;
        out->reserved = limit->used - limit->committed;
    }
}

/* ---- key -> limit table ---- */

/* 8 bytes of text as one number (little-endian on x86: as memcpy lays them). */
static inline uint64_t word_at(const char *text) {
    uint64_t word;
    memcpy(&word, text, 8);
    return word;
}

/* A fast string hash (8 bytes a step, then a final mix): keys are short and
 * hashed on every requirement of every reserve. The last bytes (fewer than
 * 8) are read as the end of the key's last 8 bytes, shifted, rather than
 * copied with a memcpy of a variable size, which is a call; the same value. */
static uint64_t hash_key(const char *key, size_t len) {
    uint64_t h = 0x9e3779b97f4a7c15u ^ (uint64_t)len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        h = (h ^ word_at(key + i)) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    size_t rest = len - i;
    uint64_t tail = 0;
    if (rest > 0 && len >= 8) {
        tail = word_at(key + len - 8) >> (8 * (8 - rest));
    } else {
        for (size_t j = rest; j-- > 0;) tail = (tail << 8) | (unsigned char)key[i + j];
    }
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53u;
    h ^= h >> 29;
    return h;
}

/* Whether two texts of size bytes are equal (size >= 1), 8 bytes a step,
 * the last step over the last 8 bytes: keys of a few words compared
 * without a call. */
static bool same_text(const char *a, const char *b, size_t size) {
    if (size < 8) return memcmp(a, b, size) == 0;
    for (size_t i = 0; i + 8 < size; i += 8)
        if (word_at(a + i) != word_at(b + i)) return false;
    return word_at(a + size - 8) == word_at(b + size - 8);
}

/* The buckets of an empty table, and the fewest a table shrinks to. */
#define INITIAL_BUCKETS 64u

bool rl__mem_limit_table_init(rl_mem_limit_table *table) {
    table->bucket_count = INITIAL_BUCKETS;
    table->count = 0;
    table->resizes = 0;
    table->removed = NULL;
    table->buckets = rl__mem_pages_alloc(table->bucket_count * sizeof *table->buckets);
    return table->buckets != NULL;
}

static void limit_free(rl_mem_limit *limit) {
    rl__expiry_ring_free(&limit->reservations);
    rl__heap_free(&limit->holds);
    free(limit->own);
    rl__calendar_close(limit->calendar);
    free(limit);
}

void rl__mem_limit_table_free(rl_mem_limit_table *table) {
    if (table->buckets == NULL) return;
    for (size_t b = 0; b < table->bucket_count; b++) {
        rl_mem_limit *limit = table->buckets[b];
        while (limit != NULL) {
            rl_mem_limit *next = limit->next_in_bucket;
            limit_free(limit);
            limit = next;
        }
    }
    while (table->removed != NULL) {
        rl_mem_limit *next = table->removed->next_in_bucket;
        limit_free(table->removed);
        table->removed = next;
    }
    rl__mem_pages_free(table->buckets, table->bucket_count * sizeof *table->buckets);
    table->buckets = NULL;
    table->bucket_count = 0;
    table->count = 0;
}

rl_mem_limit *rl__mem_limit_table_find(const rl_mem_limit_table *table, const char *key) {
    size_t len = strlen(key);
    uint64_t hash = hash_key(key, len);
    for (rl_mem_limit *limit = table->buckets[hash & (table->bucket_count - 1)]; limit != NULL;
         limit = limit->next_in_bucket) {
        if (limit->key_hash == hash && limit->key_len == len && same_text(limit->key_text, key, len + 1)) return limit;
    }
    return NULL;
}

/* Moves every limit into bucket_count buckets (a power of two). On
 * allocation failure the table stays as it was: still correct. */
static void rehash(rl_mem_limit_table *table, size_t bucket_count) {
    rl_mem_limit **buckets = rl__mem_pages_alloc(bucket_count * sizeof *buckets);
    if (buckets == NULL) return;
    for (size_t b = 0; b < table->bucket_count; b++) {
        rl_mem_limit *limit = table->buckets[b];
        while (limit != NULL) {
            rl_mem_limit *next = limit->next_in_bucket;
            size_t at = limit->key_hash & (bucket_count - 1);
            limit->next_in_bucket = buckets[at];
            buckets[at] = limit;
            limit = next;
        }
    }
    rl__mem_pages_free(table->buckets, table->bucket_count * sizeof *table->buckets);
    table->buckets = buckets;
    table->bucket_count = bucket_count;
    table->resizes++;
}

void rl__mem_limit_table_shrink(rl_mem_limit_table *table) {
    if (table->count * 8 >= table->bucket_count) return;
    size_t bucket_count = INITIAL_BUCKETS; /* two for each limit, as after a growth */
    while (bucket_count < table->count * 2) bucket_count *= 2;
    if (bucket_count < table->bucket_count) rehash(table, bucket_count);
}

/* A limit of key, zeroed, its key in place and after it the pattern it is
 * made from, if any (NULL on OOM). */
static rl_mem_limit *limit_new(const char *key, const char *pattern) {
    size_t len = strnlen(key, RL_KEY_MAX_LEN);
    size_t pattern_size = pattern != NULL ? strnlen(pattern, RL_KEY_MAX_LEN) + 1 : 0;
    rl_mem_limit *limit = calloc(1, sizeof *limit + len + 1 + pattern_size);
    if (limit == NULL) return NULL;
    memcpy(limit->key_text, key, len);
    limit->key_text[len] = '\0';
    if (pattern != NULL) {
        limit->template_pattern = limit->key_text + len + 1;
        memcpy(limit->template_pattern, pattern, pattern_size - 1);
        limit->template_pattern[pattern_size - 1] = '\0';
    }
    limit->key_len = (uint16_t)len;
    limit->def.key = limit->key_text;
    limit->key_hash = hash_key(limit->key_text, len);
    limit->key_fingerprint = rl__lease_fingerprint_key(limit->key_text);
    return limit;
}

static rl_mem_limit *add(rl_mem_limit_table *table, const rl_limit_def *def, const char *pattern) {
    rl_mem_limit *limit = limit_new(def->key, pattern);
    if (limit == NULL) return NULL;
    if (!calendar_for(def, &limit->calendar)) {
        free(limit);
        return NULL;
    }
    rl__mem_def_set(&limit->def, def);
    limit->capacity_enforced = def->capacity;
    limit->observer = table->observer;
    rl__expiry_ring_init(&limit->reservations);
    rl__heap_init(&limit->holds);
    if (table->count + 1 > table->bucket_count) rehash(table, table->bucket_count * 2);
    size_t at = limit->key_hash & (table->bucket_count - 1);
    limit->next_in_bucket = table->buckets[at];
    table->buckets[at] = limit;
    table->count++;
    return limit;
}

rl_mem_limit *rl__mem_limit_table_add(rl_mem_limit_table *table, const rl_limit_def *def) {
    return add(table, def, NULL);
}

rl_mem_limit *rl__mem_limit_table_add_made(rl_mem_limit_table *table, const rl_limit_def *def, const char *pattern) {
    return add(table, def, pattern);
}

/* Keeps a removed limit that is still held in the table's list of them. */
static void keep_removed(rl_mem_limit_table *table, rl_mem_limit *limit) {
    limit->removed = true;
    limit->next_in_bucket = table->removed;
    if (table->removed != NULL) table->removed->pprev_removed = &limit->next_in_bucket;
    limit->pprev_removed = &table->removed;
    table->removed = limit;
}

void rl__mem_limit_free_removed(rl_mem_limit *limit) {
    *limit->pprev_removed = limit->next_in_bucket;
    if (limit->next_in_bucket != NULL) limit->next_in_bucket->pprev_removed = limit->pprev_removed;
    limit_free(limit);
}

void rl__mem_limit_table_remove(rl_mem_limit_table *table, rl_mem_limit *limit) {
    rl_mem_limit **link = &table->buckets[limit->key_hash & (table->bucket_count - 1)];
    while (*link != limit) link = &(*link)->next_in_bucket;
    *link = limit->next_in_bucket;
    table->count--;
    /* Holds and budget reservations: let go of, nothing charged or told. */
    for (uint32_t i = 0; i < limit->holds.count; i++) {
        rl_mem_entry *entry = ENTRY_OF(limit->holds.nodes[i]);
        entry->expiry.index = RL_HEAP_NOT_QUEUED;
        entry->limit = NULL;
        limit->holders--;
    }
    rl__heap_free(&limit->holds);
    rl__heap_init(&limit->holds);
    /* Rolling reservations: with the ring gone none is live any more. */
    rl__expiry_ring_free(&limit->reservations);
    rl__calendar_close(limit->calendar);
    limit->calendar = NULL;
    limit->used = limit->committed = limit->capacity_enforced = limit->pending_decrease_to = 0;
    if (limit->holders == 0) {
        limit_free(limit);
        return;
    }
    keep_removed(table, limit);
}

rl_mem_limit *rl__mem_limit_table_add_removed(rl_mem_limit_table *table, const char *key) {
    rl_mem_limit *limit = limit_new(key, NULL);
    if (limit == NULL) return NULL;
    rl__expiry_ring_init(&limit->reservations);
    rl__heap_init(&limit->holds);
    keep_removed(table, limit);
    return limit;
}
