/* test_redis_backend.c — what only the redis backend does, against a real
 * redis-server: defining again what a restarted Redis lost (also what
 * another daemon defined), failing closed while Redis does not answer, by
 * one deadline, Completes kept and retried until it does, shared
 * definitions, refusing a Redis that evicts, telling a full one. (Its
 * accounting is test_backend_conformance's.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "ratelimiter/redis.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

static rl_test_redis server;

/* The options every backend here starts from. */
static void options_for(const char *prefix, rl_redis_options *options) {
    rl_redis_options_default(options);
    options->port = server.port;
    options->key_prefix = prefix;
    options->command_timeout_ms = 300;
}

static rl_backend *create(const rl_redis_options *options) {
    rl_backend *backend = NULL;
    char err[256];
    if (rl_redis_backend_create(options, &backend, err, sizeof err) != RL_OK) fail_msg("create: %s", err);
    return backend;
}

static rl_backend *open_backend(const char *prefix) {
    rl_redis_options options;
    options_for(prefix, &options);
    return create(&options);
}

/* A command's reply as an integer (or a bulk string's number). */
static long long redis_do(const char *format, ...) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_non_null(ctx);
    assert_int_equal(ctx->err, 0);
    va_list args;
    va_start(args, format);
    redisReply *reply = redisvCommand(ctx, format, args);
    va_end(args);
    assert_non_null(reply);
    long long value = reply->type == REDIS_REPLY_INTEGER ? reply->integer
                      : reply->type == REDIS_REPLY_STRING ? strtoll(reply->str, NULL, 10)
                                                          : 0;
    freeReplyObject(reply);
    redisFree(ctx);
    return value;
}

static unsigned long long used_memory(void) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    redisReply *reply = redisCommand(ctx, "INFO memory");
    assert_true(reply != NULL && reply->type == REDIS_REPLY_STRING);
    const char *at = strstr(reply->str, "used_memory:");
    assert_non_null(at);
    unsigned long long used = strtoull(at + strlen("used_memory:"), NULL, 10);
    freeReplyObject(reply);
    redisFree(ctx);
    return used;
}

static void define(rl_backend *backend, const char *key, rl_kind kind, uint64_t capacity) {
    rl_limit_def def = {.kind = kind, .capacity = capacity};
    snprintf(def.key, sizeof def.key, "%s", key);
    if (kind == RL_KIND_ROLLING) def.window_seconds = 60;
    else def.timeout_seconds = 60;
    assert_int_equal(rl_backend_apply_definition(backend, &def, NULL), RL_OK);
}

static rl_reserve_result reserve(rl_backend *backend, uint64_t lease, const char *key) {
    char id[27];
    rl_requirement one = {key, 1, false};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &one, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(backend, &request, &result);
    return result;
}

static void definitions_lost_by_redis_are_defined_again(void **state) {
    (void)state;
    rl_backend *backend = open_backend("heal:");
    define(backend, "k:rpm", RL_KIND_ROLLING, 2);
    assert_true(reserve(backend, 1, "k:rpm").allowed);
    redis_do("FLUSHALL"); /* as a restart without persistence: definitions and state gone */
    rl_reserve_result result = reserve(backend, 2, "k:rpm");
    assert_true(result.allowed); /* not unknown_limit_key: defined again from what this daemon saw */
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(backend, "k:rpm", &usage), RL_OK);
    assert_int_equal(usage.capacity, 2);
    assert_int_equal(usage.used, 1); /* lease 1's reservation went with the flush */
    /* a key no daemon ever defined stays unknown */
    assert_int_equal(reserve(backend, 3, "never:defined").status, RL_UNKNOWN_LIMIT_KEY);
    rl_backend_destroy(backend);
}

static void two_backends_share_definitions_and_usage(void **state) {
    (void)state;
    rl_backend *a = open_backend("share:"), *b = open_backend("share:");
    define(a, "s:conc", RL_KIND_CONCURRENCY, 1);
    rl_limit_def *defs = NULL;
    size_t count = 0;
    assert_int_equal(b->ops->list_definitions(b, &defs, &count), RL_OK);
    assert_int_equal(count, 1);
    assert_string_equal(defs[0].key, "s:conc");
    free(defs);
    /* one definition, and how many, without listing them all */
    rl_limit_def one;
    assert_int_equal(b->ops->get_definition(b, "s:conc", &one), RL_OK);
    assert_string_equal(one.key, "s:conc");
    assert_int_equal(one.kind, RL_KIND_CONCURRENCY);
    assert_int_equal(one.capacity, 1);
    assert_int_equal(b->ops->get_definition(b, "s:none", &one), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(b->ops->count_definitions(b, &count), RL_OK);
    assert_int_equal(count, 1);
    assert_true(reserve(a, 1, "s:conc").allowed);
    assert_false(reserve(b, 2, "s:conc").allowed);
    char id[27];
    rl_complete_request done = {rl_test_lease_id(1, id), NULL, NULL, 0};
    assert_int_equal(rl_backend_complete(b, &done), RL_OK); /* a hold taken through a, released through b */
    assert_true(reserve(a, 3, "s:conc").allowed);
    rl_backend_destroy(a);
    rl_backend_destroy(b);
}

static void fails_closed_while_redis_is_stuck_and_retries_completes(void **state) {
    (void)state;
    rl_backend *backend = open_backend("stuck:");
    define(backend, "x:conc", RL_KIND_CONCURRENCY, 1);
    assert_true(reserve(backend, 1, "x:conc").allowed);
    assert_int_equal(rl_backend_health(backend, NULL, 0), RL_OK);

    redis_do("CLIENT PAUSE 1500 WRITE"); /* every script call writes: they all wait */
    rl_reserve_result result = reserve(backend, 2, "x:conc");
    assert_false(result.allowed);
    assert_int_equal(result.status, RL_BACKEND_ERROR); /* nothing admitted without the store */
    char id[27];
    rl_complete_request done = {rl_test_lease_id(1, id), NULL, NULL, 0};
    assert_int_equal(rl_backend_complete(backend, &done), RL_OK); /* taken: kept for retrying */

    /* once Redis answers again, the kept Complete releases the hold */
    long deadline_ms = rl_test_redis_now_ms() + 10000;
    bool allowed = false;
    for (uint64_t lease = 10; !allowed && rl_test_redis_now_ms() < deadline_ms; lease++) {
        allowed = reserve(backend, lease, "x:conc").allowed;
        if (!allowed) rl_test_redis_sleep_ms(100);
    }
    assert_true(allowed);
    rl_backend_destroy(backend);
}

/* A listing reads the definitions a page (SSCAN) per script call: more
 * than a page, all there once each, sorted; count and get agree. */
static void many_definitions_are_listed_in_pages(void **state) {
    (void)state;
    rl_backend *backend = open_backend("many:");
    enum { LIMITS = 1234 };
    for (int i = 0; i < LIMITS; i++) {
        char key[32];
        snprintf(key, sizeof key, "m:%04d", i);
        define(backend, key, i % 2 ? RL_KIND_ROLLING : RL_KIND_CONCURRENCY, (uint64_t)i + 1);
    }
    rl_limit_def *defs = NULL;
    size_t count = 0;
    assert_int_equal(backend->ops->list_definitions(backend, &defs, &count), RL_OK);
    assert_int_equal(count, LIMITS);
    for (size_t i = 0; i < count; i++) {
        char key[32];
        snprintf(key, sizeof key, "m:%04zu", i);
        assert_string_equal(defs[i].key, key);
        assert_int_equal(defs[i].capacity, i + 1);
    }
    free(defs);
    assert_int_equal(backend->ops->count_definitions(backend, &count), RL_OK);
    assert_int_equal(count, LIMITS);
    rl_limit_def one;
    assert_int_equal(backend->ops->get_definition(backend, "m:0777", &one), RL_OK);
    assert_int_equal(one.capacity, 778);
    rl_backend_destroy(backend);
}

/* A definition's JSON in Redis that does not decode (edited by hand, or
 * holding a number no build writes: 2^53 + 1, which a double would round to
 * 2^53) is an error, never an absence or a rounded limit: a listing that
 * left it out would let a daemon starting up seed the key again from its
 * own registry file. A PUT of the key writes a readable one again. */
static void a_stored_definition_that_does_not_decode_is_an_error(void **state) {
    (void)state;
    rl_backend *backend = open_backend("unreadable:");
    define(backend, "u:a", RL_KIND_ROLLING, 5);
    define(backend, "u:b", RL_KIND_ROLLING, 6);
    redis_do("HSET unreadable:l:u:b def {\"key\":\"u:b\",\"kind\":\"rolling\","
             "\"capacity\":9007199254740993,\"window_seconds\":60}");
    rl_limit_def one;
    assert_int_equal(backend->ops->get_definition(backend, "u:b", &one), RL_BACKEND_ERROR);
    assert_int_equal(backend->ops->get_definition(backend, "u:a", &one), RL_OK);
    rl_limit_def *defs = NULL;
    size_t count = 0;
    assert_int_equal(backend->ops->list_definitions(backend, &defs, &count), RL_BACKEND_ERROR);
    assert_null(defs);
    assert_int_equal(count, 0);

    define(backend, "u:b", RL_KIND_ROLLING, 7);
    assert_int_equal(backend->ops->get_definition(backend, "u:b", &one), RL_OK);
    assert_int_equal(one.capacity, 7);
    assert_int_equal(backend->ops->list_definitions(backend, &defs, &count), RL_OK);
    assert_int_equal(count, 2);
    free(defs);
    rl_backend_destroy(backend);
}

/* Every key of a prefix but the definitions (P l:*, and P defs* the set of
 * them and the numbering of their changes: one entry per limit) and the
 * audit log (P audit:*, kept for its retention), with the TTL of each in
 * ms: counts them and fails on one without a TTL. */
static size_t state_keys(const char *prefix) {
    redisContext *ctx = redisConnect("127.0.0.1", server.port);
    assert_true(ctx != NULL && ctx->err == 0);
    char cursor[32] = "0", definitions[64];
    snprintf(definitions, sizeof definitions, "%sl:", prefix);
    size_t count = 0;
    do {
        redisReply *scan = redisCommand(ctx, "SCAN %s MATCH %s* COUNT 1000", cursor, prefix);
        assert_true(scan != NULL && scan->type == REDIS_REPLY_ARRAY && scan->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", scan->element[0]->str);
        for (size_t i = 0; i < scan->element[1]->elements; i++) {
            const char *key = scan->element[1]->element[i]->str;
            if (strncmp(key, definitions, strlen(definitions)) == 0 || strncmp(key + strlen(prefix), "defs", 4) == 0 ||
                strncmp(key + strlen(prefix), "audit:", 6) == 0)
                continue;
            redisReply *ttl = redisCommand(ctx, "PTTL %s", key);
            assert_non_null(ttl);
            /* -1: no TTL; -2: gone since the scan; 0: due within the millisecond */
            if (ttl->type != REDIS_REPLY_INTEGER || ttl->integer == -1)
                fail_msg("%s has no TTL (PTTL %lld)", key, ttl->integer);
            freeReplyObject(ttl);
            count++;
        }
        freeReplyObject(scan);
    } while (strcmp(cursor, "0") != 0);
    redisFree(ctx);
    return count;
}

/* Spec "time and memory": leases never completed must not hold Redis memory
 * past their windows and lease memory, without any sweep. */
static void state_keys_expire_so_redis_memory_stays_bounded(void **state) {
    (void)state;
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = server.port;
    options.key_prefix = "ttl:";
    options.lease_memory_ms = 300;
    options.sweep_interval_ms = 0; /* the TTLs alone */
    rl_backend *backend = NULL;
    char err[256];
    assert_int_equal(rl_redis_backend_create(&options, &backend, err, sizeof err), RL_OK);
    rl_limit_def rolling = {.key = "t:tpm", .kind = RL_KIND_ROLLING, .capacity = 100000, .window_seconds = 1};
    rl_limit_def holds = {.key = "t:conc", .kind = RL_KIND_CONCURRENCY, .capacity = 100000, .timeout_seconds = 1};
    assert_int_equal(rl_backend_apply_definition(backend, &rolling, NULL), RL_OK);
    assert_int_equal(rl_backend_apply_definition(backend, &holds, NULL), RL_OK);
    rl_requirement both[] = {{"t:tpm", 100, false}, {"t:conc", 1, false}};
    enum { LEASES = 64, PER_CALL = 16 };
    char ids[LEASES][27];
    for (int first = 0; first < LEASES; first += PER_CALL) {
        rl_reserve_request requests[PER_CALL];
        rl_reserve_result results[PER_CALL];
        for (int i = 0; i < PER_CALL; i++)
            requests[i] = (rl_reserve_request){rl_test_lease_id((uint64_t)(first + i + 1), ids[first + i]), NULL, both, 2, false};
        rl_backend_reserve_batch(backend, requests, PER_CALL, results);
        for (int i = 0; i < PER_CALL; i++) assert_true(results[i].allowed);
        rl_test_redis_sleep_ms(3); /* a few buckets, not one */
    }
    for (int i = 0; i < LEASES; i += 2) { /* half completed, half never */
        rl_actual used = {"t:tpm", 10};
        rl_complete_request done = {ids[i], NULL, &used, 1};
        assert_int_equal(rl_backend_complete(backend, &done), RL_OK);
    }
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(backend, "t:tpm", &usage), RL_OK);
    assert_int_equal(usage.used, 32 * 100 + 32 * 10);
    assert_int_equal(usage.active, LEASES);
    assert_int_equal(rl_backend_limit_usage(backend, "t:conc", &usage), RL_OK);
    assert_int_equal(usage.used, 32);
    assert_int_equal(usage.active, 32);
    assert_true(state_keys("ttl:") > LEASES); /* the lease records and the buckets, each with a TTL */

    /* windows (1 s) + a second for the buckets, 1.3 s for the lease records */
    long deadline_ms = rl_test_redis_now_ms() + 8000;
    size_t left;
    while ((left = state_keys("ttl:")) != 0 && rl_test_redis_now_ms() < deadline_ms) rl_test_redis_sleep_ms(100);
    assert_int_equal(left, 0);
    assert_int_equal(rl_backend_limit_usage(backend, "t:tpm", &usage), RL_OK);
    assert_int_equal(usage.used, 0);
    assert_int_equal(usage.active, 0);
    rl_backend_destroy(backend);
}

/* Issue 9 (2): daemon b never read the definition a made, yet once Redis
 * comes back empty b puts it back: by itself (it follows the store's
 * definitions, a script call a second), and at once on a reserve naming it. */
static void definitions_made_through_another_daemon_are_put_back(void **state) {
    (void)state;
    rl_backend *a = open_backend("follow:"), *b = open_backend("follow:");
    define(a, "f:rpm", RL_KIND_ROLLING, 5);
    rl_backend_destroy(a); /* nothing of a is left to put anything back */
    rl_test_redis_sleep_ms(2500); /* b's background step runs every second */
    redis_do("FLUSHALL");
    long deadline_ms = rl_test_redis_now_ms() + 5000;
    while (redis_do("EXISTS follow:l:f:rpm") == 0 && rl_test_redis_now_ms() < deadline_ms) rl_test_redis_sleep_ms(50);
    assert_int_equal(redis_do("EXISTS follow:l:f:rpm"), 1);
    rl_limit_def def;
    assert_int_equal(b->ops->get_definition(b, "f:rpm", &def), RL_OK);
    assert_int_equal(def.capacity, 5);

    redis_do("FLUSHALL"); /* and on the reserve path, before the next step */
    rl_reserve_result result = reserve(b, 1, "f:rpm");
    assert_true(result.allowed);
    rl_backend_destroy(b);
}

/* Issue 9 (4): a stopped Redis costs a caller one deadline, connect +
 * command timeout, whatever the pool retries inside it (the broken
 * connection is retried on a fresh one, which a paused Redis accepts). */
static void a_stuck_redis_fails_a_call_by_one_deadline(void **state) {
    (void)state;
    rl_redis_options options;
    options_for("deadline:", &options);
    options.connect_timeout_ms = 100;
    options.command_timeout_ms = 400;
    rl_backend *backend = create(&options);
    define(backend, "d:rpm", RL_KIND_ROLLING, 100);
    redis_do("CLIENT PAUSE 3000 ALL");
    long started_ms = rl_test_redis_now_ms();
    rl_reserve_result result = reserve(backend, 1, "d:rpm");
    long took_ms = rl_test_redis_now_ms() - started_ms;
    assert_int_equal(result.status, RL_BACKEND_ERROR);
    /* 500 ms is the bound; the margin is for a loaded machine, and still
     * well below the two command timeouts (800 ms) of a retry that starts
     * its clock again. */
    if (took_ms > 500 + 200) fail_msg("the reserve failed after %ld ms; its deadline was 500 ms", took_ms);
    redis_do("CLIENT UNPAUSE");
    rl_backend_destroy(backend);
}

/* Issue 9 (3): a Redis that may evict keys is refused at start, and once a
 * daemon sees its policy changed, /healthz says so; allow_eviction accepts it. */
static void an_evicting_redis_is_refused_unless_allowed(void **state) {
    (void)state;
    rl_backend *running = open_backend("evict:");
    redis_do("CONFIG SET maxmemory-policy allkeys-lru");
    rl_redis_options options;
    options_for("evict:", &options);
    rl_backend *backend = (rl_backend *)1;
    char err[512] = "";
    assert_int_equal(rl_redis_backend_create(&options, &backend, err, sizeof err), RL_BACKEND_ERROR);
    assert_null(backend);
    if (strstr(err, "maxmemory-policy allkeys-lru") == NULL || strstr(err, "redis.allow_eviction") == NULL)
        fail_msg("the refusal does not say why: %s", err);
    char detail[512];
    assert_int_equal(rl_backend_health(running, detail, sizeof detail), RL_BACKEND_ERROR);
    assert_non_null(strstr(detail, "maxmemory-policy allkeys-lru"));
    options.allow_eviction = true;
    rl_backend *allowed = create(&options);
    assert_int_equal(rl_backend_health(allowed, detail, sizeof detail), RL_OK);
    rl_backend_destroy(allowed);
    redis_do("CONFIG SET maxmemory-policy noeviction");
    assert_int_equal(rl_backend_health(running, detail, sizeof detail), RL_OK);
    rl_backend_destroy(running);
}

/* Issue 9 (3): close to maxmemory /healthz warns (RL_OK with a detail: the
 * daemon still serves); at it, Redis refuses every write, so every reserve
 * fails, and health says the backend cannot serve. */
static void health_tells_a_redis_near_or_at_its_maxmemory(void **state) {
    (void)state;
    rl_backend *backend = open_backend("full:");
    define(backend, "m:rpm", RL_KIND_ROLLING, 1000000);
    char detail[512];
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_OK);
    assert_string_equal(detail, "");

    redis_do("CONFIG SET maxmemory %llu", used_memory() * 100 / 95);
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_OK);
    if (strstr(detail, "of maxmemory") == NULL) fail_msg("no warning near maxmemory: \"%s\"", detail);

    redis_do("CONFIG SET maxmemory %llu", used_memory() / 2);
    assert_int_equal(reserve(backend, 1, "m:rpm").status, RL_BACKEND_ERROR); /* OOM: nothing admitted */
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_BACKEND_ERROR);
    if (strstr(detail, "refuses writes") == NULL) fail_msg("health does not say why: %s", detail);

    redis_do("CONFIG SET maxmemory 0");
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_OK);
    assert_string_equal(detail, "");
    assert_true(reserve(backend, 2, "m:rpm").allowed);
    rl_backend_destroy(backend);
}

/* Issue 10 (5): a failed script call keeps Redis's sentence up to
 * /healthz: degraded (the daemon still serves), with the script's name and
 * Redis's words, so that an operator learns why clients got backend_error. */
static void health_tells_a_failed_script_call(void **state) {
    (void)state;
    rl_backend *backend = open_backend("broken:");
    define(backend, "ok:rpm", RL_KIND_ROLLING, 10);
    char detail[512];
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_OK);
    assert_string_equal(detail, "");

    redis_do("SET broken:l:bad:rpm not-a-limit"); /* a key of the wrong type */
    assert_int_equal(reserve(backend, 1, "bad:rpm").status, RL_BACKEND_ERROR);
    assert_int_equal(rl_backend_health(backend, detail, sizeof detail), RL_OK);
    if (strstr(detail, "reserve.lua") == NULL || strstr(detail, "WRONGTYPE") == NULL)
        fail_msg("health does not say why the script failed: \"%s\"", detail);
    assert_non_null(strstr(detail, "(1 such failures since start)"));
    assert_true(reserve(backend, 2, "ok:rpm").allowed); /* the rest serves */
    redis_do("DEL broken:l:bad:rpm");
    rl_backend_destroy(backend);
}

static void unreachable_redis_is_a_clear_error_at_create(void **state) {
    (void)state;
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = 1; /* nothing listens there */
    rl_backend *backend = (rl_backend *)1;
    char err[256] = "";
    assert_int_equal(rl_redis_backend_create(&options, &backend, err, sizeof err), RL_BACKEND_ERROR);
    assert_null(backend);
    assert_non_null(strstr(err, "127.0.0.1:1"));
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
        cmocka_unit_test(definitions_lost_by_redis_are_defined_again),
        cmocka_unit_test(two_backends_share_definitions_and_usage),
        cmocka_unit_test(fails_closed_while_redis_is_stuck_and_retries_completes),
        cmocka_unit_test(many_definitions_are_listed_in_pages),
        cmocka_unit_test(a_stored_definition_that_does_not_decode_is_an_error),
        cmocka_unit_test(state_keys_expire_so_redis_memory_stays_bounded),
        cmocka_unit_test(unreachable_redis_is_a_clear_error_at_create),
        cmocka_unit_test(definitions_made_through_another_daemon_are_put_back),
        cmocka_unit_test(a_stuck_redis_fails_a_call_by_one_deadline),
        cmocka_unit_test(an_evicting_redis_is_refused_unless_allowed),
        cmocka_unit_test(health_tells_a_redis_near_or_at_its_maxmemory),
        cmocka_unit_test(health_tells_a_failed_script_call),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
