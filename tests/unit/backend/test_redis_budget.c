/* test_redis_budget.c — what only the redis backend does for budgets and
 * the audit log, against a real redis-server (their accounting is
 * test_backend_conformance's and test_backend_model's):
 *
 *  - a daemon that never saw a budget (another one defined it), or saw an
 *    older calendar of it, reads its definition when a script asks for the
 *    bounds it did not pass, and then reserves and reads usage as usual;
 *  - a daemon whose clock is more than a period off Redis's fails the call
 *    with a sentence that says so, before the script writes anything;
 *  - a job id of the most bytes the wire allows, of every awkward kind,
 *    comes back from the audit log as it went in;
 *  - the log keeps audit_retention_days (entries older are not answered,
 *    and the stream has a TTL), stays in time order should the time go
 *    back, and an entry that is not one the scripts write is an error, not
 *    half an answer;
 *  - a budget's open reservations leave Redis when the sweep refunds them.
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

#include "backend/redis/redis_pool.h"
#include "ratelimiter/redis.h"
#include "support/civil_time.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

static rl_test_redis server;

#define HOUR_MS UINT64_C(3600000)
#define DAY_MS (24u * HOUR_MS)

/* A backend on prefix, reading time from clock (NULL: Redis TIME). */
static rl_backend *open_backend(const char *prefix, const rl_clock *clock, uint32_t retention_days) {
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = prefix;
    options.clock = clock;
    options.sweep_interval_ms = 0; /* no thread reads a manual clock while a case moves it */
    if (retention_days != 0) options.audit_retention_days = retention_days;
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

/* A backend on prefix whose manual clock starts at unix_ms. */
static rl_backend *open_at(const char *prefix, rl_manual_clock *clock, uint64_t unix_ms, uint32_t retention_days) {
    rl_manual_clock_init(clock, 1000000, unix_ms);
    return open_backend(prefix, &clock->base, retention_days);
}

static redisReply *redis_command(const char *format, ...) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    va_list args;
    va_start(args, format);
    redisReply *reply = redisvCommand(ctx, format, args);
    va_end(args);
    assert_non_null(reply);
    redisFree(ctx);
    return reply;
}

static long long redis_integer(const char *format, ...) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    va_list args;
    va_start(args, format);
    redisReply *reply = redisvCommand(ctx, format, args);
    va_end(args);
    assert_non_null(reply);
    long long value = reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    freeReplyObject(reply);
    redisFree(ctx);
    return value;
}

static void put_budget(rl_backend *backend, const char *key, uint64_t capacity, rl_period period, const char *zone,
                       uint32_t timeout_seconds) {
    rl_limit_def def = {.kind = RL_KIND_BUDGET, .capacity = capacity, .timeout_seconds = timeout_seconds,
                        .period = period};
    snprintf(def.key, sizeof def.key, "%s", key);
    snprintf(def.timezone, sizeof def.timezone, "%s", zone);
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rl_backend_apply_definition(backend, &def, NULL), RL_OK);
}

static rl_reserve_result reserve(rl_backend *backend, uint64_t lease, const char *job_id, const char *key,
                                 uint64_t amount) {
    char id[27];
    rl_requirement req = {key, amount, false};
    rl_reserve_request request = {rl_test_lease_id(lease, id), job_id, &req, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(backend, &request, &result);
    return result;
}

static void complete(rl_backend *backend, uint64_t lease, const char *key, uint64_t actual) {
    char id[27];
    rl_actual a = {key, actual};
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, &a, 1};
    assert_int_equal(rl_backend_complete(backend, &request), RL_OK);
}

static rl_limit_usage usage_of(rl_backend *backend, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(backend, key, &u), RL_OK);
    return u;
}

static size_t audit_of(rl_backend *backend, const char *key, rl_audit_entry *entries, uint32_t limit) {
    rl_audit_query query = {key, 0, limit};
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(backend, &query, &page), RL_OK);
    return page.count;
}

/* Daemon b never saw the budget a defined, then saw an older calendar of
 * it: each time its scripts ask for bounds it did not pass, it reads the
 * definition and goes on. */
static void a_daemon_learns_budgets_another_defined(void **state) {
    (void)state;
    uint64_t t0 = rl_test_utc_ms(2026, 3, 14, 10, 30);
    rl_manual_clock clock;
    rl_manual_clock_init(&clock, 1000000, t0);
    rl_backend *a = open_backend("learn:", &clock.base, 0), *b = open_backend("learn:", &clock.base, 0);
    put_budget(a, "l:usd", 100, RL_PERIOD_DAY, "UTC", 600);
    rl_limit_usage u = usage_of(b, "l:usd");
    assert_int_equal(u.period_start_unix_ms, rl_test_utc_ms(2026, 3, 14, 0, 0));
    assert_true(reserve(b, 1, NULL, "l:usd", 30).allowed);
    complete(b, 1, "l:usd", 20);
    assert_int_equal(usage_of(a, "l:usd").committed, 20);

    put_budget(a, "l:usd", 100, RL_PERIOD_HOUR, "Asia/Kolkata", 600); /* b still knows the day in UTC */
    rl_reserve_result r = reserve(b, 2, NULL, "l:usd", 90);
    assert_false(r.allowed);
    assert_int_equal(r.denied_by.period_end_unix_ms, rl_test_utc_ms(2026, 3, 14, 11, 30)); /* 17:00 IST */
    assert_true(reserve(b, 3, NULL, "l:usd", 80).allowed);
    u = usage_of(b, "l:usd");
    assert_int_equal(u.period_start_unix_ms, rl_test_utc_ms(2026, 3, 14, 10, 30)); /* 16:00 IST */
    assert_int_equal(u.committed, 20); /* kept across the change of calendar */
    assert_int_equal(u.reserved, 80);
    rl_backend_destroy(a);
    rl_backend_destroy(b);
}

static void push(const char **argv, size_t *len, int *argc, const char *text) {
    argv[*argc] = text;
    len[(*argc)++] = strlen(text);
}

/* A daemon whose clock is more than a period off Redis's passes bounds
 * that do not hold Redis's now: the call fails, saying why, and writes
 * nothing (the lease stays unknown). */
static void a_clock_a_period_off_fails_the_call_before_it_writes(void **state) {
    (void)state;
    rl_backend *backend = open_backend("skew:", NULL, 0);
    put_budget(backend, "s:usd", 100, RL_PERIOD_HOUR, "UTC", 600);
    rl_backend_destroy(backend);

    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    rl_redis_pool *pool = NULL;
    char err[512] = "";
    assert_int_equal(rl_redis_pool_create(&options, &pool, err, sizeof err), RL_OK);
    /* bounds of the hours around a clock three hours behind */
    uint64_t behind = rl_clock_system()->unix_ms(rl_clock_system()) - 3 * HOUR_MS;
    uint64_t start = behind - behind % HOUR_MS;
    char at[4][24];
    for (int i = 0; i < 4; i++)
        snprintf(at[i], sizeof at[i], "%llu", (unsigned long long)(start + (uint64_t)(i - 1) * HOUR_MS));
    char id[27];
    rl_test_lease_id(7, id);
    const char *argv[32];
    size_t len[32];
    int argc = 0;
    /* reserve.lua's ARGV: the header on Redis TIME (lua/common.lua), lease
     * memory, one budget's bounds, one lease of 5 on it */
    const char *args[] = {"skew:", "", "", "86400000", "60000", "1", "s:usd", "hour UTC", at[0], at[1], at[2], at[3],
                          "1", id, "1", "0000000000000000", "", "s:usd", "5"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) push(argv, len, &argc, args[i]);
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(pool, rl_redis_pool_deadline_ms(pool, 0), RL_SCRIPT_RESERVE, argc, argv, len,
                                     &reply, err, sizeof err);
    if (reply != NULL) freeReplyObject(reply);
    assert_int_equal(status, RL_BACKEND_ERROR);
    if (strstr(err, "budget s:usd") == NULL || strstr(err, "clocks differ by more than a period") == NULL)
        fail_msg("the failure does not say why: %s", err);
    assert_int_equal(redis_integer("EXISTS skew:L:%s", id), 0);
    assert_int_equal(redis_integer("ZCARD skew:b:s:usd"), 0);
    rl_redis_pool_destroy(pool);
}

/* The longest job id the wire allows, of the bytes a record's and a
 * stream's framing could trip on, comes back as it went in. */
static void a_job_id_comes_back_from_the_log_as_it_went_in(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *backend = open_at("job:", &clock, rl_test_utc_ms(2026, 5, 1, 12, 0), 0);
    put_budget(backend, "j:usd", 1000, RL_PERIOD_MONTH, "UTC", 600);
    char job[RL_JOB_ID_MAX_LEN + 1];
    const char *pieces[] = {" #0123 ", "!1:2:3:4:k", " @5 ", "\xe2\x82\xac", "\"q\" \\", " =x ", "  "};
    size_t used = 0;
    for (size_t i = 0; used < RL_JOB_ID_MAX_LEN - 4; i = (i + 1) % (sizeof pieces / sizeof pieces[0])) {
        size_t n = strlen(pieces[i]);
        if (used + n > RL_JOB_ID_MAX_LEN) break;
        memcpy(job + used, pieces[i], n);
        used += n;
    }
    while (used < RL_JOB_ID_MAX_LEN) job[used++] = 'z';
    job[used] = '\0';
    assert_true(reserve(backend, 1, job, "j:usd", 10).allowed);
    rl_reserve_result again = reserve(backend, 1, job, "j:usd", 10); /* the record with its job id replays */
    assert_true(again.allowed);
    complete(backend, 1, "j:usd", 7);
    assert_true(reserve(backend, 2, job, "j:usd", 10).allowed);
    rl_manual_clock_advance(&clock, 600000);
    rl_backend_sweep(backend); /* lease 2's refund keeps it too */
    rl_manual_clock_advance(&clock, 1); /* entries are listed once their millisecond is over */
    rl_audit_entry entries[4];
    assert_int_equal(audit_of(backend, "j:usd", entries, 4), 2);
    assert_string_equal(entries[0].job_id, job);
    assert_int_equal(entries[0].actual, 7);
    assert_string_equal(entries[1].job_id, job);
    assert_true(entries[1].expired);
    rl_backend_destroy(backend);
}

/* audit_retention_days: older entries are not answered (trimming drops
 * whole nodes, later), the stream has a TTL past its retention, and the
 * log never grows unbounded. An entry the scripts did not write is an
 * error. */
static void the_log_keeps_its_retention_and_refuses_what_it_did_not_write(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *backend = open_at("keep:", &clock, rl_test_utc_ms(2026, 5, 1, 12, 0), 1);
    put_budget(backend, "k:usd", 1000, RL_PERIOD_MONTH, "UTC", 600);
    assert_true(reserve(backend, 1, NULL, "k:usd", 10).allowed);
    complete(backend, 1, "k:usd", 10);
    rl_manual_clock_advance(&clock, DAY_MS + 1);
    assert_true(reserve(backend, 2, NULL, "k:usd", 10).allowed);
    complete(backend, 2, "k:usd", 9);
    rl_manual_clock_advance(&clock, 1);
    rl_audit_entry entries[4];
    assert_int_equal(audit_of(backend, "k:usd", entries, 4), 1);
    assert_int_equal(entries[0].actual, 9);
    long long ttl = redis_integer("PTTL keep:audit:k:usd");
    assert_true(ttl > (long long)DAY_MS && ttl <= (long long)(2 * DAY_MS));

    /* In the last millisecond listed (Redis's own clock is not the test's). */
    char xadd[160];
    snprintf(xadd, sizeof xadd, "XADD keep:audit:k:usd %llu-5 l not-a-lease j x r 1 a 1 p 0 x 0",
             (unsigned long long)(clock.base.unix_ms(&clock.base) - 1));
    redisReply *added = redis_command(xadd);
    freeReplyObject(added);
    rl_audit_query query = {"k:usd", 0, 4};
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(backend, &query, &page), RL_BACKEND_ERROR);
    assert_int_equal(page.count, 0);
    query.limit = RL_AUDIT_QUERY_MAX + 1;
    assert_int_equal(rl_backend_audit_query(backend, &query, &page), RL_INVALID_REQUEST);
    rl_backend_destroy(backend);

    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.audit_retention_days = RL_AUDIT_MAX_RETENTION_DAYS + 1;
    rl_backend *refused = (rl_backend *)1;
    char err[256] = "";
    assert_int_equal(rl_redis_backend_create(&options, &refused, err, sizeof err), RL_INVALID_REQUEST);
    assert_null(refused);
    assert_non_null(strstr(err, "audit_retention_days"));
}

/* Should the time go back (here: a second daemon on a clock a second
 * behind, as Redis TIME after a step back), an entry is filed at the
 * newest entry's millisecond: the stream stays in order, nothing is lost. */
static void the_log_stays_in_order_when_time_goes_back(void **state) {
    (void)state;
    rl_manual_clock ahead, behind;
    uint64_t t0 = rl_test_utc_ms(2026, 5, 1, 12, 0);
    rl_backend *a = open_at("back:", &ahead, t0, 0), *b = open_at("back:", &behind, t0 - 1000, 0);
    put_budget(a, "bk:usd", 1000, RL_PERIOD_MONTH, "UTC", 600);
    assert_true(reserve(a, 1, NULL, "bk:usd", 10).allowed);
    assert_true(reserve(a, 2, NULL, "bk:usd", 10).allowed);
    complete(a, 1, "bk:usd", 4);
    complete(b, 2, "bk:usd", 6);
    rl_manual_clock_advance(&ahead, 1);
    rl_audit_entry entries[4];
    assert_int_equal(audit_of(a, "bk:usd", entries, 4), 2);
    assert_int_equal(entries[0].at_unix_ms, t0);
    assert_int_equal(entries[0].actual, 4);
    assert_int_equal(entries[1].at_unix_ms, t0);
    assert_int_equal(entries[1].actual, 6);
    rl_backend_destroy(a);
    rl_backend_destroy(b);
}

/* A budget's open reservations are kept one by one, without a TTL (each
 * refund is audited): the sweep refunds them at their timeout, and nothing
 * of them stays in Redis. */
static void refunded_reservations_leave_redis(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *backend = open_at("gone:", &clock, rl_test_utc_ms(2026, 5, 1, 12, 0), 0);
    put_budget(backend, "g:usd", 1000, RL_PERIOD_DAY, "UTC", 5);
    for (uint64_t lease = 1; lease <= 300; lease++) assert_true(reserve(backend, lease, "j", "g:usd", 1).allowed);
    assert_int_equal(redis_integer("ZCARD gone:b:g:usd"), 300);
    assert_int_equal(redis_integer("HLEN gone:r:g:usd"), 300);
    rl_manual_clock_advance(&clock, 5000);
    rl_backend_sweep(backend);
    assert_int_equal(redis_integer("EXISTS gone:b:g:usd"), 0);
    assert_int_equal(redis_integer("EXISTS gone:r:g:usd"), 0);
    assert_int_equal(redis_integer("XLEN gone:audit:g:usd"), 300);
    rl_limit_usage u = usage_of(backend, "g:usd");
    assert_int_equal(u.used, 0);
    assert_int_equal(u.active, 0);
    rl_backend_destroy(backend);
}

/* Counters an older version left past 2^64 in the store (before they
 * saturated) read at the ceiling: the budget says full, as its reserves
 * answer (not used 0 and available 2^53: a Lua number past 2^63 became a
 * negative integer on its way to C, read as 0), and debt_total says 2^53. */
static void counters_stored_past_the_ceiling_read_at_it(void **state) {
    (void)state;
    rl_manual_clock clock;
    rl_backend *backend = open_at("past:", &clock, rl_test_utc_ms(2026, 5, 1, 12, 0), 0);
    put_budget(backend, "p:usd", RL_AMOUNT_MAX, RL_PERIOD_MONTH, "UTC", 600);
    freeReplyObject(redis_command("HSET past:l:p:usd used 18446744073709551616 com 18446744073709551616 "
                                  "debt 18446744073709551616 denied 18446744073709551616"));
    rl_limit_usage u = usage_of(backend, "p:usd");
    assert_int_equal(u.used, RL_COUNTER_MAX);
    assert_int_equal(u.committed, RL_COUNTER_MAX);
    assert_int_equal(u.reserved, 0);
    assert_int_equal(u.available, 0);
    assert_int_equal(u.debt_total, RL_COUNTER_MAX);
    assert_int_equal(u.overage_denied_total, RL_COUNTER_MAX);
    assert_false(reserve(backend, 1, NULL, "p:usd", 1).allowed);
    rl_backend_destroy(backend);
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
        cmocka_unit_test(a_daemon_learns_budgets_another_defined),
        cmocka_unit_test(a_clock_a_period_off_fails_the_call_before_it_writes),
        cmocka_unit_test(a_job_id_comes_back_from_the_log_as_it_went_in),
        cmocka_unit_test(the_log_keeps_its_retention_and_refuses_what_it_did_not_write),
        cmocka_unit_test(the_log_stays_in_order_when_time_goes_back),
        cmocka_unit_test(refunded_reservations_leave_redis),
        cmocka_unit_test(counters_stored_past_the_ceiling_read_at_it),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
