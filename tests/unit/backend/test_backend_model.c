/* test_backend_model.c — random interleavings of reserve, complete, time and
 * admin changes against a backend, checked step by step against a small,
 * obviously-correct reference model (the live entries in a flat list, every
 * total recomputed from them), and against invariants that do not trust the
 * model at all (a ledger built from the backend's own answers).
 *
 * Operations: reserves of 1..6 keys (all-or-nothing), alone or in batches,
 * fresh or retried lease ids (same or different requirements), keys not
 * defined yet, some of them optional (skipped while undefined; a defined
 * optional key is reserved as any other; a retry must mark the same keys
 * optional), a tenth of them dry runs (their answer the model's, the model
 * left as it was: a dry run must change nothing, remember nothing); completes with actuals below, equal to or above what was
 * reserved (or none), of admitted, denied, completed, unknown and not yet
 * reserved leases, alone or in batches; time advancing by random steps or to
 * exactly an entry's expiry (or 1 ms before it), or to exactly a budget's
 * period end (or 1 ms before it); admin changes of capacity (increase at
 * once, decrease pending until usage allows), overage policy (debt | deny),
 * window or timeout, kind (rolling <-> concurrency), a budget's calendar
 * (an hour in UTC or in Asia/Kolkata, +05:30, or a day in UTC: its period
 * moves and keeps what it counted), the first definition of a key
 * reserves have been meeting as unknown, and deletes: of a limit (its
 * entries dropped, charged and audited nothing; a lease that held some
 * keeps its others, and its retries their first outcome; the key unknown
 * until defined again, as a new limit that starts empty, which the old
 * leases' Completes never touch; some followed at once by a PUT of the
 * key, which a fleet's other daemons see before they hear of the delete)
 * and of a key with no limit; and, on a
 * backend with templates, puts and deletes of one template two keys are
 * made from (each follows a put as a PUT of its own would, a change of
 * kind refused while either holds anything; a delete drops both; one that
 * holds nothing is forgotten, what it counted with it). Budgets: a reservation belongs to
 * the period it was made in (completed after the boundary it is charged
 * there: nothing now), its timeout refunds it in full, its actual (or
 * without one what it reserved) is charged under the overage policy.
 *
 * After every step, for every limit: the backend's usage (status, capacity
 * enforced, pending decrease, used, available, active, debt, debt_total,
 * overage_denied_total, and a budget's period, committed and reserved)
 * equals the model's; every reserve's allowed, status, status key,
 * retry_after_ms, reserved_at_unix_ms and denied_by (a budget's period end
 * too) equal the model's. At the end of each sequence, on a backend that
 * keeps an audit log, every rolling and budget key's log equals the
 * model's, read in pages: one entry per key a Complete charged, with the
 * reserve's job id, and one per budget reservation refunded by its timeout. The
 * ledger, fed only by what the backend answered, checks: no lease is ever
 * admitted while what earlier admitted leases still hold in their window (or
 * hold) plus its amount exceeds the capacity an admin set; the backend
 * never counts less than those leases hold; a decided lease never changes
 * its answer; debt_total and overage_denied_total never go down and move
 * only on Complete. At the end every open lease is completed and the clock
 * passes every window and timeout: used, active and debt are 0 everywhere,
 * every decrease applied.
 *
 * Sequences near the ceiling draw capacities near 2^53 and amounts and
 * overage up to it, so that used, committed and the totals reach the
 * counters' ceiling (RL_COUNTER_MAX) within a few Completes and stay there
 * while more is charged: the model counts as core/counter.h says (a counter
 * saturates, an entry holds what fitted), and so must the backend, with
 * the same answers as everywhere else.
 *
 * Groups: "memory" (200 sequences of 200 steps, then 20 of 2000, then 100
 * of 200 near the ceiling) and "redis" (a private redis-server,
 * tests/support/redis_server.h; 60 of 200, 4 of 2000 and 30 of 200 near the
 * ceiling: every step there is several round trips). The fleet's group has
 * no sequences near the ceiling: there the room allotments hold set aside
 * counts under the ceiling too (docs/api.md "Counters"), which the model
 * cannot see. A failure prints
 * the backend, the seed, the step and the last operations; RL_MODEL_SEED=<n>
 * runs only that seed (with the steps of the sequence that failed, if
 * RL_MODEL_STEPS=<n> says so). Time is a manual clock that the backend and
 * the model both read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/memory/journal.h"
#include "backend/memory/memory_backend.h"

#include "ratelimiter/memory.h"
#include "ratelimiter/redis.h"
#include "support/fleet_backend.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

/* Limits 0..2 start rolling, 3..4 concurrency, 5..6 budgets; UNDEFINED
 * starts unknown to the backend and is defined by an admin change some time
 * in the run; FIRST_MADE.. are keys no limit defines, made from the one
 * template of MADE_PATTERN (rolling or concurrency) on a backend with
 * templates, its admin changes put_template and delete_template (on one
 * without, they stay unknown). */
enum { LIMITS = 10, FIRST_BUDGET = 5, UNDEFINED = 7, FIRST_MADE = 8, MAX_LEASES = 12000, MAX_LIVE = 20000, MAX_SECONDS = 5, BATCH_MAX = 4 };
#define MADE_PATTERN "model:{n}:made"
static bool is_made(int l) { return l >= FIRST_MADE; }
static bool has_templates; /* the backend under test has the template ops */
/* The model's audit entries, per limit. */
enum { MAX_AUDIT = 12000 };

/* Lease numbers from here on are never reserved: completes of unknown ids. */
#define NEVER_RESERVED_BASE 1000000u
#define LEASE_MEMORY_MS 4000000000u /* remember every lease for the whole run (46 days: budgets' periods pass) */
#define T0_MONOTONIC 5000u
#define T0_UNIX 1700000000000u

/* ---- the sequence's random numbers (not rand(): backend threads may use it) ---- */

static uint64_t rng_state;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t pick(uint64_t n) { return rng_next() % n; } /* 0..n-1 */
static bool chance(unsigned percent) { return pick(100) < percent; }

/* ---- failure reports: the seed, the step, the last operations ---- */

enum { TRACE = 16 };
static char trace[TRACE][320];
static unsigned trace_count;
static const char *run_backend;
static unsigned run_seed_value;
static int run_steps, run_step;

static void note(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(trace[trace_count % TRACE], sizeof trace[0], format, args);
    va_end(args);
    trace_count++;
}

static void fail_step(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail_step(const char *format, ...) {
    char what[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    print_error("backend %s, seed %u (RL_MODEL_SEED=%u RL_MODEL_STEPS=%d), step %d: %s\nlast operations:\n",
                run_backend, run_seed_value, run_seed_value, run_steps, run_step, what);
    unsigned first = trace_count > TRACE ? trace_count - TRACE : 0;
    for (unsigned i = first; i < trace_count; i++) print_error("  %s\n", trace[i % TRACE]);
    fail_msg("backend %s seed %u step %d: %s", run_backend, run_seed_value, run_step, what);
    abort(); /* not reached */
}

/* ---- what the sequences exercised (printed per test: a model test that
 * never reaches a case proves nothing about it) ---- */

static struct coverage {
    unsigned long steps, allowed, denied_full, exceeds, decreasing, unknown, replays, conflicts, batches;
    unsigned long completes, drained, overage_debt, debt_above_capacity, overage_denied, shrinks, releases_by_complete;
    unsigned long admin_increase, admin_decrease, admin_decrease_pending, admin_other, kind_in_use, clamped;
    unsigned long edge_advances;
    unsigned long periods, period_edges, refunds, budget_charges, late_completes, calendars, audit_entries;
    unsigned long restarts, compactions, deletes, deletes_unknown, deleted_entries;
    unsigned long dry_runs, skipped;
    unsigned long template_puts, template_kind_in_use, template_deletes, made_forgotten;
    unsigned long fleet_denials, fleet_later_retries, fleet_decreases_waiting; /* answers allotments make differ */
    unsigned long saturated; /* charges the counter ceiling cut */
} cov;

static void print_coverage(const char *what) {
    print_message("%s: %lu steps; reserves: %lu allowed, %lu denied (full), %lu exceeds_capacity, %lu "
                  "limit_decreasing, %lu unknown_limit_key, %lu replays, %lu lease_id_conflict, %lu batches; completes: %lu of admitted "
                  "leases (+%lu at the end), %lu shrunk, %lu overages charged under debt (%lu above capacity), %lu "
                  "under deny; %lu charges cut at the counter ceiling; %lu holds released; admin: %lu "
                  "increases, %lu decreases (%lu left pending), %lu policy/lifetime/kind/define, %lu kind changes "
                  "refused (in use); %lu expiries "
                  "clamped; %lu advances to an expiry edge; budgets: %lu periods started, %lu advances to a period's "
                  "edge, %lu reservations refunded by timeout, %lu charged, %lu completed after their period, %lu "
                  "calendar changes; %lu audit entries compared; %lu restarts from the journal, %lu compactions; %lu dry runs, %lu "
                  "optional keys skipped; %lu deletes (%lu live entries dropped), %lu of an unknown key; templates: %lu "
                  "puts (%lu kind changes refused), %lu deletes, %lu made limits forgotten with totals; fleet: %lu "
                  "denials the "
                  "model would not give, %lu longer retry_after_ms, %lu decreases answered pending\n",
                  what, cov.steps, cov.allowed, cov.denied_full, cov.exceeds, cov.decreasing, cov.unknown, cov.replays, cov.conflicts,
                  cov.batches, cov.completes - cov.drained, cov.drained, cov.shrinks, cov.overage_debt,
                  cov.debt_above_capacity, cov.overage_denied, cov.saturated,
                  cov.releases_by_complete, cov.admin_increase, cov.admin_decrease, cov.admin_decrease_pending,
                  cov.admin_other, cov.kind_in_use, cov.clamped, cov.edge_advances, cov.periods, cov.period_edges,
                  cov.refunds, cov.budget_charges, cov.late_completes, cov.calendars, cov.audit_entries, cov.restarts,
                  cov.compactions, cov.dry_runs, cov.skipped, cov.deletes, cov.deleted_entries, cov.deletes_unknown,
                  cov.template_puts, cov.template_kind_in_use, cov.template_deletes, cov.made_forgotten,
                  cov.fleet_denials, cov.fleet_later_retries, cov.fleet_decreases_waiting);
    memset(&cov, 0, sizeof cov);
}

/* ---- the reference model ---- */

typedef struct model_entry {
    int limit, lease;
    uint64_t amount, expires_at_ms;
    uint64_t reserved; /* amount as reserved (a rolling one's amount changes on Complete) */
    rl_kind kind; /* the limit's kind when reserved: Complete follows it */
    uint64_t period_start; /* a budget's: the period it was made in */
    bool live;
    bool deleted; /* its limit was deleted: a Complete passes it by */
} model_entry;

typedef struct model_limit {
    rl_limit_def def; /* as last applied */
    bool defined;
    uint64_t capacity; /* enforced now */
    uint64_t pending_decrease_to;
    uint64_t debt_total, overage_denied_total;
    uint64_t tail_ms; /* latest expiry a rolling entry got (see expiry_of) */
    /* Budgets: the period counted now, and the actuals charged in it. */
    uint64_t period_start, period_end, committed;
    /* The audit log it must have: entries[0..audit_count). */
    rl_audit_entry *audit;
    int audit_count;
} model_limit;

typedef struct model_lease {
    bool decided, allowed, completed;
    rl_reserve_result first;
    model_entry entries[LIMITS];
    int entry_count;
} model_lease;

static model_limit limits[LIMITS];
static model_lease leases[MAX_LEASES];
static model_entry *live[MAX_LIVE]; /* every entry that may be live (dead ones dropped on expire) */
static int live_count;
static uint64_t now_ms, unix_now_ms;
/* memory: a rolling entry made while the limit still holds live rolling
 * entries expires no sooner than the latest of them (memory/limit.h: its
 * ring stays in order after a window is shortened; erring long never
 * over-admits). redis: always now + window. */
static bool expiry_clamps_to_tail;
/* A fleet with allotments (check_reserve says what it may answer
 * otherwise). Its sequences draw larger capacities and mostly small
 * amounts, so that allotments are worth carving and leases are decided
 * from them as well as by Redis. */
static bool fleet_semantics;
/* A sequence near the ceiling (the header): capacities near 2^53, amounts
 * and overage up to it. */
static bool near_ceiling;

/* The counters' rule (core/counter.h), the model's own: counter + amount
 * at most RL_COUNTER_MAX, and what of amount still fits under it. */
static uint64_t counter_add(uint64_t counter, uint64_t amount) {
    return counter + amount < RL_COUNTER_MAX ? counter + amount : RL_COUNTER_MAX;
}

static uint64_t counter_fit(uint64_t counter, uint64_t amount) {
    uint64_t room = RL_COUNTER_MAX - counter;
    if (amount > room) cov.saturated++;
    return amount < room ? amount : room;
}

/* A capacity near the ceiling: the ceiling itself, just below it, or
 * above half of it. */
static uint64_t capacity_near_ceiling(void) {
    unsigned roll = (unsigned)pick(100);
    if (roll < 30) return RL_AMOUNT_MAX;
    if (roll < 60) return RL_AMOUNT_MAX - pick(1000);
    return RL_AMOUNT_MAX / 2 + pick(RL_AMOUNT_MAX / 2);
}

/* Whether a live entry counts in its limit's use now: a budget's
 * reservation of an earlier period does not. */
static bool counted_now(const model_entry *e) {
    return e->kind != RL_KIND_BUDGET || e->period_start == limits[e->limit].period_start;
}

static uint64_t used_of(int l) {
    uint64_t used = limits[l].def.kind == RL_KIND_BUDGET ? limits[l].committed : 0;
    for (int i = 0; i < live_count; i++)
        if (live[i]->live && live[i]->limit == l && counted_now(live[i])) used += live[i]->amount;
    return used;
}

static uint64_t active_of(int l) {
    uint64_t active = 0;
    for (int i = 0; i < live_count; i++)
        if (live[i]->live && live[i]->limit == l) active++;
    return active;
}

static bool has_live_rolling(int l) {
    for (int i = 0; i < live_count; i++)
        if (live[i]->live && live[i]->limit == l && live[i]->kind == RL_KIND_ROLLING) return true;
    return false;
}

static uint64_t lifetime_ms(const rl_limit_def *def) {
    return 1000u * (uint64_t)(def->kind == RL_KIND_ROLLING ? def->window_seconds : def->timeout_seconds);
}

static void try_decrease(int l) {
    if (limits[l].pending_decrease_to != 0 && used_of(l) <= limits[l].pending_decrease_to) {
        limits[l].capacity = limits[l].pending_decrease_to;
        limits[l].pending_decrease_to = 0;
    }
}

/* A budget's calendars here: an hour in UTC or in Asia/Kolkata (+05:30 all
 * year: its hours start at :30 UTC), or a day in UTC. Plain arithmetic, the
 * reference for the backends' tzdata. */
static void period_of(const rl_limit_def *d, uint64_t unix_ms, uint64_t *start, uint64_t *end) {
    uint64_t offset = strcmp(d->timezone, "Asia/Kolkata") == 0 ? 19800000u : 0;
    uint64_t length = d->period == RL_PERIOD_HOUR ? 3600000u : 86400000u;
    uint64_t local = unix_ms + offset;
    *start = local - local % length - offset;
    *end = *start + length;
}

/* Appends an entry to limit l's audit log in the model. */
static void audit_add(int l, uint64_t at_unix_ms, int lease, uint64_t reserved, uint64_t actual,
                      uint64_t period_start, bool expired);

/* The job id the test gives a lease's reserve: every third has one, with
 * bytes the record's and the stream's framing must carry as they are. */
static const char *job_of(int lease, char out[64]) {
    if (lease % 3 != 0) return NULL;
    snprintf(out, 64, "job %d \"x\" #f !1:2 @3 \xc3\xa9", lease);
    return out;
}

static void forget_made(int l);

static void expire(void) {
    for (int l = 0; l < LIMITS; l++) {
        model_limit *lim = &limits[l];
        if (lim->defined && lim->def.kind == RL_KIND_BUDGET && unix_now_ms >= lim->period_end) {
            period_of(&lim->def, unix_now_ms, &lim->period_start, &lim->period_end);
            lim->committed = 0; /* its open reservations belong to the period before */
            cov.periods++;
        }
    }
    /* refunds are audited in the order of their timeouts (then of their lease ids) */
    static model_entry *due[MAX_LIVE];
    int due_count = 0, kept = 0;
    for (int i = 0; i < live_count; i++) {
        if (live[i]->live && live[i]->expires_at_ms <= now_ms) {
            live[i]->live = false;
            if (live[i]->kind == RL_KIND_BUDGET) due[due_count++] = live[i];
        }
        if (live[i]->live) live[kept++] = live[i];
    }
    live_count = kept;
    for (int i = 1; i < due_count; i++) /* insertion sort: few at a time */
        for (int j = i; j > 0 && (due[j - 1]->expires_at_ms > due[j]->expires_at_ms ||
                                  (due[j - 1]->expires_at_ms == due[j]->expires_at_ms && due[j - 1]->lease > due[j]->lease));
             j--) {
            model_entry *t = due[j];
            due[j] = due[j - 1];
            due[j - 1] = t;
        }
    for (int i = 0; i < due_count; i++) {
        const model_entry *e = due[i];
        audit_add(e->limit, e->expires_at_ms - now_ms + unix_now_ms, e->lease, e->amount, 0, e->period_start, true);
        cov.refunds++;
    }
    for (int l = 0; l < LIMITS; l++) try_decrease(l);
    for (int l = FIRST_MADE; l < LIMITS; l++)
        if (limits[l].defined && active_of(l) == 0) forget_made(l);
}

static int by_expiry(const void *a, const void *b) {
    const model_entry *x = *(model_entry *const *)a, *y = *(model_entry *const *)b;
    return x->expires_at_ms < y->expires_at_ms ? -1 : x->expires_at_ms > y->expires_at_ms;
}

/* retry_after_ms (docs/concepts.md): the earliest time at which amount would fit if nothing else
 * changed: walk the live entries by expiry until enough frees. A budget:
 * its open reservations of this period, if they can free enough; else its
 * period's end (what is committed leaves only with it). */
static uint64_t retry_after(int l, uint64_t amount) {
    static model_entry *sorted[MAX_LIVE];
    int n = 0;
    for (int i = 0; i < live_count; i++)
        if (live[i]->live && live[i]->limit == l && counted_now(live[i])) sorted[n++] = live[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_expiry);
    const model_limit *lim = &limits[l];
    uint64_t need = used_of(l) + amount - lim->capacity;
    bool budget = lim->def.kind == RL_KIND_BUDGET;
    if (!budget || need <= used_of(l) - lim->committed) {
        for (int i = 0; i < n; i++) {
            if (sorted[i]->amount >= need) return sorted[i]->expires_at_ms > now_ms ? sorted[i]->expires_at_ms - now_ms : 1;
            need -= sorted[i]->amount;
        }
    }
    if (budget) return lim->period_end > unix_now_ms ? lim->period_end - unix_now_ms : 1;
    fail_step("model: the retry walk of %s ran out", lim->def.key);
}

static uint64_t expiry_of(int l) {
    uint64_t at = now_ms + lifetime_ms(&limits[l].def);
    if (limits[l].def.kind == RL_KIND_ROLLING) {
        if (expiry_clamps_to_tail && has_live_rolling(l) && limits[l].tail_ms > at) {
            at = limits[l].tail_ms;
            cov.clamped++;
        }
        limits[l].tail_ms = at;
    }
    return at;
}

/* denied_by: limit l had capacity, and what it had free, for requested
 * (and a budget's period ended then). */
static void model_denial(rl_reserve_result *r, int l, rl_denial_reason reason, uint64_t requested,
                         uint64_t capacity) {
    uint64_t used = used_of(l);
    uint64_t period_end = limits[l].def.kind == RL_KIND_BUDGET ? limits[l].period_end : 0;
    r->denied_by =
        (rl_denial){limits[l].def.key, reason, requested, used < capacity ? capacity - used : 0, capacity, period_end};
}

static rl_reserve_result model_reserve(int lease, const int *all_keys, const uint64_t *all_amounts,
                                       const bool *optional, int all) {
    model_lease *m = &leases[lease];
    if (m->decided) {
        cov.replays++;
        return m->first;
    }
    rl_reserve_result r = {.allowed = false};
    /* the requirements held: an optional one without a definition skipped */
    int keys[LIMITS], n = 0;
    uint64_t amounts[LIMITS];
    for (int i = 0; i < all; i++) {
        if (limits[all_keys[i]].defined) {
            keys[n] = all_keys[i];
            amounts[n++] = all_amounts[i];
        } else if (optional[i]) {
            cov.skipped++;
        } else { /* not remembered: the key may be defined before a retry */
            r.status = RL_UNKNOWN_LIMIT_KEY;
            r.status_key = limits[all_keys[i]].def.key;
            cov.unknown++;
            return r;
        }
    }
    expire();
    int decreasing = -1, full = -1; /* indexes into keys */
    uint64_t wait = 0;
    for (int i = 0; i < n; i++) {
        int l = keys[i];
        if (amounts[i] > limits[l].capacity) { /* beats everything: retrying cannot help */
            r.status = RL_EXCEEDS_CAPACITY;
            r.status_key = limits[l].def.key;
            model_denial(&r, l, RL_DENIAL_EXCEEDS_CAPACITY, amounts[i], limits[l].capacity);
            cov.exceeds++;
            goto decided;
        }
        if (limits[l].pending_decrease_to != 0) {
            if (decreasing < 0) decreasing = i;
            continue;
        }
        if (used_of(l) + amounts[i] > limits[l].capacity) {
            /* denied_by names the limit whose room comes back last (the first of equals) */
            uint64_t w = retry_after(l, amounts[i]);
            if (full < 0 || w > wait) {
                full = i;
                wait = w;
            }
        }
    }
    if (decreasing >= 0) {
        int l = keys[decreasing];
        r.status = RL_LIMIT_DECREASING;
        r.status_key = limits[l].def.key;
        r.retry_after_ms = RL_DECREASING_RETRY_AFTER_MS;
        model_denial(&r, l, RL_DENIAL_DECREASING, amounts[decreasing], limits[l].pending_decrease_to);
        cov.decreasing++;
    } else if (full >= 0) {
        r.retry_after_ms = wait;
        model_denial(&r, keys[full], RL_DENIAL_CAPACITY, amounts[full], limits[keys[full]].capacity);
        cov.denied_full++;
    } else {
        r.allowed = true;
        cov.allowed++;
        r.reserved_at_unix_ms = unix_now_ms;
        for (int i = 0; i < n; i++) {
            model_entry *e = &m->entries[m->entry_count++];
            e->limit = keys[i];
            e->lease = lease;
            e->amount = e->reserved = amounts[i];
            e->kind = limits[keys[i]].def.kind;
            e->period_start = limits[keys[i]].period_start;
            e->expires_at_ms = expiry_of(keys[i]);
            e->live = true;
            if (live_count == MAX_LIVE) fail_step("model: more than %d live entries", MAX_LIVE);
            live[live_count++] = e;
        }
    }
decided:
    m->decided = true;
    m->allowed = r.allowed;
    m->first = r;
    return r;
}

/* How many lease numbers the sequence has used (operations, below). */
static int next_lease_model(void);

/* A rolling entry's Complete with an actual: the rest frees now, overage
 * as the limit's policy says now. */
static void reconcile(model_entry *e, uint64_t actual) {
    model_limit *lim = &limits[e->limit];
    if (actual < e->amount) {
        cov.shrinks++;
        e->amount = actual;
        if (e->amount == 0) e->live = false;
    } else if (actual > e->amount) {
        uint64_t extra = actual - e->amount, used = used_of(e->limit);
        if (lim->def.overage == RL_OVERAGE_DEBT) {
            uint64_t before = used > lim->capacity ? used - lim->capacity : 0;
            uint64_t after = used + extra > lim->capacity ? used + extra - lim->capacity : 0;
            lim->debt_total = counter_add(lim->debt_total, after - before);
            cov.overage_debt++;
            if (after > before) cov.debt_above_capacity++;
            e->amount += counter_fit(used, extra);
        } else {
            uint64_t room = used < lim->capacity ? lim->capacity - used : 0;
            uint64_t charged = extra < room ? extra : room;
            e->amount += charged;
            lim->overage_denied_total = counter_add(lim->overage_denied_total, extra - charged);
            cov.overage_denied++;
        }
    }
}

/* A budget's open reservation completed with actual: released, and the
 * actual charged to this period if it was made in it (debt: all of it;
 * deny: what fits, at least what it reserved); an earlier period's is
 * charged nothing now. */
static void charge(model_entry *e, uint64_t actual) {
    model_limit *lim = &limits[e->limit];
    e->live = false;
    if (!counted_now(e)) {
        cov.late_completes++;
        return;
    }
    uint64_t used = used_of(e->limit), reserved = e->amount, charged = actual;
    if (actual > reserved) {
        if (lim->def.overage == RL_OVERAGE_DEBT) {
            uint64_t before = used + reserved > lim->capacity ? used + reserved - lim->capacity : 0;
            uint64_t after = used + actual > lim->capacity ? used + actual - lim->capacity : 0;
            lim->debt_total = counter_add(lim->debt_total, after - before);
            cov.overage_debt++;
        } else {
            uint64_t room = used < lim->capacity ? lim->capacity - used : 0;
            if (room < reserved) room = reserved;
            charged = actual < room ? actual : room;
            lim->overage_denied_total = counter_add(lim->overage_denied_total, actual - charged);
            cov.overage_denied++;
        }
    }
    lim->committed += counter_fit(used, charged); /* used holds committed */
    cov.budget_charges++;
}

static void model_complete(int lease, const int *keys, const uint64_t *actuals, int n) {
    if (lease >= MAX_LEASES) return; /* never reserved */
    model_lease *m = &leases[lease];
    if (!m->decided || !m->allowed || m->completed) return;
    m->completed = true;
    cov.completes++;
    expire();
    /* each entry by its kind when reserved; the lease names each limit once */
    for (int i = 0; i < m->entry_count; i++) {
        model_entry *e = &m->entries[i];
        if (e->deleted) continue; /* charged nothing, audited nothing */
        const uint64_t *actual = NULL;
        for (int a = 0; a < n; a++)
            if (keys[a] == e->limit) actual = &actuals[a];
        if (e->kind == RL_KIND_CONCURRENCY) { /* holds go whatever the actuals say */
            if (e->live) cov.releases_by_complete++;
            e->live = false;
        } else if (e->kind == RL_KIND_BUDGET) { /* refunded by its timeout: nothing to charge, no entry */
            uint64_t spent = actual != NULL ? *actual : e->amount;
            if (!e->live) continue;
            charge(e, spent);
            audit_add(e->limit, unix_now_ms, lease, e->reserved, spent, e->period_start, false);
        } else {
            if (actual != NULL && e->live) reconcile(e, *actual);
            audit_add(e->limit, unix_now_ms, lease, e->reserved, actual != NULL ? *actual : e->reserved, 0, false);
        }
    }
    for (int l = 0; l < LIMITS; l++) try_decrease(l);
}

/* An admin PUT of def for limit l. Returns the status it must answer. */
static rl_limit_status model_apply(int l, const rl_limit_def *def) {
    model_limit *lim = &limits[l];
    if (!lim->defined) {
        lim->def = *def;
        lim->defined = true;
        lim->capacity = def->capacity;
        lim->pending_decrease_to = 0;
        if (def->kind == RL_KIND_BUDGET) period_of(def, unix_now_ms, &lim->period_start, &lim->period_end);
        return RL_LIMIT_STATUS_ACTIVE;
    }
    expire(); /* by the definition it had: a budget's period that ended is over */
    bool new_calendar = def->kind == RL_KIND_BUDGET &&
                        (def->period != lim->def.period || strcmp(def->timezone, lim->def.timezone) != 0);
    lim->def = *def;
    if (new_calendar) { /* what it counted goes on counting in the new calendar's period */
        uint64_t start, end;
        period_of(def, unix_now_ms, &start, &end);
        for (int i = 0; i < live_count; i++)
            if (live[i]->live && live[i]->limit == l && live[i]->period_start == lim->period_start)
                live[i]->period_start = start;
        lim->period_start = start;
        lim->period_end = end;
        cov.calendars++;
    }
    if (def->capacity >= lim->capacity) { /* an increase applies at once and cancels a pending decrease */
        if (def->capacity > lim->capacity) cov.admin_increase++;
        lim->capacity = def->capacity;
        lim->pending_decrease_to = 0;
    } else {
        cov.admin_decrease++;
        lim->pending_decrease_to = def->capacity;
        try_decrease(l);
        if (lim->pending_decrease_to != 0) cov.admin_decrease_pending++;
    }
    return lim->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
}

/* An admin DELETE of limit l (defined): its live entries go, charged and
 * audited nothing, and every lease's entry of it is passed by from now on;
 * the limit is unknown until defined again, as a new one that starts empty
 * (its audit log stays: the log outlives a definition). */
static void model_delete(int l) {
    for (int lease = 1; lease < next_lease_model(); lease++) {
        model_lease *m = &leases[lease];
        for (int i = 0; i < m->entry_count; i++) {
            model_entry *e = &m->entries[i];
            if (e->limit != l || e->deleted) continue;
            if (e->live) cov.deleted_entries++;
            e->live = false;
            e->deleted = true;
        }
    }
    int kept = 0;
    for (int i = 0; i < live_count; i++)
        if (live[i]->live) live[kept++] = live[i];
    live_count = kept;
    model_limit *lim = &limits[l];
    rl_limit_def def = lim->def;
    rl_audit_entry *audit = lim->audit;
    int audit_count = lim->audit_count;
    memset(lim, 0, sizeof *lim);
    lim->def = def;
    lim->audit = audit;
    lim->audit_count = audit_count;
}

/* ---- the ledger: what the backend's own answers imply, no model ---- */

typedef struct ledger_entry {
    int limit;
    uint64_t amount; /* what the lease still holds at least: reserved, cut to a lower actual */
    uint64_t expires_at_ms; /* now + window/timeout when admitted: the backend may hold longer, not shorter */
    bool hold;              /* released by Complete: a concurrency hold or a budget's reservation */
    bool budget;            /* held only in the period it was made in (by the calendar it had then) */
    uint64_t period_start;
} ledger_entry;

typedef struct ledger_lease {
    bool answered, allowed, completed; /* answered: allowed or denied (not unknown_limit_key) */
    ledger_entry entries[LIMITS];
    int entry_count;
} ledger_lease;

static ledger_lease ledger[MAX_LEASES];
static uint64_t admin_capacity[LIMITS]; /* the capacity the last admin change set */
static bool kind_changed[LIMITS];
static uint64_t last_debt_total[LIMITS], last_denied_total[LIMITS];

/* A limit made from a template that holds nothing is forgotten, made again
 * empty when next named: what it counted goes with it. */
static void forget_made(int l) {
    if (limits[l].debt_total != 0 || limits[l].overage_denied_total != 0) cov.made_forgotten++;
    limits[l].debt_total = limits[l].overage_denied_total = 0;
    last_debt_total[l] = last_denied_total[l] = 0;
}

/* The ledger's entries that may still hold something (amount > 0, not
 * expired); dropped by ledger_compact. */
static ledger_entry *ledger_live[MAX_LIVE];
static int ledger_live_count;

static void ledger_compact(void) {
    int kept = 0;
    for (int i = 0; i < ledger_live_count; i++)
        if (ledger_live[i]->amount > 0 && ledger_live[i]->expires_at_ms > now_ms) ledger_live[kept++] = ledger_live[i];
    ledger_live_count = kept;
}

/* The start of the period l's calendar holds now (budgets). */
static uint64_t period_now(int l) {
    uint64_t start, end;
    period_of(&limits[l].def, unix_now_ms, &start, &end);
    return start;
}

/* What admitted leases still hold on l now, and in how many entries (a
 * budget's committed spend aside). */
static uint64_t held_now(int l, uint64_t *count) {
    uint64_t held = 0;
    *count = 0;
    for (int i = 0; i < ledger_live_count; i++) {
        const ledger_entry *e = ledger_live[i];
        if (e->limit == l && e->amount > 0 && e->expires_at_ms > now_ms &&
            (!e->budget || e->period_start == period_now(l))) {
            held += e->amount;
            (*count)++;
        }
    }
    return held;
}

/* The backend answered got for lease with these requirements. */
static void ledger_reserved(int lease, const int *keys, const uint64_t *amounts, const bool *optional, int n,
                            const rl_reserve_result *got) {
    ledger_lease *x = &ledger[lease];
    if (got->status == RL_UNKNOWN_LIMIT_KEY && !x->answered) return;
    if (got->status == RL_LEASE_ID_CONFLICT) { /* not an outcome of the lease: it keeps its first */
        if (!x->answered) fail_step("lease %d: lease_id_conflict, but it was never answered", lease);
        return;
    }
    if (x->answered) {
        if (got->allowed != x->allowed)
            fail_step("lease %d was %s before and is %s now", lease, x->allowed ? "allowed" : "denied",
                      got->allowed ? "allowed" : "denied");
        return;
    }
    x->answered = true;
    x->allowed = got->allowed;
    if (!got->allowed) return;
    for (int i = 0; i < n; i++) {
        int l = keys[i];
        if (optional[i] && !limits[l].defined) continue; /* skipped: holds nothing */
        uint64_t count;
        uint64_t held = held_now(l, &count);
        /* never more admitted than the capacity in force, debt aside (a
         * pending decrease denies, so the capacity in force is the last one set) */
        if (held + amounts[i] > admin_capacity[l])
            fail_step("lease %d admitted %llu on %s while admitted leases still hold %llu of capacity %llu", lease,
                      (unsigned long long)amounts[i], limits[l].def.key, (unsigned long long)held,
                      (unsigned long long)admin_capacity[l]);
        ledger_entry *e = &x->entries[x->entry_count++];
        e->limit = l;
        e->amount = amounts[i];
        e->expires_at_ms = now_ms + lifetime_ms(&limits[l].def);
        e->hold = limits[l].def.kind != RL_KIND_ROLLING;
        e->budget = limits[l].def.kind == RL_KIND_BUDGET;
        e->period_start = e->budget ? period_now(l) : 0;
        if (ledger_live_count == MAX_LIVE) fail_step("ledger: more than %d live entries", MAX_LIVE);
        ledger_live[ledger_live_count++] = e;
    }
}

static void ledger_completed(int lease, const int *keys, const uint64_t *actuals, int n) {
    if (lease >= MAX_LEASES) return;
    ledger_lease *x = &ledger[lease];
    if (!x->allowed || x->completed) return;
    x->completed = true;
    for (int j = 0; j < x->entry_count; j++) {
        ledger_entry *e = &x->entries[j];
        if (e->hold) {
            e->amount = 0;
            continue;
        }
        for (int a = 0; a < n; a++)
            if (keys[a] == e->limit && e->expires_at_ms > now_ms && actuals[a] < e->amount) e->amount = actuals[a];
    }
}

/* ---- comparing the backend with both ---- */

static void check_limit(rl_backend *backend, int l, bool totals_may_move) {
    rl_limit_usage u;
    rl_status status = rl_backend_limit_usage(backend, limits[l].def.key, &u);
    if (!limits[l].defined) {
        if (status != RL_UNKNOWN_LIMIT_KEY) fail_step("usage of undefined %s: %s", limits[l].def.key, rl_status_name(status));
        return;
    }
    if (status != RL_OK) fail_step("usage of %s: %s", limits[l].def.key, rl_status_name(status));
    const model_limit *m = &limits[l];
    uint64_t used = used_of(l), active = active_of(l);
    rl_limit_usage want = {
        .status = m->pending_decrease_to != 0 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE,
        .capacity = m->capacity,
        .pending_decrease_to = m->pending_decrease_to,
        .used = used,
        .available = used < m->capacity ? m->capacity - used : 0,
        .active = active,
        .debt = used > m->capacity ? used - m->capacity : 0,
        .debt_total = m->debt_total,
        .overage_denied_total = m->overage_denied_total,
    };
    if (u.status != want.status || u.capacity != want.capacity || u.pending_decrease_to != want.pending_decrease_to ||
        u.used != want.used || u.available != want.available || u.active != want.active || u.debt != want.debt ||
        u.debt_total != want.debt_total || u.overage_denied_total != want.overage_denied_total)
        fail_step("%s (backend/model): status %d/%d capacity %llu/%llu pending %llu/%llu used %llu/%llu available "
                  "%llu/%llu active %llu/%llu debt %llu/%llu debt_total %llu/%llu overage_denied_total %llu/%llu",
                  m->def.key, u.status, want.status, (unsigned long long)u.capacity, (unsigned long long)want.capacity,
                  (unsigned long long)u.pending_decrease_to, (unsigned long long)want.pending_decrease_to,
                  (unsigned long long)u.used, (unsigned long long)want.used, (unsigned long long)u.available,
                  (unsigned long long)want.available, (unsigned long long)u.active, (unsigned long long)want.active,
                  (unsigned long long)u.debt, (unsigned long long)want.debt, (unsigned long long)u.debt_total,
                  (unsigned long long)want.debt_total, (unsigned long long)u.overage_denied_total,
                  (unsigned long long)want.overage_denied_total);
    if (m->def.kind == RL_KIND_BUDGET) {
        want.period_start_unix_ms = m->period_start;
        want.period_end_unix_ms = m->period_end;
        want.committed = m->committed;
        want.reserved = used - m->committed;
    }
    if (u.period_start_unix_ms != want.period_start_unix_ms || u.period_end_unix_ms != want.period_end_unix_ms ||
        u.committed != want.committed || u.reserved != want.reserved)
        fail_step("%s (backend/model): period %llu..%llu/%llu..%llu committed %llu/%llu reserved %llu/%llu",
                  m->def.key, (unsigned long long)u.period_start_unix_ms, (unsigned long long)u.period_end_unix_ms,
                  (unsigned long long)want.period_start_unix_ms, (unsigned long long)want.period_end_unix_ms,
                  (unsigned long long)u.committed, (unsigned long long)want.committed, (unsigned long long)u.reserved,
                  (unsigned long long)want.reserved);
    /* the ledger's lower bound, whatever the model says */
    uint64_t count;
    uint64_t held = held_now(l, &count);
    if (u.used < held || u.active < count)
        fail_step("%s counts used %llu, active %llu while admitted leases still hold %llu in %llu entries",
                  m->def.key, (unsigned long long)u.used, (unsigned long long)u.active, (unsigned long long)held,
                  (unsigned long long)count);
    if (u.debt_total < last_debt_total[l] || u.overage_denied_total < last_denied_total[l] ||
        (!totals_may_move && (u.debt_total != last_debt_total[l] || u.overage_denied_total != last_denied_total[l])))
        fail_step("%s: debt_total %llu -> %llu, overage_denied_total %llu -> %llu outside a Complete", m->def.key,
                  (unsigned long long)last_debt_total[l], (unsigned long long)u.debt_total,
                  (unsigned long long)last_denied_total[l], (unsigned long long)u.overage_denied_total);
    last_debt_total[l] = u.debt_total;
    last_denied_total[l] = u.overage_denied_total;
}

static void check_all(rl_backend *backend, bool totals_may_move) {
    expire();
    ledger_compact();
    for (int l = 0; l < LIMITS; l++) check_limit(backend, l, totals_may_move);
}

/* ---- the audit log: the model's, and the backend's read back in pages ---- */

static void audit_add(int l, uint64_t at_unix_ms, int lease, uint64_t reserved, uint64_t actual,
                      uint64_t period_start, bool expired) {
    model_limit *lim = &limits[l];
    if (lim->audit_count % 256 == 0) {
        rl_audit_entry *grown = realloc(lim->audit, ((size_t)lim->audit_count + 256) * sizeof *grown);
        if (grown == NULL) fail_step("model: out of memory for audit entries");
        lim->audit = grown;
    }
    rl_audit_entry *e = &lim->audit[lim->audit_count++];
    memset(e, 0, sizeof *e);
    e->at_unix_ms = at_unix_ms;
    rl_test_lease_id((uint64_t)lease, e->lease_id);
    char job[64];
    const char *job_id = job_of(lease, job);
    snprintf(e->job_id, sizeof e->job_id, "%s", job_id != NULL ? job_id : "");
    snprintf(e->key, sizeof e->key, "%s", lim->def.key);
    e->reserved = reserved;
    e->actual = actual;
    e->period_start_unix_ms = period_start;
    e->expired = expired;
}

static bool same_entry(const rl_audit_entry *a, const rl_audit_entry *b) {
    return a->at_unix_ms == b->at_unix_ms && strcmp(a->lease_id, b->lease_id) == 0 &&
           strcmp(a->job_id, b->job_id) == 0 && strcmp(a->key, b->key) == 0 && a->reserved == b->reserved &&
           a->actual == b->actual && a->period_start_unix_ms == b->period_start_unix_ms && a->expired == b->expired;
}

static void describe_entry(const rl_audit_entry *e, char *out, size_t size) {
    snprintf(out, size, "at %llu lease %s job \"%s\" reserved %llu actual %llu period %llu%s",
             (unsigned long long)e->at_unix_ms, e->lease_id, e->job_id, (unsigned long long)e->reserved,
             (unsigned long long)e->actual, (unsigned long long)e->period_start_unix_ms, e->expired ? " expired" : "");
}

/* Every limit's log, read in pages of a random size from 0, equals the
 * model's (a backend without audit_query keeps none). */
static void check_audit(rl_backend *backend) {
    if (backend->ops->audit_query == NULL) return;
    static rl_audit_entry page_entries[RL_AUDIT_QUERY_MAX];
    for (int l = 0; l < LIMITS; l++) {
        const model_limit *lim = &limits[l];
        if (!lim->defined && lim->audit_count == 0) continue; /* a deleted one's log stays: checked */
        int matched = 0;
        uint64_t since = 0;
        uint32_t page_limit = 1 + (uint32_t)pick(7);
        for (;;) {
            rl_audit_query query = {lim->def.key, since, page_limit};
            rl_audit_page page = {page_entries, 0, 0};
            rl_status status = rl_backend_audit_query(backend, &query, &page);
            if (status != RL_OK) fail_step("audit of %s: %s", lim->def.key, rl_status_name(status));
            if (page.count > page_limit) fail_step("audit of %s: %zu entries for a limit of %u", lim->def.key, page.count, page_limit);
            for (size_t i = 0; i < page.count; i++, matched++) {
                char got[400], want[400] = "(none)";
                describe_entry(&page.entries[i], got, sizeof got);
                if (matched < lim->audit_count) describe_entry(&lim->audit[matched], want, sizeof want);
                if (matched >= lim->audit_count || !same_entry(&page.entries[i], &lim->audit[matched]))
                    fail_step("audit of %s, entry %d: %s, the model's %s", lim->def.key, matched, got, want);
            }
            if (page.count == 0) break;
            if (page.count == page_limit && page.entries[0].at_unix_ms == page.entries[page.count - 1].at_unix_ms &&
                page_limit < RL_AUDIT_QUERY_MAX) { /* one millisecond filled the page: read it whole */
                matched -= (int)page.count;
                page_limit = RL_AUDIT_QUERY_MAX;
                continue;
            }
            since = page.next_since_unix_ms;
        }
        if (matched != lim->audit_count)
            fail_step("audit of %s: %d entries, the model's %d", lim->def.key, matched, lim->audit_count);
        cov.audit_entries += (unsigned long)matched;
    }
}

/* ---- operations ---- */

/* What the test asked of each lease id (retries may ask something else). */
typedef struct request_record {
    int keys[LIMITS];
    uint64_t amounts[LIMITS];
    bool optional[LIMITS];
    int n;
} request_record;

static request_record requested[MAX_LEASES];
static int next_lease;

static int next_lease_model(void) { return next_lease < MAX_LEASES ? next_lease : MAX_LEASES; }
/* Admitted leases not completed yet (as far as the test knows: some are
 * completed later, and dropped when picked). */
static int open_leases[MAX_LEASES], open_count;

static void shuffle(request_record *r);

static void random_requirements(request_record *r) {
    r->n = 0;
    for (int l = 0; l < LIMITS; l++) {
        /* a fleet decides a lease that names a budget by Redis: fewer of those */
        unsigned percent = (l == UNDEFINED || is_made(l)) && !limits[l].defined ? 10
                           : fleet_semantics && l >= FIRST_BUDGET && !is_made(l) ? 8
                                                                                 : 40;
        if (!chance(percent)) continue;
        uint64_t amount, capacity = limits[l].capacity;
        unsigned roll = (unsigned)pick(100);
        if (!limits[l].defined) amount = 1 + pick(5);
        else if (roll < 4 && capacity < RL_AMOUNT_MAX) /* never fits (no amount does past 2^53) */
            amount = capacity + 1 + pick(RL_AMOUNT_MAX - capacity < 3 ? RL_AMOUNT_MAX - capacity : 3);
        else if (roll < 8) amount = capacity;               /* fits an idle limit exactly */
        else if (limits[l].def.kind == RL_KIND_CONCURRENCY && !near_ceiling) amount = 1 + pick(2);
        else if (fleet_semantics && roll < 90) amount = 1 + pick(3);
        else amount = 1 + pick(capacity / 3 + 1);
        r->keys[r->n] = l;
        /* the key defined later mostly optional (skipped until then), the others now and then */
        r->optional[r->n] = chance(l == UNDEFINED || (is_made(l) && !limits[l].defined) ? 50 : 15);
        r->amounts[r->n++] = amount;
    }
    if (r->n == 0) {
        r->keys[0] = (int)pick(3);
        r->amounts[0] = 1;
        r->optional[0] = false;
        r->n = 1;
    }
    shuffle(r);
}

/* Requirements in a random order: the status key is the first that fails,
 * and a retry may list them in any order. */
static void shuffle(request_record *r) {
    for (int i = r->n - 1; i > 0; i--) {
        int j = (int)pick((uint64_t)i + 1);
        int k = r->keys[i];
        uint64_t a = r->amounts[i];
        bool o = r->optional[i];
        r->keys[i] = r->keys[j];
        r->amounts[i] = r->amounts[j];
        r->optional[i] = r->optional[j];
        r->keys[j] = k;
        r->amounts[j] = a;
        r->optional[j] = o;
    }
}

/* A fresh lease, or (a fifth of the time) a retry of an earlier one. */
static int choose_reserve_lease(request_record *r) {
    if (next_lease > 1 && chance(20)) {
        int lease = 1 + (int)pick((uint64_t)next_lease - 1);
        if (chance(80)) { /* a true retry: the same request, in any order */
            *r = requested[lease];
            shuffle(r);
        } else {
            random_requirements(r); /* a reuse: most often another request, a conflict */
        }
        return lease;
    }
    random_requirements(r);
    requested[next_lease] = *r;
    return next_lease++;
}

static void describe_reserve(int lease, const request_record *r, bool dry_run, const rl_reserve_result *got) {
    char text[256];
    int at = 0;
    for (int i = 0; i < r->n && at < (int)sizeof text - 32; i++)
        at += snprintf(text + at, sizeof text - (size_t)at, " %d:%llu%s", r->keys[i], (unsigned long long)r->amounts[i],
                       r->optional[i] ? "?" : "");
    note("t=%llu %s lease %d [%s ] -> allowed %d status %s %s retry %llu", (unsigned long long)now_ms,
         dry_run ? "dry run" : "reserve", lease, text, got->allowed, rl_status_name(got->status),
         got->status_key ? got->status_key : "-", (unsigned long long)got->retry_after_ms);
}

/* The same requirements: each key with the same amount, optional where it
 * was, in any order. */
static bool same_request(const request_record *a, const request_record *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        bool found = false;
        for (int j = 0; j < b->n && !found; j++)
            found = a->keys[i] == b->keys[j] && a->amounts[i] == b->amounts[j] && a->optional[i] == b->optional[j];
        if (!found) return false;
    }
    return true;
}

/* A fleet of daemons with allotments (fleet_target) answers as the model
 * does but where allotments make it answer otherwise, each checked for the
 * promise it must keep:
 *  - it may deny what the model would admit (capacity set aside in an
 *    allotment of another daemon, or one not worth using: their daemons
 *    give it back at their next look), never the other way round (that
 *    would be an over-admission); the model then takes the fleet's denial;
 *  - an allotment's entries count in Redis until its end plus the window,
 *    so a denial's retry_after_ms may be later than the model's, never
 *    sooner, and denied_by then names the limit whose room comes back last
 *    by the fleet's count. */
/* The model's name of a limit key (stable for the run). */
static const char *model_key(const char *key) {
    for (int l = 0; key != NULL && l < LIMITS; l++)
        if (strcmp(limits[l].def.key, key) == 0) return limits[l].def.key;
    return NULL;
}

/* The limit a fleet's denial names must be one of the lease's, asked what
 * the lease asked of it (it may have room by the model's count: room set
 * aside in allotments). */
static void check_fleet_denial(int lease, const request_record *r, const rl_reserve_result *got) {
    for (int i = 0; i < r->n; i++) {
        int l = r->keys[i];
        if (got->denied_by.key == NULL || strcmp(got->denied_by.key, limits[l].def.key) != 0) continue;
        if (got->denied_by.requested != r->amounts[i] || got->denied_by.capacity != limits[l].capacity)
            fail_step("reserve lease %d: denied_by %s asked %llu of %llu", lease, limits[l].def.key,
                      (unsigned long long)got->denied_by.requested, (unsigned long long)got->denied_by.capacity);
        return;
    }
    fail_step("reserve lease %d: denied_by names none of its keys", lease);
}

/* The fleet denied a new lease the model admitted: take its answer. */
static void model_takes_denial(int lease, const rl_reserve_result *got) {
    model_lease *m = &leases[lease];
    for (int i = m->entry_count - 1; i >= 0; i--) {
        m->entries[i].live = false;
        if (live_count > 0 && live[live_count - 1] == &m->entries[i]) live_count--;
    }
    m->entry_count = 0;
    m->allowed = false;
    m->first = *got;
    m->first.status_key = model_key(got->status_key);
    m->first.denied_by.key = model_key(got->denied_by.key);
    cov.allowed--;
    cov.fleet_denials++;
}

/* got must be want: the answer, its status key and its denied_by. */
static void expect_answer(int lease, const rl_reserve_result *got, const rl_reserve_result *want_answer) {
    const rl_reserve_result want = *want_answer;
    if (got->allowed != want.allowed || got->status != want.status || got->retry_after_ms != want.retry_after_ms ||
        got->reserved_at_unix_ms != want.reserved_at_unix_ms)
        fail_step("reserve lease %d: allowed %d/%d status %s/%s retry_after_ms %llu/%llu reserved_at %llu/%llu "
                  "(backend/model)",
                  lease, got->allowed, want.allowed, rl_status_name(got->status), rl_status_name(want.status),
                  (unsigned long long)got->retry_after_ms, (unsigned long long)want.retry_after_ms,
                  (unsigned long long)got->reserved_at_unix_ms, (unsigned long long)want.reserved_at_unix_ms);
    if ((got->status_key == NULL) != (want.status_key == NULL) ||
        (got->status_key != NULL && strcmp(got->status_key, want.status_key) != 0))
        fail_step("reserve lease %d: status_key %s/%s", lease, got->status_key ? got->status_key : "(null)",
                  want.status_key ? want.status_key : "(null)");
    const rl_denial *gd = &got->denied_by, *wd = &want.denied_by;
    if ((gd->key == NULL) != (wd->key == NULL) || (gd->key != NULL && strcmp(gd->key, wd->key) != 0) ||
        gd->reason != wd->reason || gd->requested != wd->requested || gd->available != wd->available ||
        gd->capacity != wd->capacity || gd->period_end_unix_ms != wd->period_end_unix_ms)
        fail_step("reserve lease %d: denied_by %s %s %llu/%llu/%llu vs the model's %s %s %llu/%llu/%llu "
                  "(requested/available/capacity)",
                  lease, gd->key ? gd->key : "(null)", rl_denial_reason_name(gd->reason),
                  (unsigned long long)gd->requested, (unsigned long long)gd->available,
                  (unsigned long long)gd->capacity, wd->key ? wd->key : "(null)", rl_denial_reason_name(wd->reason),
                  (unsigned long long)wd->requested, (unsigned long long)wd->available,
                  (unsigned long long)wd->capacity);
}

/* A fleet may deny a new lease the model would admit, or answer a later
 * retry_after_ms (see above): true (after checking its denial) when got is
 * such an answer to the model's want. */
static bool fleet_may_answer(int lease, const request_record *r, const rl_reserve_result *want,
                             const rl_reserve_result *got) {
    if (!fleet_semantics || got->allowed || got->status != RL_OK) return false;
    bool denies_admitted = want->allowed;
    bool later = !want->allowed && want->status == RL_OK && got->retry_after_ms >= want->retry_after_ms &&
                 (got->retry_after_ms != want->retry_after_ms || got->denied_by.key == NULL ||
                  want->denied_by.key == NULL || strcmp(got->denied_by.key, want->denied_by.key) != 0);
    if (!denies_admitted && !later) return false;
    check_fleet_denial(lease, r, got);
    return true;
}

/* A dry run: the answer the model would give now, the model left as it
 * was (it changes nothing, remembers nothing: a later reserve of the lease
 * is decided anew, and usage is checked after every step). */
static void check_dry_run(int lease, const request_record *r, const rl_reserve_result *got) {
    describe_reserve(lease, r, true, got);
    cov.dry_runs++;
    bool decided_before = leases[lease].decided;
    rl_reserve_result want;
    if (decided_before && !same_request(r, &requested[lease])) {
        want = (rl_reserve_result){.allowed = false, .status = RL_LEASE_ID_CONFLICT};
    } else {
        expire(); /* what is due goes whoever asks: the model's state is now's */
        static model_lease saved_lease;
        saved_lease = leases[lease];
        int saved_live = live_count;
        uint64_t saved_tail_ms[LIMITS];
        for (int l = 0; l < LIMITS; l++) saved_tail_ms[l] = limits[l].tail_ms;
        struct coverage saved_cov = cov;
        want = model_reserve(lease, r->keys, r->amounts, r->optional, r->n);
        leases[lease] = saved_lease;
        live_count = saved_live;
        for (int l = 0; l < LIMITS; l++) limits[l].tail_ms = saved_tail_ms[l];
        cov = saved_cov;
        if (!decided_before && fleet_may_answer(lease, r, &want, got)) {
            cov.fleet_denials++;
            want = *got;
            want.status_key = model_key(got->status_key);
            want.denied_by.key = model_key(got->denied_by.key);
        }
    }
    expect_answer(lease, got, &want);
    if (ledger[lease].answered) ledger_reserved(lease, r->keys, r->amounts, r->optional, r->n, got); /* the same */
}

static void check_reserve(int lease, const request_record *r, bool dry_run, const rl_reserve_result *got) {
    if (dry_run) {
        check_dry_run(lease, r, got);
        return;
    }
    describe_reserve(lease, r, false, got);
    bool decided_before = leases[lease].decided;
    rl_reserve_result want;
    if (decided_before && !same_request(r, &requested[lease])) {
        /* A reused lease id with other requirements: never the first outcome. */
        want = (rl_reserve_result){.allowed = false, .status = RL_LEASE_ID_CONFLICT};
        cov.conflicts++;
    } else {
        if (!decided_before) requested[lease] = *r; /* what completes of it will report on */
        want = model_reserve(lease, r->keys, r->amounts, r->optional, r->n);
        if (!decided_before && fleet_may_answer(lease, r, &want, got)) {
            if (want.allowed) {
                model_takes_denial(lease, got);
            } else {
                cov.fleet_later_retries++;
                leases[lease].first.retry_after_ms = got->retry_after_ms; /* replays answer the fleet's */
                leases[lease].first.denied_by = got->denied_by;
                leases[lease].first.denied_by.key = model_key(got->denied_by.key);
            }
            want = leases[lease].first;
        }
    }
    if (!decided_before && want.allowed) open_leases[open_count++] = lease;
    expect_answer(lease, got, &want);
    ledger_reserved(lease, r->keys, r->amounts, r->optional, r->n, got);
}

static void op_reserve(rl_backend *backend, int count) {
    int ids[BATCH_MAX];
    request_record records[BATCH_MAX];
    rl_requirement reqs[BATCH_MAX][LIMITS];
    char lease_ids[BATCH_MAX][27];
    rl_reserve_request requests[BATCH_MAX];
    rl_reserve_result results[BATCH_MAX];
    char jobs[BATCH_MAX][64];
    bool dry_run[BATCH_MAX];
    for (int b = 0; b < count; b++) {
        if (b > 0 && chance(15)) { /* the same id twice in one batch: the second replays the first */
            ids[b] = ids[b - 1];
            records[b] = records[b - 1];
        } else {
            ids[b] = choose_reserve_lease(&records[b]);
        }
        dry_run[b] = chance(10);
        for (int i = 0; i < records[b].n; i++)
            reqs[b][i] = (rl_requirement){limits[records[b].keys[i]].def.key, records[b].amounts[i],
                                          records[b].optional[i]};
        requests[b] = (rl_reserve_request){rl_test_lease_id((uint64_t)ids[b], lease_ids[b]), job_of(ids[b], jobs[b]),
                                           reqs[b], (size_t)records[b].n, dry_run[b]};
    }
    memset(results, 0xab, sizeof results);
    if (count == 1) {
        rl_backend_reserve(backend, &requests[0], &results[0]);
    } else {
        rl_backend_reserve_batch(backend, requests, (size_t)count, results);
        cov.batches++;
    }
    for (int b = 0; b < count; b++) check_reserve(ids[b], &records[b], dry_run[b], &results[b]); /* in order, as decided */
}

/* Actuals for a complete of lease: per key it holds, none, 0, less, the
 * same or more than reserved; now and then a key it does not hold. */
static int random_actuals(int lease, int *keys, uint64_t *actuals) {
    int n = 0;
    const request_record *r = lease < MAX_LEASES ? &requested[lease] : NULL;
    for (int i = 0; r != NULL && i < r->n; i++) {
        unsigned roll = (unsigned)pick(100);
        uint64_t reserved = r->amounts[i], actual;
        if (roll < 20) continue; /* not reported: the reservation stays as it was */
        if (roll < 30) actual = 0;
        else if (roll < 55) actual = reserved > 1 ? 1 + pick(reserved - 1) : 0;
        else if (roll < 70 || reserved == RL_AMOUNT_MAX) actual = reserved;
        else if (near_ceiling) actual = chance(50) ? RL_AMOUNT_MAX : reserved + 1 + pick(RL_AMOUNT_MAX - reserved);
        else actual = reserved + 1 + pick(15);
        keys[n] = r->keys[i];
        actuals[n++] = actual;
    }
    if (chance(10)) { /* a key the lease may not hold */
        int l = (int)pick(LIMITS);
        bool present = false;
        for (int i = 0; i < n; i++) present |= keys[i] == l;
        if (!present) {
            keys[n] = l;
            actuals[n++] = pick(30);
        }
    }
    return n;
}

static int choose_complete_lease(void) {
    unsigned roll = (unsigned)pick(100);
    if (roll < 5 || next_lease == 1) return (int)(NEVER_RESERVED_BASE + pick(1000)); /* unknown id */
    if (roll < 10 && next_lease < MAX_LEASES) return next_lease; /* completed before it is reserved */
    while (roll < 70 && open_count > 0) { /* mostly a lease that holds something */
        int at = (int)pick((uint64_t)open_count), lease = open_leases[at];
        open_leases[at] = open_leases[--open_count];
        if (!leases[lease].completed) return lease;
    }
    return 1 + (int)pick((uint64_t)next_lease - 1); /* admitted, denied, completed or not */
}

static void op_complete(rl_backend *backend, int count) {
    int ids[BATCH_MAX], keys[BATCH_MAX][LIMITS], n[BATCH_MAX];
    uint64_t amounts[BATCH_MAX][LIMITS];
    rl_actual acts[BATCH_MAX][LIMITS];
    char lease_ids[BATCH_MAX][27];
    rl_complete_request requests[BATCH_MAX];
    rl_status statuses[BATCH_MAX];
    for (int b = 0; b < count; b++) {
        ids[b] = choose_complete_lease();
        n[b] = random_actuals(ids[b], keys[b], amounts[b]);
        char text[200];
        int at = 0;
        for (int i = 0; i < n[b]; i++) {
            acts[b][i] = (rl_actual){limits[keys[b][i]].def.key, amounts[b][i]};
            at += snprintf(text + at, sizeof text - (size_t)at, " %d:%llu", keys[b][i], (unsigned long long)amounts[b][i]);
        }
        text[at] = '\0';
        note("t=%llu complete lease %d [%s ]%s", (unsigned long long)now_ms, ids[b], text, count > 1 ? " (batch)" : "");
        requests[b] = (rl_complete_request){rl_test_lease_id((uint64_t)ids[b], lease_ids[b]), NULL, acts[b], (size_t)n[b]};
    }
    rl_backend_complete_batch(backend, requests, (size_t)count, statuses);
    for (int b = 0; b < count; b++) {
        if (statuses[b] != RL_OK) fail_step("complete lease %d: %s", ids[b], rl_status_name(statuses[b]));
        model_complete(ids[b], keys[b], amounts[b], n[b]);
        ledger_completed(ids[b], keys[b], amounts[b], n[b]);
    }
}

static void advance(rl_manual_clock *clock, uint64_t delta) {
    rl_manual_clock_advance(clock, delta);
    now_ms += delta;
    unix_now_ms += delta;
}

/* Time passes: a random step, or to exactly a live entry's expiry (or 1 ms
 * before it), where "<=" against "<" would show. */
static void op_time(rl_manual_clock *clock) {
    uint64_t delta = pick(1500);
    int budget = FIRST_BUDGET + (int)pick(UNDEFINED - FIRST_BUDGET);
    /* (a run stays within the lease memory, LEASE_MEMORY_MS from its start:
     * every lease it decided is remembered, as the model does) */
    bool room = unix_now_ms - T0_UNIX + 2 * 86400000u < LEASE_MEMORY_MS;
    if (chance(12) && room && limits[budget].defined && limits[budget].def.kind == RL_KIND_BUDGET) { /* a budget's period ends (or nearly) */
        delta = limits[budget].period_end - unix_now_ms - (chance(30) ? 1 : 0);
        cov.period_edges++;
    } else if (live_count > 0 && chance(40)) {
        const model_entry *e = live[pick((uint64_t)live_count)];
        if (e->live && e->expires_at_ms > now_ms) {
            delta = e->expires_at_ms - now_ms - (chance(30) ? 1 : 0);
            cov.edge_advances++;
        }
    }
    note("t=%llu advance %llu ms", (unsigned long long)now_ms, (unsigned long long)delta);
    advance(clock, delta);
}

static void set_kind(rl_limit_def *d, rl_kind kind, uint32_t seconds) {
    d->kind = kind;
    d->window_seconds = kind == RL_KIND_ROLLING ? seconds : 0;
    d->timeout_seconds = kind != RL_KIND_ROLLING ? seconds : 0;
}

/* One of the model's budget calendars (period_of), at random. */
static void set_calendar(rl_limit_def *d) {
    static const struct { rl_period period; const char *zone; } calendars[] = {
        {RL_PERIOD_HOUR, "UTC"}, {RL_PERIOD_HOUR, "Asia/Kolkata"}, {RL_PERIOD_DAY, "UTC"}};
    unsigned c = (unsigned)pick(3);
    d->period = calendars[c].period;
    snprintf(d->timezone, sizeof d->timezone, "%s", calendars[c].zone);
}

/* DELETE of limit l: the backend answers as the model says, and the ledger
 * forgets what admitted leases held of it. then_put: a PUT of the key
 * follows at once, which a fleet's daemons may see before the delete (no
 * daemon but the one deleting hears of it first). */
static void op_delete(rl_backend *backend, int l, bool then_put) {
    const char *key = limits[l].def.key;
    note("t=%llu admin delete %s%s", (unsigned long long)now_ms, key, limits[l].defined ? "" : " (unknown)");
    rl_status status = then_put && fleet_semantics ? rl_test_fleet_delete_unseen(backend, key)
                                                   : rl_backend_delete_definition(backend, key);
    rl_status want = limits[l].defined ? RL_OK : RL_UNKNOWN_LIMIT_KEY;
    if (status != want) fail_step("delete %s: %s, model %s", key, rl_status_name(status), rl_status_name(want));
    if (!limits[l].defined) {
        cov.deletes_unknown++;
        return;
    }
    cov.deletes++;
    model_delete(l);
    for (int i = 0; i < ledger_live_count; i++)
        if (ledger_live[i]->limit == l) ledger_live[i]->amount = 0;
    admin_capacity[l] = 0;
    kind_changed[l] = false;
    last_debt_total[l] = last_denied_total[l] = 0;
}

/* The template of the made keys: put (its limits follow it as a PUT of
 * each would; a change of kind is refused while any of them holds
 * anything), or deleted (each dropped as a DELETE would, unknown until put
 * again). */
static void op_template(rl_backend *backend) {
    bool defined = limits[FIRST_MADE].defined;
    rl_limit_def d = limits[FIRST_MADE].def;
    unsigned roll = (unsigned)pick(100);
    if (roll < (defined ? 7u : 20u)) {
        note("t=%llu template delete%s", (unsigned long long)now_ms, defined ? "" : " (unknown)");
        rl_status status = rl_backend_delete_template(backend, MADE_PATTERN);
        rl_status want = defined ? RL_OK : RL_UNKNOWN_LIMIT_KEY;
        if (status != want) fail_step("delete_template: %s, model %s", rl_status_name(status), rl_status_name(want));
        if (!defined) return;
        cov.template_deletes++;
        for (int l = FIRST_MADE; l < LIMITS; l++) {
            model_delete(l);
            for (int i = 0; i < ledger_live_count; i++)
                if (ledger_live[i]->limit == l) ledger_live[i]->amount = 0;
            admin_capacity[l] = 0;
            kind_changed[l] = false;
            last_debt_total[l] = last_denied_total[l] = 0;
        }
        return;
    }
    const char *what = "capacity";
    if (!defined) what = "put";
    else if (roll < 50)
        d.capacity = near_ceiling ? capacity_near_ceiling() : fleet_semantics ? 30 + pick(300) : 3 + pick(50);
    else if (roll < 65) what = "overage", d.overage = d.overage == RL_OVERAGE_DEBT ? RL_OVERAGE_DENY : RL_OVERAGE_DEBT;
    else if (roll < 85) what = "lifetime", set_kind(&d, d.kind, (uint32_t)(1 + pick(MAX_SECONDS)));
    else
        what = "kind", set_kind(&d, d.kind == RL_KIND_ROLLING ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING,
                                (uint32_t)(1 + pick(MAX_SECONDS)));
    rl_limit_def t = d;
    snprintf(t.key, sizeof t.key, "%s", MADE_PATTERN);
    note("t=%llu template %s: %s capacity %llu %s %us overage %s", (unsigned long long)now_ms, what,
         rl_kind_name(t.kind), (unsigned long long)t.capacity, t.kind == RL_KIND_ROLLING ? "window" : "timeout",
         t.kind == RL_KIND_ROLLING ? t.window_seconds : t.timeout_seconds, rl_overage_name(t.overage));
    rl_status status = rl_backend_put_template(backend, &t);
    expire();
    bool in_use = false;
    for (int l = FIRST_MADE; l < LIMITS; l++) in_use |= defined && d.kind != limits[l].def.kind && active_of(l) > 0;
    rl_status want = in_use ? RL_LIMIT_IN_USE : RL_OK;
    if (status != want) fail_step("put_template (%s): %s, model %s", what, rl_status_name(status), rl_status_name(want));
    cov.template_puts++;
    if (in_use) {
        cov.template_kind_in_use++;
        return;
    }
    for (int l = FIRST_MADE; l < LIMITS; l++) {
        rl_limit_def made = d;
        snprintf(made.key, sizeof made.key, "%s", limits[l].def.key);
        if (defined && made.kind != limits[l].def.kind) kind_changed[l] = true;
        (void)model_apply(l, &made);
        admin_capacity[l] = made.capacity;
    }
}

static void op_admin(rl_backend *backend) {
    int l = (int)pick(LIMITS);
    if (is_made(l)) {
        if (has_templates) op_template(backend);
        return;
    }
    rl_limit_def d = limits[l].def;
    const char *what;
    unsigned roll = (unsigned)pick(100);
    if (!limits[l].defined && chance(20)) {
        op_delete(backend, l, false);
        return;
    } else if (!limits[l].defined) {
        what = "define";
    } else if (roll < 7) {
        op_delete(backend, l, false);
        return;
    } else if (roll < 10) {
        /* a new limit at once, often smaller than what the old one held */
        what = "define again";
        op_delete(backend, l, true);
        d.capacity = fleet_semantics ? 30 + pick(300) : 3 + pick(50);
    } else if (roll < 50) {
        what = "capacity";
        uint64_t used = used_of(l);
        uint64_t headroom = RL_AMOUNT_MAX - limits[l].capacity; /* no capacity is above 2^53 */
        if (limits[l].pending_decrease_to != 0 && chance(50))
            d.capacity = limits[l].capacity + pick(headroom < 10 ? headroom + 1 : 10); /* an increase cancels the pending decrease */
        else if (used > 1 && chance(50))
            d.capacity = 1 + pick(used - 1); /* below what is in use: the decrease waits */
        else
            d.capacity = near_ceiling ? capacity_near_ceiling() : fleet_semantics ? 30 + pick(300) : 3 + pick(50);
    } else if (roll < 68) {
        what = "overage";
        d.overage = d.overage == RL_OVERAGE_DEBT ? RL_OVERAGE_DENY : RL_OVERAGE_DEBT;
    } else if (roll < 92) {
        what = "lifetime";
        set_kind(&d, d.kind, (uint32_t)(1 + pick(MAX_SECONDS)));
    } else if (d.kind == RL_KIND_BUDGET) {
        what = "calendar";
        set_calendar(&d);
    } else {
        what = "kind";
        set_kind(&d, d.kind == RL_KIND_ROLLING ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING, (uint32_t)(1 + pick(MAX_SECONDS)));
    }
    char err[200];
    if (!rl_limit_def_validate(&d, err, sizeof err)) fail_step("test made an invalid definition: %s", err);
    note("t=%llu admin %s %s: %s capacity %llu %s %us overage %s %s %s", (unsigned long long)now_ms, what, d.key,
         rl_kind_name(d.kind), (unsigned long long)d.capacity, d.kind == RL_KIND_ROLLING ? "window" : "timeout",
         d.kind == RL_KIND_ROLLING ? d.window_seconds : d.timeout_seconds, rl_overage_name(d.overage),
         rl_period_name(d.period), d.timezone);
    rl_limit_status got = (rl_limit_status)-1;
    rl_status status = rl_backend_apply_definition(backend, &d, &got);
    if (strcmp(what, "kind") == 0) {
        /* A kind changes only on a limit that holds nothing, what is due
         * expired first; otherwise nothing changes. */
        expire();
        rl_status want_status = active_of(l) > 0 ? RL_LIMIT_IN_USE : RL_OK;
        if (status != want_status)
            fail_step("apply_definition %s (kind change, %llu live entries): %s, model %s", d.key,
                      (unsigned long long)active_of(l), rl_status_name(status), rl_status_name(want_status));
        if (status == RL_LIMIT_IN_USE) {
            cov.kind_in_use++;
            return;
        }
        kind_changed[l] = true;
    }
    if (status != RL_OK) fail_step("apply_definition %s: %s", d.key, rl_status_name(status));
    if (strcmp(what, "capacity") != 0) cov.admin_other++;
    rl_limit_status want = model_apply(l, &d);
    admin_capacity[l] = d.capacity;
    /* A fleet counts allotments in full when a decrease is asked for: it may
     * answer decreasing where the model's usage fits, until its daemons give
     * back their unused room (support/fleet_backend.h: before the next call). */
    bool fleet_waits = fleet_semantics && got == RL_LIMIT_STATUS_DECREASING && want == RL_LIMIT_STATUS_ACTIVE;
    if (fleet_waits) cov.fleet_decreases_waiting++;
    if (got != want && !fleet_waits)
        fail_step("apply_definition %s answered %s, model %s", d.key, rl_limit_status_name(got),
                  rl_limit_status_name(want));
}

/* ---- the backends under test ---- */

typedef struct target {
    const char *name;
    rl_backend *(*create)(const rl_clock *clock, unsigned run);
    bool expiry_clamps_to_tail;
    bool allotments; /* a fleet: fleet_semantics */
    /* Closes the backend and opens it again on what it keeps (its journal),
     * or NULL for a backend that does not restart. */
    rl_backend *(*restart)(rl_backend *backend, const rl_clock *clock, unsigned run);
    /* Removes what create made besides the backend (its journal), or NULL. */
    void (*cleanup)(unsigned run);
    /* Compacts the journal at random steps, answers going on while its
     * snapshot is written; a restart waits for the compaction under way. */
    bool compacts;
} target;

static rl_backend *create_memory(const rl_clock *clock, unsigned run) {
    (void)run;
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = clock;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    rl_backend *backend;
    assert_int_equal(rl_memory_backend_create(&options, &backend), RL_OK);
    return backend;
}

/* The memory backend on a journal (written before each answer, not synced:
 * the restarts are clean), restarted at random steps: after every restart
 * the replayed state must answer exactly as the model. In memory (/dev/shm)
 * where there is one: definitions are synced whatever the fsync mode, and
 * the run makes thousands of them; what a disk's sync costs is not what
 * this test is about. */
static void journal_path_of(unsigned run, char *out, size_t size) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(out, size, "%s/rl_model_journal_%d_%u", dir, (int)getpid(), run);
}

static rl_backend *open_memory_journal(const rl_clock *clock, unsigned run) {
    char path[128];
    journal_path_of(run, path, sizeof path);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = clock;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.journal_path = path;
    options.journal_fsync = RL_JOURNAL_FSYNC_OFF;
    rl_backend *backend = NULL;
    char err[256] = "";
    if (rl_memory_backend_open(&options, &backend, err, sizeof err) != RL_OK) fail_step("journal: %s", err);
    return backend;
}

static rl_backend *create_memory_journal(const rl_clock *clock, unsigned run) {
    char path[128];
    journal_path_of(run, path, sizeof path);
    unlink(path);
    return open_memory_journal(clock, run);
}

static rl_backend *restart_memory_journal(rl_backend *backend, const rl_clock *clock, unsigned run) {
    rl_backend_destroy(backend);
    cov.restarts++;
    note("t=%llu restart", (unsigned long long)now_ms);
    return open_memory_journal(clock, run);
}

static void cleanup_memory_journal(unsigned run) {
    char path[128];
    journal_path_of(run, path, sizeof path);
    unlink(path);
}

static rl_test_redis redis_server; /* the "redis" group's, started by its group setup */

static rl_backend *create_redis(const rl_clock *clock, unsigned run) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "m%u:", run); /* a fresh keyspace per sequence */
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.host = "127.0.0.1";
    options.port = redis_server.port;
    options.key_prefix = prefix;
    options.clock = clock;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.sweep_interval_ms = 0; /* as the memory fixture: no thread reads the clock while a case advances it */
    rl_backend *backend = NULL;
    char err[256] = "";
    rl_status status = rl_redis_backend_create(&options, &backend, err, sizeof err);
    if (status != RL_OK) fail_msg("rl_redis_backend_create on port %u: %d %s", (unsigned)redis_server.port, status, err);
    return backend;
}

/* Three daemons with allotments on one Redis (support/fleet_backend.h): the
 * same answers and counters as one backend, from leases decided here and
 * there. */
static rl_backend *create_fleet(const rl_clock *clock, unsigned run) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "mf%u:", run);
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.host = "127.0.0.1";
    options.port = redis_server.port;
    options.key_prefix = prefix;
    options.clock = clock;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.sweep_interval_ms = 0;
    rl_backend *backend = NULL;
    char err[256] = "";
    rl_status status = rl_test_fleet_create(&options, 3, &backend, err, sizeof err);
    if (status != RL_OK) fail_msg("a fleet on port %u: %d %s", (unsigned)redis_server.port, status, err);
    return backend;
}

static const target memory_target = {"memory", create_memory, true, false, NULL, NULL, false};
static const target fleet_target = {"redis fleet with allotments", create_fleet, false, true, NULL, NULL, false};
static const target journal_target = {"memory with its journal, restarted", create_memory_journal, true, false,
                                      restart_memory_journal, cleanup_memory_journal, false};
static const target compacted_target = {"memory with its journal, compacted and restarted", create_memory_journal,
                                        true, false, restart_memory_journal, cleanup_memory_journal, true};
static const target redis_target = {"redis", create_redis, false, false, NULL, NULL, false};

/* A compaction of the journal under way (compacted_target): its number
 * (0: none), and the step at which it is waited for. */
static uint64_t compaction_number;
static int compaction_due_step;

static rl__journal *journal_of(rl_backend *backend) { return ((memory_backend *)backend)->journal; }

/* Waits for the compaction under way, if any: its file must have taken
 * the journal's place. */
static void finish_compaction(rl_backend *backend) {
    if (compaction_number == 0) return;
    if (!rl__journal_compaction_wait(journal_of(backend), compaction_number))
        fail_step("compaction %llu did not replace the journal", (unsigned long long)compaction_number);
    note("t=%llu compaction %llu done", (unsigned long long)now_ms, (unsigned long long)compaction_number);
    compaction_number = 0;
    cov.compactions++;
}

/* Starts a compaction (none under way): the steps until it is waited for
 * add records the new file gets as records since the cut. */
static void start_compaction(rl_backend *backend) {
    if (compaction_number != 0) return;
    compaction_number = rl__journal_compaction_start(journal_of(backend));
    if (compaction_number == 0) fail_step("no compaction started");
    compaction_due_step = run_step + (int)pick(20);
    note("t=%llu compaction %llu started (done at step %d)", (unsigned long long)now_ms,
         (unsigned long long)compaction_number, compaction_due_step);
}

static int start_redis(void **state) {
    (void)state;
    if (rl_test_redis_start(&redis_server) != RL_TEST_REDIS_STARTED) return -1;
    print_message("redis-server %s on 127.0.0.1:%u (log: %s)\n", redis_server.executable,
                  (unsigned)redis_server.port, redis_server.log_path);
    return 0;
}

static int stop_redis(void **state) {
    (void)state;
    rl_test_redis_cleanup(&redis_server);
    return 0;
}

/* ---- one sequence ---- */

static void reset(unsigned seed) {
    rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15u + 1;
    for (int l = 0; l < LIMITS; l++) free(limits[l].audit);
    memset(limits, 0, sizeof limits);
    /* the previous sequence wrote leases 0..next_lease only */
    size_t touched = next_lease > 0 ? (size_t)next_lease + 1 : MAX_LEASES;
    if (touched > MAX_LEASES) touched = MAX_LEASES;
    memset(leases, 0, touched * sizeof leases[0]);
    memset(ledger, 0, touched * sizeof ledger[0]);
    memset(requested, 0, touched * sizeof requested[0]);
    memset(admin_capacity, 0, sizeof admin_capacity);
    memset(kind_changed, 0, sizeof kind_changed);
    memset(last_debt_total, 0, sizeof last_debt_total);
    memset(last_denied_total, 0, sizeof last_denied_total);
    live_count = 0;
    ledger_live_count = 0;
    open_count = 0;
    next_lease = 1;
    trace_count = 0;
    now_ms = T0_MONOTONIC;
    unix_now_ms = T0_UNIX;
}

/* Completes every open lease (actual 0 for what it holds), then lets every
 * window and timeout pass: nothing may stay held. */
static void drain(rl_backend *backend, rl_manual_clock *clock) {
    run_step = run_steps; /* "step" of the failure report: the end */
    for (int lease = 1; lease < next_lease && lease < MAX_LEASES; lease++) {
        if (!leases[lease].allowed || leases[lease].completed) continue;
        const request_record *r = &requested[lease];
        int keys[LIMITS];
        uint64_t zeros[LIMITS] = {0};
        rl_actual acts[LIMITS];
        for (int i = 0; i < r->n; i++) {
            keys[i] = r->keys[i];
            acts[i] = (rl_actual){limits[keys[i]].def.key, 0};
        }
        char id[27];
        rl_complete_request request = {rl_test_lease_id((uint64_t)lease, id), NULL, acts, (size_t)r->n};
        note("t=%llu drain: complete lease %d with actuals 0", (unsigned long long)now_ms, lease);
        if (rl_backend_complete(backend, &request) != RL_OK) fail_step("drain: complete lease %d failed", lease);
        model_complete(lease, keys, zeros, r->n);
        ledger_completed(lease, keys, zeros, r->n);
        cov.drained++;
    }
    check_all(backend, true);
    /* every hold was released by its Complete, at once */
    for (int l = 0; l < LIMITS; l++) {
        if (!limits[l].defined || kind_changed[l] || limits[l].def.kind != RL_KIND_CONCURRENCY) continue;
        rl_limit_usage u;
        assert_int_equal(rl_backend_limit_usage(backend, limits[l].def.key, &u), RL_OK);
        if (u.used != 0 || u.active != 0)
            fail_step("drain: %s still holds %llu in %llu holds after every lease completed", limits[l].def.key,
                      (unsigned long long)u.used, (unsigned long long)u.active);
    }
    /* An entry made now lives at most MAX_SECONDS, and none was queued
     * behind one made later than now. */
    note("t=%llu drain: advance %u ms", (unsigned long long)now_ms, MAX_SECONDS * 1000u);
    advance(clock, MAX_SECONDS * 1000u);
    rl_backend_sweep(backend);
    check_all(backend, false);
    /* and every budget's period: what they committed goes with it */
    uint64_t last_end = unix_now_ms;
    for (int l = 0; l < LIMITS; l++)
        if (limits[l].defined && limits[l].def.kind == RL_KIND_BUDGET && limits[l].period_end > last_end)
            last_end = limits[l].period_end;
    note("t=%llu drain: advance %llu ms to the last period's end", (unsigned long long)now_ms,
         (unsigned long long)(last_end - unix_now_ms));
    advance(clock, last_end - unix_now_ms);
    check_all(backend, false);
    for (int l = 0; l < LIMITS; l++) {
        if (!limits[l].defined) continue;
        rl_limit_usage u;
        assert_int_equal(rl_backend_limit_usage(backend, limits[l].def.key, &u), RL_OK);
        if (u.used != 0 || u.active != 0 || u.debt != 0 || u.status != RL_LIMIT_STATUS_ACTIVE ||
            u.capacity != admin_capacity[l])
            fail_step("drain: %s after every window and timeout: used %llu active %llu debt %llu status %d capacity "
                      "%llu (set %llu)",
                      limits[l].def.key, (unsigned long long)u.used, (unsigned long long)u.active,
                      (unsigned long long)u.debt, u.status, (unsigned long long)u.capacity,
                      (unsigned long long)admin_capacity[l]);
        if (u.debt_total != limits[l].debt_total) fail_step("drain: debt_total of %s", limits[l].def.key);
    }
    rl_manual_clock_advance(clock, 1); /* entries are listed once their millisecond is over */
    check_audit(backend);
}

static void run_sequence(const target *t, unsigned run, unsigned seed, int steps) {
    reset(seed);
    compaction_number = 0;
    run_backend = t->name;
    run_seed_value = seed;
    run_steps = steps;
    run_step = -1;
    expiry_clamps_to_tail = t->expiry_clamps_to_tail;
    fleet_semantics = t->allotments;
    rl_manual_clock clock;
    rl_manual_clock_init(&clock, T0_MONOTONIC, T0_UNIX);
    rl_backend *backend = t->create(&clock.base, run);
    has_templates = backend->ops->put_template != NULL;
    for (int l = 0; l < LIMITS; l++) {
        rl_limit_def *d = &limits[l].def;
        snprintf(d->key, sizeof d->key, is_made(l) ? "model:%d:made" : "model:%d", l);
        if (is_made(l) && l > FIRST_MADE) { /* the same template's */
            *d = limits[FIRST_MADE].def;
            snprintf(d->key, sizeof d->key, "model:%d:made", l);
            continue;
        }
        rl_kind kind = is_made(l) ? (chance(50) ? RL_KIND_ROLLING : RL_KIND_CONCURRENCY)
                       : l >= FIRST_BUDGET && l != UNDEFINED ? RL_KIND_BUDGET
                       : l >= 3 && l != UNDEFINED     ? RL_KIND_CONCURRENCY
                                                      : RL_KIND_ROLLING;
        set_kind(d, kind, (uint32_t)(1 + pick(MAX_SECONDS)));
        if (kind == RL_KIND_BUDGET) set_calendar(d);
        d->capacity = near_ceiling ? capacity_near_ceiling() : fleet_semantics ? 40 + pick(300) : 5 + pick(40);
        d->overage = chance(50) ? RL_OVERAGE_DEBT : RL_OVERAGE_DENY;
        if (l == UNDEFINED || is_made(l)) continue; /* defined by an admin change later, if ever */
        rl_limit_status status;
        assert_int_equal(rl_backend_apply_definition(backend, d, &status), RL_OK);
        assert_int_equal(status, RL_LIMIT_STATUS_ACTIVE);
        model_apply(l, d);
        admin_capacity[l] = d->capacity;
    }
    if (has_templates && chance(80)) { /* its template put now (else by an admin change later, if ever) */
        rl_limit_def pattern = limits[FIRST_MADE].def;
        snprintf(pattern.key, sizeof pattern.key, "%s", MADE_PATTERN);
        assert_int_equal(rl_backend_put_template(backend, &pattern), RL_OK);
        for (int l = FIRST_MADE; l < LIMITS; l++) {
            model_apply(l, &limits[l].def);
            admin_capacity[l] = limits[l].def.capacity;
        }
    }
    check_all(backend, false);
    for (run_step = 0; run_step < steps; run_step++) {
        if (next_lease >= MAX_LEASES - BATCH_MAX) break;
        /* The model remembers every lease: the run ends before the backend
         * may forget the first (a step advances the clock a day at most). */
        if (now_ms - T0_MONOTONIC >= LEASE_MEMORY_MS - 2u * 86400000u) break;
        unsigned op = (unsigned)pick(100);
        bool totals_may_move = false;
        cov.steps++;
        if (op < 38) {
            op_reserve(backend, 1);
        } else if (op < 44) {
            op_reserve(backend, 2 + (int)pick(BATCH_MAX - 1));
        } else if (op < 66) {
            op_complete(backend, 1);
            totals_may_move = true;
        } else if (op < 70) {
            op_complete(backend, 2 + (int)pick(BATCH_MAX - 1));
            totals_may_move = true;
        } else if (op < 93) {
            op_time(&clock);
        } else if (t->compacts && op == 93) {
            start_compaction(backend);
        } else if (op < 97 || t->restart == NULL) {
            op_admin(backend);
        } else {
            if (t->compacts) finish_compaction(backend);
            backend = t->restart(backend, &clock.base, run);
        }
        if (t->compacts && compaction_number != 0 && run_step >= compaction_due_step) finish_compaction(backend);
        check_all(backend, totals_may_move);
    }
    if (t->compacts) {
        /* The state the snapshot and the records since its cut make again
         * must answer as the model, to the end. */
        finish_compaction(backend);
        backend = t->restart(backend, &clock.base, run);
        check_all(backend, false);
    }
    drain(backend, &clock);
    rl_backend_destroy(backend);
    if (t->cleanup != NULL) t->cleanup(run);
}

/* RL_MODEL_SEED=<n> [RL_MODEL_STEPS=<n>]: only that sequence. */
static bool only_seed(unsigned *seed, int *steps) {
    const char *text = getenv("RL_MODEL_SEED");
    if (text == NULL || *text == '\0') return false;
    *seed = (unsigned)strtoul(text, NULL, 10);
    const char *steps_text = getenv("RL_MODEL_STEPS");
    if (steps_text != NULL && *steps_text != '\0') *steps = atoi(steps_text);
    return true;
}

static unsigned redis_runs; /* keyspaces used on the shared server */

/* near: sequences near the ceiling (set for each group of sequences: a
 * failed one leaves nothing set for the next). */
static void run_many(const target *t, unsigned first_seed, unsigned sequences, int steps, bool near) {
    near_ceiling = near;
    unsigned seed = 0;
    int only_steps = steps;
    if (only_seed(&seed, &only_steps)) {
        if (only_steps == steps) run_sequence(t, redis_runs++, seed, steps);
        return;
    }
    for (unsigned i = 0; i < sequences; i++) run_sequence(t, redis_runs++, first_seed + i, steps);
}

static void memory_short_sequences(void **state) {
    (void)state;
    run_many(&memory_target, 1, 200, 200, false);
    print_coverage("memory, 200 sequences x 200 steps");
}

static void memory_long_sequences(void **state) {
    (void)state;
    run_many(&memory_target, 1001, 20, 2000, false);
    print_coverage("memory, 20 sequences x 2000 steps");
}

static void journal_short_sequences(void **state) {
    (void)state;
    run_many(&journal_target, 1, 100, 200, false);
    print_coverage("memory with its journal, 100 sequences x 200 steps");
}

static void journal_long_sequences(void **state) {
    (void)state;
    run_many(&journal_target, 1001, 10, 2000, false);
    print_coverage("memory with its journal, 10 sequences x 2000 steps");
}

/* Compactions while answering (the records since the cut), restarts from
 * what they wrote. */
static void compacted_sequences(void **state) {
    (void)state;
    run_many(&compacted_target, 3001, 60, 300, false);
    print_coverage("memory with its journal, compacted and restarted, 60 sequences x 300 steps");
}

static void redis_short_sequences(void **state) {
    (void)state;
    run_many(&redis_target, 1, 60, 200, false);
    print_coverage("redis, 60 sequences x 200 steps");
}

static void redis_long_sequences(void **state) {
    (void)state;
    run_many(&redis_target, 1001, 4, 2000, false);
    print_coverage("redis, 4 sequences x 2000 steps");
}

static void fleet_short_sequences(void **state) {
    (void)state;
    run_many(&fleet_target, 1, 60, 200, false);
    print_coverage("redis fleet with allotments, 60 sequences x 200 steps");
}

static void fleet_long_sequences(void **state) {
    (void)state;
    run_many(&fleet_target, 1001, 4, 2000, false);
    print_coverage("redis fleet with allotments, 4 sequences x 2000 steps");
}

/* Near the ceiling (the header): what the counters do at 2^53. */
static void run_near_ceiling(const target *t, unsigned sequences, const char *what) {
    run_many(t, 5001, sequences, 200, true);
    print_coverage(what);
}

static void memory_near_ceiling_sequences(void **state) {
    (void)state;
    run_near_ceiling(&memory_target, 100, "memory, 100 sequences x 200 steps near the counters' ceiling");
}

static void journal_near_ceiling_sequences(void **state) {
    (void)state;
    run_near_ceiling(&journal_target, 50, "memory with its journal, 50 sequences x 200 steps near the counters' ceiling");
}

static void redis_near_ceiling_sequences(void **state) {
    (void)state;
    run_near_ceiling(&redis_target, 30, "redis, 30 sequences x 200 steps near the counters' ceiling");
}

static void redis_server_missing(void **state) {
    (void)state;
    skip();
}

/* No argument: the memory and redis groups; "fleet": the fleet's alone
 * (ctest runs it as a test of its own, unit/test_backend_model_fleet, so
 * that the two run side by side). */
int main(int argc, char **argv) {
    bool fleet = argc > 1 && strcmp(argv[1], "fleet") == 0;
    const struct CMUnitTest memory_tests[] = {
        cmocka_unit_test(memory_short_sequences),
        cmocka_unit_test(memory_long_sequences),
        cmocka_unit_test(journal_short_sequences),
        cmocka_unit_test(journal_long_sequences),
        cmocka_unit_test(compacted_sequences),
        cmocka_unit_test(memory_near_ceiling_sequences),
        cmocka_unit_test(journal_near_ceiling_sequences),
    };
    struct CMUnitTest redis_tests[] = {
        cmocka_unit_test(redis_short_sequences),
        cmocka_unit_test(redis_long_sequences),
        cmocka_unit_test(redis_near_ceiling_sequences),
    };
    struct CMUnitTest fleet_tests[] = {
        cmocka_unit_test(fleet_short_sequences),
        cmocka_unit_test(fleet_long_sequences),
    };
    char executable[512];
    bool have_redis = rl_test_redis_find_executable(executable, sizeof executable);
    if (!have_redis) {
        fprintf(stderr, "no redis-server on PATH (make deps-test installs it): the redis group is skipped\n");
        for (size_t i = 0; i < sizeof redis_tests / sizeof redis_tests[0]; i++) redis_tests[i].test_func = redis_server_missing;
        for (size_t i = 0; i < sizeof fleet_tests / sizeof fleet_tests[0]; i++) fleet_tests[i].test_func = redis_server_missing;
    }
    if (fleet)
        return have_redis ? cmocka_run_group_tests_name("redis fleet with allotments", fleet_tests, start_redis, stop_redis)
                          : cmocka_run_group_tests_name("redis fleet with allotments", fleet_tests, NULL, NULL);
    int failed = cmocka_run_group_tests_name("memory", memory_tests, NULL, NULL);
    failed += have_redis ? cmocka_run_group_tests_name("redis", redis_tests, start_redis, stop_redis)
                         : cmocka_run_group_tests_name("redis", redis_tests, NULL, NULL);
    return failed;
}
