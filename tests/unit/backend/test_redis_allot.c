/* test_redis_allot.c — allotments of capacity in Redis (redis_allot.h,
 * allot.lua, settle.lua, and what usage.lua, define.lua, reserve.lua and
 * common.lua make of them) against a real redis-server, on a manual clock:
 *
 *  - a carve takes min(want, what it holds + its share) but never less
 *    than its floor: Redis counts it in full, and the synchronous path
 *    finds only the rest;
 *  - least: a growth that leaves less than least of room above the floor
 *    is not made, a shrink and the floor are never refused;
 *  - usage (LimitInfo) as the limit's reservations really hold: of each
 *    allotment, what its daemon last said it holds live is used (in the
 *    entries it said), the rest allotted; a return's live entries are used;
 *  - the share: what nobody holds of the capacity in force divided by twice
 *    the daemons admitting from an allotment of the key (1, 2, 3 daemons):
 *    one whose end passed, or that drains, no longer divides it, one whose
 *    allotment is no longer counted is no longer a holder; the answer's
 *    share is the one after the call; a pending decrease shares the
 *    capacity it goes to;
 *  - a rolling allotment is counted until its end plus the window, a
 *    concurrency one until its end plus the hold timeout, then freed;
 *  - a refill moves the end and resizes, never below the floor; a drain (no
 *    time) shrinks to the floor and keeps its X, unless that X has passed;
 *  - a return keeps what is live as entries of their own (never counted
 *    past the allotment's), frees the rest at once, and its daemon is no
 *    longer a holder;
 *  - generations: a retry changes nothing, a late call is refused (a late
 *    return never undoes a newer carve), a carve while held is exactly one
 *    more; the answer carries the record's generation;
 *  - a decrease applies once what reservations really hold fits; a kind
 *    change goes through while allotments hold only unused room (not to a
 *    budget); a denial's available is LimitInfo's;
 *  - versions: the definition comes with the answer when the daemon does not
 *    know its version, the largest the API allows whole; budgets and unknown
 *    keys are answered as such;
 *  - incarnations: a limit deleted and defined again is another; a carve or
 *    a return from a mirror of the old one changes nothing (its floor and
 *    what it says is live are not counted in the new limit) and brings the
 *    new definition; a settle of the old one is dropped;
 *  - settle: an audit entry per spend, overage charged by the limit's policy
 *    against what reservations really hold, for what the reservation had
 *    left to live and in no entry of its own; unknown keys skipped;
 *  - the answer's reader takes only what allot.lua writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "backend/redis/redis_allot.h"
#include "core/limit_def.h"
#include "ratelimiter/redis.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

static rl_test_redis server;

#define T0_UNIX_MS UINT64_C(1793491200000)
#define T0_MS UINT64_C(1000000) /* the manual clock's first "now" for expiry, as the scripts get it */

static rl_backend *open_at(const char *prefix, rl_manual_clock *clock) {
    rl_manual_clock_init(clock, T0_MS, T0_UNIX_MS);
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = prefix;
    options.clock = &clock->base;
    options.sweep_interval_ms = 0;
    /* Nothing here is about Redis being slow: a busy machine gets time */
    options.connect_timeout_ms = 2000;
    options.command_timeout_ms = 5000;
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

static rl_status define_as(rl_backend *backend, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds,
                           rl_overage overage, rl_limit_status *status) {
    rl_limit_def def = {.kind = kind, .capacity = capacity, .overage = overage};
    snprintf(def.key, sizeof def.key, "%s", key);
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    if (kind == RL_KIND_BUDGET) {
        def.period = RL_PERIOD_MONTH;
        snprintf(def.timezone, sizeof def.timezone, "UTC");
    }
    return rl_backend_apply_definition(backend, &def, status);
}

static rl_limit_status define(rl_backend *backend, const char *key, rl_kind kind, uint64_t capacity,
                              uint32_t seconds, rl_overage overage) {
    rl_limit_status status = RL_LIMIT_STATUS_ACTIVE;
    assert_int_equal(define_as(backend, key, kind, capacity, seconds, overage, &status), RL_OK);
    return status;
}

static void put(rl_backend *backend, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds) {
    (void)define(backend, key, kind, capacity, seconds, RL_OVERAGE_DEBT);
}

static rl_reserve_result reserve(rl_backend *backend, uint64_t lease, const char *key, uint64_t amount) {
    char id[27];
    rl_requirement req = {key, amount, false};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &req, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(backend, &request, &result);
    return result;
}

static rl_limit_usage usage_of(rl_backend *backend, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(backend, key, &u), RL_OK);
    return u;
}

/* LimitInfo's used, allotted and active; available is what capacity leaves
 * of used (allotted is part of it). */
static rl_limit_usage assert_usage(rl_backend *backend, const char *key, uint64_t used, uint64_t allotted,
                                   uint64_t active) {
    rl_limit_usage u = usage_of(backend, key);
    assert_int_equal(u.used, used);
    assert_int_equal(u.allotted, allotted);
    assert_int_equal(u.active, active);
    assert_int_equal(u.available, u.used < u.capacity ? u.capacity - u.used : 0);
    return u;
}

/* What Redis counts of key (after a purge): what its reservations really
 * hold plus what allotments hold unused, i.e. every allotment in full. */
static uint64_t counted_of(rl_backend *backend, const char *key) {
    rl_limit_usage u = usage_of(backend, key);
    return u.used + u.allotted;
}

/* A command's answer as a number (an integer, or a decimal string: HGET),
 * straight from Redis. */
static long long redis_integer(const char *format, ...) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    va_list args;
    va_start(args, format);
    redisReply *reply = redisvCommand(ctx, format, args);
    va_end(args);
    assert_non_null(reply);
    long long value = 0;
    if (reply->type == REDIS_REPLY_STRING) {
        char *end = NULL;
        value = strtoll(reply->str, &end, 10);
        assert_true(end == reply->str + reply->len && reply->len > 0);
    } else {
        assert_int_equal(reply->type, REDIS_REPLY_INTEGER);
        value = reply->integer;
    }
    freeReplyObject(reply);
    redisFree(ctx);
    return value;
}

static rl__allot_result allot(rl_backend *backend, const char *daemon, const rl__allot_op *op) {
    rl__allot_result result;
    memset(&result, 0xA5, sizeof result);
    assert_int_equal(rl__redis_allot(backend, daemon, op, 1, &result), RL_OK);
    return result;
}

static rl__allot_result carve_knowing(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                                      uint64_t known_version, uint64_t want, uint64_t floor, uint64_t duration_ms) {
    rl__allot_op op = {.key = key, .generation = generation, .known_version = known_version, .want = want,
                       .floor = floor, .duration_ms = duration_ms};
    return allot(backend, daemon, &op);
}

/* A carve from a daemon that holds nothing live from it (or says so). */
static rl__allot_result carve(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                              uint64_t want, uint64_t floor, uint64_t duration_ms) {
    return carve_knowing(backend, daemon, key, generation, 0, want, floor, duration_ms);
}

/* A carve that says what the daemon holds live from it now, in how many
 * entries. */
static rl__allot_result carve_live(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                                   uint64_t want, uint64_t floor, uint64_t duration_ms, uint64_t live,
                                   uint64_t entries) {
    rl__allot_op op = {.key = key, .generation = generation, .want = want, .floor = floor,
                       .duration_ms = duration_ms, .live_now = live, .live_entries = entries};
    return allot(backend, daemon, &op);
}

static rl__allot_result give_back(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                                  const rl__allot_live *live, size_t live_count) {
    rl__allot_op op = {.key = key, .give_back = true, .generation = generation, .live = live,
                       .live_count = live_count};
    return allot(backend, daemon, &op);
}

/* An answer's numbers, all at once (the definition aside). */
static void assert_answer(const rl__allot_result *r, rl__allot_status status, uint64_t amount, uint64_t ends_in_ms,
                          uint64_t counted_for_ms, uint64_t share, uint64_t capacity, uint64_t generation) {
    assert_int_equal(r->status, status);
    assert_int_equal(r->amount, amount);
    assert_int_equal(r->ends_in_ms, ends_in_ms);
    assert_int_equal(r->counted_for_ms, counted_for_ms);
    assert_int_equal(r->share, share);
    assert_int_equal(r->capacity, capacity);
    assert_int_equal(r->generation, generation);
}

static void assert_denied_by(const rl_reserve_result *r, rl_denial_reason reason, uint64_t requested,
                             uint64_t available, uint64_t capacity) {
    assert_false(r->allowed);
    assert_non_null(r->denied_by.key);
    assert_int_equal(r->denied_by.reason, reason);
    assert_int_equal(r->denied_by.requested, requested);
    assert_int_equal(r->denied_by.available, available);
    assert_int_equal(r->denied_by.capacity, capacity);
}

/* A carve takes min(want, held + share), never less than its floor; Redis
 * counts it in full as one entry, and the synchronous path finds only the
 * rest. LimitInfo shows what the daemon said it holds live as used, the
 * rest as allotted. */
static void a_carve_takes_its_share_and_the_synchronous_path_the_rest(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("t1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_true(reserve(redis, 1, "tpm", 200).allowed);
    /* 800 free, one daemon: its share is 400 */
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 1000, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 200, 1000, 1);
    assert_usage(redis, "tpm", 200, 400, 1); /* nothing live from it: all of it allotted */
    assert_int_equal(redis_integer("HGET t1:l:tpm used"), 600);
    assert_int_equal(redis_integer("HGET t1:l:tpm act"), 2);
    /* a refill: what it holds plus its share of the 400 left, capped by
     * want; 150 of it live, in 3 entries */
    a = carve_live(redis, "D1", "tpm", 2, 500, 150, 10000, 150, 3);
    assert_answer(&a, RL__ALLOT_OK, 500, 10000, 70000, 150, 1000, 2);
    assert_usage(redis, "tpm", 350, 350, 4);
    assert_int_equal(redis_integer("HGET t1:l:tpm used"), 700);
    assert_int_equal(redis_integer("HGET t1:l:tpm act"), 2); /* still one entry */
    /* the synchronous path finds the 300 nobody holds, not a unit more */
    assert_false(reserve(redis, 2, "tpm", 301).allowed);
    assert_true(reserve(redis, 3, "tpm", 300).allowed);
    assert_int_equal(counted_of(redis, "tpm"), 1000);
    assert_usage(redis, "tpm", 650, 350, 5);
    /* nothing free: a carve keeps what it holds and takes nothing from others */
    a = carve_live(redis, "D1", "tpm", 3, 1000, 150, 10000, 150, 3);
    assert_answer(&a, RL__ALLOT_OK, 500, 10000, 70000, 0, 1000, 3);
    assert_int_equal(counted_of(redis, "tpm"), 1000);
    /* asked for less: it shrinks, the rest is free at once */
    a = carve_live(redis, "D1", "tpm", 4, 200, 150, 10000, 150, 3);
    assert_answer(&a, RL__ALLOT_OK, 200, 10000, 70000, 150, 1000, 4);
    assert_int_equal(counted_of(redis, "tpm"), 700);
    assert_usage(redis, "tpm", 650, 50, 5);
    /* never below the floor: 400 may be live from it */
    a = carve_live(redis, "D1", "tpm", 5, 50, 400, 10000, 150, 3);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 50, 1000, 5);
    assert_int_equal(counted_of(redis, "tpm"), 900);
    /* the floor wins even over the share and the capacity: Redis counts at
     * least what the daemon says it may hold live */
    a = carve_live(redis, "D1", "tpm", 6, 0, 700, 10000, 150, 3);
    assert_answer(&a, RL__ALLOT_OK, 700, 10000, 70000, 0, 1000, 6);
    assert_int_equal(redis_integer("HGET t1:l:tpm used"), 1200);
    assert_usage(redis, "tpm", 650, 550, 5);
    /* a decision counts the allotment in full: nothing fits, though
     * LimitInfo's available (the denial's too) counts its unused room */
    rl_reserve_result r = reserve(redis, 4, "tpm", 1);
    assert_denied_by(&r, RL_DENIAL_CAPACITY, 1, 350, 1000);
    assert_int_equal(r.retry_after_ms, 60000); /* the reservations' bucket frees 500 */
    rl_backend_destroy(redis);
}

/* least: a growth that would leave less than least of room above the floor
 * is not made (the amount stays; the call refills it as any other); a
 * shrink is made whatever least says, and so is the floor. */
static void a_growth_below_least_is_not_made_but_a_shrink_is(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("l1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_true(reserve(redis, 1, "tpm", 800).allowed);
    /* its share is 100, less than the 150 it needs: nothing is carved */
    rl__allot_op op = {.key = "tpm", .generation = 1, .want = 300, .duration_ms = 10000, .least = 150};
    rl__allot_result a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 0, 10000, 0, 100, 1000, 1);
    assert_int_equal(counted_of(redis, "tpm"), 800);
    assert_int_equal(redis_integer("HEXISTS l1:H:tpm D1"), 0);
    /* 100 is enough room */
    op = (rl__allot_op){.key = "tpm", .generation = 2, .want = 300, .duration_ms = 10000, .least = 100};
    a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 50, 1000, 2);
    assert_int_equal(counted_of(redis, "tpm"), 900);
    /* 40 live: 150 could be had, 110 above the floor, not the 120 it
     * needs; it stays at 100 (its end moves, as any refill's) */
    rl_manual_clock_advance(&clock, 5000);
    op = (rl__allot_op){.key = "tpm", .generation = 3, .want = 300, .floor = 40, .duration_ms = 10000,
                        .least = 120, .live_now = 40, .live_entries = 1};
    a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 50, 1000, 3);
    assert_int_equal(counted_of(redis, "tpm"), 900);
    assert_usage(redis, "tpm", 840, 60, 2);
    /* 110 above the floor is exactly enough */
    op.generation = 4;
    op.least = 110;
    a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 150, 10000, 70000, 25, 1000, 4);
    assert_int_equal(counted_of(redis, "tpm"), 950);
    /* a shrink leaves less room than least: made all the same */
    op = (rl__allot_op){.key = "tpm", .generation = 5, .want = 60, .floor = 40, .duration_ms = 10000,
                        .least = 1000, .live_now = 40, .live_entries = 1};
    a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 60, 10000, 70000, 70, 1000, 5);
    assert_int_equal(counted_of(redis, "tpm"), 860);
    /* and the floor is never refused, even a floor above what it holds */
    op = (rl__allot_op){.key = "tpm", .generation = 6, .want = 0, .floor = 80, .duration_ms = 10000,
                        .least = 1000, .live_now = 80, .live_entries = 2};
    a = allot(redis, "D1", &op);
    assert_answer(&a, RL__ALLOT_OK, 80, 10000, 70000, 60, 1000, 6);
    assert_usage(redis, "tpm", 880, 0, 3);
    rl_backend_destroy(redis);
}

/* LimitInfo with two daemons: what each said it holds live (never more
 * than its allotment) is used, in the entries it said; the rest allotted,
 * and available counts it. A return's live entries are reservations. */
static void usage_counts_what_daemons_hold_live_and_allots_the_rest(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("u1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_true(reserve(redis, 1, "tpm", 100).allowed);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 300, 1000, 1);
    a = carve(redis, "D2", "tpm", 1, 100, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 125, 1000, 1); /* 600 / 4 = 150; then 500 / 4 */
    rl_limit_usage u = assert_usage(redis, "tpm", 100, 400, 1);
    assert_int_equal(u.capacity, 1000);
    assert_int_equal(u.available, 900);
    assert_int_equal(u.debt, 0);
    /* D1 holds 120 live in 4 entries, D2 30 in 2 */
    a = carve_live(redis, "D1", "tpm", 2, 300, 120, 10000, 120, 4);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 125, 1000, 2);
    a = carve_live(redis, "D2", "tpm", 2, 100, 30, 10000, 30, 2);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 125, 1000, 2);
    u = assert_usage(redis, "tpm", 250, 250, 7);
    assert_int_equal(u.available, 750);
    assert_int_equal(counted_of(redis, "tpm"), 500);
    assert_int_equal(redis_integer("HGET u1:l:tpm act"), 3);
    /* D1 returns: its 120 live are one entry of their own now */
    rl_manual_clock_advance(&clock, 5000);
    rl__allot_live live[] = {{30000, 120}};
    a = give_back(redis, "D1", "tpm", 3, live, 1);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 65000, 170, 1000, 3); /* 680 / 4 */
    assert_usage(redis, "tpm", 250, 70, 4);
    /* what a daemon says it holds live is never counted past its allotment */
    a = carve_live(redis, "D2", "tpm", 3, 100, 100, 10000, 500, 9);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 340, 1000, 3); /* alone: 680 / 2 */
    assert_usage(redis, "tpm", 320, 0, 11);
    /* once Redis no longer counts them, nothing */
    rl_manual_clock_advance(&clock, 70000);
    u = assert_usage(redis, "tpm", 0, 0, 0);
    assert_int_equal(u.available, 1000);
    rl_backend_destroy(redis);
}

/* floor(pool / (2 × daemons admitting)): with one, two and three daemons;
 * one whose end passed only drains, and no longer divides it; one whose
 * allotment is no longer counted is no longer a holder. */
static void the_share_divides_what_is_left_among_the_daemons_holding(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("s1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1200, 60);
    /* alone: half of 1200; after it, half of the 600 left */
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 600, 60000, 120000, 300, 1200, 1);
    /* a second daemon: a quarter of the 600 left */
    a = carve(redis, "D2", "tpm", 1, 1000, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 150, 10000, 70000, 112, 1200, 1); /* 450 / 4 */
    /* a third: a sixth of the 450 left */
    a = carve(redis, "D3", "tpm", 1, 1000, 0, 75000);
    assert_answer(&a, RL__ALLOT_OK, 75, 75000, 135000, 62, 1200, 1); /* 375 / 6 */
    /* the first refills: a sixth of the 375 left, on top of what it holds */
    a = carve(redis, "D1", "tpm", 2, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 662, 60000, 120000, 52, 1200, 2); /* 313 / 6 */
    assert_int_equal(counted_of(redis, "tpm"), 887);
    assert_int_equal(redis_integer("HLEN s1:H:tpm"), 3);

    /* D2's allotment is no longer counted (its end plus the window): two
     * daemons hold */
    rl_manual_clock_advance(&clock, 70000);
    assert_int_equal(counted_of(redis, "tpm"), 737);
    a = carve(redis, "D1", "tpm", 3, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 777, 60000, 120000, 87, 1200, 3); /* +463 / 4; then 348 / 4 */
    assert_int_equal(redis_integer("HEXISTS s1:H:tpm D2"), 0);
    assert_int_equal(redis_integer("HLEN s1:H:tpm"), 2);

    /* D3's end passes: it only drains, still counted and still a holder,
     * but D1 is alone to divide what is left */
    rl_manual_clock_advance(&clock, 5000);
    a = carve(redis, "D1", "tpm", 4, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 951, 60000, 120000, 87, 1200, 4); /* +348 / 2; then 174 / 2 */
    assert_int_equal(counted_of(redis, "tpm"), 1026);
    assert_int_equal(redis_integer("HLEN s1:H:tpm"), 2);

    /* D3's allotment is no longer counted either */
    rl_manual_clock_advance(&clock, 60000);
    assert_int_equal(counted_of(redis, "tpm"), 951);
    a = carve(redis, "D1", "tpm", 5, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 1000, 60000, 120000, 100, 1200, 5); /* min(1000, 951 + 249 / 2); 200 / 2 */
    assert_int_equal(redis_integer("HLEN s1:H:tpm"), 1);
    assert_int_equal(counted_of(redis, "tpm"), 1000);
    rl_backend_destroy(redis);
}

/* A drain (a carve for no time) admits nothing more: its daemon no longer
 * divides the others' share, and it keeps its X (what it holds lives no
 * later), unless that X has passed: then it is counted a window from now. */
static void a_drain_keeps_its_end_and_no_longer_divides_the_share(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("x1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1200, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 600, 60000, 120000, 300, 1200, 1);
    a = carve(redis, "D2", "tpm", 1, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 150, 60000, 120000, 112, 1200, 1);
    rl_manual_clock_advance(&clock, 30000);
    /* both admit: D2's refill is a quarter of the 450 left */
    a = carve(redis, "D2", "tpm", 2, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 262, 60000, 120000, 84, 1200, 2); /* +450 / 4; then 338 / 4 */
    /* D1 drains to the 200 it holds live */
    a = carve_live(redis, "D1", "tpm", 2, 0, 200, 0, 200, 2);
    assert_answer(&a, RL__ALLOT_OK, 200, 0, 90000, 184, 1200, 2); /* D2 admits: 738 / 4 */
    /* D2 is alone to divide: half of the 738 left */
    a = carve(redis, "D2", "tpm", 3, 1000, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 631, 60000, 120000, 184, 1200, 3); /* +738 / 2; then 369 / 2 */
    assert_int_equal(redis_integer("HLEN x1:H:tpm"), 2); /* D1 still holds */
    assert_usage(redis, "tpm", 200, 631, 2);
    /* past its first end, D1 drains again: still until the X it has (50 s
     * from now), not a window from now */
    rl_manual_clock_advance(&clock, 40000);
    a = carve_live(redis, "D1", "tpm", 3, 0, 150, 0, 150, 1);
    assert_answer(&a, RL__ALLOT_OK, 150, 0, 50000, 104, 1200, 3); /* D2 admits: 419 / 4 */
    assert_int_equal(counted_of(redis, "tpm"), 781);
    rl_manual_clock_advance(&clock, 49999);
    assert_int_equal(counted_of(redis, "tpm"), 781);
    rl_manual_clock_advance(&clock, 1);
    assert_int_equal(counted_of(redis, "tpm"), 631);
    /* its X passed: a drain of what it says it may hold is counted a
     * window from now (D2's end passed too: D1 divides alone) */
    a = carve_live(redis, "D1", "tpm", 4, 0, 10, 0, 10, 1);
    assert_answer(&a, RL__ALLOT_OK, 10, 0, 60000, 279, 1200, 4); /* 559 / 2 */
    assert_int_equal(counted_of(redis, "tpm"), 641);
    rl_backend_destroy(redis);
}

/* Rolling: counted until its end plus the window (reservations made from it
 * until its end live that long), then freed, and no longer a holder. */
static void a_rolling_allotment_is_counted_until_its_end_plus_the_window(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("r1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    /* its record and its place among the holders outlive what Redis counts
     * (by a second of Redis's own time) */
    long long ttl = redis_integer("PTTL r1:A:D1:tpm");
    assert_true(ttl > 70000 && ttl <= 71000);
    ttl = redis_integer("PTTL r1:H:tpm");
    assert_true(ttl > 70000 && ttl <= 71000);
    a = carve(redis, "D2", "tpm", 1, 100, 0, 90000);
    assert_answer(&a, RL__ALLOT_OK, 100, 90000, 150000, 150, 1000, 1); /* others: D1; 600 / 4 */
    ttl = redis_integer("PTTL r1:H:tpm");
    assert_true(ttl > 150000 && ttl <= 151000);
    assert_int_equal(counted_of(redis, "tpm"), 400);
    assert_usage(redis, "tpm", 0, 400, 0);
    /* past its end, still counted */
    rl_manual_clock_advance(&clock, 10000);
    a = carve(redis, "D1", "tpm", 1, 300, 0, 10000); /* a retry: the record as it is now */
    assert_answer(&a, RL__ALLOT_OK, 300, 0, 60000, 150, 1000, 1);
    rl_manual_clock_advance(&clock, 59999);
    assert_int_equal(counted_of(redis, "tpm"), 400);
    /* until its end plus the window */
    rl_manual_clock_advance(&clock, 1);
    assert_int_equal(counted_of(redis, "tpm"), 100);
    assert_int_equal(redis_integer("HGET r1:l:tpm act"), 1);
    a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 0, 225, 1000, 1); /* nothing held; D2 admits: 900 / 4 */
    /* D2 alone now: half of what is left, not a quarter */
    a = carve(redis, "D2", "tpm", 2, 100, 0, 90000);
    assert_answer(&a, RL__ALLOT_OK, 100, 90000, 150000, 450, 1000, 2);
    assert_int_equal(redis_integer("HEXISTS r1:H:tpm D1"), 0);
    assert_int_equal(redis_integer("HEXISTS r1:H:tpm D2"), 1);
    rl_backend_destroy(redis);
}

/* Concurrency: slots until its end plus the hold timeout. */
static void a_concurrency_allotment_is_counted_until_its_end_plus_the_timeout(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("c1:", &clock);
    put(redis, "conc", RL_KIND_CONCURRENCY, 10, 30);
    rl__allot_result a = carve(redis, "D1", "conc", 1, 8, 0, 5000);
    assert_answer(&a, RL__ALLOT_OK, 5, 5000, 35000, 2, 10, 1);
    assert_false(reserve(redis, 1, "conc", 6).allowed);
    assert_true(reserve(redis, 2, "conc", 5).allowed); /* its hold times out in 30 s */
    assert_int_equal(counted_of(redis, "conc"), 10);
    /* 3 of its slots held locally, 3 holds */
    a = carve_live(redis, "D1", "conc", 2, 5, 3, 5000, 3, 3);
    assert_answer(&a, RL__ALLOT_OK, 5, 5000, 35000, 0, 10, 2);
    assert_usage(redis, "conc", 8, 2, 4);
    rl_manual_clock_advance(&clock, 34999);
    assert_int_equal(counted_of(redis, "conc"), 5);
    rl_manual_clock_advance(&clock, 1);
    assert_int_equal(counted_of(redis, "conc"), 0);
    assert_usage(redis, "conc", 0, 0, 0);
    /* D1 no longer holds: D2 gets half of 10, not a quarter */
    a = carve(redis, "D2", "conc", 1, 10, 0, 5000);
    assert_answer(&a, RL__ALLOT_OK, 5, 5000, 35000, 2, 10, 1);
    assert_int_equal(redis_integer("HEXISTS c1:H:conc D1"), 0);
    rl_backend_destroy(redis);
}

/* A refill moves the end and resizes, never below the floor; a drain (a
 * carve of nothing for no time) shrinks to the floor, counted as long as
 * before. */
static void a_refill_resizes_but_never_below_the_floor(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("f1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 400, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 300, 1000, 1);
    rl_manual_clock_advance(&clock, 5000);
    a = carve_live(redis, "D1", "tpm", 2, 600, 100, 10000, 100, 1); /* 400 + 300 could be had */
    assert_answer(&a, RL__ALLOT_OK, 600, 10000, 70000, 200, 1000, 2);
    assert_usage(redis, "tpm", 100, 500, 1);
    assert_int_equal(redis_integer("HGET f1:l:tpm act"), 1); /* moved to its new bucket, not added */
    a = carve_live(redis, "D1", "tpm", 3, 50, 200, 10000, 100, 1);
    assert_answer(&a, RL__ALLOT_OK, 200, 10000, 70000, 400, 1000, 3);
    assert_int_equal(counted_of(redis, "tpm"), 200);
    /* nothing wanted, for no time, 150 live: it shrinks to 150 and stops
     * admitting now, but is still counted until its end plus the window */
    rl_manual_clock_advance(&clock, 1000);
    a = carve_live(redis, "D1", "tpm", 4, 0, 150, 0, 150, 2);
    assert_answer(&a, RL__ALLOT_OK, 150, 0, 69000, 425, 1000, 4);
    assert_usage(redis, "tpm", 150, 0, 2);
    assert_int_equal(redis_integer("HGET f1:l:tpm act"), 1);
    rl_manual_clock_advance(&clock, 68999);
    assert_int_equal(counted_of(redis, "tpm"), 150);
    rl_manual_clock_advance(&clock, 1);
    assert_int_equal(counted_of(redis, "tpm"), 0);
    /* nothing live either: it goes to nothing, and D1 no longer holds */
    a = carve(redis, "D1", "tpm", 5, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 5);
    a = carve(redis, "D1", "tpm", 6, 0, 0, 0);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 70000, 500, 1000, 6); /* the record keeps the X it had */
    assert_int_equal(counted_of(redis, "tpm"), 0);
    assert_int_equal(redis_integer("HEXISTS f1:H:tpm D1"), 0);
    a = carve(redis, "D2", "tpm", 1, 1000, 0, 10000);
    assert_int_equal(a.amount, 500); /* half of 1000: D2 is alone */
    rl_backend_destroy(redis);
}

/* A return keeps what is live as entries of their own (never counted past
 * the allotment's end plus the window) and frees the rest at once. */
static void a_return_keeps_what_is_live_and_frees_the_rest(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("g1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 1000, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 500, 10000, 70000, 250, 1000, 1);
    a = carve(redis, "D2", "tpm", 1, 100, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 100, 60000, 120000, 100, 1000, 1); /* 500 / 4 = 125; then 400 / 4 */
    rl_manual_clock_advance(&clock, 5000);
    /* 100 for 20 s, 50 for 50 s, 30 for 90 s (counted 65 s only: the
     * allotment's X); one already over and one of nothing are no entries */
    rl__allot_live live[] = {{20000, 100}, {50000, 50}, {90000, 30}, {0, 40}, {10000, 0}};
    a = give_back(redis, "D1", "tpm", 2, live, 5);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 65000, 180, 1000, 2); /* D2 admits: 720 / 4 */
    assert_usage(redis, "tpm", 180, 100, 3); /* D2's allotment, unused, is not a reservation */
    assert_int_equal(redis_integer("HGET g1:l:tpm act"), 4);
    assert_int_equal(counted_of(redis, "tpm"), 280);
    assert_int_equal(redis_integer("HEXISTS g1:H:tpm D1"), 0);
    long long ttl = redis_integer("PTTL g1:A:D1:tpm"); /* kept a minute, for a retry */
    assert_true(ttl > 59000 && ttl <= 60000);
    /* a retry of the return changes nothing */
    a = give_back(redis, "D1", "tpm", 2, live, 5);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 65000, 180, 1000, 2);
    assert_int_equal(counted_of(redis, "tpm"), 280);
    /* D2 is alone: half of the 720 nobody holds */
    a = carve(redis, "D2", "tpm", 2, 100, 0, 60000);
    assert_answer(&a, RL__ALLOT_OK, 100, 60000, 120000, 360, 1000, 2);
    assert_false(reserve(redis, 1, "tpm", 721).allowed);
    assert_true(reserve(redis, 2, "tpm", 720).allowed);
    /* the live entries leave as they expire; the reservation at +60 s */
    rl_manual_clock_advance(&clock, 20000);
    assert_int_equal(counted_of(redis, "tpm"), 100 + 80 + 720);
    rl_manual_clock_advance(&clock, 30000);
    assert_int_equal(counted_of(redis, "tpm"), 100 + 30 + 720);
    rl_manual_clock_advance(&clock, 14999);
    assert_int_equal(counted_of(redis, "tpm"), 100 + 30);
    rl_manual_clock_advance(&clock, 1);
    assert_int_equal(counted_of(redis, "tpm"), 100); /* at the allotment's X, not 90 s after the return */
    rl_backend_destroy(redis);
}

/* Generations: equal is a retry, older is refused, a carve while held is
 * exactly one more, anything later once nothing is held. */
static void generations_retries_and_late_calls(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("n1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    /* a retry, whatever it asks or says it holds: the record's state,
     * nothing changes */
    a = carve_live(redis, "D1", "tpm", 1, 900, 0, 50000, 300, 3);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    assert_usage(redis, "tpm", 0, 300, 0);
    /* a carve while held skips a generation: refused */
    a = carve_live(redis, "D1", "tpm", 3, 400, 0, 10000, 300, 3);
    assert_answer(&a, RL__ALLOT_GENERATION, 300, 10000, 70000, 350, 1000, 1);
    assert_usage(redis, "tpm", 0, 300, 0);
    a = carve(redis, "D1", "tpm", 2, 400, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 300, 1000, 2);
    /* an older carve: refused, the record's generation answered */
    a = carve(redis, "D1", "tpm", 1, 900, 0, 10000);
    assert_answer(&a, RL__ALLOT_GENERATION, 400, 10000, 70000, 300, 1000, 2);
    assert_int_equal(counted_of(redis, "tpm"), 400);
    /* a return needs only to be later */
    a = give_back(redis, "D1", "tpm", 4, NULL, 0);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 70000, 500, 1000, 4);
    assert_int_equal(counted_of(redis, "tpm"), 0);
    /* a carve that arrives after it: refused */
    a = carve(redis, "D1", "tpm", 3, 900, 0, 10000);
    assert_answer(&a, RL__ALLOT_GENERATION, 0, 0, 70000, 500, 1000, 4);
    assert_int_equal(counted_of(redis, "tpm"), 0);
    /* nothing held: any later generation applies */
    a = carve(redis, "D1", "tpm", 9, 200, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 200, 10000, 70000, 400, 1000, 9);
    assert_int_equal(counted_of(redis, "tpm"), 200);
    /* a late return must not undo the newer carve */
    a = give_back(redis, "D1", "tpm", 5, NULL, 0);
    assert_answer(&a, RL__ALLOT_GENERATION, 200, 10000, 70000, 400, 1000, 9);
    assert_int_equal(counted_of(redis, "tpm"), 200);
    assert_int_equal(redis_integer("HEXISTS n1:H:tpm D1"), 1);
    /* nor does a late retry of a return the record no longer holds */
    a = give_back(redis, "D1", "tpm", 4, NULL, 0);
    assert_int_equal(a.status, RL__ALLOT_GENERATION);
    assert_int_equal(counted_of(redis, "tpm"), 200);
    /* once the allotment ended, nothing is held: any later generation */
    rl_manual_clock_advance(&clock, 70000);
    assert_int_equal(counted_of(redis, "tpm"), 0);
    a = carve(redis, "D1", "tpm", 9, 200, 0, 10000); /* a retry still */
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 0, 500, 1000, 9);
    a = carve(redis, "D1", "tpm", 15, 100, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 450, 1000, 15);
    /* a return retried does not keep its live entries twice */
    rl__allot_live live[] = {{30000, 40}};
    a = give_back(redis, "D1", "tpm", 17, live, 1);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 70000, 480, 1000, 17);
    a = give_back(redis, "D1", "tpm", 17, live, 1);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 70000, 480, 1000, 17);
    assert_usage(redis, "tpm", 40, 0, 1);
    /* each daemon has its own record: D2 starts from any generation */
    a = carve(redis, "D2", "tpm", 1, 100, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 430, 1000, 1); /* D1 returned: 960 / 2; then 860 / 2 */
    rl_backend_destroy(redis);
}

/* Versions: a daemon that knows none, or an older one, gets the definition;
 * one that knows the version does not. Budgets answer kind (with their
 * definition), unknown keys unknown; a batch answers each in its place. */
static void definitions_come_with_a_new_version(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("v1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve_knowing(redis, "D1", "tpm", 1, 0, 100, 0, 10000);
    assert_int_equal(a.status, RL__ALLOT_OK);
    assert_int_equal(a.amount, 100);
    uint64_t v1 = a.version;
    assert_true(v1 > 0);
    assert_true(a.has_definition);
    assert_string_equal(a.definition.key, "tpm");
    assert_int_equal(a.definition.kind, RL_KIND_ROLLING);
    assert_int_equal(a.definition.capacity, 1000);
    assert_int_equal(a.definition.window_seconds, 60);
    /* it knows it now */
    a = carve_knowing(redis, "D1", "tpm", 2, v1, 100, 0, 10000);
    assert_int_equal(a.version, v1);
    assert_false(a.has_definition);
    /* another key's change is not this one's */
    put(redis, "rpm", RL_KIND_ROLLING, 50, 60);
    a = carve_knowing(redis, "D1", "tpm", 3, v1, 100, 0, 10000);
    assert_int_equal(a.version, v1);
    assert_false(a.has_definition);
    /* a PUT: a new version, and the definition comes again */
    put(redis, "tpm", RL_KIND_ROLLING, 2000, 60);
    a = carve_knowing(redis, "D1", "tpm", 4, v1, 100, 0, 10000);
    assert_int_equal(a.status, RL__ALLOT_OK);
    assert_true(a.version > v1);
    assert_true(a.has_definition);
    assert_string_equal(a.definition.key, "tpm");
    assert_int_equal(a.definition.capacity, 2000);
    assert_int_equal(a.capacity, 2000);
    uint64_t v2 = a.version;
    a = carve_knowing(redis, "D1", "tpm", 5, v2, 100, 0, 10000);
    assert_false(a.has_definition);
    /* a retry answers the definition too when the version is not known */
    a = carve_knowing(redis, "D1", "tpm", 5, v1, 100, 0, 10000);
    assert_int_equal(a.generation, 5);
    assert_true(a.has_definition);
    /* a key defined before changes were numbered has version 0: a daemon
     * that knows none (0) gets the definition all the same */
    assert_int_equal(redis_integer("ZREM v1:defs:changed tpm"), 1);
    a = carve_knowing(redis, "D1", "tpm", 5, 0, 100, 0, 10000);
    assert_int_equal(a.version, 0);
    assert_true(a.has_definition);
    assert_int_equal(a.definition.capacity, 2000);
    a = carve_knowing(redis, "D1", "tpm", 5, v2, 100, 0, 10000);
    assert_int_equal(a.version, 0);
    assert_true(a.has_definition);
    put(redis, "tpm", RL_KIND_ROLLING, 2000, 60); /* numbered again */
    a = carve_knowing(redis, "D1", "tpm", 5, v2, 100, 0, 10000);
    assert_true(a.version > v2);
    v2 = a.version;

    /* a budget: no allotments, but its definition */
    put(redis, "usd", RL_KIND_BUDGET, 500, 60);
    a = carve_knowing(redis, "D1", "usd", 1, 0, 10, 0, 10000);
    assert_answer(&a, RL__ALLOT_KIND, 0, 0, 0, 0, 500, 0);
    assert_true(a.version > v2);
    assert_true(a.has_definition);
    assert_string_equal(a.definition.key, "usd");
    assert_int_equal(a.definition.kind, RL_KIND_BUDGET);
    assert_int_equal(a.definition.period, RL_PERIOD_MONTH);
    assert_usage(redis, "usd", 0, 0, 0);
    a = carve_knowing(redis, "D1", "usd", 1, a.version, 10, 0, 10000);
    assert_int_equal(a.status, RL__ALLOT_KIND);
    assert_false(a.has_definition);
    /* an unknown key */
    a = carve_knowing(redis, "D1", "nope", 1, 0, 10, 0, 10000);
    assert_answer(&a, RL__ALLOT_UNKNOWN, 0, 0, 0, 0, 0, 0);
    assert_int_equal(a.version, 0);
    assert_false(a.has_definition);
    a = give_back(redis, "D1", "nope", 2, NULL, 0);
    assert_int_equal(a.status, RL__ALLOT_UNKNOWN);
    assert_int_equal(redis_integer("EXISTS v1:A:D1:nope v1:H:nope"), 0);

    /* several keys in one call, each answered in its place */
    rl__allot_op ops[] = {
        {.key = "tpm", .generation = 6, .known_version = v2, .want = 100, .duration_ms = 10000},
        {.key = "usd", .generation = 2, .want = 10, .duration_ms = 10000},
        {.key = "nope", .generation = 1, .want = 10, .duration_ms = 10000},
        {.key = "rpm", .generation = 1, .want = 40, .duration_ms = 10000},
    };
    rl__allot_result results[4];
    assert_int_equal(rl__redis_allot(redis, "D1", ops, 4, results), RL_OK);
    assert_answer(&results[0], RL__ALLOT_OK, 100, 10000, 70000, 950, 2000, 6);
    assert_false(results[0].has_definition);
    assert_int_equal(results[1].status, RL__ALLOT_KIND);
    assert_true(results[1].has_definition);
    assert_string_equal(results[1].definition.key, "usd");
    assert_int_equal(results[2].status, RL__ALLOT_UNKNOWN);
    assert_false(results[2].has_definition);
    assert_answer(&results[3], RL__ALLOT_OK, 25, 10000, 70000, 12, 50, 1);
    assert_true(results[3].has_definition);
    assert_string_equal(results[3].definition.key, "rpm");
    rl_backend_destroy(redis);
}

/* A carve from a daemon whose mirror is of incarnation (mirrored), asking
 * want, with floor what that mirror may hold live. */
static rl__allot_result carve_mirrored(rl_backend *backend, const char *daemon, const char *key, uint64_t generation,
                                       uint64_t incarnation, uint64_t want, uint64_t floor, uint64_t duration_ms) {
    rl__allot_op op = {.key = key, .generation = generation, .mirrored = true, .incarnation = incarnation,
                       .want = want, .floor = floor, .duration_ms = duration_ms, .live_now = floor, .live_entries = 1};
    return allot(backend, daemon, &op);
}

/* Incarnations: a limit deleted and defined again is another limit. An
 * operation from a mirror of the old one (a daemon that has not noticed the
 * delete) changes nothing: neither its floor nor what a return says is
 * live is counted in the new limit, which starts empty; the answer brings
 * the new definition and incarnation, from which the daemon carves anew.
 * A settle of the old limit's leases is dropped, one of the new limit's
 * charged. */
static void a_limit_deleted_and_defined_again_is_another_incarnation(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("i1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 2000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 600, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 600, 10000, 70000, 700, 2000, 1);
    assert_int_equal(a.incarnation, 0); /* never deleted */
    a = carve_mirrored(redis, "D1", "tpm", 2, 0, 600, 450, 10000);
    assert_answer(&a, RL__ALLOT_OK, 600, 10000, 70000, 700, 2000, 2);
    assert_usage(redis, "tpm", 450, 150, 1);

    assert_int_equal(rl_backend_delete_definition(redis, "tpm"), RL_OK);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_usage(redis, "tpm", 0, 0, 0);
    /* the old mirror holds 450 live: a carve of it is refused, its floor
     * not counted, and the answer brings the new limit */
    a = carve_mirrored(redis, "D1", "tpm", 3, 0, 600, 450, 10000);
    assert_answer(&a, RL__ALLOT_INCARNATION, 0, 0, 0, 500, 1000, 0);
    uint64_t incarnation = a.incarnation;
    assert_true(incarnation > 0);
    assert_true(a.has_definition);
    assert_int_equal(a.definition.capacity, 1000);
    assert_usage(redis, "tpm", 0, 0, 0);
    assert_int_equal(redis_integer("EXISTS i1:A:D1:tpm i1:H:tpm"), 0);
    /* so is a return with what it holds live */
    rl__allot_live live[] = {{30000, 450}};
    rl__allot_op back = {.key = "tpm", .give_back = true, .generation = 4, .mirrored = true, .incarnation = 0,
                         .live = live, .live_count = 1};
    a = allot(redis, "D1", &back);
    assert_int_equal(a.status, RL__ALLOT_INCARNATION);
    assert_int_equal(a.incarnation, incarnation);
    assert_usage(redis, "tpm", 0, 0, 0);
    /* the daemon mirrors the new limit: its carves go through */
    a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    assert_int_equal(a.incarnation, incarnation);
    a = carve_mirrored(redis, "D1", "tpm", 2, incarnation, 300, 100, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 2);
    assert_usage(redis, "tpm", 100, 200, 1);
    /* a daemon that holds no mirror is told the incarnation whatever it is */
    a = carve(redis, "D2", "tpm", 1, 100, 0, 10000);
    assert_int_equal(a.status, RL__ALLOT_OK);
    assert_int_equal(a.incarnation, incarnation);

    /* the old limit's lease settled with overage: dropped; the new one's charged */
    char ids[2][27];
    rl__allot_spend spends[] = {
        {"tpm", rl_test_lease_id(1, ids[0]), "old", 100, 400, 300, 30000, 0},
        {"tpm", rl_test_lease_id(2, ids[1]), "new", 10, 40, 30, 30000, incarnation},
    };
    assert_int_equal(rl__redis_settle(redis, spends, 2), RL_OK);
    rl_limit_usage u = assert_usage(redis, "tpm", 130, 300, 1); /* D2 holds 100 unused */
    assert_int_equal(u.debt_total, 0);
    rl_manual_clock_advance(&clock, 1);
    rl_audit_query query = {"tpm", 0, 4};
    rl_audit_entry entries[4];
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(redis, &query, &page), RL_OK);
    assert_int_equal(page.count, 1);
    assert_string_equal(entries[0].job_id, "new");
    rl_backend_destroy(redis);
}

/* The largest definition the API allows, every byte of it escaped where
 * JSON escapes: it fits the answer and comes back whole. */
static void the_largest_definition_comes_back_whole(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("w1:", &clock);
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = RL_AMOUNT_MAX, .window_seconds = RL_WINDOW_SECONDS_MAX,
                        .overage = RL_OVERAGE_DENY};
    memset(def.key, '"', RL_KEY_MAX_LEN);
    memset(def.unit, '\\', RL_UNIT_MAX_LEN);
    memset(def.description, '"', RL_DESCRIPTION_MAX_LEN);
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rl_backend_apply_definition(redis, &def, NULL), RL_OK);
    rl__allot_result a = carve(redis, "D1", def.key, 1, 10, 0, 1000);
    assert_int_equal(a.status, RL__ALLOT_OK);
    assert_int_equal(a.amount, 10);
    assert_true(a.has_definition);
    assert_true(rl__limit_def_equal(&a.definition, &def));
    rl_backend_destroy(redis);
}

/* A decrease in progress: the share is of the capacity it goes to, so
 * nothing is shared while usage is above it; it applies once what the
 * reservations really hold fits, in the call that makes it fit. */
static void a_pending_decrease_shares_the_capacity_it_goes_to(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("d1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    assert_true(reserve(redis, 1, "tpm", 400).allowed);
    a = carve_live(redis, "D1", "tpm", 2, 300, 250, 10000, 250, 5);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 150, 1000, 2);
    /* 650 held, going to 500: pending */
    assert_int_equal(define(redis, "tpm", RL_KIND_ROLLING, 500, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    /* Redis counts 700: nothing to share (150 more by the enforced 1000) */
    a = carve_live(redis, "D1", "tpm", 3, 600, 250, 10000, 250, 5);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 0, 1000, 3);
    a = carve(redis, "D2", "tpm", 1, 100, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 0, 10000, 0, 0, 1000, 1);
    assert_int_equal(counted_of(redis, "tpm"), 700);
    rl_limit_usage u = assert_usage(redis, "tpm", 650, 50, 6);
    assert_int_equal(u.status, RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(u.pending_decrease_to, 500);
    /* shrinking to 100, with 100 live, lets the decrease apply, in the same call */
    a = carve_live(redis, "D1", "tpm", 4, 100, 100, 10000, 100, 2);
    assert_answer(&a, RL__ALLOT_OK, 100, 10000, 70000, 0, 500, 4);
    u = assert_usage(redis, "tpm", 500, 0, 3);
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 500);
    /* the reservation's window over: 400 free of 500 */
    rl_manual_clock_advance(&clock, 60000);
    a = carve(redis, "D1", "tpm", 5, 500, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 100, 500, 5);
    rl_backend_destroy(redis);
}

/* A decrease applies once usage fits with allotments counted in full (what
 * a daemon said it holds live may have grown since): the daemon's drain,
 * when it sees the decrease, is the call that makes it fit. Meanwhile a
 * denial says what is free as LimitInfo does. */
static void a_decrease_applies_once_a_drain_makes_it_fit(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("e1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 400, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 300, 1000, 1);
    assert_true(reserve(redis, 1, "tpm", 300).allowed);
    a = carve_live(redis, "D1", "tpm", 2, 400, 250, 10000, 250, 5);
    assert_answer(&a, RL__ALLOT_OK, 400, 10000, 70000, 150, 1000, 2);
    /* 550 held, but Redis counts the allotment in full (700): what the daemon
     * said it holds live may have grown since; 600 waits */
    assert_int_equal(define(redis, "tpm", RL_KIND_ROLLING, 600, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    rl_limit_usage u = assert_usage(redis, "tpm", 550, 150, 6);
    assert_int_equal(u.capacity, 1000);
    assert_int_equal(u.pending_decrease_to, 600);
    rl_reserve_result r = reserve(redis, 2, "tpm", 1);
    assert_denied_by(&r, RL_DENIAL_DECREASING, 1, 50, 600);
    /* the daemon sees it and gives back what it does not hold live (a drain):
     * 550 counted, the decrease applies in that call */
    a = carve_live(redis, "D1", "tpm", 3, 0, 250, 0, 250, 5);
    assert_answer(&a, RL__ALLOT_OK, 250, 0, 70000, 25, 600, 3);
    u = assert_usage(redis, "tpm", 550, 0, 6);
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 600);
    assert_int_equal(u.available, 50);
    /* 500 does not fit the 550 held: pending until the daemon holds 50 less */
    assert_int_equal(define(redis, "tpm", RL_KIND_ROLLING, 500, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    a = carve_live(redis, "D1", "tpm", 4, 0, 200, 0, 200, 4);
    assert_answer(&a, RL__ALLOT_OK, 200, 0, 70000, 0, 500, 4);
    u = assert_usage(redis, "tpm", 500, 0, 5);
    assert_int_equal(u.status, RL_LIMIT_STATUS_ACTIVE);
    assert_int_equal(u.capacity, 500);
    assert_int_equal(u.available, 0);
    assert_int_equal(counted_of(redis, "tpm"), 500);
    rl_backend_destroy(redis);
}

/* A change of kind needs a limit that holds nothing: allotments' unused
 * room is not held (their daemons' mirrors change kind once what they hold
 * is gone), what a daemon says it holds live is. Redis still counts the
 * allotment until it ends. Not to a budget: a budget's use is not counted
 * in buckets, and would lose the allotment's. */
static void a_kind_changes_while_allotments_hold_only_unused_room(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("k1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    rl_limit_status status = RL_LIMIT_STATUS_DECREASING;
    assert_int_equal(define_as(redis, "tpm", RL_KIND_CONCURRENCY, 1000, 30, RL_OVERAGE_DEBT, &status), RL_OK);
    assert_int_equal(status, RL_LIMIT_STATUS_ACTIVE);
    assert_usage(redis, "tpm", 0, 300, 0);
    /* the allotment is still counted in full */
    assert_false(reserve(redis, 1, "tpm", 701).allowed);
    assert_true(reserve(redis, 2, "tpm", 700).allowed);
    assert_usage(redis, "tpm", 700, 300, 1);

    /* live from it: in use, nothing written */
    put(redis, "rpm", RL_KIND_ROLLING, 1000, 60);
    a = carve(redis, "D1", "rpm", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    a = carve_live(redis, "D1", "rpm", 2, 300, 10, 10000, 10, 1);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 2);
    assert_int_equal(define_as(redis, "rpm", RL_KIND_CONCURRENCY, 1000, 30, RL_OVERAGE_DEBT, &status),
                     RL_LIMIT_IN_USE);
    rl_limit_usage u = assert_usage(redis, "rpm", 10, 290, 1);
    assert_int_equal(u.capacity, 1000);
    /* nothing live any more: it goes through */
    a = carve_live(redis, "D1", "rpm", 3, 300, 0, 10000, 0, 0);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 3);
    assert_int_equal(define_as(redis, "rpm", RL_KIND_CONCURRENCY, 1000, 30, RL_OVERAGE_DEBT, &status), RL_OK);

    /* to a budget: not while an allotment is counted, even unused */
    put(redis, "usd", RL_KIND_ROLLING, 1000, 60);
    a = carve(redis, "D1", "usd", 1, 300, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 300, 10000, 70000, 350, 1000, 1);
    assert_int_equal(define_as(redis, "usd", RL_KIND_BUDGET, 1000, 60, RL_OVERAGE_DEBT, &status), RL_LIMIT_IN_USE);
    assert_usage(redis, "usd", 0, 300, 0);
    a = give_back(redis, "D1", "usd", 2, NULL, 0);
    assert_answer(&a, RL__ALLOT_OK, 0, 0, 70000, 500, 1000, 2);
    assert_int_equal(define_as(redis, "usd", RL_KIND_BUDGET, 1000, 60, RL_OVERAGE_DEBT, &status), RL_OK);
    u = assert_usage(redis, "usd", 0, 0, 0);
    assert_int_equal(u.committed, 0);
    rl_backend_destroy(redis);
}

/* A denial's available is LimitInfo's: capacity minus what reservations
 * really hold (allotments' unused room is free, set aside), at least 0;
 * for every reason, though the decision counts allotments in full. */
static void a_denial_says_what_is_available_beside_allotments(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("b1:", &clock);
    put(redis, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl__allot_result a = carve(redis, "D1", "tpm", 1, 1000, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 500, 10000, 70000, 250, 1000, 1);
    a = carve(redis, "D2", "tpm", 1, 1000, 0, 10000);
    assert_answer(&a, RL__ALLOT_OK, 125, 10000, 70000, 93, 1000, 1); /* 500 / 4; then 375 / 4 */
    a = carve_live(redis, "D1", "tpm", 2, 500, 200, 10000, 200, 2);
    assert_answer(&a, RL__ALLOT_OK, 500, 10000, 70000, 93, 1000, 2);
    assert_true(reserve(redis, 1, "tpm", 300).allowed);
    /* Redis counts 925: 100 more do not fit, and 500 are available */
    rl_reserve_result r = reserve(redis, 2, "tpm", 100);
    assert_denied_by(&r, RL_DENIAL_CAPACITY, 100, 500, 1000);
    assert_string_equal(r.denied_by.key, "tpm");
    assert_int_equal(r.retry_after_ms, 60000);
    rl_limit_usage u = assert_usage(redis, "tpm", 500, 425, 3);
    assert_int_equal(u.available, 500);
    r = reserve(redis, 3, "tpm", 1001);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    assert_denied_by(&r, RL_DENIAL_EXCEEDS_CAPACITY, 1001, 500, 1000);
    /* decreasing to 400, below the 500 held: none available of it */
    assert_int_equal(define(redis, "tpm", RL_KIND_ROLLING, 400, 60, RL_OVERAGE_DEBT), RL_LIMIT_STATUS_DECREASING);
    r = reserve(redis, 4, "tpm", 10);
    assert_int_equal(r.status, RL_LIMIT_DECREASING);
    assert_denied_by(&r, RL_DENIAL_DECREASING, 10, 0, 400);
    rl_backend_destroy(redis);
}

static size_t audit_of(rl_backend *backend, const char *key, rl_audit_entry *entries, uint32_t limit) {
    rl_audit_query query = {key, 0, limit};
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(backend, &query, &page), RL_OK);
    return page.count;
}

static void assert_entry(const rl_audit_entry *e, uint64_t lease, const char *job_id, uint64_t reserved,
                         uint64_t actual) {
    char id[27];
    assert_string_equal(e->lease_id, rl_test_lease_id(lease, id));
    assert_string_equal(e->job_id, job_id);
    assert_int_equal(e->reserved, reserved);
    assert_int_equal(e->actual, actual);
    assert_int_equal(e->period_start_unix_ms, 0);
    assert_false(e->expired);
    assert_int_equal(e->at_unix_ms, T0_UNIX_MS);
}

/* What local Completes leave to the store: an audit entry per spend, and
 * overage charged by the limit's policy (debt: all of it, the part above
 * capacity counted as debt; deny: what fits, the rest counted as denied),
 * against what the limit's reservations really hold (allotments' unused
 * room aside), for what the reservation had left to live: in a bucket of
 * its own but no entry of its own (the daemon counts the reservation). */
static void settle_audits_every_spend_and_charges_overage_by_policy(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *redis = open_at("a1:", &clock);
    (void)define(redis, "tpm", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DEBT);
    (void)define(redis, "rpm", RL_KIND_ROLLING, 1000, 60, RL_OVERAGE_DENY);
    rl__allot_op ops[] = {{.key = "tpm", .generation = 1, .want = 1000, .duration_ms = 10000},
                          {.key = "rpm", .generation = 1, .want = 1000, .duration_ms = 10000}};
    rl__allot_result results[2];
    assert_int_equal(rl__redis_allot(redis, "D1", ops, 2, results), RL_OK);
    assert_int_equal(results[0].amount, 500);
    assert_int_equal(results[1].amount, 500);
    assert_true(reserve(redis, 10, "tpm", 450).allowed);
    assert_true(reserve(redis, 11, "rpm", 450).allowed);
    /* 450 of each allotment live, in 3 entries: 50 unused; Redis counts
     * 950 of each, the reservations really hold 900 */
    for (size_t i = 0; i < 2; i++) {
        ops[i].generation = 2;
        ops[i].want = 500;
        ops[i].floor = 450;
        ops[i].live_now = 450;
        ops[i].live_entries = 3;
    }
    assert_int_equal(rl__redis_allot(redis, "D1", ops, 2, results), RL_OK);
    assert_answer(&results[0], RL__ALLOT_OK, 500, 10000, 70000, 25, 1000, 2);
    assert_answer(&results[1], RL__ALLOT_OK, 500, 10000, 70000, 25, 1000, 2);
    char ids[6][27];
    rl__allot_spend spends[] = {
        {"tpm", rl_test_lease_id(1, ids[0]), "job-1", 100, 250, 150, 30000, 0}, /* 50 above capacity: debt */
        {"rpm", rl_test_lease_id(2, ids[1]), "", 100, 250, 150, 30000, 0},      /* 100 fit, 50 denied */
        {"nope", rl_test_lease_id(3, ids[2]), "job-3", 100, 250, 150, 30000, 0}, /* no such limit: skipped */
        {"tpm", rl_test_lease_id(4, ids[3]), "job-4", 20, 20, 0, 0, 0},         /* no overage */
        {"tpm", rl_test_lease_id(5, ids[4]), "", 10, 60, 50, 0, 0},              /* its window is over */
        {"rpm", rl_test_lease_id(6, ids[5]), "job-6", 10, 40, 30, 30000, 0},    /* full: all 30 denied */
    };
    assert_int_equal(rl__redis_settle(redis, spends, 6), RL_OK);
    rl_limit_usage u = assert_usage(redis, "tpm", 1050, 50, 4);
    assert_int_equal(u.debt, 50);
    assert_int_equal(u.debt_total, 50);
    assert_int_equal(u.overage_denied_total, 0);
    assert_int_equal(counted_of(redis, "tpm"), 1100);
    assert_int_equal(redis_integer("HGET a1:l:tpm act"), 2); /* the allotment and the reservation */
    assert_int_equal(redis_integer("HGET a1:a:tpm %llu", (unsigned long long)(T0_MS + 30000)), 150);
    assert_int_equal(redis_integer("HEXISTS a1:a:tpm #%llu", (unsigned long long)(T0_MS + 30000)), 0);
    u = assert_usage(redis, "rpm", 1000, 50, 4);
    assert_int_equal(u.debt, 0);
    assert_int_equal(u.debt_total, 0);
    assert_int_equal(u.overage_denied_total, 80);
    assert_int_equal(counted_of(redis, "rpm"), 1050);
    assert_int_equal(redis_integer("HGET a1:l:rpm act"), 2);
    assert_int_equal(rl_backend_limit_usage(redis, "nope", &u), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl__redis_settle(redis, NULL, 0), RL_OK);

    /* the log lists a millisecond once it is over */
    rl_manual_clock_advance(&clock, 1);
    rl_audit_entry entries[8];
    assert_int_equal(audit_of(redis, "tpm", entries, 8), 3);
    assert_entry(&entries[0], 1, "job-1", 100, 250);
    assert_string_equal(entries[0].key, "tpm");
    assert_entry(&entries[1], 4, "job-4", 20, 20);
    assert_entry(&entries[2], 5, "", 10, 60);
    assert_int_equal(audit_of(redis, "rpm", entries, 8), 2);
    assert_entry(&entries[0], 2, "", 100, 250);
    assert_entry(&entries[1], 6, "job-6", 10, 40);
    assert_int_equal(audit_of(redis, "nope", entries, 8), 0);
    assert_int_equal(redis_integer("EXISTS a1:audit:nope"), 0);

    /* the overage lives what the reservation had left, then leaves */
    rl_manual_clock_advance(&clock, 29998);
    assert_int_equal(counted_of(redis, "tpm"), 1100);
    assert_int_equal(counted_of(redis, "rpm"), 1050);
    rl_manual_clock_advance(&clock, 1);
    u = assert_usage(redis, "tpm", 900, 50, 4);
    assert_int_equal(u.debt, 0);
    assert_int_equal(u.debt_total, 50); /* a total: it stays */
    assert_int_equal(redis_integer("HGET a1:l:tpm act"), 2);
    assert_usage(redis, "rpm", 900, 50, 4);
    rl_backend_destroy(redis);
}

/* One operation's answer, its 10 values as RESP bulk strings (NULL: an
 * integer instead), read by the reader the daemon uses. */
static bool read_answer(const char *const values[10], size_t count, rl__allot_result *out) {
    size_t size = 16;
    for (size_t i = 0; i < 10; i++) size += (values[i] != NULL ? strlen(values[i]) : 0) + 32;
    char *resp = malloc(size);
    assert_non_null(resp);
    size_t at = (size_t)sprintf(resp, "*10\r\n");
    for (size_t i = 0; i < 10; i++)
        at += values[i] != NULL ? (size_t)sprintf(resp + at, "$%zu\r\n%s\r\n", strlen(values[i]), values[i])
                                : (size_t)sprintf(resp + at, ":1\r\n");
    redisReader *reader = redisReaderCreate();
    assert_non_null(reader);
    void *reply = NULL;
    assert_int_equal(redisReaderFeed(reader, resp, at), REDIS_OK);
    assert_int_equal(redisReaderGetReply(reader, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(reader);
    free(resp);
    bool read = rl__redis_allot_answer_read(reply, count, out);
    freeReplyObject(reply);
    return read;
}

/* values with values[at] = text instead: refused, and the result untouched. */
static void assert_refused_with(const char *const values[10], size_t at, const char *text) {
    const char *changed[10];
    memcpy(changed, values, sizeof changed);
    changed[at] = text;
    rl__allot_result result, before;
    memset(&result, 0x5A, sizeof result);
    memcpy(&before, &result, sizeof before);
    assert_false(read_answer(changed, 1, &result));
    assert_memory_equal(&result, &before, sizeof result);
}

/* The reader takes what allot.lua writes and nothing else: known statuses,
 * decimals up to 2^53 (not one that wraps around 2^64 into range), a
 * definition that decodes and fits 4096 bytes. */
static void the_answer_reader_takes_only_what_the_script_writes(void **state) {
    (void)state;
    const char *values[10] = {"generation", "5", "10000", "70000", "2", "10", "3", "7", "4", ""};
    rl__allot_result r;
    assert_true(read_answer(values, 1, &r));
    assert_int_equal(r.status, RL__ALLOT_GENERATION);
    uint64_t numbers[] = {r.amount,   r.ends_in_ms, r.counted_for_ms, r.share,
                          r.capacity, r.generation, r.version,        r.incarnation};
    uint64_t expected[] = {5, 10000, 70000, 2, 10, 3, 7, 4};
    assert_memory_equal(numbers, expected, sizeof numbers);
    assert_false(r.has_definition);
    assert_false(read_answer(values, 2, &r)); /* ten values answer one operation */
    values[0] = "incarnation";
    assert_true(read_answer(values, 1, &r));
    assert_int_equal(r.status, RL__ALLOT_INCARNATION);
    values[0] = "generation";

    for (size_t at = 1; at <= 8; at++) {
        const char *changed[10];
        memcpy(changed, values, sizeof changed);
        changed[at] = "9007199254740992"; /* 2^53 */
        assert_true(read_answer(changed, 1, &r));
        assert_refused_with(values, at, "9007199254740993");
        assert_refused_with(values, at, "18446744073709551617"); /* 2^64 + 1: 1 once wrapped */
        assert_refused_with(values, at, "18446744073709551616");
        assert_refused_with(values, at, "");
        assert_refused_with(values, at, "-1");
        assert_refused_with(values, at, "1e3");
        assert_refused_with(values, at, " 5");
        assert_refused_with(values, at, NULL);
    }
    assert_refused_with(values, 0, "OK");
    assert_refused_with(values, 0, "okay");
    assert_refused_with(values, 0, NULL);

    /* a definition: decoded; whole up to 4096 bytes, refused past them */
    static const char def[] = "{\"key\":\"tpm\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60}";
    char padded[RL__ALLOT_DEFINITION_MAX + 2];
    memset(padded, ' ', sizeof padded);
    memcpy(padded, def, sizeof def - 1);
    padded[RL__ALLOT_DEFINITION_MAX] = '\0';
    const char *with[10] = {"ok", "5", "10000", "70000", "2", "10", "3", "7", "0", padded};
    assert_true(read_answer(with, 1, &r));
    assert_true(r.has_definition);
    assert_string_equal(r.definition.key, "tpm");
    assert_int_equal(r.definition.capacity, 10);
    assert_int_equal(r.definition.window_seconds, 60);
    padded[RL__ALLOT_DEFINITION_MAX] = ' ';
    padded[RL__ALLOT_DEFINITION_MAX + 1] = '\0';
    assert_refused_with(with, 9, padded);
    assert_refused_with(with, 9, "{");
    assert_refused_with(with, 9, "{\"key\":\"tpm\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":60}");
    assert_refused_with(with, 9, NULL);
}

static int setup(void **state) {
    (void)state;
    return rl_test_redis_start(&server) == RL_TEST_REDIS_STARTED ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    rl_test_redis_cleanup(&server);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_carve_takes_its_share_and_the_synchronous_path_the_rest),
        cmocka_unit_test(a_growth_below_least_is_not_made_but_a_shrink_is),
        cmocka_unit_test(usage_counts_what_daemons_hold_live_and_allots_the_rest),
        cmocka_unit_test(the_share_divides_what_is_left_among_the_daemons_holding),
        cmocka_unit_test(a_drain_keeps_its_end_and_no_longer_divides_the_share),
        cmocka_unit_test(a_rolling_allotment_is_counted_until_its_end_plus_the_window),
        cmocka_unit_test(a_concurrency_allotment_is_counted_until_its_end_plus_the_timeout),
        cmocka_unit_test(a_refill_resizes_but_never_below_the_floor),
        cmocka_unit_test(a_return_keeps_what_is_live_and_frees_the_rest),
        cmocka_unit_test(generations_retries_and_late_calls),
        cmocka_unit_test(definitions_come_with_a_new_version),
        cmocka_unit_test(a_limit_deleted_and_defined_again_is_another_incarnation),
        cmocka_unit_test(the_largest_definition_comes_back_whole),
        cmocka_unit_test(a_pending_decrease_shares_the_capacity_it_goes_to),
        cmocka_unit_test(a_decrease_applies_once_a_drain_makes_it_fit),
        cmocka_unit_test(a_kind_changes_while_allotments_hold_only_unused_room),
        cmocka_unit_test(a_denial_says_what_is_available_beside_allotments),
        cmocka_unit_test(settle_audits_every_spend_and_charges_overage_by_policy),
        cmocka_unit_test(the_answer_reader_takes_only_what_the_script_writes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
