/* test_allotted_backend.c — the redis backend with allotments
 * (src/backend/allot, docs/allotments.md) against a real redis-server, on a
 * manual clock, its keepers stepped by hand (support/fleet_backend.h):
 *
 *  - a lease whose keys all have room is decided locally, the rest go to
 *    Redis; a retry goes where its lease went; Redis's usage counts what
 *    daemons hold live of their allotments as used, the rest as allotted;
 *  - a fleet of three never admits more than a limit's capacity, and leaves
 *    nothing stranded in allotments once it denies;
 *  - Completes give room back at once; what they cost is in Redis's audit
 *    log, overage charged there by the limit's policy;
 *  - idle allotments go back; a capacity decrease reaches every daemon at
 *    its next look; a destroyed daemon gives back all it holds, keeping
 *    what is live as entries of their own;
 *  - a Complete through another daemon reaches the lease's own;
 *  - a limit deleted and PUT again before the daemons looked starts empty:
 *    the old one's allotments and the Completes of its leases charge the
 *    new one nothing; one PUT again after they looked is allotted by its
 *    own demand;
 *  - a lease naming a budget goes to Redis, and so does one naming a key
 *    made from a template; an optional key Redis does not define is
 *    skipped here;
 *  - Redis stopped: a daemon decides from what it holds until its
 *    allotments end, says so in its health, then fails closed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/backend_fixture.h"
#include "support/fleet_backend.h"
#include "support/redis_server.h"

static rl_test_redis server;
static unsigned cases_run;

typedef struct fleet_fixture {
    fixture base; /* base.backend: the fleet */
    rl_redis_options options;
    char prefix[32];
} fleet_fixture;

static rl_redis_options options_for(fleet_fixture *f) {
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = f->prefix;
    options.clock = &f->base.clock.base;
    options.lease_memory_ms = 60000;
    options.sweep_interval_ms = 0;
    options.connect_timeout_ms = 100;
    options.command_timeout_ms = 200;
    return options;
}

static fleet_fixture *fleet_of(size_t daemons) {
    fleet_fixture *f = calloc(1, sizeof *f);
    rl_manual_clock_init(&f->base.clock, T0_MONOTONIC_MS, T0_UNIX_MS);
    snprintf(f->prefix, sizeof f->prefix, "a%u:", ++cases_run);
    f->options = options_for(f);
    char err[256];
    if (rl_test_fleet_create(&f->options, daemons, &f->base.backend, err, sizeof err) != RL_OK)
        fail_msg("fleet: %s", err);
    return f;
}

static void fleet_free(fleet_fixture *f) {
    rl_backend_destroy(f->base.backend);
    free(f);
}

static allotted_backend *daemon_of(fleet_fixture *f, size_t i) {
    return rl__allotted_of(rl_test_fleet_of(f->base.backend)->daemons[i]);
}

static uint64_t local_of(fleet_fixture *f, size_t i) { return atomic_load(&daemon_of(f, i)->leases_local); }
static uint64_t forwarded_of(fleet_fixture *f, size_t i) { return atomic_load(&daemon_of(f, i)->leases_forwarded); }

/* The lease number, among those from first, that the fleet sends to daemon i. */
static uint64_t lease_for(fleet_fixture *f, size_t i, uint64_t first) {
    rl_test_fleet *fleet = rl_test_fleet_of(f->base.backend);
    for (uint64_t n = first;; n++) {
        char id[27];
        if (rl_test_fleet_daemon_of(fleet, rl_test_lease_id(n, id)) == fleet->daemons[i]) return n;
    }
}

/* A lease's first reserve carves allotments of its keys (one step later);
 * what fits then is decided here, with no call to Redis. */
static void a_lease_that_fits_is_decided_locally(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "rpm", RL_KIND_ROLLING, 1000000, 60, RL_OVERAGE_DEBT);
    rl_reserve_result first = reserve1(&f->base, 1, "rpm", 1);
    assert_true(first.allowed);
    assert_int_equal(forwarded_of(f, 0), 1); /* no allotment yet: Redis decided */
    assert_int_equal(local_of(f, 0), 0);
    rl_manual_clock_advance(&f->base.clock, 5);
    rl_reserve_result second = reserve1(&f->base, 2, "rpm", 1);
    assert_true(second.allowed);
    assert_int_equal(second.reserved_at_unix_ms, T0_UNIX_MS + 5);
    assert_int_equal(local_of(f, 0), 1);
    assert_int_equal(forwarded_of(f, 0), 1);
    /* Redis: both reservations used, the rest of the allotment set aside */
    rl_limit_usage u = usage_of(&f->base, "rpm");
    assert_int_equal(u.used, 2);
    assert_true(u.allotted > 0);
    assert_int_equal(u.available, 1000000 - 2);
    assert_int_equal(u.active, 2);
    /* retries: each where its lease went, with its first outcome */
    rl_reserve_result again = reserve1(&f->base, 1, "rpm", 1);
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, T0_UNIX_MS);
    assert_int_equal(forwarded_of(f, 0), 2);
    again = reserve1(&f->base, 2, "rpm", 1);
    assert_int_equal(again.reserved_at_unix_ms, T0_UNIX_MS + 5);
    assert_int_equal(local_of(f, 0), 2); /* the replay, here */
    assert_int_equal(usage_of(&f->base, "rpm").used, 2);
    /* a Complete gives the room back at once, here and in Redis's figure */
    complete1(&f->base, 2, "rpm", 0);
    assert_int_equal(usage_of(&f->base, "rpm").used, 1);
    complete1(&f->base, 1, "rpm", 0);
    assert_int_equal(usage_of(&f->base, "rpm").used, 0);
    fleet_free(f);
}

/* Three daemons, leases spread over them, a rolling limit no window frees
 * during the case: the fleet admits exactly its capacity, never a unit
 * more, much of it from allotments, and nothing is left set aside once it
 * denies. */
static void a_fleet_never_admits_more_than_capacity(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(3);
    define(&f->base, "fleet:rpm", RL_KIND_ROLLING, 600, 3600, RL_OVERAGE_DEBT);
    uint64_t admitted = 0, denied = 0;
    for (uint64_t lease = 1; lease <= 1500; lease++) {
        if (lease % 7 == 0) rl_manual_clock_advance(&f->base.clock, 1);
        rl_reserve_result r = reserve1(&f->base, lease, "fleet:rpm", 1);
        assert_int_equal(r.status, RL_OK);
        if (r.allowed) admitted++;
        else denied++;
        assert_true(admitted <= 600);
        rl_limit_usage u = usage_of(&f->base, "fleet:rpm");
        assert_int_equal(u.used, admitted);
        assert_true(u.used + u.allotted <= 600);
    }
    assert_int_equal(admitted, 600);
    assert_int_equal(denied, 900);
    uint64_t local = local_of(f, 0) + local_of(f, 1) + local_of(f, 2);
    print_message("%llu of 600 admissions decided locally\n", (unsigned long long)local);
    assert_true(local > 300);
    rl_limit_usage u = usage_of(&f->base, "fleet:rpm");
    assert_int_equal(u.allotted, 0);
    assert_int_equal(u.used, 600);
    fleet_free(f);
}

/* A local Complete: the unused part back at once; its audit entry in
 * Redis's log; an overage charged in Redis by the limit's policy. */
static void completes_are_audited_and_overage_charged_in_redis(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "tpm", RL_KIND_ROLLING, 1000000, 60, RL_OVERAGE_DEBT);
    define(&f->base, "tpm:deny", RL_KIND_ROLLING, 1000000, 60, RL_OVERAGE_DENY);
    rl_requirement warm[] = {{"tpm", 100, false}, {"tpm:deny", 100, false}};
    assert_true(reserve_n(&f->base, 1, warm, 2).allowed); /* carves allotments of both, room for two such */
    rl_actual warm_actuals[] = {{"tpm", 10}, {"tpm:deny", 10}};
    complete_n(&f->base, 1, warm_actuals, 2);
    rl_requirement reqs[] = {{"tpm", 100, false}, {"tpm:deny", 100, false}};
    uint64_t local_before = local_of(f, 0);
    assert_true(reserve_n(&f->base, 2, reqs, 2).allowed);
    assert_int_equal(local_of(f, 0), local_before + 1);
    assert_int_equal(usage_of(&f->base, "tpm").used, 110);
    rl_manual_clock_advance(&f->base.clock, 1000);
    rl_actual actuals[] = {{"tpm", 40}, {"tpm:deny", 40}};
    complete_n(&f->base, 2, actuals, 2);
    assert_int_equal(usage_of(&f->base, "tpm").used, 50); /* 10 + 40 */
    rl_audit_entry entries[4];
    uint64_t next;
    rl_manual_clock_advance(&f->base.clock, 1);
    assert_int_equal(audit_page(&f->base, "tpm", 0, 4, entries, &next), 2);
    expect_entry(&entries[1], T0_UNIX_MS + 1000, 2, "", "tpm", 100, 40, 0, false);

    /* an actual above the reservation: Redis charges the excess */
    rl_requirement more[] = {{"tpm", 100, false}, {"tpm:deny", 100, false}};
    assert_true(reserve_n(&f->base, 3, more, 2).allowed);
    assert_int_equal(local_of(f, 0), local_before + 2);
    rl_actual over[] = {{"tpm", 150}, {"tpm:deny", 150}};
    complete_n(&f->base, 3, over, 2);
    rl_limit_usage u = usage_of(&f->base, "tpm");
    assert_int_equal(u.used, 50 + 150);
    assert_int_equal(u.debt_total, 0); /* far below capacity: no debt */
    rl_limit_usage d = usage_of(&f->base, "tpm:deny");
    assert_int_equal(d.used, 50 + 150);
    assert_int_equal(d.overage_denied_total, 0);
    /* leases 1 and 2 (reserved at T0) end first; the excess lives as long
     * as its reservation (lease 3's, made at T0 + 1001) */
    rl_manual_clock_advance(&f->base.clock, 58999);
    assert_int_equal(usage_of(&f->base, "tpm").used, 150);
    rl_manual_clock_advance(&f->base.clock, 1000);
    assert_int_equal(usage_of(&f->base, "tpm").used, 150);
    rl_manual_clock_advance(&f->base.clock, 1);
    assert_int_equal(usage_of(&f->base, "tpm").used, 0);
    fleet_free(f);
}

/* Overage near capacity: debt recorded by Redis against what reservations
 * really hold (allotments' unused room aside), deny charges only what fits. */
static void overage_near_capacity_follows_the_policy(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "o:debt", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DEBT);
    define(&f->base, "o:deny", RL_KIND_ROLLING, 100, 60, RL_OVERAGE_DENY);
    /* small leases, so that allotments are worth carving */
    uint64_t lease = 1;
    for (; lease <= 10; lease++) {
        rl_requirement reqs[] = {{"o:debt", 1, false}, {"o:deny", 1, false}};
        assert_true(reserve_n(&f->base, lease, reqs, 2).allowed);
    }
    assert_true(local_of(f, 0) > 0);
    uint64_t local = local_of(f, 0);
    rl_requirement reqs[] = {{"o:debt", 1, false}, {"o:deny", 1, false}};
    assert_true(reserve_n(&f->base, lease, reqs, 2).allowed);
    if (local_of(f, 0) == local) skip(); /* decided by Redis: complete.lua's overage, covered elsewhere */
    rl_actual over[] = {{"o:debt", 100}, {"o:deny", 100}};
    complete_n(&f->base, lease, over, 2);
    rl_limit_usage debt = usage_of(&f->base, "o:debt");
    assert_int_equal(debt.used, 110);
    assert_int_equal(debt.debt_total, 10);
    rl_limit_usage deny = usage_of(&f->base, "o:deny");
    assert_true(deny.used <= 100);
    assert_int_equal(deny.used + deny.overage_denied_total, 110);
    fleet_free(f);
}

/* Without demand for idle_ms an allotment goes back; what is live of it
 * stays used. */
static void an_idle_allotment_is_given_back(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "idle", RL_KIND_ROLLING, 100000, 60, RL_OVERAGE_DEBT);
    for (uint64_t lease = 1; lease <= 5; lease++) assert_true(reserve1(&f->base, lease, "idle", 1).allowed);
    rl_limit_usage u = usage_of(&f->base, "idle");
    assert_int_equal(u.used, 5);
    assert_true(u.allotted > 0);
    rl_manual_clock_advance(&f->base.clock, daemon_of(f, 0)->options.idle_ms);
    u = usage_of(&f->base, "idle");
    assert_int_equal(u.used, 5);
    assert_int_equal(u.allotted, 0);
    assert_int_equal(u.available, 100000 - 5);
    fleet_free(f);
}

/* A decrease reaches each daemon at its next look: allotments shrink to what
 * is live, the limit waits for usage as without allotments, and nothing is
 * admitted beyond the new capacity. */
static void a_decrease_reaches_every_daemon_at_its_next_look(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(2);
    define(&f->base, "dec", RL_KIND_ROLLING, 1000, 3600, RL_OVERAGE_DEBT);
    uint64_t lease = 1;
    for (; lease <= 40; lease++) assert_true(reserve1(&f->base, lease, "dec", 1).allowed);
    assert_true(local_of(f, 0) + local_of(f, 1) > 0);
    assert_true(usage_of(&f->base, "dec").allotted > 0);
    assert_int_equal(define(&f->base, "dec", RL_KIND_ROLLING, 30, 3600, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    rl_limit_usage u = usage_of(&f->base, "dec");
    assert_int_equal(u.allotted, 0);
    assert_int_equal(u.used, 40);
    assert_int_equal(u.status, RL_LIMIT_STATUS_DECREASING);
    for (int i = 0; i < 10; i++, lease++) {
        rl_reserve_result r = reserve1(&f->base, lease, "dec", 1);
        assert_false(r.allowed);
        assert_int_equal(r.status, RL_LIMIT_DECREASING);
    }
    fleet_free(f);
}

/* Destroyed (a daemon that stops), a daemon gives back what it holds: its
 * live reservations stay counted until their windows end, the rest is free
 * at once. */
static void a_stopping_daemon_gives_back_what_it_holds(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(2);
    define(&f->base, "stop", RL_KIND_ROLLING, 100000, 60, RL_OVERAGE_DEBT);
    uint64_t on_first = lease_for(f, 0, 1);
    uint64_t lease = 1;
    for (int i = 0; i < 6; i++) {
        lease = lease_for(f, 0, lease + 1);
        assert_true(reserve1(&f->base, lease, "stop", 1).allowed);
    }
    (void)on_first;
    assert_true(local_of(f, 0) > 0);
    rl_limit_usage u = usage_of(&f->base, "stop");
    assert_int_equal(u.used, 6);
    assert_true(u.allotted > 0);
    /* the first daemon stops */
    rl_test_fleet *fleet = rl_test_fleet_of(f->base.backend);
    rl_backend_destroy(fleet->daemons[0]);
    fleet->daemons[0] = fleet->daemons[1];
    fleet->count = 1;
    rl_test_fleet_touched(f->base.backend);
    u = usage_of(&f->base, "stop");
    assert_int_equal(u.used, 6);
    assert_int_equal(u.allotted, 0);
    assert_int_equal(u.available, 100000 - 6);
    rl_manual_clock_advance(&f->base.clock, 60000);
    assert_int_equal(usage_of(&f->base, "stop").used, 0);
    fleet_free(f);
}

/* A Complete that reaches another daemon than the one that decided the
 * lease (a load balancer without affinity) is relayed through Redis to
 * its daemon, which releases the hold and reconciles at its next step. */
static void a_complete_through_another_daemon_reaches_the_lease(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(2);
    define(&f->base, "x:conc", RL_KIND_CONCURRENCY, 100000, 300, RL_OVERAGE_DEBT);
    define(&f->base, "x:tpm", RL_KIND_ROLLING, 1000000, 60, RL_OVERAGE_DEBT);
    rl_requirement reqs[] = {{"x:conc", 1, false}, {"x:tpm", 100, false}};
    uint64_t lease = lease_for(f, 0, 1);
    assert_true(reserve_n(&f->base, lease, reqs, 2).allowed); /* carves */
    lease = lease_for(f, 0, lease + 1);
    uint64_t local = local_of(f, 0);
    assert_true(reserve_n(&f->base, lease, reqs, 2).allowed);
    assert_int_equal(local_of(f, 0), local + 1); /* decided by daemon 0 */
    rl_limit_usage u = usage_of(&f->base, "x:conc");
    assert_int_equal(u.used, 2);
    /* completed through daemon 1 */
    char id[27];
    rl_actual actuals[] = {{"x:tpm", 30}};
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, actuals, 1};
    assert_int_equal(rl_backend_complete(rl_test_fleet_of(f->base.backend)->daemons[1], &request), RL_OK);
    rl_test_fleet_touched(f->base.backend);
    u = usage_of(&f->base, "x:conc"); /* a step of every keeper, then Redis's figure */
    assert_int_equal(u.used, 1);
    assert_int_equal(usage_of(&f->base, "x:tpm").used, 100 + 30);
    rl_manual_clock_advance(&f->base.clock, 1);
    rl_audit_entry entries[4];
    uint64_t next;
    assert_int_equal(audit_page(&f->base, "x:tpm", 0, 4, entries, &next), 1);
    expect_entry(&entries[0], T0_UNIX_MS, lease, "", "x:tpm", 100, 30, 0, false);
    fleet_free(f);
}

/* A limit deleted and PUT again through one daemon before any keeper has
 * looked (the PUT hides the delete from a daemon that did not notice it):
 * the new limit starts empty and admits exactly its capacity. Every
 * daemon forgets the old limit's allotment at its next look, and the
 * Completes of the old limit's leases, with overage, on their own daemon
 * or relayed through another, charge and audit nothing on the new one. */
static void a_limit_deleted_and_put_again_starts_empty_on_every_daemon(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(3);
    rl_test_fleet *fleet = rl_test_fleet_of(f->base.backend);
    define(&f->base, "re:rpm", RL_KIND_ROLLING, 1000, 3600, RL_OVERAGE_DEBT);
    uint64_t lease = 1;
    for (; lease <= 150; lease++) assert_true(reserve1(&f->base, lease, "re:rpm", 1).allowed);
    for (size_t i = 0; i < 3; i++) assert_true(local_of(f, i) > 0); /* each holds an allotment */
    assert_int_equal(usage_of(&f->base, "re:rpm").used, 150);

    assert_int_equal(rl_backend_delete_definition(fleet->daemons[0], "re:rpm"), RL_OK);
    rl_limit_def smaller = {.kind = RL_KIND_ROLLING, .capacity = 500, .window_seconds = 3600,
                            .overage = RL_OVERAGE_DEBT};
    snprintf(smaller.key, sizeof smaller.key, "re:rpm");
    assert_int_equal(rl_backend_apply_definition(fleet->daemons[0], &smaller, NULL), RL_OK);
    /* the old leases completed at five times what they reserved, before any
     * keeper looks: every other one through the next daemon (relayed) */
    for (uint64_t old = 1; old < lease; old++) {
        char id[27];
        rl_actual actual = {"re:rpm", 5};
        rl_complete_request request = {rl_test_lease_id(old, id), NULL, &actual, 1};
        size_t home = 0;
        while (fleet->daemons[home] != rl_test_fleet_daemon_of(fleet, id)) home++;
        size_t through = old % 2 == 0 ? home : (home + 1) % 3;
        assert_int_equal(rl_backend_complete(fleet->daemons[through], &request), RL_OK);
    }
    rl_test_fleet_touched(f->base.backend);
    rl_limit_usage u = usage_of(&f->base, "re:rpm"); /* every keeper looks (and reads what was relayed) */
    assert_int_equal(u.capacity, 500);
    assert_int_equal(u.used, 0);
    assert_int_equal(u.debt_total, 0);
    assert_int_equal(u.active, 0);
    rl_manual_clock_advance(&f->base.clock, 1);
    rl_audit_entry entries[4];
    uint64_t next;
    assert_int_equal(audit_page(&f->base, "re:rpm", 0, 4, entries, &next), 0);

    uint64_t admitted = 0;
    for (int i = 0; i < 750; i++, lease++) {
        if (i % 7 == 0) rl_manual_clock_advance(&f->base.clock, 1);
        rl_reserve_result r = reserve1(&f->base, lease, "re:rpm", 1);
        if (r.allowed) admitted++;
        assert_true(admitted <= 500);
        /* every keeper looks at each reading: one in 25 (ASan makes each dear) */
        if (i % 25 == 24) assert_int_equal(usage_of(&f->base, "re:rpm").used, admitted);
    }
    assert_int_equal(admitted, 500);
    u = usage_of(&f->base, "re:rpm");
    assert_int_equal(u.allotted, 0);
    assert_int_equal(u.debt_total, 0);
    fleet_free(f);
}

/* A limit deleted (every daemon noticing) and PUT again later: the new
 * limit's allotments are sized by its own demand, not by what the old
 * limit's mirror had counted (a daemon that took its whole share for it
 * would hold room another needs). */
static void a_limit_defined_again_is_allotted_by_its_own_demand(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "again:rpm", RL_KIND_ROLLING, 100000, 60, RL_OVERAGE_DEBT);
    uint64_t lease = 1;
    for (; lease <= 20; lease++) assert_true(reserve1(&f->base, lease, "again:rpm", 1).allowed);
    uint64_t allotted_before = usage_of(&f->base, "again:rpm").allotted;
    assert_true(allotted_before > 0 && allotted_before < 1000);
    assert_int_equal(rl_backend_delete_definition(f->base.backend, "again:rpm"), RL_OK);
    rl_manual_clock_advance(&f->base.clock, 100);
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = 100000, .window_seconds = 60};
    snprintf(def.key, sizeof def.key, "again:rpm");
    assert_int_equal(rl_backend_apply_definition(rl_test_fleet_of(f->base.backend)->daemons[0], &def, NULL), RL_OK);
    rl_test_fleet_step_looking(f->base.backend, true); /* the keeper mirrors it anew */
    rl_manual_clock_advance(&f->base.clock, 50); /* a running keeper's next tick reads the new mirror */
    for (int i = 0; i < 3; i++, lease++) assert_true(reserve1(&f->base, lease, "again:rpm", 1).allowed);
    rl_limit_usage u = usage_of(&f->base, "again:rpm");
    assert_int_equal(u.used, 3);
    assert_true(u.allotted < 1000); /* not half of the 100,000 */
    fleet_free(f);
}

/* Budgets have no allotments: a lease naming one goes to Redis, which
 * counts and audits it as ever. */
static void a_budget_lease_goes_to_redis(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "b:rpm", RL_KIND_ROLLING, 100000, 60, RL_OVERAGE_DEBT);
    rl_limit_def budget;
    memset(&budget, 0, sizeof budget);
    snprintf(budget.key, sizeof budget.key, "b:spend");
    budget.kind = RL_KIND_BUDGET;
    budget.capacity = 1000;
    budget.timeout_seconds = 600;
    budget.period = RL_PERIOD_MONTH;
    snprintf(budget.timezone, sizeof budget.timezone, "UTC");
    assert_int_equal(rl_backend_apply_definition(f->base.backend, &budget, NULL), RL_OK);
    for (uint64_t lease = 1; lease <= 5; lease++) assert_true(reserve1(&f->base, lease, "b:rpm", 1).allowed);
    uint64_t forwarded = forwarded_of(f, 0);
    rl_requirement reqs[] = {{"b:rpm", 1, false}, {"b:spend", 300, false}};
    assert_true(reserve_n(&f->base, 10, reqs, 2).allowed);
    assert_int_equal(forwarded_of(f, 0), forwarded + 1);
    rl_actual actuals[] = {{"b:spend", 120}};
    complete_n(&f->base, 10, actuals, 1);
    rl_limit_usage u = usage_of(&f->base, "b:spend");
    assert_int_equal(u.committed, 120);
    assert_int_equal(u.allotted, 0);
    fleet_free(f);
}

/* Redis stops: the daemon decides from its allotments until they end (its
 * health says so), then every lease fails closed. */
static void without_redis_a_daemon_decides_from_what_it_holds_then_fails_closed(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "r:rpm", RL_KIND_ROLLING, 100000, 60, RL_OVERAGE_DEBT);
    for (uint64_t lease = 1; lease <= 5; lease++) assert_true(reserve1(&f->base, lease, "r:rpm", 1).allowed);
    rl_backend *daemon = rl_test_fleet_of(f->base.backend)->daemons[0];
    char detail[512];
    assert_int_equal(rl_backend_health(daemon, detail, sizeof detail), RL_OK);
    assert_true(rl_test_redis_stop(&server));
    uint64_t local = local_of(f, 0);
    rl_reserve_result r = reserve1(&f->base, 6, "r:rpm", 1);
    assert_true(r.allowed);
    assert_int_equal(local_of(f, 0), local + 1);
    assert_int_equal(rl_backend_health(daemon, detail, sizeof detail), RL_OK);
    assert_non_null(strstr(detail, "deciding from allotments"));
    /* past the allotment's end nothing is decided here any more */
    rl_manual_clock_advance(&f->base.clock, daemon_of(f, 0)->options.duration_ms);
    rl_reserve_result late = reserve1(&f->base, 7, "r:rpm", 1);
    assert_false(late.allowed);
    assert_int_equal(late.status, RL_BACKEND_ERROR);
    assert_int_equal(rl_backend_health(daemon, detail, sizeof detail), RL_BACKEND_ERROR);
    assert_true(rl_test_redis_restart(&server));
    /* back: decided again (by Redis, then from new allotments) */
    rl_test_fleet_step(f->base.backend);
    assert_true(reserve1(&f->base, 8, "r:rpm", 1).allowed);
    fleet_free(f);
}

/* A key made from a template gets no allotment: its leases are decided
 * by Redis, which makes its limit; an optional requirement on it is never
 * skipped here, while one on a key Redis does not define (and no template
 * matches) is, once the keeper has looked, so that such leases are decided
 * locally on their other keys. */
static void a_made_limit_is_decided_by_redis_and_an_undefined_optional_key_skipped_here(void **state) {
    (void)state;
    fleet_fixture *f = fleet_of(1);
    define(&f->base, "o:rpm", RL_KIND_ROLLING, 1000000, 60, RL_OVERAGE_DEBT);
    rl_limit_def daily = {.kind = RL_KIND_ROLLING, .capacity = 2, .window_seconds = 600};
    snprintf(daily.key, sizeof daily.key, "tenant:{t}:rpd");
    assert_int_equal(rl_backend_put_template(f->base.backend, &daily), RL_OK);

    rl_requirement undefined[] = {{"o:rpm", 1, false}, {"o:rpd", 1, true}};
    assert_true(reserve_n(&f->base, 1, undefined, 2).allowed); /* Redis: no allotment yet, o:rpd unknown */
    uint64_t forwarded = forwarded_of(f, 0);
    assert_true(reserve_n(&f->base, 2, undefined, 2).allowed);
    assert_int_equal(forwarded_of(f, 0), forwarded); /* here: o:rpd skipped, o:rpm from its allotment */

    rl_requirement made[] = {{"o:rpm", 1, false}, {"tenant:a:rpd", 1, true}};
    for (uint64_t lease = 3; lease <= 4; lease++) assert_true(reserve_n(&f->base, lease, made, 2).allowed);
    assert_int_equal(forwarded_of(f, 0), forwarded + 2); /* never skipped, never allotted: Redis */
    rl_reserve_result denied = reserve_n(&f->base, 5, made, 2);
    assert_false(denied.allowed);
    assert_string_equal(denied.denied_by.key, "tenant:a:rpd");
    assert_int_equal(usage_of(&f->base, "tenant:a:rpd").used, 2);
    assert_int_equal(usage_of(&f->base, "tenant:a:rpd").allotted, 0);
    fleet_free(f);
}

static int start(void **state) {
    (void)state;
    return rl_test_redis_start(&server) == RL_TEST_REDIS_STARTED ? 0 : -1;
}

static int stop(void **state) {
    (void)state;
    rl_test_redis_cleanup(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_lease_that_fits_is_decided_locally),
        cmocka_unit_test(a_fleet_never_admits_more_than_capacity),
        cmocka_unit_test(completes_are_audited_and_overage_charged_in_redis),
        cmocka_unit_test(overage_near_capacity_follows_the_policy),
        cmocka_unit_test(an_idle_allotment_is_given_back),
        cmocka_unit_test(a_decrease_reaches_every_daemon_at_its_next_look),
        cmocka_unit_test(a_stopping_daemon_gives_back_what_it_holds),
        cmocka_unit_test(a_complete_through_another_daemon_reaches_the_lease),
        cmocka_unit_test(a_limit_deleted_and_put_again_starts_empty_on_every_daemon),
        cmocka_unit_test(a_limit_defined_again_is_allotted_by_its_own_demand),
        cmocka_unit_test(a_budget_lease_goes_to_redis),
        cmocka_unit_test(without_redis_a_daemon_decides_from_what_it_holds_then_fails_closed),
        cmocka_unit_test(a_made_limit_is_decided_by_redis_and_an_undefined_optional_key_skipped_here),
    };
    char executable[512];
    if (!rl_test_redis_find_executable(executable, sizeof executable)) {
        fprintf(stderr, "no redis-server on PATH (make deps-test installs it): skipped\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, start, stop);
}
