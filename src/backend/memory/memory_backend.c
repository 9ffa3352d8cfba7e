/* memory_backend.c — the in-memory backend (the rules of docs/concepts.md).
 *
 * One mutex guards all state (correct and easy to reason about; a decision takes microseconds);
 * a batch takes it once. Expired state is dropped lazily whenever a limit is
 * touched, a few due leases are forgotten on every reserve, and an optional
 * sweeper thread does the rest, so memory stays bounded under any load.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "backend/memory/memory_backend.h"
#include "core/counter.h"
#include "core/lease_fingerprint.h"
#include "core/limit_def.h"
#include "core/lease_rules.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/ulid.h"

/* Due leases forgotten per reserve: enough to keep up with any arrival rate
 * (each reserve adds at most one), small enough to keep latency flat. */
#define FORGET_PER_RESERVE 4

static inline memory_backend *from_base(rl_backend *base) { return (memory_backend *)base; }

void rl_memory_options_default(rl_memory_options *options) {
    options->clock = NULL;
    options->sweep_interval_ms = RL_MEMORY_DEFAULT_SWEEP_INTERVAL_MS;
    options->lease_memory_ms = RL_MEMORY_DEFAULT_LEASE_MEMORY_MS;
    options->max_leases = RL_MEMORY_DEFAULT_MAX_LEASES;
    options->journal_path = NULL;
    options->journal_fsync = RL_JOURNAL_FSYNC_EVERYSEC;
    options->journal_compact_bytes = 0;
    options->audit_dir = NULL;
    options->audit_retention_days = RL_AUDIT_DEFAULT_RETENTION_DAYS;
}

rl_status rl__mem_apply_locked(memory_backend *backend, const rl_limit_def *def, uint64_t now_ms,
                               uint64_t now_unix_ms, rl_limit_status *out_status) {
    *out_status = RL_LIMIT_STATUS_ACTIVE;
    /* The whole definition, kept beside what the limit counts by. */
    rl_limit_def *own = malloc(sizeof *own);
    if (own == NULL) return RL_NO_MEMORY;
    rl__limit_def_copy(own, def);
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, def->key);
    rl_status status = RL_OK;
    if (limit == NULL) {
        limit = rl__mem_limit_table_add(&backend->limits, def);
        if (limit == NULL) status = RL_NO_MEMORY;
    } else {
        status = rl__mem_limit_apply(limit, def, now_ms, now_unix_ms, out_status);
    }
    if (status != RL_OK) {
        free(own);
        return status;
    }
    free(limit->own);
    limit->own = own;
    /* Made from a template, now the key's own: never forgotten. (The
     * pattern's text stays in the limit's allocation, unused.) */
    limit->template_pattern = NULL;
    return RL_OK;
}

/* The limit of key's own definition (one made from a template is not). */
static rl_mem_limit *own_limit(memory_backend *backend, const char *key) {
    rl_mem_limit *limit = rl__mem_limit_table_find(&backend->limits, key);
    return limit != NULL && limit->template_pattern == NULL ? limit : NULL;
}

rl_status rl__mem_delete_locked(memory_backend *backend, const char *key) {
    rl_mem_limit *limit = own_limit(backend, key);
    if (limit == NULL) return RL_UNKNOWN_LIMIT_KEY;
    rl__mem_limit_table_remove(&backend->limits, limit);
    return RL_OK;
}

/* Waits until the changes up to ticket are as durable as promised: false
 * if the journal could not write them. */
static bool durable(memory_backend *backend, uint64_t ticket) {
    return backend->journal == NULL || rl__journal_wait_durable(backend->journal, ticket);
}

/* A definition's change (a limit, a template) is synced before its answer
 * whatever the fsync mode: rare, and a power loss must not undo it. */
static bool synced(memory_backend *backend, uint64_t ticket) {
    return backend->journal == NULL || rl__journal_wait_synced(backend->journal, ticket);
}

static rl_status apply_definition(rl_backend *base, const rl_limit_def *def,
                                  rl_limit_status *out_status) {
    memory_backend *backend = from_base(base);
    rl_limit_status status;
    pthread_mutex_lock(&backend->lock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    rl_status result =
        rl__mem_apply_locked(backend, def, backend->clock->monotonic_ms(backend->clock), now_unix_ms, &status);
    if (result == RL_OK && !rl__mem_journal_define(backend, def, now_unix_ms)) result = RL_NO_MEMORY;
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    if (!synced(backend, ticket)) result = RL_IO_ERROR;
    if (out_status != NULL) *out_status = status;
    return result;
}

/* Journaled before it is done: a delete the journal cannot take changes
 * nothing. */
static rl_status delete_definition(rl_backend *base, const char *key) {
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    rl_status result = RL_UNKNOWN_LIMIT_KEY;
    if (own_limit(backend, key) != NULL)
        result = rl__mem_journal_delete(backend, key, backend->clock->unix_ms(backend->clock))
                     ? rl__mem_delete_locked(backend, key)
                     : RL_NO_MEMORY;
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    if (result == RL_OK && !synced(backend, ticket)) result = RL_IO_ERROR;
    return result;
}

/* Templates (memory_templates.c), answered once the journal has them. */
static rl_status put_template(rl_backend *base, const rl_limit_def *def) {
    memory_backend *backend = from_base(base);
    char err[256];
    pthread_mutex_lock(&backend->lock);
    rl_status result = rl__mem_put_template_locked(backend, def, backend->clock->monotonic_ms(backend->clock),
                                                   backend->clock->unix_ms(backend->clock), err, sizeof err);
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    if (result == RL_OK && !synced(backend, ticket)) result = RL_IO_ERROR;
    return result;
}

static rl_status delete_template(rl_backend *base, const char *pattern) {
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    rl_status result = rl__mem_delete_template_locked(backend, pattern, backend->clock->unix_ms(backend->clock));
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    if (result == RL_OK && !synced(backend, ticket)) result = RL_IO_ERROR;
    return result;
}

static void deny(rl_reserve_result *result, rl_status status, const char *key, uint64_t retry_after_ms) {
    result->allowed = false;
    result->retry_after_ms = retry_after_ms;
    result->reserved_at_unix_ms = 0;
    result->status = status;
    result->status_key = key;
    memset(&result->denied_by, 0, sizeof result->denied_by);
}

/* denied_by.reason of a denial's status. */
static rl_denial_reason reason_of(rl_status status) {
    return status == RL_EXCEEDS_CAPACITY   ? RL_DENIAL_EXCEEDS_CAPACITY
           : status == RL_LIMIT_DECREASING ? RL_DENIAL_DECREASING
                                           : RL_DENIAL_CAPACITY;
}

/* A denial for want of room on the limit of requirement: the status names
 * its key unless it is a plain one (RL_OK), denied_by always does. The key
 * is the request's own text, never the limit's: an answer outlives the
 * backend's lock, and a limit may be removed meanwhile. */
static void deny_on(rl_reserve_result *result, rl_status status, const rl_mem_limit *limit,
                    const rl_requirement *requirement, uint64_t retry_after_ms) {
    deny(result, status, status == RL_OK ? NULL : requirement->key, retry_after_ms);
    rl_denial *d = &result->denied_by;
    d->key = requirement->key;
    d->reason = reason_of(status);
    d->requested = requirement->amount;
    d->capacity = status == RL_LIMIT_DECREASING ? limit->pending_decrease_to : limit->capacity_enforced;
    d->available = limit->used < d->capacity ? d->capacity - limit->used : 0;
    d->period_end_unix_ms = limit->def.kind == RL_KIND_BUDGET ? limit->period_end_unix_ms : 0;
}

/* The lease's requirement on key (a retry matched its fingerprint: it is
 * there), or NULL. */
static const rl_requirement *requirement_on(const rl_reserve_request *request, const char *key) {
    for (size_t i = 0; i < request->requirement_count; i++)
        if (strcmp(request->requirements[i].key, key) == 0) return &request->requirements[i];
    return NULL;
}

/* Its first outcome, denied_by included (naming the request's own key). */
static void replay(const rl_mem_lease *lease, const rl_reserve_request *request, rl_reserve_result *result) {
    const rl_requirement *denied_on =
        lease->allowed || lease->status_limit == NULL ? NULL : requirement_on(request, lease->status_limit->def.key);
    result->allowed = lease->allowed;
    result->retry_after_ms = lease->retry_after_ms;
    result->reserved_at_unix_ms = lease->allowed ? lease->reserved_at_unix_ms : 0;
    result->status = lease->status;
    result->status_key = lease->status == RL_OK || denied_on == NULL ? NULL : denied_on->key;
    memset(&result->denied_by, 0, sizeof result->denied_by);
    if (denied_on == NULL) return;
    rl_denial *d = &result->denied_by;
    d->key = denied_on->key;
    d->reason = reason_of(lease->status);
    d->requested = denied_on->amount;
    d->available = lease->denied_available;
    d->capacity = lease->denied_capacity;
    d->period_end_unix_ms = lease->denied_period_end_unix_ms;
}

/* The decision for one lease whose limits are resolved and expired:
 * exceeds_capacity beats limit_decreasing beats a plain deny, because a
 * client must not retry what can never fit; a plain deny names the full
 * limit whose room comes back last (the one the caller waits for). */
static void decide(memory_backend *backend, const rl_reserve_request *request, rl_mem_limit *const *limits,
                   uint64_t now_ms, uint64_t now_unix_ms, rl_reserve_result *result) {
    size_t decreasing = SIZE_MAX, full = SIZE_MAX;
    uint64_t retry_after_ms = 0;
    for (size_t i = 0; i < request->requirement_count; i++) {
        const rl_mem_limit *limit = limits[i];
        uint64_t amount = request->requirements[i].amount;
        if (amount > limit->capacity_enforced) {
            deny_on(result, RL_EXCEEDS_CAPACITY, limit, &request->requirements[i], 0);
            return;
        }
        if (limit->pending_decrease_to != 0) {
            if (decreasing == SIZE_MAX) decreasing = i;
            continue;
        }
        if (limit->used + amount > limit->capacity_enforced) {
            uint64_t wait_ms = rl__mem_limit_retry_after_ms(limit, amount, now_ms, now_unix_ms, &backend->walk_scratch,
                                                            &backend->walk_scratch_capacity);
            if (full == SIZE_MAX || wait_ms > retry_after_ms) {
                full = i;
                retry_after_ms = wait_ms;
            }
        }
    }
    if (decreasing != SIZE_MAX) {
        deny_on(result, RL_LIMIT_DECREASING, limits[decreasing], &request->requirements[decreasing],
                RL_DECREASING_RETRY_AFTER_MS);
    } else if (full != SIZE_MAX) {
        deny_on(result, RL_OK, limits[full], &request->requirements[full], retry_after_ms);
    } else {
        result->allowed = true;
        result->retry_after_ms = 0;
        result->status = RL_OK;
        result->status_key = NULL;
        memset(&result->denied_by, 0, sizeof result->denied_by);
    }
}

void rl__mem_replay(const rl_mem_lease *lease, const rl_reserve_request *request, rl_reserve_result *result) {
    if (lease->fingerprint != rl__lease_fingerprint(request->requirements, request->requirement_count))
        deny(result, RL_LEASE_ID_CONFLICT, NULL, 0);
    else
        replay(lease, request, result);
}

static inline uint64_t fingerprint_of(const rl_reserve_request *request, rl_mem_limit *const *limits) {
    size_t count = request->requirement_count;
    if (limits == NULL) return rl__lease_fingerprint(request->requirements, count);
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += rl__lease_fingerprint_term(limits[i]->key_fingerprint,
                                          rl__lease_fingerprint_amount(&request->requirements[i]));
    return rl__lease_fingerprint_end(sum, count);
}

uint64_t rl__mem_fingerprint(const rl_reserve_request *request, rl_mem_limit *const *limits) {
    return fingerprint_of(request, limits);
}

rl_mem_lease *rl__mem_record(memory_backend *backend, const rl_reserve_request *request, uint64_t fingerprint,
                             uint64_t id_hi, uint64_t id_lo, rl_mem_limit *const *limits,
                             const uint64_t *expires_at_ms, uint64_t lifetime_ms, uint64_t now_ms,
                             uint64_t now_unix_ms, rl_reserve_result *result) {
    size_t count = request->requirement_count;
    rl__mem_lease_forget_due(&backend->leases, now_ms, FORGET_PER_RESERVE);
    if (!rl__mem_lease_make_room(&backend->leases, backend->max_leases, now_ms)) {
        /* Full of leases that hold capacity: admitting without remembering
         * would break idempotency, so fail closed. */
        deny(result, RL_BACKEND_ERROR, NULL, 0);
        return NULL;
    }
    if (result->allowed) {
        /* Grow every queue first, so that nothing below can fail half-way. */
        for (size_t i = 0; i < count; i++) {
            if (!rl__mem_limit_reserve_room(limits[i])) {
                deny(result, RL_NO_MEMORY, NULL, 0);
                return NULL;
            }
        }
    }
    uint16_t entry_count = result->allowed ? (uint16_t)count : 0;
    rl_mem_lease *lease = rl__mem_lease_add(&backend->leases, id_hi, id_lo, entry_count, now_ms,
                                            lifetime_ms + backend->lease_memory_ms);
    if (lease == NULL) {
        deny(result, RL_NO_MEMORY, NULL, 0);
        return NULL;
    }
    if (result->allowed) {
        for (size_t i = 0; i < count; i++)
            rl__mem_limit_hold(limits[i], &lease->entries[i], request->requirements[i].amount, expires_at_ms[i]);
        result->reserved_at_unix_ms = now_unix_ms;
    }
    lease->allowed = result->allowed;
    lease->status = result->status;
    /* The limit that denied it (denied_by names the request's key), held
     * while the lease is remembered. */
    lease->status_limit = NULL;
    for (size_t i = 0; !result->allowed && limits != NULL && i < count; i++) {
        if (result->denied_by.key != request->requirements[i].key) continue;
        lease->status_limit = limits[i];
        limits[i]->holders++;
        break;
    }
    lease->retry_after_ms = result->retry_after_ms;
    if (result->allowed) {
        lease->reserved_at_unix_ms = result->reserved_at_unix_ms;
    } else {
        lease->denied_available = result->denied_by.available;
        lease->denied_capacity = result->denied_by.capacity;
        lease->denied_period_end_unix_ms = result->denied_by.period_end_unix_ms;
    }
    lease->fingerprint = fingerprint;
    lease->at_unix_ms = now_unix_ms;
    if ((backend->audit != NULL || backend->keep_job_ids) && request->job_id != NULL && request->job_id[0] != '\0')
        lease->job_id = strdup(request->job_id); /* NULL on OOM: its audit entries say "" */
    if (backend->journal != NULL && !rl__mem_journal_lease(backend, lease, now_ms, now_unix_ms))
        fprintf(stderr, "ratelimiterd: out of memory: lease not journaled\n");
    return lease;
}

void rl__mem_skip_undefined(const rl_reserve_request *request, rl_mem_limit **limits, rl_reserve_request *held,
                            rl_requirement *kept) {
    size_t count = 0;
    for (size_t i = 0; i < request->requirement_count; i++) {
        if (limits[i] == NULL) continue;
        kept[count] = request->requirements[i];
        limits[count++] = limits[i];
    }
    *held = *request;
    held->requirements = kept;
    held->requirement_count = count;
}

/* A dry run's answer (types.h): decided, not recorded. Allowed, it says
 * when it would have been reserved: now. */
static void answer_dry_run(rl_reserve_result *result, uint64_t now_unix_ms) {
    if (result->allowed) result->reserved_at_unix_ms = now_unix_ms;
}

static void reserve_one(memory_backend *backend, const rl_reserve_request *request, uint64_t now_ms,
                        uint64_t now_unix_ms, rl_reserve_result *result) {
    RL__ASSERT_REQUEST_VALID(rl__reserve_request_is_valid(request)); /* backend.h: checked by whoever decoded it */
    uint64_t id_hi, id_lo;
    size_t count = request->requirement_count;
    (void)rl_ulid_decode(request->lease_id, strlen(request->lease_id), &id_hi, &id_lo); /* valid */
    /* The id is most likely new, its index slot out of cache: the limits
     * are looked up (changing nothing) while it comes. */
    rl_mem_lease_prefetch(&backend->leases, id_hi, id_lo);
    rl_mem_limit *limits[RL_MAX_REQUIREMENTS];
    size_t unknown = SIZE_MAX;
    bool skipped = false;
    for (size_t i = 0; i < count; i++) {
        limits[i] = rl__mem_limit_of(backend, request->requirements[i].key);
        if (limits[i] != NULL) continue;
        if (request->requirements[i].optional) skipped = true;
        else if (unknown == SIZE_MAX) unknown = i;
    }
    const rl_mem_lease *lease = rl__mem_lease_find(&backend->leases, id_hi, id_lo);
    if (lease != NULL) {
        rl__mem_replay(lease, request, result);
        return;
    }
    if (unknown != SIZE_MAX) {
        /* Not remembered: the key may be defined before the retry. The
         * limits named before it expire what is due, as every limit a
         * reserve reaches does. */
        for (size_t i = 0; i < unknown; i++)
            if (limits[i] != NULL) rl_mem_limit_expire(limits[i], now_ms, now_unix_ms);
        deny(result, RL_UNKNOWN_LIMIT_KEY, request->requirements[unknown].key, 0);
        return;
    }
    rl_reserve_request held_request;
    rl_requirement kept[RL_MAX_REQUIREMENTS];
    const rl_reserve_request *held = request;
    if (skipped) {
        rl__mem_skip_undefined(request, limits, &held_request, kept);
        held = &held_request;
        count = held->requirement_count;
    }

    uint64_t expires_at_ms[RL_MAX_REQUIREMENTS];
    uint64_t forget_at_ms = now_ms;
    for (size_t i = 0; i < count; i++) {
        rl_mem_limit *limit = limits[i];
        rl_mem_limit_expire(limit, now_ms, now_unix_ms);
        rl__mem_made_read(limit);
        expires_at_ms[i] = rl__mem_limit_next_expiry_ms(limit, now_ms);
        if (expires_at_ms[i] > forget_at_ms) forget_at_ms = expires_at_ms[i];
    }

    decide(backend, held, limits, now_ms, now_unix_ms, result);
    if (request->dry_run) {
        answer_dry_run(result, now_unix_ms);
        return;
    }
    /* The fingerprint is the whole request's, skipped requirements
     * included: a retry must be the same request, whatever is defined by
     * then. */
    uint64_t fingerprint = skipped ? rl__lease_fingerprint(request->requirements, request->requirement_count)
                                   : fingerprint_of(request, limits);
    /* A denied lease holds nothing: remembered for the lease memory alone
     * (as the redis backend does), so denials share one lifetime and can make
     * room for new leases however long the windows they were denied on. */
    (void)rl__mem_record(backend, held, fingerprint, id_hi, id_lo, limits, expires_at_ms,
                         result->allowed ? forget_at_ms - now_ms : 0, now_ms, now_unix_ms, result);
}

/* The journal could not write the changes these answers depend on: none
 * may be given as decided. The state in memory holds them (failing
 * closed); a retry with the same lease id gets the first outcome once the
 * journal writes again. */
static void fail_reserves(rl_reserve_result *results, size_t count) {
    for (size_t i = 0; i < count; i++) deny(&results[i], RL_BACKEND_ERROR, NULL, 0);
}
static void fail_completes(rl_status *statuses, size_t count) {
    for (size_t i = 0; i < count; i++) statuses[i] = RL_BACKEND_ERROR;
}

/* Decides a batch under one lock; returns the journal ticket its answers
 * wait for. */
static uint64_t reserve_all(memory_backend *backend, const rl_reserve_request *requests, size_t count,
                            rl_reserve_result *results) {
    pthread_mutex_lock(&backend->lock);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    for (size_t i = 0; i < count; i++) reserve_one(backend, &requests[i], now_ms, now_unix_ms, &results[i]);
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    return ticket;
}

static void reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    memory_backend *backend = from_base(base);
    if (!durable(backend, reserve_all(backend, requests, count, results))) fail_reserves(results, count);
}

/* Overage: the call used more than it reserved (docs/concepts.md, "Overage"). The
 * entry keeps its expiry: the excess is charged for the rest of the window
 * (what fits under the counter ceiling: rl__mem_limit_resize), and under
 * debt all of its part above capacity counts in debt_total. */
static void charge_overage(rl_mem_entry *entry, uint64_t reserved, uint64_t extra) {
    rl_mem_limit *limit = entry->limit;
    uint64_t capacity = limit->capacity_enforced;
    if (limit->def.overage == RL_OVERAGE_DEBT) {
        limit->debt_total = rl__counter_add(limit->debt_total, rl__counter_above(limit->used, extra, capacity));
        rl__mem_limit_resize(entry, reserved + extra);
    } else {
        uint64_t room = limit->used < capacity ? capacity - limit->used : 0;
        uint64_t charged = extra < room ? extra : room;
        rl__mem_limit_resize(entry, reserved + charged);
        limit->overage_denied_total = rl__counter_add(limit->overage_denied_total, extra - charged);
    }
}

/* A rolling reservation's Complete: resized to the actual (docs/concepts.md:
 * "Reconcile"), the excess as overage (nothing left to adjust once its
 * window is over). */
static void reconcile(rl_mem_entry *entry, uint64_t actual_amount) {
    if (!rl_mem_entry_is_live(entry)) return;
    uint64_t reserved = rl_mem_entry_amount(entry);
    if (actual_amount < reserved)
        rl__mem_limit_resize(entry, actual_amount);
    else if (actual_amount > reserved)
        charge_overage(entry, reserved, actual_amount - reserved);
}

/* The actual the Complete gives for entry's key, else what it reserved (a
 * key it does not mention keeps its reservation). */
static uint64_t actual_for(const rl_complete_request *request, const rl_mem_entry *entry) {
    for (size_t a = 0; a < request->actual_count; a++)
        if (strcmp(request->actuals[a].key, entry->limit->def.key) == 0) return request->actuals[a].actual_amount;
    return entry->amount;
}

/* Whether completing lease needs the wall clock: a budget's period (or its
 * refund), or what the audit log and the journal write. */
static bool needs_wall_clock(const memory_backend *backend, const rl_mem_lease *lease) {
    if (backend->journal != NULL || backend->audit != NULL) return true;
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        const rl_mem_limit *limit = lease->entries[i].limit;
        if (limit != NULL && limit->def.kind == RL_KIND_BUDGET) return true;
    }
    return false;
}

/* RL_OK whatever the lease was. Every rolling or budget key it charges
 * gets its audit entry. */
rl_status rl__mem_complete_one(memory_backend *backend, const rl_complete_request *request, uint64_t now_ms,
                               uint64_t *unix_ms) {
    RL__ASSERT_REQUEST_VALID(rl__complete_request_is_valid(request)); /* backend.h: checked by whoever decoded it */
    uint64_t id_hi, id_lo;
    (void)rl_ulid_decode(request->lease_id, strlen(request->lease_id), &id_hi, &id_lo); /* valid */
    rl_mem_lease *lease = rl__mem_lease_find(&backend->leases, id_hi, id_lo);
    /* Unknown, denied or already completed: nothing to release (idempotent). */
    if (lease == NULL || !lease->allowed || lease->completed) return RL_OK;
    lease->completed = true;
    if (*unix_ms == RL__MEM_UNIX_UNREAD && needs_wall_clock(backend, lease))
        *unix_ms = backend->clock->unix_ms(backend->clock);
    uint64_t now_unix_ms = *unix_ms; /* unused if still unread */

    rl_mem_limit *touched[RL_MAX_REQUIREMENTS];
    size_t touched_count = 0;
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        rl_mem_entry *entry = &lease->entries[i];
        rl_mem_limit *limit = entry->limit;
        if (limit == NULL) continue;
        if (limit->removed) {
            /* Deleted since: nothing to charge, nothing audited. Forgotten
             * (made from a template, idle: its window is over): nothing to
             * charge, but what the call cost is still the billing truth. */
            if (limit->forgotten && entry->kind == RL_KIND_ROLLING && backend->audit != NULL)
                rl__mem_audit(backend, lease, entry, limit->def.key, entry->amount, actual_for(request, entry), false,
                              now_unix_ms);
            rl_mem_entry_let_go(entry);
            continue;
        }
        touched[touched_count++] = limit;
        rl_mem_limit_expire(limit, now_ms, now_unix_ms);
        if (entry->limit == NULL) continue; /* a budget's reservation just timed out: refunded */
        if (entry->kind == RL_KIND_CONCURRENCY) {
            rl__mem_limit_release(entry);
            continue;
        }
        /* The audit log has what the call cost (what overage: deny lets the
         * limit count may be less), as the redis backend writes it. */
        uint64_t reserved = entry->amount, actual = actual_for(request, entry);
        if (entry->kind == RL_KIND_BUDGET) rl__mem_limit_charge(entry, actual);
        else reconcile(entry, actual);
        if (backend->audit != NULL)
            rl__mem_audit(backend, lease, entry, limit->def.key, reserved, actual, false, now_unix_ms);
    }
    /* Released capacity may let a pending decrease through. */
    for (size_t i = 0; i < touched_count; i++) rl_mem_limit_try_decrease(touched[i]);
    if (backend->journal != NULL && !rl__mem_journal_complete(backend, lease, request, now_unix_ms))
        fprintf(stderr, "ratelimiterd: out of memory: a Complete is not journaled\n");
    return RL_OK;
}

/* Completes a batch under one lock; returns the journal ticket. */
static uint64_t complete_all(memory_backend *backend, const rl_complete_request *requests, size_t count,
                             rl_status *statuses) {
    pthread_mutex_lock(&backend->lock);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = RL__MEM_UNIX_UNREAD; /* read by the first Complete that needs it */
    for (size_t i = 0; i < count; i++)
        statuses[i] = rl__mem_complete_one(backend, &requests[i], now_ms, &now_unix_ms);
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    return ticket;
}

static void complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    memory_backend *backend = from_base(base);
    if (!durable(backend, complete_all(backend, requests, count, statuses))) fail_completes(statuses, count);
}

/* ---- answering once the journal has the changes (a journal only) ---- */

typedef struct journal_answer {
    rl_reserve_result *results; /* or */
    rl_status *statuses;
    size_t count;
    void (*done)(void *context);
    void *context;
} journal_answer;

static void answer_when_durable(void *context, bool is_durable) {
    journal_answer *answer = context;
    if (!is_durable && answer->results != NULL) fail_reserves(answer->results, answer->count);
    if (!is_durable && answer->statuses != NULL) fail_completes(answer->statuses, answer->count);
    answer->done(answer->context);
    free(answer);
}

static void answer_after(memory_backend *backend, uint64_t ticket, journal_answer answer) {
    journal_answer *waiting = malloc(sizeof *waiting);
    if (waiting == NULL) { /* wait here rather than answer early */
        if (!rl__journal_wait_durable(backend->journal, ticket)) {
            if (answer.results != NULL) fail_reserves(answer.results, answer.count);
            if (answer.statuses != NULL) fail_completes(answer.statuses, answer.count);
        }
        answer.done(answer.context);
        return;
    }
    *waiting = answer;
    rl__journal_when_durable(backend->journal, ticket, answer_when_durable, waiting);
}

static void reserve_batch_async(rl_backend *base, const rl_reserve_request *requests, size_t count,
                                rl_reserve_result *results, void (*done)(void *context), void *context) {
    memory_backend *backend = from_base(base);
    uint64_t ticket = reserve_all(backend, requests, count, results);
    answer_after(backend, ticket, (journal_answer){results, NULL, count, done, context});
}

static void complete_batch_async(rl_backend *base, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, void (*done)(void *context), void *context) {
    memory_backend *backend = from_base(base);
    uint64_t ticket = complete_all(backend, requests, count, statuses);
    answer_after(backend, ticket, (journal_answer){NULL, statuses, count, done, context});
}

/* Unable to serve while the journal cannot write. */
static rl_status health(rl_backend *base, char *detail, size_t detail_size) {
    memory_backend *backend = from_base(base);
    char why[256];
    if (!rl__journal_failing(backend->journal, why, sizeof why)) return RL_OK;
    snprintf(detail, detail_size, "the journal cannot be written: %s", why);
    return RL_BACKEND_ERROR;
}

/* Entries are listed once their millisecond is over and everything before
 * it is written: the same rule as the redis backend's, so that paging by
 * next_since_unix_ms never misses an entry written after a page was read. */
static rl_status audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    uint64_t before_unix_ms = backend->clock->unix_ms(backend->clock);
    /* Entries to come get a time no earlier than this one, nor than the
     * last entry's (rl__mem_audit: never back): all entries before it are
     * written once the journal has what came so far. */
    if (before_unix_ms < backend->audit_at_unix_ms) before_unix_ms = backend->audit_at_unix_ms;
    uint64_t ticket = rl_mem_journal_ticket(backend);
    pthread_mutex_unlock(&backend->lock);
    char err[256];
    if (!rl__journal_wait_durable(backend->journal, ticket)) {
        (void)rl__journal_failing(backend->journal, err, sizeof err);
        fprintf(stderr, "ratelimiterd: audit query: %s\n", err);
        return RL_IO_ERROR;
    }
    rl_status status = rl__audit_log_query_before(backend->audit, query, before_unix_ms, page, err, sizeof err);
    if (status != RL_OK) fprintf(stderr, "ratelimiterd: audit query: %s\n", err);
    return status;
}

static rl_status limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    memory_backend *backend = from_base(base);
    rl_status status = RL_OK;
    pthread_mutex_lock(&backend->lock);
    rl_mem_limit *limit = rl__mem_limit_of(backend, key);
    if (limit == NULL) {
        status = RL_UNKNOWN_LIMIT_KEY;
    } else {
        rl__mem_limit_expire(limit, backend->clock->monotonic_ms(backend->clock), backend->clock->unix_ms(backend->clock));
        rl__mem_made_read(limit);
        rl__mem_limit_usage(limit, out);
    }
    pthread_mutex_unlock(&backend->lock);
    return status;
}

/* What the backend holds, as hand_back.h counts it. */
static uint64_t items_held(const memory_backend *backend) {
    return backend->leases.count + backend->limits.count;
}

/* True when memory is to be handed back after this sweep (after the lock:
 * it walks the allocator's heaps, not the backend). */
static bool sweep_locked(memory_backend *backend) {
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    uint64_t held_before = items_held(backend);
    rl__mem_lease_forget_due(&backend->leases, now_ms, 0);
    RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) rl__mem_limit_expire(limit, now_ms, now_unix_ms);
    if (backend->templates != NULL) (void)rl__mem_forget_idle(backend, now_ms, now_unix_ms);
    rl__mem_limit_table_shrink(&backend->limits);
    if (!rl__mem_hand_back_due(&backend->hand_back, held_before, items_held(backend))) return false;
    rl__mem_lease_table_shed(&backend->leases);
    return true;
}

static void sweep(rl_backend *base) {
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    bool handing_back = sweep_locked(backend);
    pthread_mutex_unlock(&backend->lock);
    if (handing_back) rl__mem_hand_back();
}

static void *sweeper_main(void *arg) {
    memory_backend *backend = arg;
    pthread_mutex_lock(&backend->lock);
    while (!backend->stopping) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        uint64_t ns = (uint64_t)deadline.tv_nsec + (uint64_t)backend->sweep_interval_ms * 1000000u;
        deadline.tv_sec += (time_t)(ns / 1000000000u);
        deadline.tv_nsec = (long)(ns % 1000000000u);
        int rc = pthread_cond_timedwait(&backend->sweeper_wake, &backend->lock, &deadline);
        if (rc != ETIMEDOUT || backend->stopping) continue;
        if (sweep_locked(backend)) {
            pthread_mutex_unlock(&backend->lock);
            rl__mem_hand_back();
            pthread_mutex_lock(&backend->lock);
        }
    }
    pthread_mutex_unlock(&backend->lock);
    return NULL;
}

static void destroy(rl_backend *base) {
    memory_backend *backend = from_base(base);
    if (backend->sweeper_running) {
        pthread_mutex_lock(&backend->lock);
        backend->stopping = true;
        pthread_cond_signal(&backend->sweeper_wake);
        pthread_mutex_unlock(&backend->lock);
        pthread_join(backend->sweeper, NULL);
    }
    rl__mem_journal_close(backend);
    pthread_cond_destroy(&backend->sweeper_wake);
    pthread_mutex_destroy(&backend->lock);
    rl__mem_lease_table_free(&backend->leases);
    rl__mem_limit_table_free(&backend->limits);
    if (backend->absent != NULL) rl__mem_limit_table_free(backend->absent);
    free(backend->absent);
    rl__template_set_free(backend->templates);
    free(backend->walk_scratch);
    free(backend);
}

/* The journal's counters and what start-up found of the audit log;
 * nothing to count without them. Both are set at open and fixed after: no
 * lock. */
static void stats(rl_backend *base, rl_backend_stats *out) {
    memory_backend *backend = from_base(base);
    if (backend->journal != NULL) rl__journal_stats(backend->journal, out);
    if (backend->audit != NULL) {
        out->audit = 1;
        out->audit_journal_mismatch += backend->audit_journal_mismatch;
        out->audit_entries_unmatched += backend->audit_entries_unmatched;
    }
}

/* Buckets of the limit table walked under one hold of the lock: answers
 * wait at most for this many buckets' limits (about as many), not for the
 * whole table. */
#define TEMPLATE_USAGE_BUCKETS_PER_HOLD 1024u

/* One walk of the table, a part at a time; false if it grew or shrank
 * meanwhile (its limits moved between buckets: walk again). */
static bool walk_made_limits(memory_backend *backend, GHashTable *index, rl_template_usage *out) {
    pthread_mutex_lock(&backend->lock);
    size_t bucket_count = backend->limits.bucket_count;
    uint64_t resizes = backend->limits.resizes;
    pthread_mutex_unlock(&backend->lock);
    for (size_t first = 0; first < bucket_count; first += TEMPLATE_USAGE_BUCKETS_PER_HOLD) {
        pthread_mutex_lock(&backend->lock);
        if (backend->limits.resizes != resizes) {
            pthread_mutex_unlock(&backend->lock);
            return false;
        }
        uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
        uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
        size_t end = first + TEMPLATE_USAGE_BUCKETS_PER_HOLD < bucket_count ? first + TEMPLATE_USAGE_BUCKETS_PER_HOLD
                                                                            : bucket_count;
        for (size_t b = first; b < end; b++) {
            for (rl_mem_limit *limit = backend->limits.buckets[b]; limit != NULL; limit = limit->next_in_bucket) {
                if (limit->template_pattern == NULL) continue;
                gpointer at = g_hash_table_lookup(index, limit->template_pattern);
                if (at == NULL) continue; /* a template not asked about */
                /* As a usage read: what is due expires first; an idle one
                 * (forgotten at the next sweep) counts for nothing. */
                rl__mem_limit_expire(limit, now_ms, now_unix_ms);
                if (rl_mem_limit_is_idle(limit)) continue;
                rl_limit_usage usage;
                rl__mem_limit_usage(limit, &usage);
                rl__template_usage_add(&out[GPOINTER_TO_SIZE(at) - 1], usage.capacity, usage.used, usage.committed,
                                       usage.reserved);
            }
        }
        pthread_mutex_unlock(&backend->lock);
    }
    return true;
}

static rl_status template_usage(rl_backend *base, const char *const *patterns, size_t count,
                                rl_template_usage *out) {
    memory_backend *backend = from_base(base);
    GHashTable *index = g_hash_table_new(g_str_hash, g_str_equal);
    if (index == NULL) return RL_NO_MEMORY;
    for (size_t i = 0; i < count; i++) g_hash_table_insert(index, (gpointer)patterns[i], GSIZE_TO_POINTER(i + 1));
    /* The table doubles as it grows and shrinks only after most of it has
     * gone (limit.h): a few walks at most. */
    for (int attempt = 0; attempt < 4; attempt++) {
        memset(out, 0, count * sizeof *out);
        if (walk_made_limits(backend, index, out)) break;
    }
    g_hash_table_destroy(index);
    return RL_OK;
}

static const rl_backend_ops memory_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "memory",
    .apply_definition = apply_definition,
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .limit_usage = limit_usage,
    .sweep = sweep,
    .destroy = destroy,
    .delete_definition = delete_definition,
    .put_template = put_template,
    .delete_template = delete_template,
    .stats = stats,
    .template_usage = template_usage,
};

static int by_key(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

rl_status rl_memory_backend_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    if (base == NULL || base->ops->destroy != destroy) return RL_INVALID_REQUEST; /* not ours */
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    size_t n = backend->limits.count;
    rl_limit_def *defs = n > 0 ? malloc(n * sizeof *defs) : NULL;
    if (defs != NULL) {
        size_t at = 0;
        RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) if (limit->own != NULL) defs[at++] = *limit->own;
        n = at; /* a limit made from a template is no definition */
    }
    pthread_mutex_unlock(&backend->lock);
    if (n > 0 && defs == NULL) return RL_NO_MEMORY;
    if (n > 1) qsort(defs, n, sizeof *defs, by_key);
    *out = defs;
    *count = n;
    return RL_OK;
}

rl_status rl_memory_backend_templates(rl_backend *base, rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    if (base == NULL || base->ops->destroy != destroy) return RL_INVALID_REQUEST; /* not ours */
    memory_backend *backend = from_base(base);
    pthread_mutex_lock(&backend->lock);
    size_t n = backend->templates != NULL ? rl__template_set_count(backend->templates) : 0;
    rl_limit_def *defs = n > 0 ? malloc(n * sizeof *defs) : NULL;
    for (size_t i = 0; defs != NULL && i < n; i++) defs[i] = rl__template_set_at(backend->templates, i)->def;
    pthread_mutex_unlock(&backend->lock);
    if (n > 0 && defs == NULL) return RL_NO_MEMORY;
    *out = defs; /* in pattern order already */
    *count = n;
    return RL_OK;
}

rl_status rl_memory_backend_create(const rl_memory_options *options, rl_backend **out) {
    rl_memory_options plain;
    rl_memory_options_default(&plain);
    if (options != NULL) {
        plain = *options;
        plain.journal_path = NULL;
        plain.audit_dir = NULL;
    }
    char err[256];
    return rl_memory_backend_open(&plain, out, err, sizeof err);
}

rl_status rl_memory_backend_open(const rl_memory_options *options, rl_backend **out, char *err, size_t err_size) {
    *out = NULL;
    if (err_size > 0) err[0] = '\0';
    rl_memory_options defaults;
    rl_memory_options_default(&defaults);
    if (options == NULL) options = &defaults;
    memory_backend *backend = calloc(1, sizeof *backend);
    if (backend == NULL) return RL_NO_MEMORY;
    backend->base.ops = &memory_ops;
    backend->clock = options->clock != NULL ? options->clock : rl_clock_system();
    backend->lease_memory_ms = options->lease_memory_ms;
    backend->max_leases = options->max_leases != 0 ? options->max_leases : RL_MEMORY_DEFAULT_MAX_LEASES;
    backend->sweep_interval_ms = options->sweep_interval_ms;
    pthread_mutex_init(&backend->lock, NULL);
    pthread_condattr_t cond_attr;
    pthread_condattr_init(&cond_attr);
    pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
    pthread_cond_init(&backend->sweeper_wake, &cond_attr);
    pthread_condattr_destroy(&cond_attr);
    rl__mem_hand_back_init(&backend->hand_back);
    if (!rl__mem_limit_table_init(&backend->limits) || !rl__mem_lease_table_init(&backend->leases)) {
        destroy(&backend->base);
        return RL_NO_MEMORY;
    }
    rl_status status = rl__mem_journal_open(backend, options, err, err_size);
    if (status != RL_OK) {
        destroy(&backend->base);
        return status;
    }
    /* With a journal (or an audit log): answers wait for the disk, the
     * health says when it fails, and the audit log can be read. */
    if (backend->journal != NULL) {
        backend->ops = memory_ops;
        backend->ops.health = health;
        backend->ops.reserve_batch_async = reserve_batch_async;
        backend->ops.complete_batch_async = complete_batch_async;
        if (backend->audit != NULL) backend->ops.audit_query = audit_query;
        backend->base.ops = &backend->ops;
    }
    if (backend->sweep_interval_ms > 0) {
        if (pthread_create(&backend->sweeper, NULL, sweeper_main, backend) != 0) {
            destroy(&backend->base);
            return RL_NO_MEMORY;
        }
        backend->sweeper_running = true;
    }
    *out = &backend->base;
    return RL_OK;
}
