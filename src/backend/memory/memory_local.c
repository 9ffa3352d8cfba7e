/* memory_local.c — the memory backend deciding for a daemon that holds
 * allotments (memory_local.h). The same limits, leases and lock as the
 * memory backend (memory_backend.h); only the decision differs: a lease
 * that does not fit is forwarded instead of denied. */
#include "backend/memory/memory_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/memory/memory_backend.h"
#include "core/lease_rules.h"
#include "core/ulid_text.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/ulid.h"

static inline memory_backend *from_base(rl_backend *base) { return (memory_backend *)base; }

rl_status rl__memory_local_create(const rl_clock *clock, uint32_t lease_memory_ms, uint64_t max_leases,
                                  rl_backend **out) {
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = clock;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = lease_memory_ms;
    options.max_leases = max_leases;
    rl_status status = rl_memory_backend_create(&options, out);
    if (status == RL_OK) from_base(*out)->keep_job_ids = true;
    return status;
}

static uint64_t lifetime_ms_of(const rl_mem_def *def) {
    return (uint64_t)(def->kind == RL_KIND_ROLLING ? def->window_seconds : def->timeout_seconds) * 1000u;
}

/* Whether amount more may be admitted by limit now (expired first). */
static bool fits(const rl_mem_limit *limit, uint64_t amount, uint64_t now_ms) {
    return limit->def.kind != RL_KIND_BUDGET && now_ms < limit->admit_until_ms && limit->pending_decrease_to == 0 &&
           limit->used <= limit->capacity_enforced && amount <= limit->capacity_enforced - limit->used;
}

/* Remembers a lease as forwarded for as long as the store may remember it
 * (the longest lifetime of its limits known here, plus the lease memory):
 * its retries go where it went. A lease table full of live leases (or no
 * memory) remembers nothing: the lease goes to the store all the same (it
 * remembers it), and its retry does too while the table stays full; one
 * that comes once there is room again could be decided here as well: held
 * twice until it expires, never beyond capacity (both holds are counted). */
static void remember_forwarded(memory_backend *backend, const rl_reserve_request *request, uint64_t id_hi,
                               uint64_t id_lo, uint64_t lifetime_ms, uint64_t now_ms, uint64_t now_unix_ms) {
    rl_reserve_result marker;
    memset(&marker, 0, sizeof marker);
    rl_mem_lease *lease = rl__mem_record(backend, request, rl__mem_fingerprint(request, NULL), id_hi, id_lo, NULL,
                                         NULL, lifetime_ms, now_ms, now_unix_ms, &marker);
    if (lease != NULL) lease->forwarded = true;
}

/* Whether requirement may be skipped here: optional, and the store did not
 * define its key when the keeper last looked (rl__memory_local_absent). */
static bool skipped_here(const memory_backend *backend, const rl_requirement *requirement, uint64_t now_ms) {
    if (!requirement->optional || backend->absent == NULL) return false;
    const rl_mem_limit *absent = rl__mem_limit_table_find(backend->absent, requirement->key);
    return absent != NULL && now_ms < absent->admit_until_ms;
}

static void reserve_one(memory_backend *backend, const rl_reserve_request *request, uint64_t now_ms,
                        uint64_t now_unix_ms, rl_reserve_result *result, bool *forwarded) {
    RL__ASSERT_REQUEST_VALID(rl__reserve_request_is_valid(request));
    memset(result, 0, sizeof *result);
    *forwarded = false;
    uint64_t id_hi, id_lo;
    (void)rl_ulid_decode(request->lease_id, strlen(request->lease_id), &id_hi, &id_lo); /* valid */
    const rl_mem_lease *known = rl__mem_lease_find(&backend->leases, id_hi, id_lo);
    if (known != NULL) {
        if (known->forwarded) *forwarded = true;
        else rl__mem_replay(known, request, result);
        return;
    }

    /* A dry run changes nothing here either: no demand counted (it asks
     * for no allotment), nothing remembered; it takes the road a reserve
     * would, so that it answers what the reserve would (docs/allotments.md). */
    bool dry_run = request->dry_run;
    size_t count = request->requirement_count;
    rl_mem_limit *limits[RL_MAX_REQUIREMENTS];
    uint64_t expires_at_ms[RL_MAX_REQUIREMENTS];
    uint64_t forget_at_ms = now_ms, longest_ms = 0;
    const char *missing = NULL;
    size_t wanted = SIZE_MAX;
    bool all_fit = true, skipped = false;
    for (size_t i = 0; i < count; i++) {
        const char *key = request->requirements[i].key;
        uint64_t amount = request->requirements[i].amount;
        rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
        limits[i] = limit;
        if (limit == NULL) {
            /* Without a mirror, whether the store defines the key is the
             * store's to say; an optional one it did not define a moment
             * ago is skipped here, as the store skips it. */
            if (skipped_here(backend, &request->requirements[i], now_ms)) {
                skipped = true;
                continue;
            }
            if (missing == NULL) missing = key;
            all_fit = false;
            continue;
        }
        rl_mem_limit_expire(limit, now_ms, now_unix_ms);
        /* What leases ask drives the allotment's size, decided here or not. */
        if (!dry_run) {
            limit->demand_total += amount;
            if (amount > limit->largest_amount) limit->largest_amount = amount;
        }
        if (lifetime_ms_of(&limit->def) > longest_ms) longest_ms = lifetime_ms_of(&limit->def);
        if (!fits(limit, amount, now_ms)) {
            all_fit = false;
            /* No allotment to admit from: tell the keeper, once. */
            if (wanted == SIZE_MAX && !limit->wanted && limit->admit_until_ms <= now_ms) wanted = i;
        }
        expires_at_ms[i] = rl__mem_limit_next_expiry_ms(limit, now_ms);
        if (expires_at_ms[i] > forget_at_ms) forget_at_ms = expires_at_ms[i];
    }
    if (dry_run) {
        result->allowed = all_fit;
        result->reserved_at_unix_ms = all_fit ? now_unix_ms : 0;
        *forwarded = !all_fit; /* the store answers the rest, as it would the reserve */
        return;
    }
    if (all_fit) {
        result->allowed = true;
        /* held: what it holds here, the skipped requirements left out; the
         * fingerprint is the whole request's */
        uint64_t fingerprint = rl__mem_fingerprint(request, skipped ? NULL : limits);
        rl_reserve_request held_request;
        rl_requirement kept[RL_MAX_REQUIREMENTS];
        const rl_reserve_request *held = request;
        if (skipped) {
            uint64_t all_expires_at_ms[RL_MAX_REQUIREMENTS];
            memcpy(all_expires_at_ms, expires_at_ms, sizeof expires_at_ms);
            for (size_t i = 0, k = 0; i < count; i++)
                if (limits[i] != NULL) expires_at_ms[k++] = all_expires_at_ms[i];
            rl__mem_skip_undefined(request, limits, &held_request, kept);
            held = &held_request;
        }
        if (rl__mem_record(backend, held, fingerprint, id_hi, id_lo, limits, expires_at_ms, forget_at_ms - now_ms,
                           now_ms, now_unix_ms, result) != NULL) {
            for (size_t i = 0; i < held->requirement_count; i++)
                limits[i]->admitted_total += held->requirements[i].amount;
            return;
        }
        memset(result, 0, sizeof *result); /* cannot be remembered here: the store decides it */
    } else {
        remember_forwarded(backend, request, id_hi, id_lo, longest_ms, now_ms, now_unix_ms);
    }
    *forwarded = true;
    if (missing != NULL) {
        result->status = RL_UNKNOWN_LIMIT_KEY;
        result->status_key = missing;
    } else if (wanted != SIZE_MAX) {
        limits[wanted]->wanted = true; /* named only now: a hint not given is not used up */
        result->status_key = request->requirements[wanted].key; /* the request's: outlives the lock */
    }
}

void rl__memory_local_reserve(rl_backend *local, const rl_reserve_request *requests, size_t count,
                              rl_reserve_result *results, bool *forwarded) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    for (size_t i = 0; i < count; i++)
        reserve_one(backend, &requests[i], now_ms, now_unix_ms, &results[i], &forwarded[i]);
    pthread_mutex_unlock(&backend->lock);
}

/* The actual the Complete gives for key, else what was reserved. */
static uint64_t actual_for(const rl_complete_request *request, const char *key, uint64_t reserved) {
    for (size_t a = 0; a < request->actual_count; a++)
        if (strcmp(request->actuals[a].key, key) == 0) return request->actuals[a].actual_amount;
    return reserved;
}

/* A rolling reservation's Complete, here: reconciled down to a smaller
 * actual at once; an actual above it is left to the store (spend->overage),
 * which charges it by the limit's policy against the whole limit (an
 * allotment is no place for debt: nothing admitted from it may outgrow
 * what the store counts). */
static void charge_rolling(rl_mem_entry *entry, uint64_t actual, uint64_t now_ms, rl__local_spend *spend) {
    spend->reserved = entry->amount;
    spend->actual = actual;
    spend->overage = 0;
    spend->overage_for_ms = 0;
    if (!rl_mem_entry_is_live(entry)) return; /* its window is over: nothing left to adjust */
    uint64_t held = rl_mem_entry_amount(entry);
    if (actual < held) {
        rl__mem_limit_resize(entry, actual);
    } else if (actual > held) {
        spend->overage = actual - held;
        spend->overage_for_ms = entry->expiry.at_ms > now_ms ? entry->expiry.at_ms - now_ms : 0;
    }
}

static size_t complete_one(memory_backend *backend, const rl_complete_request *request, uint64_t now_ms,
                           uint64_t now_unix_ms, bool *forwarded, rl__local_spend *spends) {
    RL__ASSERT_REQUEST_VALID(rl__complete_request_is_valid(request));
    *forwarded = false;
    uint64_t id_hi, id_lo;
    (void)rl_ulid_decode(request->lease_id, strlen(request->lease_id), &id_hi, &id_lo); /* valid */
    rl_mem_lease *lease = rl__mem_lease_find(&backend->leases, id_hi, id_lo);
    if (lease == NULL || lease->forwarded) {
        *forwarded = true; /* the store decided it, or may have */
        return 0;
    }
    if (!lease->allowed || lease->completed) return 0;
    lease->completed = true;
    size_t written = 0;
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        rl_mem_entry *entry = &lease->entries[i];
        rl_mem_limit *limit = entry->limit;
        if (limit == NULL) continue;
        if (limit->removed) { /* deleted since: nothing to spend */
            rl_mem_entry_let_go(entry);
            continue;
        }
        rl_mem_limit_expire(limit, now_ms, now_unix_ms);
        if (entry->kind != RL_KIND_ROLLING) {
            rl__mem_limit_release(entry); /* a hold (budgets are not decided here) */
        } else {
            rl__local_spend *spend = &spends[written++];
            memcpy(spend->key, limit->def.key, strlen(limit->def.key) + 1);
            spend->incarnation = limit->incarnation;
            rl__ulid_text(lease->id_hi, lease->id_lo, spend->lease_id);
            snprintf(spend->job_id, sizeof spend->job_id, "%s", lease->job_id != NULL ? lease->job_id : "");
            charge_rolling(entry, actual_for(request, limit->def.key, entry->amount), now_ms, spend);
        }
        rl_mem_limit_try_decrease(limit);
    }
    return written;
}

size_t rl__memory_local_complete(rl_backend *local, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, bool *forwarded, rl__local_spend *spends) {
    memory_backend *backend = from_base(local);
    size_t written = 0;
    pthread_mutex_lock(&backend->lock);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    for (size_t i = 0; i < count; i++) {
        statuses[i] = RL_OK;
        written += complete_one(backend, &requests[i], now_ms, now_unix_ms, &forwarded[i], spends + written);
    }
    pthread_mutex_unlock(&backend->lock);
    return written;
}

bool rl__memory_local_state(rl_backend *local, const char *key, rl__local_state *out) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    if (limit != NULL) {
        rl__mem_limit_expire(limit, backend->clock->monotonic_ms(backend->clock),
                             backend->clock->unix_ms(backend->clock));
        out->capacity = limit->capacity_enforced;
        out->used = limit->used;
        out->entries = rl_mem_limit_active(limit);
        out->demand_total = limit->demand_total;
        out->admitted_total = limit->admitted_total;
        out->largest_amount = limit->largest_amount;
        out->lifetime_ms = lifetime_ms_of(&limit->def);
        out->incarnation = limit->incarnation;
        out->kind = limit->def.kind;
        limit->largest_amount = 0;
    }
    pthread_mutex_unlock(&backend->lock);
    return limit != NULL;
}

rl_status rl__memory_local_define(rl_backend *local, const rl_limit_def *def, uint64_t incarnation) {
    memory_backend *backend = from_base(local);
    rl_status status = RL_OK;
    pthread_mutex_lock(&backend->lock);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    rl_limit_def mirror = *def;
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, def->key);
    if (limit == NULL) {
        mirror.capacity = 0; /* nothing to admit until an allotment says */
        limit = rl__mem_limit_table_add(&backend->limits, &mirror);
        if (limit == NULL) {
            status = RL_NO_MEMORY;
        } else {
            limit->admit_until_ms = 0;
            limit->incarnation = incarnation;
        }
    } else if (limit->incarnation != incarnation) {
        status = RL_LIMIT_IN_USE; /* the caller forgets it first */
    } else {
        /* What it may admit is the allotment's business, not the definition's. */
        mirror.capacity = limit->capacity_enforced;
        uint64_t lifetime_before_ms = lifetime_ms_of(&limit->def);
        rl_kind kind_before = limit->def.kind;
        rl_limit_status ignored;
        status = rl__mem_limit_apply(limit, &mirror, now_ms, now_unix_ms, &ignored);
        /* What it admits now would live longer (or shorter) than the store
         * was told, or the store has another kind (taken or refused here):
         * nothing more until an allotment carved under this definition
         * says until when. */
        if (lifetime_ms_of(&limit->def) != lifetime_before_ms || def->kind != kind_before)
            limit->admit_until_ms = 0;
    }
    pthread_mutex_unlock(&backend->lock);
    return status;
}

void rl__memory_local_allow(rl_backend *local, const char *key, uint64_t capacity, uint64_t admit_until_ms) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    if (limit != NULL) {
        limit->capacity_enforced = capacity;
        limit->pending_decrease_to = 0;
        limit->admit_until_ms = admit_until_ms;
    }
    pthread_mutex_unlock(&backend->lock);
}

uint64_t rl__memory_local_shrink(rl_backend *local, const char *key, uint64_t target, bool stop) {
    memory_backend *backend = from_base(local);
    uint64_t capacity = 0;
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    if (limit != NULL) {
        uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
        rl__mem_limit_expire(limit, now_ms, backend->clock->unix_ms(backend->clock));
        capacity = target > limit->used ? target : limit->used;
        if (capacity < limit->capacity_enforced) limit->capacity_enforced = capacity;
        capacity = limit->capacity_enforced;
        limit->pending_decrease_to = 0;
        if (stop && limit->admit_until_ms > now_ms) limit->admit_until_ms = now_ms;
    }
    pthread_mutex_unlock(&backend->lock);
    return capacity;
}

/* ---- what a mirror holds live, by expiry ---- */

typedef struct live_pair {
    uint64_t at_ms, amount;
} live_pair;

static int by_time(const void *a, const void *b) {
    const live_pair *x = a, *y = b;
    return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

#define ENTRY_OF(node) ((rl_mem_entry *)((char *)(node) - offsetof(rl_mem_entry, expiry)))

size_t rl__memory_local_live(rl_backend *local, const char *key, uint64_t *remaining_ms, uint64_t *amounts,
                             size_t max) {
    memory_backend *backend = from_base(local);
    size_t written = 0;
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    if (limit == NULL || max == 0) {
        pthread_mutex_unlock(&backend->lock);
        return 0;
    }
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    rl__mem_limit_expire(limit, now_ms, backend->clock->unix_ms(backend->clock));
    const rl_expiry_ring *ring = &limit->reservations;
    size_t n = (size_t)ring->live + limit->holds.count;
    live_pair *pairs = n > 0 ? malloc(n * sizeof *pairs) : NULL;
    size_t k = 0;
    if (pairs != NULL) {
        for (uint64_t seq = ring->head_seq; seq < ring->tail_seq && k < n; seq++) {
            const rl_expiry_slot *slot = rl_expiry_ring_at(ring, seq);
            if (slot->amount != 0) pairs[k++] = (live_pair){slot->at_ms, slot->amount};
        }
        for (uint32_t i = 0; i < limit->holds.count && k < n; i++) {
            const rl_mem_entry *entry = ENTRY_OF(limit->holds.nodes[i]);
            pairs[k++] = (live_pair){entry->expiry.at_ms, entry->amount};
        }
        qsort(pairs, k, sizeof *pairs, by_time);
    }
    pthread_mutex_unlock(&backend->lock);
    for (size_t i = 0; i < k; i++) {
        uint64_t left_ms = pairs[i].at_ms > now_ms ? pairs[i].at_ms - now_ms : 0;
        left_ms = (left_ms + 999) / 1000 * 1000; /* whole seconds, rounded up */
        if (written > 0 && (remaining_ms[written - 1] == left_ms || written == max)) {
            /* the same second, or no room left: counted with the later one */
            remaining_ms[written - 1] = left_ms;
            amounts[written - 1] += pairs[i].amount;
        } else {
            remaining_ms[written] = left_ms;
            amounts[written] = pairs[i].amount;
            written++;
        }
    }
    free(pairs);
    return written;
}

void rl__memory_local_absent(rl_backend *local, const char *key, uint64_t until_ms) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    if (backend->absent == NULL && until_ms > 0 && (backend->absent = calloc(1, sizeof *backend->absent)) != NULL &&
        !rl__mem_limit_table_init(backend->absent)) {
        free(backend->absent);
        backend->absent = NULL;
    }
    rl_mem_limit *absent = backend->absent != NULL ? rl__mem_limit_table_find(backend->absent, key) : NULL;
    if (absent == NULL && until_ms > 0 && backend->absent != NULL && backend->absent->count < RL__LOCAL_ABSENT_MAX) {
        /* a key and an instant: the table's entries hold both (admit_until_ms) */
        rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = 1, .window_seconds = 1};
        snprintf(def.key, sizeof def.key, "%s", key);
        absent = rl__mem_limit_table_add(backend->absent, &def);
    }
    if (absent != NULL) absent->admit_until_ms = until_ms;
    pthread_mutex_unlock(&backend->lock);
}

bool rl__memory_local_forget(rl_backend *local, const char *key) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    bool found = rl__mem_delete_locked(backend, key) == RL_OK;
    pthread_mutex_unlock(&backend->lock);
    return found;
}

void rl__memory_local_unwant(rl_backend *local, const char *key) {
    memory_backend *backend = from_base(local);
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    if (limit != NULL) limit->wanted = false;
    pthread_mutex_unlock(&backend->lock);
}

void rl__memory_local_sweep(rl_backend *local) { rl_backend_sweep(local); }
