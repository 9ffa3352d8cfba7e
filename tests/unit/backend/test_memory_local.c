/* test_memory_local.c — the memory backend as a daemon's local decider
 * (backend/memory/memory_local.h), on a manual clock: a mirror admits
 * nothing until an allotment lets it, then up to its capacity and before
 * its admit_until, all or nothing over a lease's keys; every other lease is
 * forwarded, and remembered so; leases decided here are replayed; the
 * hints of which key to ask an allotment of; the demand the keeper reads;
 * a Complete releases and reconciles here and reports spend and overage
 * for the store; shrink; what is live by second; definitions that change;
 * expiry; the incarnation of the shared limit a mirror is of. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/memory/memory_local.h"
#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "support/lease_ids.h"

#define T0_MS UINT64_C(1000000)
#define T0_UNIX_MS UINT64_C(1736660000000)
#define LEASE_MEMORY_MS 60000u
#define FAR_MS (T0_MS + UINT64_C(36000000)) /* an admit_until no test reaches */
#define LETTERED UINT64_C(0x7edcba9876543210) /* 00000000000007XQ5TK1V58CGG: letters to case */

typedef struct fixture {
    rl_manual_clock clock;
    rl_backend *local;
} fixture;

static int setup_with(void **state, uint64_t max_leases) {
    fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->clock, T0_MS, T0_UNIX_MS);
    assert_int_equal(rl__memory_local_create(&f->clock.base, LEASE_MEMORY_MS, max_leases, &f->local), RL_OK);
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_with(state, 0); }
static int setup_two_leases(void **state) { return setup_with(state, 2); }

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->local);
    free(f);
    return 0;
}

/* ---- helpers ---- */

static rl_limit_def rolling(const char *key, uint64_t capacity, uint32_t window_seconds) {
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = capacity, .window_seconds = window_seconds};
    snprintf(def.key, sizeof def.key, "%s", key);
    return def;
}

static rl_limit_def concurrency(const char *key, uint64_t capacity, uint32_t timeout_seconds) {
    rl_limit_def def = {.kind = RL_KIND_CONCURRENCY, .capacity = capacity, .timeout_seconds = timeout_seconds};
    snprintf(def.key, sizeof def.key, "%s", key);
    return def;
}

static rl_limit_def budget(const char *key, uint64_t capacity) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = capacity, .timeout_seconds = 600,
                        .period = RL_PERIOD_DAY};
    snprintf(def.key, sizeof def.key, "%s", key);
    snprintf(def.timezone, sizeof def.timezone, "UTC");
    return def;
}

/* A mirror of def, of the shared limit's incarnation. */
static void mirror_of(fixture *f, rl_limit_def def, uint64_t incarnation) {
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rl__memory_local_define(f->local, &def, incarnation), RL_OK);
}

static void mirror(fixture *f, rl_limit_def def) { mirror_of(f, def, 0); }

/* A mirror of key with an allotment of capacity until far away. */
static void mirror_allowed(fixture *f, rl_limit_def def, uint64_t capacity) {
    mirror(f, def);
    rl__memory_local_allow(f->local, def.key, capacity, FAR_MS);
}

typedef struct outcome {
    rl_reserve_result result;
    bool forwarded;
} outcome;

static outcome reserve_as(fixture *f, const char *lease_id, const char *job_id, const rl_requirement *reqs, size_t n) {
    rl_reserve_request request = {lease_id, job_id, reqs, n, false};
    outcome o;
    memset(&o.result, 0xab, sizeof o.result);
    o.forwarded = true; /* the call sets it either way */
    rl__memory_local_reserve(f->local, &request, 1, &o.result, &o.forwarded);
    return o;
}

static outcome reserve_n(fixture *f, uint64_t lease, const rl_requirement *reqs, size_t n) {
    char id[27];
    return reserve_as(f, rl_test_lease_id(lease, id), NULL, reqs, n);
}

static outcome reserve1(fixture *f, uint64_t lease, const char *key, uint64_t amount) {
    rl_requirement req = {key, amount, false};
    return reserve_n(f, lease, &req, 1);
}

/* Decided here and admitted, as the memory backend admits. */
static void assert_admitted(outcome o) {
    assert_false(o.forwarded);
    assert_true(o.result.allowed);
    assert_int_equal(o.result.status, RL_OK);
    assert_null(o.result.status_key);
    assert_int_equal(o.result.retry_after_ms, 0);
}

/* Forwarded, naming hint (NULL: none) with status. */
static void assert_forwarded(outcome o, rl_status status, const char *hint) {
    assert_true(o.forwarded);
    assert_false(o.result.allowed);
    assert_int_equal(o.result.status, status);
    if (hint == NULL) {
        assert_null(o.result.status_key);
    } else {
        assert_non_null(o.result.status_key);
        assert_string_equal(o.result.status_key, hint);
    }
}

static size_t complete_n(fixture *f, uint64_t lease, const rl_actual *actuals, size_t n, bool *forwarded,
                         rl__local_spend *spends) {
    char id[27];
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, actuals, n};
    rl_status status = RL_BACKEND_ERROR;
    *forwarded = true;
    size_t written = rl__memory_local_complete(f->local, &request, 1, &status, forwarded, spends);
    assert_int_equal(status, RL_OK);
    return written;
}

/* What the mirror holds and may admit, read without touching the demand
 * figures rl__memory_local_state resets. */
static uint64_t used_of(fixture *f, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(f->local, key, &usage), RL_OK);
    return usage.used;
}

static uint64_t capacity_of(fixture *f, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(f->local, key, &usage), RL_OK);
    return usage.capacity;
}

static rl__local_state state_of(fixture *f, const char *key) {
    rl__local_state s;
    memset(&s, 0xab, sizeof s);
    assert_true(rl__memory_local_state(f->local, key, &s));
    return s;
}

static void advance(fixture *f, uint64_t ms) { rl_manual_clock_advance(&f->clock, ms); }

/* ---- admitting ---- */

static void a_new_mirror_admits_nothing_until_allowed(void **state) {
    fixture *f = *state;
    mirror(f, rolling("rpm", 100, 60));
    rl__local_state s = state_of(f, "rpm");
    assert_int_equal(s.capacity, 0); /* not the definition's 100 */
    assert_int_equal(s.used, 0);
    assert_int_equal(s.lifetime_ms, 60000);
    assert_int_equal(s.kind, RL_KIND_ROLLING);
    assert_forwarded(reserve1(f, 1, "rpm", 1), RL_OK, "rpm");

    rl__memory_local_allow(f->local, "rpm", 5, FAR_MS);
    assert_int_equal(capacity_of(f, "rpm"), 5);
    advance(f, 7);
    outcome o = reserve1(f, 2, "rpm", 3);
    assert_admitted(o);
    assert_int_equal(o.result.reserved_at_unix_ms, T0_UNIX_MS + 7);
    assert_int_equal(used_of(f, "rpm"), 3);
    assert_forwarded(reserve1(f, 3, "rpm", 3), RL_OK, NULL); /* 3 + 3 > 5: not denied, forwarded */
    assert_int_equal(used_of(f, "rpm"), 3);
    assert_admitted(reserve1(f, 4, "rpm", 2)); /* exactly full */
    assert_int_equal(used_of(f, "rpm"), 5);
    assert_forwarded(reserve1(f, 5, "rpm", 1), RL_OK, NULL);

    /* A larger allotment lets more in. */
    rl__memory_local_allow(f->local, "rpm", 7, FAR_MS);
    assert_admitted(reserve1(f, 6, "rpm", 2));
    assert_int_equal(used_of(f, "rpm"), 7);
    /* A smaller one keeps what is held and admits nothing until it fits. */
    rl__memory_local_allow(f->local, "rpm", 4, FAR_MS);
    assert_int_equal(capacity_of(f, "rpm"), 4);
    assert_int_equal(used_of(f, "rpm"), 7);
    assert_forwarded(reserve1(f, 7, "rpm", 1), RL_OK, NULL);

    /* allow on a key without a mirror makes none. */
    rl__memory_local_allow(f->local, "nokey", 5, FAR_MS);
    rl__local_state none;
    assert_false(rl__memory_local_state(f->local, "nokey", &none));
    assert_forwarded(reserve1(f, 8, "nokey", 1), RL_UNKNOWN_LIMIT_KEY, "nokey");
}

static void nothing_is_admitted_from_admit_until_on(void **state) {
    fixture *f = *state;
    mirror(f, rolling("rpm", 100, 60));
    rl__memory_local_allow(f->local, "rpm", 10, T0_MS + 1000);
    advance(f, 999);
    assert_admitted(reserve1(f, 1, "rpm", 1));
    advance(f, 1); /* now == admit_until */
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, "rpm"); /* no allotment to admit from: named */
    advance(f, 5000);
    assert_forwarded(reserve1(f, 3, "rpm", 1), RL_OK, NULL);
    assert_int_equal(used_of(f, "rpm"), 1);
}

static void a_lease_is_decided_here_only_if_all_its_keys_fit(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    mirror_allowed(f, concurrency("conc", 100, 30), 2);
    mirror(f, budget("usd", 1000));
    rl__memory_local_allow(f->local, "usd", 1000, FAR_MS); /* a budget mirror admits nothing anyway */

    rl_requirement both[] = {{"rpm", 4, false}, {"conc", 1, false}};
    assert_admitted(reserve_n(f, 1, both, 2));
    assert_int_equal(used_of(f, "rpm"), 4);
    assert_int_equal(used_of(f, "conc"), 1);

    rl_requirement conc_short[] = {{"rpm", 4, false}, {"conc", 2, false}};
    assert_forwarded(reserve_n(f, 2, conc_short, 2), RL_OK, NULL);
    rl_requirement rpm_short[] = {{"conc", 1, false}, {"rpm", 7, false}};
    assert_forwarded(reserve_n(f, 3, rpm_short, 2), RL_OK, NULL);
    rl_requirement unmirrored[] = {{"rpm", 1, false}, {"nokey", 1, false}};
    assert_forwarded(reserve_n(f, 4, unmirrored, 2), RL_UNKNOWN_LIMIT_KEY, "nokey");
    rl_requirement with_budget[] = {{"rpm", 1, false}, {"usd", 1, false}};
    assert_forwarded(reserve_n(f, 5, with_budget, 2), RL_OK, NULL);
    assert_forwarded(reserve1(f, 6, "usd", 1), RL_OK, NULL);
    /* None of them took anything here. */
    assert_int_equal(used_of(f, "rpm"), 4);
    assert_int_equal(used_of(f, "conc"), 1);
    assert_int_equal(used_of(f, "usd"), 0);

    rl_requirement exactly[] = {{"rpm", 6, false}, {"conc", 1, false}};
    assert_admitted(reserve_n(f, 7, exactly, 2));
    assert_int_equal(used_of(f, "rpm"), 10);
    assert_int_equal(used_of(f, "conc"), 2);
}

/* A batch decides each lease in order, the ones before counted. */
static void a_batch_decides_in_order(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 5);
    char ids[4][27];
    rl_requirement three = {"rpm", 3, false}, two = {"rpm", 2, false};
    rl_reserve_request requests[4] = {
        {rl_test_lease_id(1, ids[0]), NULL, &three, 1, false},
        {rl_test_lease_id(2, ids[1]), NULL, &three, 1, false},
        {rl_test_lease_id(3, ids[2]), NULL, &two, 1, false},
        {rl_test_lease_id(1, ids[3]), NULL, &three, 1, false}, /* lease 1 again */
    };
    rl_reserve_result results[4];
    bool forwarded[4] = {true, false, true, true};
    rl__memory_local_reserve(f->local, requests, 4, results, forwarded);
    assert_false(forwarded[0]);
    assert_true(results[0].allowed);
    assert_true(forwarded[1]);
    assert_false(results[1].allowed);
    assert_false(forwarded[2]);
    assert_true(results[2].allowed);
    assert_false(forwarded[3]); /* replayed */
    assert_true(results[3].allowed);
    assert_int_equal(used_of(f, "rpm"), 5);
}

/* ---- lease ids ---- */

static void a_forwarded_lease_is_forwarded_again(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 2);
    assert_forwarded(reserve1(f, 1, "rpm", 3), RL_OK, NULL);
    rl__memory_local_allow(f->local, "rpm", 10, FAR_MS); /* it would fit now */
    assert_forwarded(reserve1(f, 1, "rpm", 3), RL_OK, NULL);
    /* whatever it asks: the store, which decided it, judges a conflict */
    assert_forwarded(reserve1(f, 1, "rpm", 1), RL_OK, NULL);
    assert_int_equal(used_of(f, "rpm"), 0);
    /* ...and so is its Complete. */
    bool forwarded = false;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual actual = {"rpm", 1};
    assert_int_equal(complete_n(f, 1, &actual, 1, &forwarded, spends), 0);
    assert_true(forwarded);
    assert_forwarded(reserve1(f, 1, "rpm", 3), RL_OK, NULL); /* Complete changed nothing */
    assert_admitted(reserve1(f, 2, "rpm", 3)); /* a new lease fits */
    assert_int_equal(used_of(f, "rpm"), 3);
}

/* As long as the store may remember it: the longest lifetime of its
 * limits known here, plus the lease memory. */
static void a_forwarded_lease_is_remembered_for_the_longest_lifetime(void **state) {
    fixture *f = *state;
    mirror(f, rolling("rpm", 100, 60));
    mirror(f, concurrency("conc", 100, 90));
    rl_requirement reqs[] = {{"conc", 1, false}, {"rpm", 1, false}, {"nokey", 1, false}};
    assert_forwarded(reserve_n(f, 1, reqs, 3), RL_UNKNOWN_LIMIT_KEY, "nokey"); /* 90 s + the lease memory */
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, "rpm");                   /* 60 s + the lease memory */
    rl__memory_local_allow(f->local, "rpm", 10, FAR_MS);
    rl__memory_local_allow(f->local, "conc", 10, FAR_MS);
    mirror(f, rolling("nokey", 100, 1));
    rl__memory_local_allow(f->local, "nokey", 10, FAR_MS);

    advance(f, 60000 + LEASE_MEMORY_MS - 1);
    rl__memory_local_sweep(f->local);
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, NULL);
    advance(f, 1);
    rl__memory_local_sweep(f->local);
    assert_admitted(reserve1(f, 2, "rpm", 1)); /* forgotten: a new lease */

    assert_forwarded(reserve_n(f, 1, reqs, 3), RL_OK, NULL);
    advance(f, 30000 - 1);
    rl__memory_local_sweep(f->local);
    assert_forwarded(reserve_n(f, 1, reqs, 3), RL_OK, NULL);
    advance(f, 1);
    rl__memory_local_sweep(f->local);
    assert_admitted(reserve_n(f, 1, reqs, 3));
}

static void a_lease_decided_here_is_replayed(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    assert_admitted(reserve1(f, LETTERED, "rpm", 4));
    uint64_t demand = state_of(f, "rpm").demand_total;
    advance(f, 5000);
    outcome again = reserve1(f, LETTERED, "rpm", 4);
    assert_admitted(again);
    assert_int_equal(again.result.reserved_at_unix_ms, T0_UNIX_MS); /* its first outcome */
    assert_int_equal(used_of(f, "rpm"), 4);                         /* held once */

    /* The same ULID in lower case is the same lease. */
    char id[27];
    rl_test_lease_id(LETTERED, id);
    for (char *c = id; *c != '\0'; c++) *c = (char)tolower((unsigned char)*c);
    rl_requirement req = {"rpm", 4, false};
    outcome lower = reserve_as(f, id, NULL, &req, 1);
    assert_admitted(lower);
    assert_int_equal(lower.result.reserved_at_unix_ms, T0_UNIX_MS);

    /* Other requirements: a conflict, decided here. */
    outcome conflict = reserve1(f, LETTERED, "rpm", 5);
    assert_false(conflict.forwarded);
    assert_false(conflict.result.allowed);
    assert_int_equal(conflict.result.status, RL_LEASE_ID_CONFLICT);
    mirror_allowed(f, rolling("tpm", 100, 60), 10);
    rl_requirement more[] = {{"rpm", 4, false}, {"tpm", 1, false}};
    conflict = reserve_n(f, LETTERED, more, 2);
    assert_false(conflict.forwarded);
    assert_int_equal(conflict.result.status, RL_LEASE_ID_CONFLICT);
    assert_int_equal(used_of(f, "rpm"), 4);
    assert_int_equal(used_of(f, "tpm"), 0);

    /* Replayed even when it would no longer fit, or nothing is admitted. */
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 0, true), 4);
    assert_admitted(reserve1(f, LETTERED, "rpm", 4));
    assert_int_equal(state_of(f, "rpm").demand_total, demand); /* retries ask nothing new */
}

/* The lease table is bounded: a lease it has no room for is not decided
 * here but by the store, which remembers it, and so is its retry while the
 * table stays full. */
static void a_full_lease_table_forwards(void **state) {
    fixture *f = *state; /* two leases at most */
    mirror_allowed(f, concurrency("conc", 100, 30), 3);
    assert_admitted(reserve1(f, 1, "conc", 1));
    assert_admitted(reserve1(f, 2, "conc", 1));
    outcome fits = reserve1(f, 3, "conc", 1);
    assert_true(fits.forwarded);
    assert_int_equal(fits.result.status, RL_OK);
    fits = reserve1(f, 3, "conc", 1);
    assert_true(fits.forwarded);
    outcome does_not_fit = reserve1(f, 4, "conc", 2);
    assert_true(does_not_fit.forwarded);
    assert_int_equal(used_of(f, "conc"), 2);
    /* A completed lease holds nothing: it makes way. */
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 1, NULL, 0, &forwarded, spends), 0);
    assert_false(forwarded);
    assert_admitted(reserve1(f, 3, "conc", 1));
}

/* ---- which key to ask an allotment of ---- */

static void forwarded_leases_name_the_keys_to_ask_for(void **state) {
    fixture *f = *state;
    /* No mirror: named every time, the first of the lease's. */
    assert_forwarded(reserve1(f, 1, "nokey", 1), RL_UNKNOWN_LIMIT_KEY, "nokey");
    assert_forwarded(reserve1(f, 2, "nokey", 1), RL_UNKNOWN_LIMIT_KEY, "nokey");
    rl_requirement two_unknown[] = {{"x", 1, false}, {"y", 1, false}};
    assert_forwarded(reserve_n(f, 20, two_unknown, 2), RL_UNKNOWN_LIMIT_KEY, "x");

    /* A mirror without an allotment: named once, until unwanted. */
    mirror(f, rolling("rpm", 100, 60));
    assert_forwarded(reserve1(f, 3, "rpm", 1), RL_OK, "rpm");
    assert_forwarded(reserve1(f, 4, "rpm", 1), RL_OK, NULL);
    rl__memory_local_unwant(f->local, "rpm");
    assert_forwarded(reserve1(f, 5, "rpm", 1), RL_OK, "rpm");
    assert_forwarded(reserve1(f, 6, "rpm", 1), RL_OK, NULL);
    rl__memory_local_unwant(f->local, "nokey"); /* no mirror: nothing to do */

    /* Two without: one each time, in the lease's order. */
    mirror(f, rolling("a", 100, 60));
    mirror(f, rolling("b", 100, 60));
    rl_requirement ab[] = {{"a", 1, false}, {"b", 1, false}};
    assert_forwarded(reserve_n(f, 7, ab, 2), RL_OK, "a");
    assert_forwarded(reserve_n(f, 8, ab, 2), RL_OK, "b");
    assert_forwarded(reserve_n(f, 9, ab, 2), RL_OK, NULL);

    /* An allotment that is full names nothing: there is one to refill. */
    mirror(f, rolling("full", 100, 60));
    rl__memory_local_allow(f->local, "full", 1, T0_MS + 10000);
    assert_admitted(reserve1(f, 10, "full", 1));
    assert_forwarded(reserve1(f, 11, "full", 1), RL_OK, NULL);
    advance(f, 10000); /* its allotment ended */
    assert_forwarded(reserve1(f, 12, "full", 1), RL_OK, "full");
    assert_forwarded(reserve1(f, 13, "full", 1), RL_OK, NULL);
}

/* An unknown key's hint comes first; a mirror the same lease finds
 * without an allotment is named by the next lease instead of never. */
static void a_hint_not_given_is_not_used_up(void **state) {
    fixture *f = *state;
    mirror(f, rolling("rpm", 100, 60));
    rl_requirement reqs[] = {{"rpm", 1, false}, {"nokey", 1, false}};
    assert_forwarded(reserve_n(f, 1, reqs, 2), RL_UNKNOWN_LIMIT_KEY, "nokey");
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, "rpm");
    assert_forwarded(reserve1(f, 3, "rpm", 1), RL_OK, NULL);

    mirror(f, rolling("tpm", 100, 60));
    rl_requirement unknown_first[] = {{"other", 1, false}, {"tpm", 1, false}};
    assert_forwarded(reserve_n(f, 4, unknown_first, 2), RL_UNKNOWN_LIMIT_KEY, "other");
    assert_forwarded(reserve1(f, 5, "tpm", 1), RL_OK, "tpm");
}

/* ---- demand ---- */

static void demand_counts_every_new_lease(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    mirror(f, concurrency("conc", 100, 30));
    rl__local_state s = state_of(f, "rpm");
    assert_int_equal(s.demand_total, 0);
    assert_int_equal(s.largest_amount, 0);

    assert_admitted(reserve1(f, 1, "rpm", 3));
    assert_forwarded(reserve1(f, 2, "rpm", 20), RL_OK, NULL);
    rl_requirement both[] = {{"rpm", 5, false}, {"conc", 2, false}};
    assert_forwarded(reserve_n(f, 3, both, 2), RL_OK, "conc");
    assert_admitted(reserve1(f, 1, "rpm", 3));                     /* replay */
    assert_forwarded(reserve1(f, 2, "rpm", 20), RL_OK, NULL);      /* forwarded again */
    assert_int_equal(reserve1(f, 1, "rpm", 9).result.status, RL_LEASE_ID_CONFLICT);
    rl_requirement with_unknown[] = {{"nokey", 100, false}, {"rpm", 1, false}};
    assert_forwarded(reserve_n(f, 4, with_unknown, 2), RL_UNKNOWN_LIMIT_KEY, "nokey");

    s = state_of(f, "rpm");
    assert_int_equal(s.demand_total, 3 + 20 + 5 + 1);
    assert_int_equal(s.largest_amount, 20);
    assert_int_equal(s.capacity, 10);
    assert_int_equal(s.used, 3);
    assert_int_equal(s.lifetime_ms, 60000);
    assert_int_equal(s.kind, RL_KIND_ROLLING);
    /* The largest amount is since the last look. */
    s = state_of(f, "rpm");
    assert_int_equal(s.demand_total, 29);
    assert_int_equal(s.largest_amount, 0);
    assert_admitted(reserve1(f, 5, "rpm", 2));
    assert_admitted(reserve1(f, 6, "rpm", 1));
    s = state_of(f, "rpm");
    assert_int_equal(s.demand_total, 32);
    assert_int_equal(s.largest_amount, 2);

    s = state_of(f, "conc");
    assert_int_equal(s.demand_total, 2);
    assert_int_equal(s.largest_amount, 2);
    assert_int_equal(s.capacity, 0);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.lifetime_ms, 30000);
    assert_int_equal(s.kind, RL_KIND_CONCURRENCY);

    mirror(f, budget("usd", 1000));
    assert_forwarded(reserve1(f, 7, "usd", 250), RL_OK, "usd");
    s = state_of(f, "usd");
    assert_int_equal(s.demand_total, 250);
    assert_int_equal(s.largest_amount, 250);
    assert_int_equal(s.lifetime_ms, 600000);
    assert_int_equal(s.kind, RL_KIND_BUDGET);

    rl__local_state none;
    assert_false(rl__memory_local_state(f->local, "nokey", &none));
}

/* ---- Complete ---- */

static void complete_releases_reconciles_and_reports_spend(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    mirror_allowed(f, concurrency("conc", 100, 30), 2);
    mirror_allowed(f, rolling("tpm", 1000, 60), 100);
    char id[27];
    rl_test_lease_id(LETTERED, id);
    for (char *c = id; *c != '\0'; c++) *c = (char)tolower((unsigned char)*c);
    rl_requirement reqs[] = {{"rpm", 6, false}, {"conc", 1, false}, {"tpm", 50, false}};
    assert_admitted(reserve_as(f, id, "job-1", reqs, 3));
    advance(f, 10000);

    rl_actual actuals[] = {{"tpm", 70}, {"rpm", 2}};
    rl_complete_request request = {id, "another-job", actuals, 2};
    rl_status status = RL_BACKEND_ERROR;
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    memset(spends, 0xab, sizeof spends);
    assert_int_equal(rl__memory_local_complete(f->local, &request, 1, &status, &forwarded, spends), 2);
    assert_int_equal(status, RL_OK);
    assert_false(forwarded);
    char upper[27];
    rl_test_lease_id(LETTERED, upper);
    /* One spend per rolling key, in the lease's order; none for the hold. */
    assert_string_equal(spends[0].key, "rpm");
    assert_string_equal(spends[0].lease_id, upper);
    assert_string_equal(spends[0].job_id, "job-1"); /* the reserve's */
    assert_int_equal(spends[0].reserved, 6);
    assert_int_equal(spends[0].actual, 2);
    assert_int_equal(spends[0].overage, 0);
    assert_int_equal(spends[0].overage_for_ms, 0);
    assert_string_equal(spends[1].key, "tpm");
    assert_string_equal(spends[1].lease_id, upper);
    assert_string_equal(spends[1].job_id, "job-1");
    assert_int_equal(spends[1].reserved, 50);
    assert_int_equal(spends[1].actual, 70);
    assert_int_equal(spends[1].overage, 20);
    assert_int_equal(spends[1].overage_for_ms, 50000); /* what its window had left */

    assert_int_equal(used_of(f, "rpm"), 2);  /* reconciled down */
    assert_int_equal(used_of(f, "conc"), 0); /* released */
    assert_int_equal(used_of(f, "tpm"), 50); /* overage is the store's to charge */
    /* The room is back at once. */
    assert_admitted(reserve1(f, 2, "rpm", 8));
    assert_forwarded(reserve1(f, 3, "rpm", 1), RL_OK, NULL);
    assert_admitted(reserve1(f, 4, "conc", 2));
    assert_admitted(reserve1(f, 5, "tpm", 50));
    assert_forwarded(reserve1(f, 6, "tpm", 1), RL_OK, NULL);

    /* A second Complete changes nothing and reports nothing. */
    forwarded = true;
    assert_int_equal(rl__memory_local_complete(f->local, &request, 1, &status, &forwarded, spends), 0);
    assert_int_equal(status, RL_OK);
    assert_false(forwarded);
    assert_int_equal(used_of(f, "rpm"), 10);
    assert_int_equal(used_of(f, "conc"), 2);
    assert_int_equal(used_of(f, "tpm"), 100);

    /* The reconciled reservation still ends with its window: 2 freed at
     * T0 + 60 s, the 8 of lease 2 at T0 + 70 s. */
    advance(f, 50000 - 1);
    assert_int_equal(used_of(f, "rpm"), 10);
    advance(f, 1);
    assert_int_equal(used_of(f, "rpm"), 8);
}

static void a_key_the_complete_does_not_name_keeps_its_reservation(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    mirror_allowed(f, rolling("tpm", 1000, 60), 100);
    rl_requirement reqs[] = {{"rpm", 6, false}, {"tpm", 5, false}};
    assert_admitted(reserve_n(f, 1, reqs, 2));
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual tpm = {"tpm", 1};
    assert_int_equal(complete_n(f, 1, &tpm, 1, &forwarded, spends), 2);
    assert_false(forwarded);
    assert_string_equal(spends[0].key, "rpm");
    assert_int_equal(spends[0].reserved, 6);
    assert_int_equal(spends[0].actual, 6);
    assert_int_equal(spends[0].overage, 0);
    assert_string_equal(spends[0].job_id, ""); /* none given */
    assert_string_equal(spends[1].key, "tpm");
    assert_int_equal(spends[1].reserved, 5);
    assert_int_equal(spends[1].actual, 1);
    assert_int_equal(used_of(f, "rpm"), 6);
    assert_int_equal(used_of(f, "tpm"), 1);

    /* An actual of 0 frees the reservation. */
    assert_admitted(reserve1(f, 2, "rpm", 4));
    rl_actual none = {"rpm", 0};
    assert_int_equal(complete_n(f, 2, &none, 1, &forwarded, spends), 1);
    assert_int_equal(spends[0].reserved, 4);
    assert_int_equal(spends[0].actual, 0);
    assert_int_equal(used_of(f, "rpm"), 6);
}

static void completes_not_decided_here_are_forwarded(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 3);
    assert_admitted(reserve1(f, 1, "rpm", 3));
    assert_forwarded(reserve1(f, 2, "rpm", 3), RL_OK, NULL);
    char ids[3][27];
    rl_actual actual = {"rpm", 1};
    rl_complete_request requests[3] = {
        {rl_test_lease_id(2, ids[0]), NULL, &actual, 1},  /* forwarded */
        {rl_test_lease_id(1, ids[1]), NULL, &actual, 1},  /* decided here */
        {rl_test_lease_id(99, ids[2]), NULL, &actual, 1}, /* never seen: perhaps the store's */
    };
    rl_status statuses[3] = {RL_BACKEND_ERROR, RL_BACKEND_ERROR, RL_BACKEND_ERROR};
    bool forwarded[3] = {false, true, false};
    rl__local_spend spends[3 * RL_MAX_REQUIREMENTS];
    assert_int_equal(rl__memory_local_complete(f->local, requests, 3, statuses, forwarded, spends), 1);
    assert_true(forwarded[0]);
    assert_false(forwarded[1]);
    assert_true(forwarded[2]);
    for (int i = 0; i < 3; i++) assert_int_equal(statuses[i], RL_OK);
    assert_string_equal(spends[0].lease_id, ids[1]);
    assert_int_equal(spends[0].actual, 1);
    assert_int_equal(used_of(f, "rpm"), 1);
}

/* Once its window is over there is nothing left to adjust: the spend is
 * reported for the audit entry, no overage (as the memory backend). */
static void a_complete_after_the_window_reports_spend_only(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    assert_admitted(reserve1(f, 1, "rpm", 5));
    advance(f, 60000);
    assert_admitted(reserve1(f, 2, "rpm", 10));
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual actual = {"rpm", 9};
    assert_int_equal(complete_n(f, 1, &actual, 1, &forwarded, spends), 1);
    assert_false(forwarded);
    assert_int_equal(spends[0].reserved, 5);
    assert_int_equal(spends[0].actual, 9);
    assert_int_equal(spends[0].overage, 0);
    assert_int_equal(spends[0].overage_for_ms, 0);
    assert_int_equal(used_of(f, "rpm"), 10);
}

/* ---- shrink ---- */

static void shrink_lowers_at_once_and_never_raises(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    assert_admitted(reserve1(f, 1, "rpm", 4));
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 6, false), 6);
    assert_int_equal(capacity_of(f, "rpm"), 6);
    assert_admitted(reserve1(f, 2, "rpm", 2)); /* still admitting, up to 6 */
    assert_forwarded(reserve1(f, 3, "rpm", 1), RL_OK, NULL);
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 2, false), 6); /* not below what it holds */
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual none = {"rpm", 0};
    assert_int_equal(complete_n(f, 2, &none, 1, &forwarded, spends), 1);
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 2, false), 4);
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 8, false), 4); /* never raises */
    assert_int_equal(capacity_of(f, "rpm"), 4);
    assert_forwarded(reserve1(f, 4, "rpm", 1), RL_OK, NULL);

    /* stop: nothing more admitted, room or not. */
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 100, true), 4);
    assert_int_equal(complete_n(f, 1, &none, 1, &forwarded, spends), 1);
    assert_int_equal(used_of(f, "rpm"), 0);
    assert_int_equal(capacity_of(f, "rpm"), 4);
    assert_forwarded(reserve1(f, 5, "rpm", 1), RL_OK, "rpm"); /* no allotment to admit from */
    assert_admitted(reserve1(f, 1, "rpm", 4));                /* a lease decided here is replayed */
    /* What expired does not count. */
    rl__memory_local_allow(f->local, "rpm", 7, FAR_MS);
    assert_admitted(reserve1(f, 6, "rpm", 7));
    advance(f, 60000);
    assert_int_equal(rl__memory_local_shrink(f->local, "rpm", 0, false), 0);

    assert_int_equal(rl__memory_local_shrink(f->local, "nokey", 5, true), 0);
}

/* ---- what is live ---- */

static void live_lists_reservations_by_second(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 100);
    assert_admitted(reserve1(f, 1, "rpm", 3)); /* ends at T0 + 60 s */
    advance(f, 1500);
    assert_admitted(reserve1(f, 2, "rpm", 2)); /* T0 + 61.5 s */
    advance(f, 300);
    assert_admitted(reserve1(f, 3, "rpm", 4)); /* T0 + 61.8 s */
    advance(f, 2000);
    assert_admitted(reserve1(f, 4, "rpm", 1)); /* T0 + 63.8 s; now T0 + 3.8 s */

    uint64_t ms[8], amounts[8];
    /* 56.2 s -> 57, 57.7 and 58.0 -> 58 (merged), 60.0 stays 60 */
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 8), 3);
    assert_int_equal(ms[0], 57000);
    assert_int_equal(amounts[0], 3);
    assert_int_equal(ms[1], 58000);
    assert_int_equal(amounts[1], 6);
    assert_int_equal(ms[2], 60000);
    assert_int_equal(amounts[2], 1);
    /* More than max: the rest merged into the last, for the longest time. */
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 2), 2);
    assert_int_equal(ms[0], 57000);
    assert_int_equal(amounts[0], 3);
    assert_int_equal(ms[1], 60000);
    assert_int_equal(amounts[1], 7);
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 1), 1);
    assert_int_equal(ms[0], 60000);
    assert_int_equal(amounts[0], 10);
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 0), 0);
    assert_int_equal(rl__memory_local_live(f->local, "nokey", ms, amounts, 8), 0);

    /* Reconciled and freed reservations count for what they hold. */
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual freed = {"rpm", 0}, smaller = {"rpm", 1};
    complete_n(f, 3, &freed, 1, &forwarded, spends);
    complete_n(f, 2, &smaller, 1, &forwarded, spends);
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 8), 3);
    assert_int_equal(ms[0], 57000);
    assert_int_equal(amounts[0], 3);
    assert_int_equal(ms[1], 58000);
    assert_int_equal(amounts[1], 1);
    assert_int_equal(ms[2], 60000);
    assert_int_equal(amounts[2], 1);

    advance(f, 56200); /* T0 + 60 s: lease 1 ends */
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 8), 2);
    assert_int_equal(ms[0], 2000); /* 1.5 s */
    assert_int_equal(amounts[0], 1);
    assert_int_equal(ms[1], 4000); /* 3.8 s */
    assert_int_equal(amounts[1], 1);
    advance(f, 3800 - 1);
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 8), 1);
    assert_int_equal(ms[0], 1000); /* 1 ms left: a whole second */
    assert_int_equal(amounts[0], 1);
    advance(f, 1);
    assert_int_equal(rl__memory_local_live(f->local, "rpm", ms, amounts, 8), 0);
}

static void live_lists_holds_too(void **state) {
    fixture *f = *state;
    mirror_allowed(f, concurrency("conc", 100, 30), 10);
    assert_admitted(reserve1(f, 1, "conc", 2)); /* times out at T0 + 30 s */
    advance(f, 2500);
    assert_admitted(reserve1(f, 2, "conc", 1)); /* T0 + 32.5 s */
    assert_admitted(reserve1(f, 3, "conc", 4)); /* the same */
    uint64_t ms[4], amounts[4];
    assert_int_equal(rl__memory_local_live(f->local, "conc", ms, amounts, 4), 2);
    assert_int_equal(ms[0], 28000); /* 27.5 s */
    assert_int_equal(amounts[0], 2);
    assert_int_equal(ms[1], 30000);
    assert_int_equal(amounts[1], 5);
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 1, NULL, 0, &forwarded, spends), 0);
    assert_int_equal(rl__memory_local_live(f->local, "conc", ms, amounts, 4), 1);
    assert_int_equal(ms[0], 30000);
    assert_int_equal(amounts[0], 5);
    advance(f, 30000 - 1);
    assert_int_equal(rl__memory_local_live(f->local, "conc", ms, amounts, 4), 1);
    assert_int_equal(ms[0], 1000);
    assert_int_equal(amounts[0], 5);
    advance(f, 1);
    assert_int_equal(rl__memory_local_live(f->local, "conc", ms, amounts, 4), 0);
}

/* ---- definitions ---- */

static void define_keeps_capacity_and_a_changed_window_stops_admissions(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 5);
    assert_admitted(reserve1(f, 1, "rpm", 2));
    /* Another capacity, a description: what it may admit stays the allotment's. */
    rl_limit_def def = rolling("rpm", 1000, 60);
    snprintf(def.description, sizeof def.description, "requests a minute");
    mirror(f, def);
    assert_int_equal(capacity_of(f, "rpm"), 5);
    assert_admitted(reserve1(f, 2, "rpm", 1));
    assert_forwarded(reserve1(f, 3, "rpm", 3), RL_OK, NULL);
    mirror(f, rolling("rpm", 1, 60)); /* a smaller definition neither */
    assert_int_equal(capacity_of(f, "rpm"), 5);
    assert_admitted(reserve1(f, 4, "rpm", 1));

    /* Another window: nothing admitted until an allotment says until when. */
    mirror(f, rolling("rpm", 100, 30));
    rl__local_state s = state_of(f, "rpm");
    assert_int_equal(s.capacity, 5);
    assert_int_equal(s.used, 4);
    assert_int_equal(s.lifetime_ms, 30000);
    assert_forwarded(reserve1(f, 5, "rpm", 1), RL_OK, "rpm");
    rl__memory_local_allow(f->local, "rpm", 5, FAR_MS);
    assert_admitted(reserve1(f, 6, "rpm", 1));
    /* What was admitted before keeps its expiry (and one admitted behind
     * it waits for it, the ring stays in order); then the new window. */
    advance(f, 60000 - 1);
    assert_int_equal(used_of(f, "rpm"), 5);
    advance(f, 1);
    assert_int_equal(used_of(f, "rpm"), 0);
    assert_admitted(reserve1(f, 7, "rpm", 1));
    advance(f, 30000 - 1);
    assert_int_equal(used_of(f, "rpm"), 1);
    advance(f, 1);
    assert_int_equal(used_of(f, "rpm"), 0);

    /* A concurrency mirror's lifetime is its timeout. */
    mirror_allowed(f, concurrency("conc", 100, 30), 5);
    mirror(f, concurrency("conc", 100, 30));
    assert_admitted(reserve1(f, 8, "conc", 1));
    mirror(f, concurrency("conc", 100, 31));
    assert_int_equal(state_of(f, "conc").lifetime_ms, 31000);
    assert_forwarded(reserve1(f, 9, "conc", 1), RL_OK, "conc");
}

static void a_kind_change_while_holding_is_refused(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 5);
    assert_admitted(reserve1(f, 1, "rpm", 2));
    rl_limit_def conc = concurrency("rpm", 100, 60);
    assert_int_equal(rl__memory_local_define(f->local, &conc, 0), RL_LIMIT_IN_USE);
    rl__local_state s = state_of(f, "rpm");
    assert_int_equal(s.kind, RL_KIND_ROLLING);
    assert_int_equal(s.lifetime_ms, 60000);
    assert_int_equal(s.capacity, 5);
    assert_int_equal(s.used, 2);
    /* Its reservation goes on by its kind's rules... */
    assert_admitted(reserve1(f, 1, "rpm", 2));
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    rl_actual actual = {"rpm", 1};
    assert_int_equal(complete_n(f, 1, &actual, 1, &forwarded, spends), 1);
    assert_int_equal(used_of(f, "rpm"), 1);
    /* ...but the store has another kind now: nothing more is admitted. */
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, "rpm");
    advance(f, 60000);
    assert_int_equal(rl__memory_local_define(f->local, &conc, 0), RL_OK);
    assert_int_equal(state_of(f, "rpm").kind, RL_KIND_CONCURRENCY);
}

/* A kind change that keeps the lifetime (a 60 s window, a 60 s timeout)
 * stops admissions too: the allotment was carved for the other kind. */
static void a_kind_change_stops_admissions(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 5);
    mirror(f, concurrency("rpm", 100, 60));
    rl__local_state s = state_of(f, "rpm");
    assert_int_equal(s.kind, RL_KIND_CONCURRENCY);
    assert_int_equal(s.lifetime_ms, 60000);
    assert_int_equal(s.capacity, 5);
    assert_forwarded(reserve1(f, 1, "rpm", 1), RL_OK, "rpm");
    rl__memory_local_allow(f->local, "rpm", 5, FAR_MS);
    assert_admitted(reserve1(f, 2, "rpm", 1));
    /* now a hold: released by its Complete, no spend */
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 2, NULL, 0, &forwarded, spends), 0);
    assert_int_equal(used_of(f, "rpm"), 0);
}

/* ---- expiry ---- */

static void rolling_room_comes_back_after_the_window(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 5);
    assert_admitted(reserve1(f, 1, "rpm", 5));
    advance(f, 60000 - 1);
    assert_forwarded(reserve1(f, 2, "rpm", 1), RL_OK, NULL);
    assert_int_equal(used_of(f, "rpm"), 5);
    advance(f, 1);
    assert_int_equal(state_of(f, "rpm").used, 0);
    assert_admitted(reserve1(f, 3, "rpm", 5));
    rl__memory_local_sweep(f->local);
    assert_int_equal(used_of(f, "rpm"), 5);
}

static void holds_time_out(void **state) {
    fixture *f = *state;
    mirror_allowed(f, concurrency("conc", 100, 30), 2);
    assert_admitted(reserve1(f, 1, "conc", 2));
    advance(f, 30000 - 1);
    assert_forwarded(reserve1(f, 2, "conc", 1), RL_OK, NULL);
    advance(f, 1);
    rl__memory_local_sweep(f->local);
    assert_int_equal(used_of(f, "conc"), 0);
    assert_admitted(reserve1(f, 3, "conc", 2));
    /* The timed-out lease's Complete releases nothing more. */
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 1, NULL, 0, &forwarded, spends), 0);
    assert_false(forwarded);
    assert_int_equal(used_of(f, "conc"), 2);
}

/* A dry run takes the road a reserve would and leaves nothing: admitted
 * here when it fits (holding nothing), else forwarded without a hint (it
 * asks for no allotment); no demand counted, no lease remembered, a
 * remembered one answered as it was. */
static void a_dry_run_is_decided_here_or_forwarded_and_leaves_nothing(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 10, 60), 10);
    char id[27], other[27];
    rl_requirement four = {"rpm", 4, false};
    rl_reserve_request dry = {rl_test_lease_id(1, id), NULL, &four, 1, true};
    outcome o = {.forwarded = true};
    rl__memory_local_reserve(f->local, &dry, 1, &o.result, &o.forwarded);
    assert_admitted(o);
    assert_int_equal(o.result.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(used_of(f, "rpm"), 0);
    assert_int_equal(state_of(f, "rpm").demand_total, 0);
    assert_int_equal(state_of(f, "rpm").admitted_total, 0);
    /* the id is new for the reserve: decided here */
    rl_manual_clock_advance(&f->clock, 5);
    o = reserve1(f, 1, "rpm", 4);
    assert_admitted(o);
    assert_int_equal(o.result.reserved_at_unix_ms, T0_UNIX_MS + 5);
    assert_int_equal(used_of(f, "rpm"), 4);
    /* remembered now: the dry run answers its first outcome */
    rl__memory_local_reserve(f->local, &dry, 1, &o.result, &o.forwarded);
    assert_admitted(o);
    assert_int_equal(o.result.reserved_at_unix_ms, T0_UNIX_MS + 5);
    /* no room here: forwarded, naming nothing to ask for, remembered nowhere */
    rl_requirement seven = {"rpm", 7, false};
    rl_reserve_request dry2 = {rl_test_lease_id(2, other), NULL, &seven, 1, true};
    rl__memory_local_reserve(f->local, &dry2, 1, &o.result, &o.forwarded);
    assert_forwarded(o, RL_OK, NULL);
    assert_admitted(reserve1(f, 2, "rpm", 1)); /* not forwarded as lease 2 was not remembered */
    rl_requirement unmirrored[] = {{"rpm", 1, false}, {"rpd", 1, true}};
    rl_reserve_request dry3 = {rl_test_lease_id(3, other), NULL, unmirrored, 2, true};
    rl__memory_local_reserve(f->local, &dry3, 1, &o.result, &o.forwarded);
    assert_forwarded(o, RL_OK, NULL); /* whether the store defines rpd is the store's to say */
    assert_int_equal(state_of(f, "rpm").demand_total, 5);
}

/* An optional key the store did not define when the keeper looked is
 * skipped here until the mark ends: the lease is decided here on the rest
 * (its retry must be the same request); without the mark, or required,
 * the key sends the lease to the store. */
static void an_optional_key_the_store_lacks_is_skipped_here_for_a_while(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 10, 60), 10);
    rl_requirement reqs[] = {{"rpd", 1, true}, {"rpm", 2, false}};
    assert_forwarded(reserve_n(f, 1, reqs, 2), RL_UNKNOWN_LIMIT_KEY, "rpd"); /* not known to be absent yet */
    rl__memory_local_absent(f->local, "rpd", T0_MS + 1000);
    outcome o = reserve_n(f, 2, reqs, 2);
    assert_admitted(o);
    assert_int_equal(used_of(f, "rpm"), 2);
    assert_admitted(reserve_n(f, 2, reqs, 2)); /* its retry: the first outcome */
    assert_int_equal(used_of(f, "rpm"), 2);
    rl_requirement required[] = {{"rpd", 1, false}, {"rpm", 2, false}};
    assert_int_equal(reserve_n(f, 2, required, 2).result.status, RL_LEASE_ID_CONFLICT);
    assert_forwarded(reserve_n(f, 3, required, 2), RL_UNKNOWN_LIMIT_KEY, "rpd");
    rl_requirement only_absent = {"rpd", 1, true};
    assert_admitted(reserve_n(f, 4, &only_absent, 1)); /* holds nothing */
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 2, (rl_actual[]){{"rpd", 1}, {"rpm", 1}}, 2, &forwarded, spends), 1);
    assert_false(forwarded);
    assert_string_equal(spends[0].key, "rpm");
    assert_int_equal(used_of(f, "rpm"), 1);
    /* the mark ends: the store says again */
    rl_manual_clock_advance(&f->clock, 1000);
    assert_forwarded(reserve_n(f, 5, reqs, 2), RL_UNKNOWN_LIMIT_KEY, "rpd");
    /* a mirror wins over a mark */
    rl__memory_local_absent(f->local, "rpd", FAR_MS);
    mirror(f, rolling("rpd", 100, 86400));
    assert_forwarded(reserve_n(f, 6, reqs, 2), RL_OK, "rpd"); /* its mirror admits nothing yet */
}

/* A mirror forgotten (its limit deleted): what it held goes; a lease
 * decided from it keeps its other keys, whose Complete still reports
 * spend, and spends nothing on the forgotten key; a lease naming it is
 * forwarded, naming it as a key without a mirror. */
static void a_forgotten_mirror_drops_what_it_holds(void **state) {
    fixture *f = *state;
    mirror_allowed(f, rolling("rpm", 100, 60), 10);
    mirror_allowed(f, concurrency("conc", 100, 30), 2);
    mirror_allowed(f, rolling("tpm", 1000, 60), 100);
    rl_requirement reqs[] = {{"rpm", 6, false}, {"conc", 1, false}, {"tpm", 50, false}};
    assert_admitted(reserve_n(f, 1, reqs, 3));
    assert_true(rl__memory_local_forget(f->local, "tpm"));
    assert_true(rl__memory_local_forget(f->local, "conc"));
    assert_false(rl__memory_local_forget(f->local, "tpm"));
    rl__local_state none;
    assert_false(rl__memory_local_state(f->local, "tpm", &none));
    assert_forwarded(reserve1(f, 2, "tpm", 1), RL_UNKNOWN_LIMIT_KEY, "tpm");
    assert_admitted(reserve_n(f, 1, reqs, 3)); /* a retry: its first outcome */

    char id[27];
    rl_actual actuals[] = {{"tpm", 70}, {"rpm", 2}};
    rl_complete_request request = {rl_test_lease_id(1, id), NULL, actuals, 2};
    rl_status status = RL_BACKEND_ERROR;
    bool forwarded = true;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(rl__memory_local_complete(f->local, &request, 1, &status, &forwarded, spends), 1);
    assert_int_equal(status, RL_OK);
    assert_false(forwarded);
    assert_string_equal(spends[0].key, "rpm");
    assert_int_equal(spends[0].actual, 2);
    assert_int_equal(used_of(f, "rpm"), 2);

    /* mirrored again: a new mirror, empty */
    mirror_allowed(f, rolling("tpm", 1000, 60), 100);
    assert_int_equal(used_of(f, "tpm"), 0);
    assert_admitted(reserve1(f, 3, "tpm", 100));
}

/* A mirror is of one incarnation of the shared limit: the spends of its
 * leases' Completes say which, and a definition of another (the limit
 * deleted and defined again) does not touch it: it is forgotten first,
 * and the new mirror, empty, is of the new incarnation. */
static void a_mirror_is_of_one_incarnation(void **state) {
    fixture *f = *state;
    mirror_of(f, rolling("tpm", 1000, 60), 7);
    rl__memory_local_allow(f->local, "tpm", 100, FAR_MS);
    assert_admitted(reserve1(f, 1, "tpm", 50));
    rl_limit_def again = rolling("tpm", 500, 60);
    assert_int_equal(rl__memory_local_define(f->local, &again, 9), RL_LIMIT_IN_USE);
    rl__local_state mirrored = state_of(f, "tpm");
    assert_int_equal(mirrored.incarnation, 7);
    assert_int_equal(mirrored.used, 50);
    assert_int_equal(capacity_of(f, "tpm"), 100);

    rl_actual actual = {"tpm", 80};
    bool forwarded;
    rl__local_spend spends[RL_MAX_REQUIREMENTS];
    assert_int_equal(complete_n(f, 1, &actual, 1, &forwarded, spends), 1);
    assert_int_equal(spends[0].overage, 30);
    assert_int_equal(spends[0].incarnation, 7);

    assert_true(rl__memory_local_forget(f->local, "tpm"));
    mirror_of(f, again, 9);
    mirrored = state_of(f, "tpm");
    assert_int_equal(mirrored.incarnation, 9);
    assert_int_equal(mirrored.used, 0);
    rl__memory_local_allow(f->local, "tpm", 100, FAR_MS);
    assert_admitted(reserve1(f, 2, "tpm", 10));
    assert_int_equal(complete_n(f, 2, NULL, 0, &forwarded, spends), 1);
    assert_int_equal(spends[0].incarnation, 9);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_new_mirror_admits_nothing_until_allowed),
        T(nothing_is_admitted_from_admit_until_on),
        T(a_lease_is_decided_here_only_if_all_its_keys_fit),
        T(a_batch_decides_in_order),
        T(a_forwarded_lease_is_forwarded_again),
        T(a_forwarded_lease_is_remembered_for_the_longest_lifetime),
        T(a_lease_decided_here_is_replayed),
        cmocka_unit_test_setup_teardown(a_full_lease_table_forwards, setup_two_leases, teardown),
        T(forwarded_leases_name_the_keys_to_ask_for),
        T(a_hint_not_given_is_not_used_up),
        T(demand_counts_every_new_lease),
        T(complete_releases_reconciles_and_reports_spend),
        T(a_key_the_complete_does_not_name_keeps_its_reservation),
        T(completes_not_decided_here_are_forwarded),
        T(a_complete_after_the_window_reports_spend_only),
        T(shrink_lowers_at_once_and_never_raises),
        T(live_lists_reservations_by_second),
        T(live_lists_holds_too),
        T(define_keeps_capacity_and_a_changed_window_stops_admissions),
        T(a_kind_change_while_holding_is_refused),
        T(a_kind_change_stops_admissions),
        T(rolling_room_comes_back_after_the_window),
        T(holds_time_out),
        T(a_dry_run_is_decided_here_or_forwarded_and_leaves_nothing),
        T(an_optional_key_the_store_lacks_is_skipped_here_for_a_while),
        T(a_forgotten_mirror_drops_what_it_holds),
        T(a_mirror_is_of_one_incarnation),
    };
#undef T
    return cmocka_run_group_tests_name("memory local", tests, NULL, NULL);
}
