/* test_limiter_conformance.c — one table of cases, written against
 * rl_limiter_* only, run unchanged against both implementations: the local
 * limiter on a limits.json in a temp dir, and the http limiter against a
 * ratelimiterd started on the same limits.json. limiter.h promises they
 * behave identically; this is where that promise is checked.
 *
 * Every case has its own keys (prefix "conf:<case>:"), so the cases do not
 * depend on each other's usage, nor on their order. Lease ids are fresh
 * ULIDs each time.
 *
 * Changing a limit is the one thing the Limiter interface does not do: the
 * fixture's define() does it the way each mode does, PUT /v1/admin/limits
 * for the daemon and rl_limiter_local_define in-process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/batcher.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/ulid.h"
#include "support/daemon.h"
#include "support/http_client.h"

#define ROLLING(key, capacity)                                                               \
    "{\"key\":\"" key "\",\"kind\":\"rolling\",\"capacity\":" #capacity                      \
    ",\"window_seconds\":60,\"timeout_seconds\":0,\"unit\":\"\",\"description\":\"\","       \
    "\"overage\":\"debt\"}"
#define CONCURRENCY(key, capacity)                                                           \
    "{\"key\":\"" key "\",\"kind\":\"concurrency\",\"capacity\":" #capacity                  \
    ",\"window_seconds\":0,\"timeout_seconds\":300,\"unit\":\"\",\"description\":\"\","      \
    "\"overage\":\"debt\"}"

static const char limits_json[] =
    "[" ROLLING("conf:allow:rpm", 2) "," ROLLING("conf:aon:a", 10) "," ROLLING("conf:aon:b", 1) ","
    ROLLING("conf:idem:tpm", 1) "," CONCURRENCY("conf:stays:conc", 1) "," ROLLING("conf:unknown:known", 100) ","
    ROLLING("conf:exceeds:tpm", 5) "," CONCURRENCY("conf:release:conc", 1) ","
    ROLLING("conf:reconcile:tpm", 100) "," ROLLING("conf:batch:rpm", 3) ","
    ROLLING("conf:invalid:rpm", 1) "," ROLLING("conf:max:rpm", 1000) "," ROLLING("conf:decrease:tpm", 10) ","
    ROLLING("conf:reuse:a", 10) "," ROLLING("conf:reuse:b", 10) "," ROLLING("conf:opt:rpm", 2) ","
    CONCURRENCY("conf:dry:conc", 1) "," ROLLING("conf:dry:tpm", 10) "]\n";

/* ---- the two implementations -------------------------------------------- */

typedef struct fixture {
    rl_limiter *limiter; /* what the cases call */
    rl_limiter *local;   /* the local limiter under it, for define_local */
    /* Changes a rolling limit's capacity (window 60 s), as the mode does. */
    void (*define)(struct fixture *f, const char *key, uint64_t capacity);
    rl_test_daemon daemon; /* http only */
    char dir[64];          /* local only */
    char path[128];
} fixture;

static void define_local(fixture *f, const char *key, uint64_t capacity) {
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = capacity, .window_seconds = 60};
    snprintf(def.key, sizeof def.key, "%s", key);
    assert_int_equal(rl_limiter_local_define(f->local, &def, NULL), RL_OK);
}

static void define_http(fixture *f, const char *key, uint64_t capacity) {
    char body[512];
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%llu,\"window_seconds\":60}", key,
             (unsigned long long)capacity);
    rl_test_client client;
    assert_true(rl_test_client_init(&client, f->daemon.port));
    rl_test_response response;
    assert_int_equal(rl_test_client_request(&client, "PUT", "/v1/admin/limits", body, &response), 200);
    rl_test_response_free(&response);
    rl_test_client_cleanup(&client);
}

static int setup_local(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    f.define = define_local;
    snprintf(f.dir, sizeof f.dir, "/tmp/rl_conformance_XXXXXX");
    if (mkdtemp(f.dir) == NULL) return -1;
    snprintf(f.path, sizeof f.path, "%s/limits.json", f.dir);
    FILE *file = fopen(f.path, "w");
    if (file == NULL) return -1;
    fputs(limits_json, file);
    fclose(file);
    char err[RL_LIMITER_ERR_SIZE];
    if (rl_limiter_local_open(f.path, NULL, &f.limiter, err) != RL_OK) {
        fprintf(stderr, "local open: %s\n", err);
        return -1;
    }
    f.local = f.limiter;
    *state = &f;
    return 0;
}

static int teardown_local(void **state) {
    fixture *f = *state;
    rl_limiter_destroy(f->limiter);
    unlink(f->path);
    rmdir(f->dir);
    return 0;
}

static int setup_http(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    f.define = define_http;
    rl_test_daemon_init(&f.daemon);
    rl_test_daemon_write_registry(&f.daemon, limits_json);
    if (!rl_test_daemon_start(&f.daemon, NULL)) return -1;
    char url[64], err[RL_LIMITER_ERR_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)f.daemon.port);
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = url;
    if (rl_limiter_http_open(&options, &f.limiter, err) != RL_OK) {
        fprintf(stderr, "http open: %s\n", err);
        return -1;
    }
    *state = &f;
    return 0;
}

static int teardown_http(void **state) {
    fixture *f = *state;
    rl_limiter_destroy(f->limiter);
    int status = rl_test_daemon_stop(&f->daemon);
    rl_test_daemon_cleanup(&f->daemon);
    return status == 0 ? 0 : -1;
}

/* The same cases through the client-side batcher: batching must not change
 * any outcome. The batcher owns the limiter it wraps. */
static int wrap_in_batcher(void **state) {
    fixture *f = *state;
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    options.owns_inner = true;
    rl_limiter *batching;
    if (rl_limiter_batching_open(f->limiter, &options, &batching) != RL_OK) return -1;
    f->limiter = batching;
    return 0;
}

static int setup_local_batching(void **state) { return setup_local(state) != 0 ? -1 : wrap_in_batcher(state); }
static int setup_http_batching(void **state) { return setup_http(state) != 0 ? -1 : wrap_in_batcher(state); }

/* ---- helpers ------------------------------------------------------------- */

static rl_limiter *limiter_of(void **state) { return ((fixture *)*state)->limiter; }

static char *new_lease(char out[RL_ULID_TEXT_SIZE]) {
    assert_non_null(rl_ulid_new(out));
    return out;
}

/* A one-requirement reserve; asserts the call itself succeeded. */
static rl_reserve_result reserve_one(rl_limiter *l, const char *lease, const char *key, uint64_t amount) {
    rl_requirement requirement = {key, amount, false};
    rl_reserve_request request = {lease, NULL, &requirement, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    return result;
}

static void assert_allowed(rl_reserve_result r) {
    assert_true(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_true(r.reserved_at_unix_ms > 0);
    assert_int_equal(r.retry_after_ms, 0);
    assert_null(r.status_key);
    assert_null(r.denied_by.key);
}

static void assert_denied(rl_reserve_result r) {
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_OK);
    assert_true(r.retry_after_ms > 0);
    assert_int_equal(r.reserved_at_unix_ms, 0);
    assert_null(r.status_key);
    assert_int_equal(r.denied_by.reason, RL_DENIAL_CAPACITY); /* a plain denial still names its limit */
    assert_non_null(r.denied_by.key);
    assert_true(r.denied_by.available < r.denied_by.requested);
}

static rl_status complete_one(rl_limiter *l, const char *lease, const char *key, uint64_t actual) {
    rl_actual a = {key, actual};
    rl_complete_request request = {lease, NULL, key != NULL ? &a : NULL, key != NULL ? 1u : 0u};
    return rl_limiter_complete(l, &request);
}

/* ---- cases --------------------------------------------------------------- */

static void allow_then_deny_with_retry_after(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(lease), "conf:allow:rpm", 1));
    assert_allowed(reserve_one(l, new_lease(lease), "conf:allow:rpm", 1));
    rl_reserve_result denied = reserve_one(l, new_lease(lease), "conf:allow:rpm", 1);
    assert_denied(denied);
    assert_true(denied.retry_after_ms <= 60000); /* the window is 60 s */
}

static void all_or_nothing_across_keys(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    rl_requirement both[] = {{"conf:aon:a", 5, false}, {"conf:aon:b", 1, false}};
    rl_reserve_request request = {new_lease(lease), "job-1", both, 2, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_allowed(result);
    /* b is full now: the second lease is denied and takes nothing from a. */
    request.lease_id = new_lease(lease);
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_denied(result);
    /* denied_by names b, the one without room, by the caller's own key */
    assert_string_equal(result.denied_by.key, "conf:aon:b");
    assert_int_equal(result.denied_by.requested, 1);
    assert_int_equal(result.denied_by.available, 0);
    assert_int_equal(result.denied_by.capacity, 1);
    assert_allowed(reserve_one(l, new_lease(lease), "conf:aon:a", 5)); /* a still had 5 */
    assert_denied(reserve_one(l, new_lease(lease), "conf:aon:a", 1));
}

static void retry_of_the_same_lease_is_idempotent(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    new_lease(lease);
    rl_reserve_result first = reserve_one(l, lease, "conf:idem:tpm", 1);
    assert_allowed(first);
    /* Capacity 1: a second reservation would be denied; a retry is not one. */
    rl_reserve_result again = reserve_one(l, lease, "conf:idem:tpm", 1);
    assert_allowed(again);
    assert_int_equal(again.reserved_at_unix_ms, first.reserved_at_unix_ms);
    char other[RL_ULID_TEXT_SIZE];
    assert_denied(reserve_one(l, new_lease(other), "conf:idem:tpm", 1));
}

static void denied_lease_stays_denied(void **state) {
    rl_limiter *l = limiter_of(state);
    char holder[RL_ULID_TEXT_SIZE], denied[RL_ULID_TEXT_SIZE], fresh[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(holder), "conf:stays:conc", 1));
    assert_denied(reserve_one(l, new_lease(denied), "conf:stays:conc", 1));
    assert_int_equal(complete_one(l, holder, NULL, 0), RL_OK);
    /* The slot is free, but a denied lease keeps its first outcome. */
    assert_denied(reserve_one(l, denied, "conf:stays:conc", 1));
    assert_allowed(reserve_one(l, new_lease(fresh), "conf:stays:conc", 1));
}

/* A lease id reused with other requirements: a lease_id_conflict result
 * (over HTTP a 409 with a result body), never the first outcome. */
static void a_reused_lease_id_is_a_conflict_result(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE], filler[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(lease), "conf:reuse:a", 1));
    assert_allowed(reserve_one(l, new_lease(filler), "conf:reuse:b", 10));
    rl_reserve_result reuse = reserve_one(l, lease, "conf:reuse:b", 10);
    assert_false(reuse.allowed);
    assert_int_equal(reuse.status, RL_LEASE_ID_CONFLICT);
    assert_null(reuse.status_key);
    assert_int_equal(reuse.reserved_at_unix_ms, 0);
    assert_allowed(reserve_one(l, lease, "conf:reuse:a", 1)); /* the true retry */
    assert_allowed(reserve_one(l, new_lease(filler), "conf:reuse:a", 9)); /* a still had 9 */
}

static void unknown_key_is_a_result_naming_the_request_key(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    char unknown_key[] = "conf:unknown:nope"; /* the caller's own memory */
    rl_requirement requirements[] = {{"conf:unknown:known", 1, false}, {unknown_key, 1, false}};
    rl_reserve_request request = {new_lease(lease), NULL, requirements, 2, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_false(result.allowed);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    assert_ptr_equal(result.status_key, unknown_key); /* the limiter has no copy of it */
    assert_int_equal(result.retry_after_ms, 0);
    /* All or nothing: the known key was not charged. */
    assert_allowed(reserve_one(l, new_lease(lease), "conf:unknown:known", 100));
}

static void amount_above_capacity_never_fits(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    char key[] = "conf:exceeds:tpm";
    rl_reserve_result r = reserve_one(l, new_lease(lease), key, 6);
    assert_false(r.allowed);
    assert_int_equal(r.status, RL_EXCEEDS_CAPACITY);
    /* The request's key, or the limiter's own copy of it (limiter.h). */
    assert_string_equal(r.status_key, key);
    assert_int_equal(r.retry_after_ms, 0); /* retrying cannot help */
    assert_allowed(reserve_one(l, new_lease(lease), key, 5));
}

static void complete_releases_concurrency(void **state) {
    rl_limiter *l = limiter_of(state);
    char first[RL_ULID_TEXT_SIZE], lease[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(first), "conf:release:conc", 1));
    assert_denied(reserve_one(l, new_lease(lease), "conf:release:conc", 1));
    assert_int_equal(complete_one(l, first, NULL, 0), RL_OK); /* empty actuals */
    assert_int_equal(complete_one(l, first, NULL, 0), RL_OK); /* idempotent */
    assert_allowed(reserve_one(l, new_lease(lease), "conf:release:conc", 1));
    assert_denied(reserve_one(l, new_lease(lease), "conf:release:conc", 1));
}

static void complete_reconciles_tokens(void **state) {
    rl_limiter *l = limiter_of(state);
    char first[RL_ULID_TEXT_SIZE], lease[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(first), "conf:reconcile:tpm", 100));
    assert_denied(reserve_one(l, new_lease(lease), "conf:reconcile:tpm", 50));
    /* The call used 40 of the 100 reserved: 60 come back at once. */
    assert_int_equal(complete_one(l, first, "conf:reconcile:tpm", 40), RL_OK);
    assert_allowed(reserve_one(l, new_lease(lease), "conf:reconcile:tpm", 60));
    assert_denied(reserve_one(l, new_lease(lease), "conf:reconcile:tpm", 1));
}

static void complete_of_an_unknown_lease_is_ok(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE];
    assert_int_equal(complete_one(l, new_lease(lease), NULL, 0), RL_OK);
    assert_int_equal(complete_one(l, new_lease(lease), "conf:reconcile:tpm", 3), RL_OK);
}

static void batch_keeps_order_with_mixed_results(void **state) {
    rl_limiter *l = limiter_of(state);
    char leases[5][RL_ULID_TEXT_SIZE];
    char key[] = "conf:batch:rpm", unknown[] = "conf:batch:nope";
    rl_requirement r0 = {key, 1, false}, r1 = {key, 10, false}, r2 = {unknown, 1, false}, r3 = {key, 2, false}, r4 = {key, 1, false};
    rl_reserve_request requests[5] = {
        {new_lease(leases[0]), NULL, &r0, 1, false}, {new_lease(leases[1]), NULL, &r1, 1, false},
        {new_lease(leases[2]), NULL, &r2, 1, false}, {new_lease(leases[3]), NULL, &r3, 1, false},
        {new_lease(leases[4]), NULL, &r4, 1, false},
    };
    rl_reserve_result results[5];
    assert_int_equal(rl_limiter_reserve_batch(l, requests, 5, results), RL_OK);
    assert_allowed(results[0]);
    assert_false(results[1].allowed);
    assert_int_equal(results[1].status, RL_EXCEEDS_CAPACITY);
    assert_string_equal(results[1].status_key, key);
    assert_false(results[2].allowed);
    assert_int_equal(results[2].status, RL_UNKNOWN_LIMIT_KEY);
    assert_ptr_equal(results[2].status_key, unknown);
    assert_allowed(results[3]); /* 1 + 2 = the capacity of 3 */
    assert_denied(results[4]);

    /* The same batch again: every lease keeps its first outcome. */
    rl_reserve_result again[5];
    assert_int_equal(rl_limiter_reserve_batch(l, requests, 5, again), RL_OK);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(again[i].allowed, results[i].allowed);
        assert_int_equal(again[i].status, results[i].status);
        assert_int_equal(again[i].reserved_at_unix_ms, results[i].reserved_at_unix_ms);
    }

    rl_complete_request completes[3] = {
        {leases[0], NULL, NULL, 0}, {leases[3], NULL, NULL, 0}, {leases[4], NULL, NULL, 0}};
    rl_status statuses[3] = {RL_TIMEOUT, RL_TIMEOUT, RL_TIMEOUT};
    assert_int_equal(rl_limiter_complete_batch(l, completes, 3, statuses), RL_OK);
    for (size_t i = 0; i < 3; i++) assert_int_equal(statuses[i], RL_OK);
}

static void largest_batch_is_served_and_one_more_refused(void **state) {
    rl_limiter *l = limiter_of(state);
    enum { N = RL_LIMITER_MAX_BATCH + 1 };
    static char leases[N][RL_ULID_TEXT_SIZE];
    static rl_reserve_request requests[N];
    static rl_reserve_result results[N];
    rl_requirement requirement = {"conf:max:rpm", 1, false};
    for (size_t i = 0; i < N; i++)
        requests[i] = (rl_reserve_request){new_lease(leases[i]), NULL, &requirement, 1, false};
    assert_int_equal(rl_limiter_reserve_batch(l, requests, N, results), RL_INVALID_REQUEST);
    assert_int_equal(rl_limiter_reserve_batch(l, requests, N - 1, results), RL_OK);
    for (size_t i = 0; i < N - 1; i++) assert_allowed(results[i]);
    /* Nothing of the refused call was reserved: 256 of 1000 are used. */
    char lease[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(lease), "conf:max:rpm", 1000 - 256));
}

static void invalid_requests_are_refused_before_anything_changes(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE], valid[RL_ULID_TEXT_SIZE];
    rl_reserve_result results[2];
    rl_requirement one = {"conf:invalid:rpm", 1, false};
    rl_requirement zero = {"conf:invalid:rpm", 0, false};
    rl_requirement twice[] = {{"conf:invalid:rpm", 1, false}, {"conf:invalid:rpm", 1, false}};
    rl_requirement bad_key = {"conf:invalid rpm", 1, false};
    const rl_reserve_request bad[] = {
        {"not-a-ulid", NULL, &one, 1, false},
        {"8ZZZZZZZZZZZZZZZZZZZZZZZZZ", NULL, &one, 1, false}, /* overflows 128 bits */
        {NULL, NULL, &one, 1, false},
        {new_lease(lease), NULL, &one, 0, false},  /* no requirements */
        {lease, NULL, &zero, 1, false},            /* amount 0 */
        {lease, NULL, twice, 2, false},            /* a key twice */
        {lease, NULL, &bad_key, 1, false},         /* a space in the key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* Alone, and in a batch after a valid lease that must not be reserved. */
        assert_int_equal(rl_limiter_reserve(l, &bad[i], &results[0]), RL_INVALID_REQUEST);
        assert_true(rl_limiter_last_error()[0] != '\0'); /* and says why */
        rl_reserve_request pair[2] = {{new_lease(valid), NULL, &one, 1, false}, bad[i]};
        assert_int_equal(rl_limiter_reserve_batch(l, pair, 2, results), RL_INVALID_REQUEST);
        assert_true(strncmp(rl_limiter_last_error(), "requests[1].", 12) == 0);
    }
    assert_int_equal(rl_limiter_reserve(l, &bad[4], &results[0]), RL_INVALID_REQUEST);
    assert_string_equal(rl_limiter_last_error(), "requirements[0].amount must be an integer 1..9007199254740992");
    assert_int_equal(rl_limiter_reserve_batch(l, bad, 0, results), RL_INVALID_REQUEST);
    /* Capacity 1 and still free: no refused call took anything. */
    assert_allowed(reserve_one(l, new_lease(lease), "conf:invalid:rpm", 1));
    assert_string_equal(rl_limiter_last_error(), ""); /* a call that succeeds leaves no error */

    rl_actual actual_twice[] = {{"conf:invalid:rpm", 1}, {"conf:invalid:rpm", 2}};
    rl_actual too_much = {"conf:invalid:rpm", RL_AMOUNT_MAX + 1};
    rl_complete_request bad_completes[] = {
        {"not-a-ulid", NULL, NULL, 0},
        {new_lease(lease), NULL, actual_twice, 2},
        {lease, NULL, &too_much, 1},
    };
    for (size_t i = 0; i < sizeof bad_completes / sizeof bad_completes[0]; i++)
        assert_int_equal(rl_limiter_complete(l, &bad_completes[i]), RL_INVALID_REQUEST);
}

/* A decrease below what is in use denies with limit_decreasing:<key> until
 * usage allows it; an increase applies at once and ends it. */
static void a_decreasing_limit_denies_naming_the_request_key(void **state) {
    fixture *f = *state;
    rl_limiter *l = f->limiter;
    char lease[RL_ULID_TEXT_SIZE];
    assert_allowed(reserve_one(l, new_lease(lease), "conf:decrease:tpm", 8));
    f->define(f, "conf:decrease:tpm", 5);
    rl_requirement requirement = {"conf:decrease:tpm", 1, false};
    rl_reserve_request request = {new_lease(lease), NULL, &requirement, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_false(result.allowed);
    assert_int_equal(result.status, RL_LIMIT_DECREASING);
    assert_string_equal(result.status_key, "conf:decrease:tpm");
    assert_int_equal(result.retry_after_ms, RL_DECREASING_RETRY_AFTER_MS);
    assert_string_equal(result.denied_by.key, "conf:decrease:tpm");
    assert_int_equal(result.denied_by.reason, RL_DENIAL_DECREASING);
    assert_int_equal(result.denied_by.capacity, 5); /* what it decreases to */
    assert_int_equal(result.denied_by.available, 0);
    f->define(f, "conf:decrease:tpm", 20);
    assert_allowed(reserve_one(l, new_lease(lease), "conf:decrease:tpm", 12));
}

static rl_reserve_result reserve_request(rl_limiter *l, const char *lease, const rl_requirement *requirements,
                                         size_t count, bool dry_run) {
    rl_reserve_request request = {lease, NULL, requirements, count, dry_run};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    return result;
}

/* An optional key without a definition is skipped; a defined one reserved,
 * and denying, as any other; a retry must say optional where it did. */
static void optional_requirements_skip_undefined_keys(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE], other[RL_ULID_TEXT_SIZE];
    char none[] = "conf:opt:none";
    rl_requirement reqs[] = {{"conf:opt:rpm", 1, true}, {none, 1, true}};
    rl_reserve_result first = reserve_request(l, new_lease(lease), reqs, 2, false);
    assert_allowed(first);
    rl_reserve_result again = reserve_request(l, lease, reqs, 2, false);
    assert_allowed(again);
    assert_int_equal(again.reserved_at_unix_ms, first.reserved_at_unix_ms);
    rl_requirement required[] = {{"conf:opt:rpm", 1, true}, {none, 1, false}};
    assert_int_equal(reserve_request(l, lease, required, 2, false).status, RL_LEASE_ID_CONFLICT);
    rl_reserve_result unknown = reserve_request(l, new_lease(other), required, 2, false);
    assert_int_equal(unknown.status, RL_UNKNOWN_LIMIT_KEY);
    assert_ptr_equal(unknown.status_key, none);
    assert_allowed(reserve_request(l, new_lease(other), reqs, 2, false));
    rl_reserve_result denied = reserve_request(l, new_lease(other), reqs, 2, false); /* rpm has 2 */
    assert_denied(denied);
    assert_string_equal(denied.denied_by.key, "conf:opt:rpm");
    assert_int_equal(complete_one(l, lease, none, 5), RL_OK); /* a skipped key in a Complete: ignored */
}

/* A dry run answers what the reserve right after answers, holds nothing
 * and remembers no lease id; a remembered one answers its first outcome. */
static void a_dry_run_answers_and_changes_nothing(void **state) {
    rl_limiter *l = limiter_of(state);
    char lease[RL_ULID_TEXT_SIZE], holder[RL_ULID_TEXT_SIZE];
    rl_requirement conc[] = {{"conf:dry:conc", 1, false}, {"conf:dry:none", 1, true}};
    for (int i = 0; i < 3; i++) assert_allowed(reserve_request(l, new_lease(lease), conc, 2, true));
    rl_reserve_result real = reserve_request(l, lease, conc, 1, false); /* the id is new: nothing was remembered */
    assert_allowed(real);
    memcpy(holder, lease, sizeof holder);
    rl_reserve_result dry = reserve_request(l, new_lease(lease), conc, 1, true);
    assert_denied(dry);
    assert_string_equal(dry.denied_by.key, "conf:dry:conc");
    rl_reserve_result after = reserve_request(l, lease, conc, 1, false);
    assert_denied(after);
    /* a real clock: the reserve comes a few ms after the dry run */
    assert_in_range(after.retry_after_ms, dry.retry_after_ms - 1000, dry.retry_after_ms);
    assert_int_equal(after.denied_by.available, dry.denied_by.available);
    assert_int_equal(after.denied_by.capacity, dry.denied_by.capacity);
    /* remembered ids: the first outcome, or a conflict */
    rl_reserve_result replay = reserve_request(l, holder, conc, 1, true);
    assert_allowed(replay);
    assert_int_equal(replay.reserved_at_unix_ms, real.reserved_at_unix_ms);
    assert_int_equal(reserve_request(l, holder, conc, 2, true).status, RL_LEASE_ID_CONFLICT);
    /* an unknown key: the same result as a reserve's */
    char nope[] = "conf:dry:nope";
    rl_reserve_result unknown = reserve_request(l, new_lease(lease), &(rl_requirement){nope, 1, false}, 1, true);
    assert_int_equal(unknown.status, RL_UNKNOWN_LIMIT_KEY);
    assert_ptr_equal(unknown.status_key, nope);
    /* in a batch beside real ones, only the real ones hold */
    rl_requirement tpm = {"conf:dry:tpm", 6, false};
    char ids[3][RL_ULID_TEXT_SIZE];
    rl_reserve_request batch[] = {{new_lease(ids[0]), NULL, &tpm, 1, true},
                                  {new_lease(ids[1]), NULL, &tpm, 1, false},
                                  {new_lease(ids[2]), NULL, &tpm, 1, true}};
    rl_reserve_result results[3];
    assert_int_equal(rl_limiter_reserve_batch(l, batch, 3, results), RL_OK);
    assert_allowed(results[0]);
    assert_allowed(results[1]);
    assert_denied(results[2]);
    assert_int_equal(results[2].denied_by.available, 4);
    assert_int_equal(complete_one(l, holder, NULL, 0), RL_OK);
    assert_allowed(reserve_request(l, new_lease(lease), conc, 1, false));
}

#define CASES                                                                       \
    cmocka_unit_test(allow_then_deny_with_retry_after),                             \
        cmocka_unit_test(all_or_nothing_across_keys),                               \
        cmocka_unit_test(retry_of_the_same_lease_is_idempotent),                    \
        cmocka_unit_test(denied_lease_stays_denied),                                \
        cmocka_unit_test(a_reused_lease_id_is_a_conflict_result),                   \
        cmocka_unit_test(unknown_key_is_a_result_naming_the_request_key),           \
        cmocka_unit_test(amount_above_capacity_never_fits),                         \
        cmocka_unit_test(complete_releases_concurrency),                            \
        cmocka_unit_test(complete_reconciles_tokens),                               \
        cmocka_unit_test(complete_of_an_unknown_lease_is_ok),                       \
        cmocka_unit_test(batch_keeps_order_with_mixed_results),                     \
        cmocka_unit_test(largest_batch_is_served_and_one_more_refused),             \
        cmocka_unit_test(invalid_requests_are_refused_before_anything_changes),     \
        cmocka_unit_test(a_decreasing_limit_denies_naming_the_request_key),         \
        cmocka_unit_test(optional_requirements_skip_undefined_keys),                \
        cmocka_unit_test(a_dry_run_answers_and_changes_nothing)

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest local_cases[] = {CASES};
    const struct CMUnitTest http_cases[] = {CASES};
    const struct CMUnitTest local_batching_cases[] = {CASES};
    const struct CMUnitTest http_batching_cases[] = {CASES};
    int failed = cmocka_run_group_tests_name("conformance/local", local_cases, setup_local, teardown_local);
    failed += cmocka_run_group_tests_name("conformance/http", http_cases, setup_http, teardown_http);
    failed += cmocka_run_group_tests_name("conformance/local+batching", local_batching_cases, setup_local_batching,
                                          teardown_local);
    failed += cmocka_run_group_tests_name("conformance/http+batching", http_batching_cases, setup_http_batching,
                                          teardown_http);
    return failed;
}
