/* test_redis_templates.c — limit templates on the redis backend, against a
 * real redis-server (lua/made.lua, lua/template.lua): limits made on first
 * use (reserve, Complete, usage read) and never as definitions, the most
 * specific template, a key's own limit over its template, limits forgotten
 * once idle (their Redis keys gone) and made again empty, templates
 * replaced and deleted, two daemons sharing them, optional requirements,
 * budgets made from a template, and a Redis that lost everything. (What
 * every backend honours is test_backend_conformance's.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "backend/redis/redis_backend_internal.h"
#include "ratelimiter/redis.h"
#include "ratelimiter/submitter.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

static rl_test_redis server;

static rl_backend *open_backend(const char *prefix) {
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = prefix;
    options.command_timeout_ms = 1000;
    options.sweep_interval_ms = 0; /* what the scripts and TTLs do, alone */
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

/* A command's reply as an integer (or a bulk string's number); -3 for nil. */
static long long redis_do(const char *format, ...) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    va_list args;
    va_start(args, format);
    redisReply *reply = redisvCommand(ctx, format, args);
    va_end(args);
    assert_non_null(reply);
    long long value = reply->type == REDIS_REPLY_INTEGER  ? reply->integer
                      : reply->type == REDIS_REPLY_STRING ? strtoll(reply->str, NULL, 10)
                      : reply->type == REDIS_REPLY_NIL    ? -3
                                                          : 0;
    freeReplyObject(reply);
    redisFree(ctx);
    return value;
}

/* How many Redis keys of prefix hold anything of limits (every key but the
 * templates' own, the definitions' bookkeeping and the audit log, which
 * outlives limits by design), each checked to have a TTL unless it is a
 * limit of its own (no 'tp': a definition). */
static size_t limit_keys(const char *prefix) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    char cursor[32] = "0";
    size_t count = 0, p = strlen(prefix);
    do {
        redisReply *scan = redisCommand(ctx, "SCAN %s MATCH %s* COUNT 1000", cursor, prefix);
        assert_true(scan != NULL && scan->type == REDIS_REPLY_ARRAY && scan->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", scan->element[0]->str);
        for (size_t i = 0; i < scan->element[1]->elements; i++) {
            const char *key = scan->element[1]->element[i]->str;
            const char *rest = key + p;
            if (strncmp(rest, "t:", 2) == 0 || strcmp(rest, "tpls") == 0 || strcmp(rest, "tpl:ids") == 0 ||
                strncmp(rest, "defs", 4) == 0 || strncmp(rest, "audit:", 6) == 0 || strncmp(rest, "L:", 2) == 0)
                continue;
            redisReply *ttl = redisCommand(ctx, "PTTL %s", key);
            assert_true(ttl != NULL && ttl->type == REDIS_REPLY_INTEGER);
            if (ttl->integer == -1) fail_msg("%s has no TTL", key);
            freeReplyObject(ttl);
            count++;
        }
        freeReplyObject(scan);
    } while (strcmp(cursor, "0") != 0);
    redisFree(ctx);
    return count;
}

static rl_limit_def rolling(const char *key, uint64_t capacity, uint32_t window_seconds) {
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = capacity, .window_seconds = window_seconds};
    snprintf(def.key, sizeof def.key, "%s", key);
    return def;
}

static rl_limit_def holds(const char *key, uint64_t capacity, uint32_t timeout_seconds) {
    rl_limit_def def = {.kind = RL_KIND_CONCURRENCY, .capacity = capacity, .timeout_seconds = timeout_seconds};
    snprintf(def.key, sizeof def.key, "%s", key);
    return def;
}

static void put_template(rl_backend *backend, rl_limit_def def) {
    assert_int_equal(rl_backend_put_template(backend, &def), RL_OK);
}

static rl_reserve_result reserve_opts(rl_backend *backend, uint64_t lease, const char *key, uint64_t amount,
                                      bool optional, bool dry_run) {
    char id[27];
    rl_requirement one = {key, amount, optional};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &one, 1, dry_run};
    rl_reserve_result result;
    rl_backend_reserve(backend, &request, &result);
    return result;
}

static rl_reserve_result reserve(rl_backend *backend, uint64_t lease, const char *key, uint64_t amount) {
    return reserve_opts(backend, lease, key, amount, false, false);
}

static void complete(rl_backend *backend, uint64_t lease, const char *key, uint64_t actual) {
    char id[27];
    rl_actual used = {key, actual};
    rl_complete_request done = {rl_test_lease_id(lease, id), NULL, &used, key != NULL ? 1 : 0};
    assert_int_equal(rl_backend_complete(backend, &done), RL_OK);
}

static rl_limit_usage usage_of(rl_backend *backend, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(backend, key, &usage), RL_OK);
    return usage;
}

static void expect_no_definitions(rl_backend *backend) {
    rl_limit_def *defs = NULL;
    size_t count = 99;
    assert_int_equal(rl_backend_list_definitions(backend, &defs, &count), RL_OK);
    assert_int_equal(count, 0);
    free(defs);
    assert_int_equal(rl_backend_count_definitions(backend, &count), RL_OK);
    assert_int_equal(count, 0);
}

/* Made on first use: a usage read and a dry run see the limit the
 * template makes and write nothing; a reserve makes it; a Complete acts on
 * it. It is no definition: not listed, counted, read or deletable. */
static void a_limit_is_made_on_first_use_and_is_no_definition(void **state) {
    (void)state;
    rl_backend *backend = open_backend("made:");
    put_template(backend, rolling("tenant:{t}:rpm", 3, 60));
    rl_limit_usage usage = usage_of(backend, "tenant:a:rpm");
    assert_int_equal(usage.capacity, 3);
    assert_int_equal(usage.used, 0);
    assert_int_equal(reserve_opts(backend, 1, "tenant:a:rpm", 1, false, true).allowed, true); /* a dry run */
    assert_int_equal(redis_do("EXISTS made:l:tenant:a:rpm"), 0); /* neither wrote anything */
    assert_int_equal(redis_do("EXISTS made:L:%s", "01J00000000000000000000001"), 0);

    assert_true(reserve(backend, 2, "tenant:a:rpm", 1).allowed);
    assert_int_equal(redis_do("EXISTS made:l:tenant:a:rpm"), 1);
    assert_int_equal(usage_of(backend, "tenant:a:rpm").used, 1);
    complete(backend, 2, "tenant:a:rpm", 2); /* overage: debt by default */
    assert_int_equal(usage_of(backend, "tenant:a:rpm").used, 2);
    assert_true(reserve(backend, 3, "tenant:a:rpm", 1).allowed);
    rl_reserve_result denied = reserve(backend, 4, "tenant:a:rpm", 1);
    assert_false(denied.allowed);
    assert_string_equal(denied.denied_by.key, "tenant:a:rpm");
    assert_int_equal(denied.denied_by.capacity, 3);

    expect_no_definitions(backend);
    rl_limit_def def;
    assert_int_equal(rl_backend_get_definition(backend, "tenant:a:rpm", &def), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_backend_delete_definition(backend, "tenant:a:rpm"), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(usage_of(backend, "tenant:a:rpm").used, 3); /* the refused delete changed nothing */
    /* a key no template matches stays unknown */
    assert_int_equal(reserve(backend, 5, "tenant:a:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    rl_limit_usage none;
    assert_int_equal(rl_backend_limit_usage(backend, "tenant:a:tpm", &none), RL_UNKNOWN_LIMIT_KEY);
    rl_backend_destroy(backend);
}

/* Of several templates that match, the most specific makes the limit; one
 * put later that is more specific takes over a limit made already (keeping
 * its usage). */
static void the_most_specific_template_makes_the_limit(void **state) {
    (void)state;
    rl_backend *backend = open_backend("specific:");
    put_template(backend, rolling("{scope}:{id}:rpm", 10, 60));
    assert_int_equal(usage_of(backend, "tenant:x:rpm").capacity, 10);
    assert_true(reserve(backend, 1, "tenant:x:rpm", 5).allowed);
    put_template(backend, rolling("tenant:{t}:rpm", 6, 60));
    assert_int_equal(usage_of(backend, "tenant:x:rpm").capacity, 6);
    assert_int_equal(usage_of(backend, "tenant:x:rpm").used, 5);
    assert_true(reserve(backend, 2, "tenant:x:rpm", 1).allowed);
    assert_false(reserve(backend, 3, "tenant:x:rpm", 1).allowed);
    assert_int_equal(redis_do("ZSCORE specific:m:{scope}:{id}:rpm tenant:x:rpm"), -3); /* moved */
    assert_true(redis_do("ZSCORE specific:m:tenant:{t}:rpm tenant:x:rpm") > 0);
    /* another first segment still gets the general one */
    assert_int_equal(usage_of(backend, "team:x:rpm").capacity, 10);
    rl_backend_destroy(backend);
}

/* A key's own limit wins over its template, also one defined through
 * another daemon a moment ago; defining a made key makes it the key's own,
 * keeping its usage; deleting it leaves the key to the template, made
 * again empty. */
static void a_keys_own_limit_wins_and_its_delete_returns_it_to_the_template(void **state) {
    (void)state;
    rl_backend *a = open_backend("own:"), *b = open_backend("own:");
    put_template(a, rolling("tenant:{t}:rpm", 5, 60));
    rl_limit_def own = rolling("tenant:vip:rpm", 1, 60);
    assert_int_equal(rl_backend_apply_definition(b, &own, NULL), RL_OK);
    assert_true(reserve(a, 1, "tenant:vip:rpm", 1).allowed);
    assert_false(reserve(a, 2, "tenant:vip:rpm", 1).allowed); /* capacity 1: b's definition, not the template */
    assert_int_equal(rl_backend_delete_definition(a, "tenant:vip:rpm"), RL_OK);
    assert_int_equal(usage_of(a, "tenant:vip:rpm").used, 0); /* made again, empty */
    assert_true(reserve(a, 3, "tenant:vip:rpm", 4).allowed);
    assert_int_equal(usage_of(b, "tenant:vip:rpm").capacity, 5);

    /* a made limit defined: the key's own from now on, with what it held */
    rl_limit_def bigger = rolling("tenant:vip:rpm", 50, 60);
    assert_int_equal(rl_backend_apply_definition(b, &bigger, NULL), RL_OK);
    rl_limit_usage usage = usage_of(a, "tenant:vip:rpm");
    assert_int_equal(usage.capacity, 50);
    assert_int_equal(usage.used, 4);
    assert_int_equal(redis_do("PTTL own:l:tenant:vip:rpm"), -1);
    assert_int_equal(redis_do("SISMEMBER own:defs tenant:vip:rpm"), 1);
    assert_int_equal(redis_do("ZSCORE own:m:tenant:{t}:rpm tenant:vip:rpm"), -3);
    complete(a, 3, "tenant:vip:rpm", 1); /* a lease reserved on the made limit completes on the own one */
    assert_int_equal(usage_of(a, "tenant:vip:rpm").used, 1);

    /* a daemon putting back its registry's definition at start: a made
     * limit in its place is no definition, so the key's own wins */
    assert_true(reserve(a, 4, "tenant:reg:rpm", 2).allowed);
    rl_limit_def registry = rolling("tenant:reg:rpm", 3, 60);
    assert_int_equal(rl_backend_restore_definition(b, &registry), RL_OK);
    assert_int_equal(redis_do("SISMEMBER own:defs tenant:reg:rpm"), 1);
    usage = usage_of(a, "tenant:reg:rpm");
    assert_int_equal(usage.capacity, 3);
    assert_int_equal(usage.used, 2);
    rl_backend_destroy(a);
    rl_backend_destroy(b);
}

/* Redis memory stays bounded: a made limit's keys carry TTLs covering what
 * it holds, and are gone once its windows and holds are over; a
 * concurrency limit whose last hold is released is forgotten at once. The
 * key is made again, empty, when next named. */
static void made_limits_are_forgotten_once_they_hold_nothing(void **state) {
    (void)state;
    rl_backend *backend = open_backend("forget:");
    put_template(backend, rolling("tenant:{t}:rpm", 100, 1));
    put_template(backend, holds("tenant:{t}:conc", 2, 1));
    for (uint64_t i = 0; i < 20; i++) {
        char key[64];
        snprintf(key, sizeof key, "tenant:%llu:rpm", (unsigned long long)i);
        assert_true(reserve(backend, 100 + i, key, 10).allowed);
    }
    assert_true(reserve(backend, 1, "tenant:a:conc", 1).allowed);
    assert_true(reserve(backend, 2, "tenant:b:conc", 1).allowed);
    long long ttl = redis_do("PTTL forget:l:tenant:3:rpm");
    assert_true(ttl > 0 && ttl <= 2000); /* the window and a second */
    assert_true(limit_keys("forget:") > 20);
    complete(backend, 1, NULL, 0); /* its last hold released: forgotten at once */
    assert_int_equal(redis_do("EXISTS forget:l:tenant:a:conc"), 0);

    long deadline_ms = rl_test_redis_now_ms() + 6000;
    size_t left;
    while ((left = limit_keys("forget:")) != 0 && rl_test_redis_now_ms() < deadline_ms) rl_test_redis_sleep_ms(100);
    assert_int_equal(left, 0); /* tenant:b:conc's hold timed out too: nothing left */
    rl_limit_usage usage = usage_of(backend, "tenant:3:rpm");
    assert_int_equal(usage.used, 0);
    assert_int_equal(usage.capacity, 100);
    assert_true(reserve(backend, 200, "tenant:b:conc", 2).allowed); /* made again, empty */
    rl_backend_destroy(backend);
}

/* A rolling lease completed after its made limit was forgotten is still
 * audited, as its limit's Complete would be. */
static void a_complete_after_its_limit_was_forgotten_is_audited(void **state) {
    (void)state;
    rl_backend *backend = open_backend("late:");
    put_template(backend, rolling("tenant:{t}:tpm", 1000, 1));
    assert_true(reserve(backend, 1, "tenant:a:tpm", 100).allowed);
    long deadline_ms = rl_test_redis_now_ms() + 5000;
    while (redis_do("EXISTS late:l:tenant:a:tpm") == 1 && rl_test_redis_now_ms() < deadline_ms)
        rl_test_redis_sleep_ms(100);
    assert_int_equal(redis_do("EXISTS late:l:tenant:a:tpm"), 0);
    complete(backend, 1, "tenant:a:tpm", 70);
    rl_test_redis_sleep_ms(2); /* a query lists the entries of past milliseconds only */
    rl_audit_entry entries[4];
    rl_audit_query query = {"tenant:a:tpm", 0, 4};
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(backend, &query, &page), RL_OK);
    assert_int_equal(page.count, 1);
    assert_int_equal(entries[0].reserved, 100);
    assert_int_equal(entries[0].actual, 70);
    assert_int_equal(redis_do("EXISTS late:l:tenant:a:tpm"), 0); /* and nothing made for it */
    rl_backend_destroy(backend);
}

/* A template put again: its limits follow it as apply_definition would
 * (an increase at once, a decrease once usage allows), and a change of
 * kind is refused while one of them holds anything. */
static void a_template_replaced_is_followed_by_its_limits(void **state) {
    (void)state;
    rl_backend *backend = open_backend("replace:");
    put_template(backend, rolling("tenant:{t}:rpm", 2, 60));
    assert_true(reserve(backend, 1, "tenant:a:rpm", 2).allowed);
    assert_false(reserve(backend, 2, "tenant:a:rpm", 1).allowed);
    put_template(backend, rolling("tenant:{t}:rpm", 4, 60)); /* an increase: at once */
    assert_true(reserve(backend, 3, "tenant:a:rpm", 1).allowed);
    put_template(backend, rolling("tenant:{t}:rpm", 1, 60)); /* a decrease below usage: pending */
    rl_limit_usage usage = usage_of(backend, "tenant:a:rpm");
    assert_int_equal(usage.status, RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(usage.pending_decrease_to, 1);
    assert_int_equal(reserve(backend, 4, "tenant:a:rpm", 1).status, RL_LIMIT_DECREASING);
    assert_int_equal(usage_of(backend, "tenant:b:rpm").capacity, 1); /* a fresh one takes it whole */

    rl_limit_def conc = holds("tenant:{t}:rpm", 5, 30);
    assert_int_equal(rl_backend_put_template(backend, &conc), RL_LIMIT_IN_USE);
    assert_int_equal(usage_of(backend, "tenant:a:rpm").pending_decrease_to, 1); /* nothing changed */
    rl_limit_def *templates = NULL;
    size_t count = 0;
    assert_int_equal(rl_backend_list_templates(backend, &templates, &count), RL_OK);
    assert_int_equal(count, 1);
    assert_int_equal(templates[0].kind, RL_KIND_ROLLING);
    assert_int_equal(templates[0].capacity, 1);
    free(templates);

    /* a concurrency template whose limits hold nothing changes kind */
    put_template(backend, holds("tenant:{t}:conc", 1, 30));
    assert_true(reserve(backend, 5, "tenant:a:conc", 1).allowed);
    rl_limit_def to_rolling = rolling("tenant:{t}:conc", 9, 60);
    assert_int_equal(rl_backend_put_template(backend, &to_rolling), RL_LIMIT_IN_USE);
    complete(backend, 5, NULL, 0);
    assert_int_equal(rl_backend_put_template(backend, &to_rolling), RL_OK);
    assert_true(reserve(backend, 6, "tenant:a:conc", 9).allowed);
    assert_int_equal(usage_of(backend, "tenant:a:conc").active, 1);
    rl_backend_destroy(backend);
}

/* A template deleted: the limits made from it go with what they hold
 * (past a page of them), none is made any more, and a second delete is
 * unknown. Another template matching their keys takes over. */
static void a_template_deleted_drops_its_limits(void **state) {
    (void)state;
    rl_backend *backend = open_backend("drop:");
    put_template(backend, holds("tenant:{t}:conc", 1, 60));
    put_template(backend, holds("{scope}:{t}:conc", 7, 60));
    enum { MADE = 1200 }; /* more than template.lua's page */
    for (uint64_t i = 0; i < MADE; i++) {
        char key[64];
        snprintf(key, sizeof key, "tenant:%llu:conc", (unsigned long long)i);
        assert_true(reserve(backend, 1 + i, key, 1).allowed);
    }
    assert_int_equal(rl_backend_delete_template(backend, "tenant:{t}:conc"), RL_OK);
    assert_int_equal(redis_do("EXISTS drop:l:tenant:0:conc"), 0);
    assert_int_equal(redis_do("EXISTS drop:l:tenant:1199:conc"), 0);
    assert_int_equal(limit_keys("drop:"), 0);
    /* the other template makes it now, empty */
    rl_limit_usage usage = usage_of(backend, "tenant:5:conc");
    assert_int_equal(usage.capacity, 7);
    assert_int_equal(usage.used, 0);
    complete(backend, 6, NULL, 0); /* a lease of the dropped limit: nothing to release, nothing broken */
    assert_int_equal(rl_backend_delete_template(backend, "{scope}:{t}:conc"), RL_OK);
    assert_int_equal(reserve(backend, 5000, "tenant:5:conc", 1).status, RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_backend_delete_template(backend, "tenant:{t}:conc"), RL_UNKNOWN_LIMIT_KEY);
    rl_limit_def *templates = NULL;
    size_t count = 9;
    assert_int_equal(rl_backend_list_templates(backend, &templates, &count), RL_OK);
    assert_int_equal(count, 0);
    free(templates);
    rl_backend_destroy(backend);
}

/* Templates live in Redis: a put through one daemon is listed by another
 * at once and used by it within a second (it follows the changes), and so
 * is a delete. */
static void two_daemons_share_templates(void **state) {
    (void)state;
    rl_backend *a = open_backend("share:"), *b = open_backend("share:");
    assert_int_equal(reserve(b, 1, "tenant:a:rpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    put_template(a, rolling("tenant:{t}:rpm", 2, 60));
    rl_limit_def *templates = NULL;
    size_t count = 0;
    assert_int_equal(rl_backend_list_templates(b, &templates, &count), RL_OK);
    assert_int_equal(count, 1);
    assert_string_equal(templates[0].key, "tenant:{t}:rpm");
    free(templates);
    rl_backend *c = open_backend("share:"); /* one started since reads them at start */
    assert_true(reserve(c, 2, "tenant:c:rpm", 1).allowed);
    rl_backend_destroy(c);

    put_template(a, rolling("team:{t}:rpm", 1, 60));
    long started_ms = rl_test_redis_now_ms();
    uint64_t lease = 10;
    while (!reserve(b, lease++, "team:x:rpm", 1).allowed && rl_test_redis_now_ms() - started_ms < 3000)
        rl_test_redis_sleep_ms(20);
    long took_ms = rl_test_redis_now_ms() - started_ms;
    if (took_ms > 1500) fail_msg("b made the limit %ld ms after the put", took_ms);
    assert_false(reserve(a, 100, "team:x:rpm", 1).allowed); /* one limit for both */

    assert_int_equal(rl_backend_delete_template(a, "team:{t}:rpm"), RL_OK);
    started_ms = rl_test_redis_now_ms();
    while (reserve(b, lease++, "team:y:rpm", 1).status != RL_UNKNOWN_LIMIT_KEY &&
           rl_test_redis_now_ms() - started_ms < 3000)
        rl_test_redis_sleep_ms(20);
    assert_int_equal(reserve(b, lease++, "team:z:rpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    rl_backend_destroy(a);
    rl_backend_destroy(b);
}

/* An optional requirement counts a key a template matches as defined: it
 * is reserved and can deny. */
static void an_optional_key_a_template_matches_is_reserved(void **state) {
    (void)state;
    rl_backend *backend = open_backend("optional:");
    put_template(backend, rolling("tenant:{t}:rpd", 1, 60));
    assert_true(reserve_opts(backend, 1, "tenant:a:rpd", 1, true, false).allowed);
    assert_int_equal(usage_of(backend, "tenant:a:rpd").used, 1);
    assert_false(reserve_opts(backend, 2, "tenant:a:rpd", 1, true, false).allowed);
    assert_true(reserve_opts(backend, 3, "tenant:a:rph", 1, true, false).allowed); /* no template: skipped */
    rl_backend_destroy(backend);
}

/* A budget made from its template: the daemon passes the template's
 * period bounds; the made limit lives to its period's end once charged. */
static void a_budget_is_made_from_its_template(void **state) {
    (void)state;
    rl_backend *backend = open_backend("budget:");
    rl_limit_def daily = {.kind = RL_KIND_BUDGET, .capacity = 1000, .timeout_seconds = 60, .period = RL_PERIOD_DAY};
    snprintf(daily.key, sizeof daily.key, "tenant:{t}:daily_tokens");
    snprintf(daily.timezone, sizeof daily.timezone, "UTC");
    put_template(backend, daily);
    rl_limit_usage usage = usage_of(backend, "tenant:a:daily_tokens");
    assert_int_equal(usage.capacity, 1000);
    assert_true(usage.period_end_unix_ms > usage.period_start_unix_ms);
    assert_true(reserve(backend, 1, "tenant:a:daily_tokens", 400).allowed);
    complete(backend, 1, "tenant:a:daily_tokens", 300);
    usage = usage_of(backend, "tenant:a:daily_tokens");
    assert_int_equal(usage.committed, 300);
    assert_int_equal(usage.used, 300);
    long long ttl = redis_do("PTTL budget:l:tenant:a:daily_tokens");
    uint64_t unix_now_ms = rl_clock_system()->unix_ms(rl_clock_system());
    assert_true(ttl > 0 && (uint64_t)ttl + 2000 >= usage.period_end_unix_ms - unix_now_ms);
    assert_false(reserve(backend, 2, "tenant:a:daily_tokens", 800).allowed);
    rl_backend_destroy(backend);
}

/* A Redis that lost everything: the daemon puts its templates back (and its
 * definitions), never the limits made from them, which start empty. */
static void a_redis_that_lost_everything_gets_templates_back_not_made_limits(void **state) {
    (void)state;
    rl_backend *backend = open_backend("lost:");
    put_template(backend, rolling("tenant:{t}:rpm", 2, 60));
    rl_limit_def own = rolling("own:rpm", 3, 60);
    assert_int_equal(rl_backend_apply_definition(backend, &own, NULL), RL_OK);
    assert_true(reserve(backend, 1, "tenant:a:rpm", 2).allowed);
    rl_test_redis_sleep_ms(1200); /* a follower's step has seen everything */
    redis_do("FLUSHALL");
    long deadline_ms = rl_test_redis_now_ms() + 5000;
    while ((redis_do("EXISTS lost:t:tenant:{t}:rpm") == 0 || redis_do("EXISTS lost:l:own:rpm") == 0) &&
           rl_test_redis_now_ms() < deadline_ms)
        rl_test_redis_sleep_ms(50);
    assert_int_equal(redis_do("EXISTS lost:t:tenant:{t}:rpm"), 1);
    assert_int_equal(redis_do("EXISTS lost:l:tenant:a:rpm"), 0);
    rl_limit_def *defs = NULL;
    size_t count = 0;
    assert_int_equal(rl_backend_list_definitions(backend, &defs, &count), RL_OK);
    assert_int_equal(count, 1);
    assert_string_equal(defs[0].key, "own:rpm");
    free(defs);
    assert_true(reserve(backend, 2, "tenant:a:rpm", 2).allowed); /* made again, empty */
    assert_int_equal(redis_do("SISMEMBER lost:defs tenant:a:rpm"), 0);
    rl_backend_destroy(backend);
}

/* What put_template refuses: no pattern, a definition a limit could not
 * have; nothing is written. */
static void a_bad_template_is_refused(void **state) {
    (void)state;
    rl_backend *backend = open_backend("bad:");
    rl_limit_def plain = rolling("tenant:a:rpm", 2, 60);
    assert_int_equal(rl_backend_put_template(backend, &plain), RL_INVALID_REQUEST); /* no placeholder */
    rl_limit_def no_window = rolling("tenant:{t}:rpm", 2, 0);
    assert_int_equal(rl_backend_put_template(backend, &no_window), RL_INVALID_REQUEST);
    rl_limit_def *templates = NULL;
    size_t count = 9;
    assert_int_equal(rl_backend_list_templates(backend, &templates, &count), RL_OK);
    assert_int_equal(count, 0);
    free(templates);
    assert_int_equal(redis_do("EXISTS bad:tpls"), 0);
    rl_backend_destroy(backend);
}

/* The daemon's stacks pass templates through: the submitter over the
 * redis backend, and the backend with allotments (which decides a made
 * key's leases in Redis). */
static void the_submitter_and_allotments_pass_templates_through(void **state) {
    (void)state;
    rl_backend *submitter = NULL;
    assert_int_equal(rl_submitter_create(open_backend("stack:"), NULL, &submitter), RL_OK);
    put_template(submitter, rolling("tenant:{t}:rpm", 1, 60));
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = "stack:";
    rl_backend *allotted = NULL;
    char err[256];
    if (rl_allotted_backend_create(&options, NULL, NULL, &allotted, err, sizeof err) != RL_OK) fail_msg("%s", err);
    rl_limit_def *templates = NULL;
    size_t count = 0;
    assert_int_equal(rl_backend_list_templates(allotted, &templates, &count), RL_OK);
    assert_int_equal(count, 1);
    free(templates);
    assert_true(reserve(allotted, 1, "tenant:a:rpm", 1).allowed);
    assert_false(reserve(submitter, 2, "tenant:a:rpm", 1).allowed); /* one limit, made in Redis */
    assert_int_equal(rl_backend_delete_template(allotted, "tenant:{t}:rpm"), RL_OK);
    assert_int_equal(rl_backend_list_templates(submitter, &templates, &count), RL_OK);
    assert_int_equal(count, 0);
    free(templates);
    assert_int_equal(rl_backend_delete_template(submitter, "tenant:{t}:rpm"), RL_UNKNOWN_LIMIT_KEY);
    rl_backend_destroy(allotted);
    rl_backend_destroy(submitter);
}

/* The template_usage op: the limits made from a template summed, read a
 * page a script call; a budget's committed and reserved apart; limits gone
 * leave the sums; a walk past the bound says it is partial. */
static void a_templates_limits_are_summed(void **state) {
    (void)state;
    rl_backend *backend = open_backend("sums:");
    put_template(backend, rolling("tenant:{t}:rpm", 100, 60));
    rl_limit_def daily = {.kind = RL_KIND_BUDGET, .capacity = 1000, .timeout_seconds = 60, .period = RL_PERIOD_DAY};
    snprintf(daily.key, sizeof daily.key, "tenant:{t}:spend");
    snprintf(daily.timezone, sizeof daily.timezone, "UTC");
    put_template(backend, daily);
    const char *patterns[] = {"tenant:{t}:rpm", "tenant:{t}:spend", "nobody:{x}"};
    rl_template_usage sums[3];
    memset(sums, 0, sizeof sums);
    assert_int_equal(rl_backend_template_usage(backend, patterns, 3, sums), RL_OK);
    assert_int_equal(sums[0].limits + sums[1].limits + sums[2].limits, 0);

    assert_true(reserve(backend, 1, "tenant:a:rpm", 30).allowed);
    assert_true(reserve(backend, 2, "tenant:b:rpm", 120 - 20).allowed);
    assert_true(reserve(backend, 3, "tenant:a:spend", 400).allowed);
    complete(backend, 3, "tenant:a:spend", 250);
    assert_true(reserve(backend, 4, "tenant:a:spend", 100).allowed); /* held, not yet spent */
    assert_true(reserve(backend, 5, "tenant:b:spend", 50).allowed);
    memset(sums, 0, sizeof sums);
    assert_int_equal(rl_backend_template_usage(backend, patterns, 3, sums), RL_OK);
    assert_int_equal(sums[0].limits, 2);
    assert_int_equal(sums[0].capacity, 200);
    assert_int_equal(sums[0].used, 130);
    assert_int_equal(sums[0].available, 70);
    assert_int_equal(sums[0].reserved + sums[0].committed + sums[0].debt, 0);
    assert_false(sums[0].partial);
    assert_int_equal(sums[1].limits, 2);
    assert_int_equal(sums[1].used, 400);
    assert_int_equal(sums[1].committed, 250);
    assert_int_equal(sums[1].reserved, 150);
    assert_int_equal(sums[1].available, 2000 - 400);
    assert_int_equal(sums[2].limits, 0);

    /* a limit whose keys are gone (its TTLs ended) leaves m:T and the sums */
    redis_do("DEL sums:l:tenant:b:rpm sums:e:tenant:b:rpm sums:a:tenant:b:rpm");
    memset(sums, 0, sizeof sums);
    assert_int_equal(rl_backend_template_usage(backend, patterns, 1, sums), RL_OK);
    assert_int_equal(sums[0].limits, 1);
    assert_int_equal(sums[0].used, 30);
    assert_int_equal(redis_do("ZCARD sums:m:tenant:{t}:rpm"), 1);

    /* past the bound: as many as it read, and partial */
    for (uint64_t i = 0; i < RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS + 50; i++) {
        char key[64];
        snprintf(key, sizeof key, "tenant:n%llu:rpm", (unsigned long long)i);
        assert_true(reserve(backend, 100 + i, key, 1).allowed);
    }
    memset(sums, 0, sizeof sums);
    assert_int_equal(rl_backend_template_usage(backend, patterns, 1, sums), RL_OK);
    assert_true(sums[0].partial);
    assert_true(sums[0].limits >= RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS &&
                sums[0].limits < RL__REDIS_TEMPLATE_USAGE_MAX_LIMITS + 51);
    assert_int_equal(sums[0].capacity, 100 * sums[0].limits);
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
        cmocka_unit_test(a_limit_is_made_on_first_use_and_is_no_definition),
        cmocka_unit_test(the_most_specific_template_makes_the_limit),
        cmocka_unit_test(a_keys_own_limit_wins_and_its_delete_returns_it_to_the_template),
        cmocka_unit_test(made_limits_are_forgotten_once_they_hold_nothing),
        cmocka_unit_test(a_complete_after_its_limit_was_forgotten_is_audited),
        cmocka_unit_test(a_template_replaced_is_followed_by_its_limits),
        cmocka_unit_test(a_template_deleted_drops_its_limits),
        cmocka_unit_test(two_daemons_share_templates),
        cmocka_unit_test(an_optional_key_a_template_matches_is_reserved),
        cmocka_unit_test(a_budget_is_made_from_its_template),
        cmocka_unit_test(a_redis_that_lost_everything_gets_templates_back_not_made_limits),
        cmocka_unit_test(a_bad_template_is_refused),
        cmocka_unit_test(the_submitter_and_allotments_pass_templates_through),
        cmocka_unit_test(a_templates_limits_are_summed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
