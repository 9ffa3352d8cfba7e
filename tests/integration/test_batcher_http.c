/* test_batcher_http.c — client-side batching against a real ratelimiterd:
 * many threads reserve and complete through a batcher over the http limiter,
 * so their calls reach the daemon as POST /v1/reserve/batch and
 * /v1/complete/batch. A counting decorator between the two shows the
 * coalescing and records what the daemon answered for each lease id, so
 * every caller's results are checked against its own leases.
 *
 * Worker threads only record; the main thread asserts (cmocka is not
 * thread-safe).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/batcher.h"
#include "ratelimiter/ulid.h"
#include "support/counting_limiter.h"
#include "support/daemon.h"
#include "support/lease_ids.h"

#define THREADS 16
#define LEASES_PER_THREAD 200
#define SHARED_CAPACITY 1000u
#define CONC_CAPACITY (THREADS * LEASES_PER_THREAD)
#define MAX_BATCH 64u

static const char limits_json[] =
    "[{\"key\":\"b:conc\",\"kind\":\"concurrency\",\"capacity\":3200,\"timeout_seconds\":3600,"
    "\"window_seconds\":0,\"unit\":\"inflight\",\"description\":\"\",\"overage\":\"debt\"},\n"
    " {\"key\":\"b:shared\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":3600,"
    "\"timeout_seconds\":0,\"unit\":\"requests\",\"description\":\"\",\"overage\":\"debt\"}]\n";

typedef struct fixture {
    rl_test_daemon daemon;
    rl_test_counting_limiter *counting; /* owns the http limiter */
    rl_limiter *batcher;                /* owns counting */
} fixture;

/* Lease ids are remembered by the daemon (a lease seen before gets its first
 * outcome), so each test uses its own range: lease_base + 1.. */
static uint64_t lease_base;
#define SHARED_LEASE_BASE 0u
#define CONC_LEASE_BASE 100000u
#define SINGLE_LEASE_BASE 200000u

/* What the daemon answered per lease, by lease number; written by the
 * reserve flusher thread only, read after the workers are joined. */
typedef struct outcome {
    int seen;
    bool allowed;
} outcome;
static outcome recorded[THREADS * LEASES_PER_THREAD + 1];

static void record_outcomes(void *context, const rl_reserve_request *requests, size_t count,
                            rl_reserve_result *results) {
    (void)context;
    for (size_t i = 0; i < count; i++) {
        uint64_t hi = 0, lo = 0;
        if (!rl_ulid_decode(requests[i].lease_id, RL_ULID_LEN, &hi, &lo) || lo <= lease_base ||
            lo > lease_base + THREADS * LEASES_PER_THREAD)
            abort();
        lo -= lease_base;
        recorded[lo].seen++;
        recorded[lo].allowed = results[i].allowed;
    }
}

typedef struct worker {
    rl_limiter *limiter;
    int index;
    const char *key;
    bool complete; /* complete the leases instead of reserving them */
    pthread_t thread;
    bool allowed[LEASES_PER_THREAD];
    uint64_t calls;
    int failures;
    rl_status status; /* one_reserve_main's call */
} worker;

static uint64_t lease_index(const worker *w, size_t i) { return (uint64_t)w->index * LEASES_PER_THREAD + i + 1; }
static uint64_t lease_number(const worker *w, size_t i) { return lease_base + lease_index(w, i); }

/* Calls of 1..4 leases, by thread, so that callers' batches of different
 * sizes share flushes. */
static void *worker_main(void *arg) {
    worker *w = arg;
    size_t per_call = 1 + (size_t)w->index % 4;
    rl_requirement req = {w->key, 1, false};
    for (size_t i = 0; i < LEASES_PER_THREAD;) {
        size_t n = LEASES_PER_THREAD - i < per_call ? LEASES_PER_THREAD - i : per_call;
        char ids[4][RL_ULID_TEXT_SIZE];
        rl_reserve_request reserves[4];
        rl_reserve_result results[4];
        rl_complete_request completes[4];
        rl_status statuses[4];
        for (size_t j = 0; j < n; j++) {
            rl_test_lease_id(lease_number(w, i + j), ids[j]);
            reserves[j] = (rl_reserve_request){ids[j], NULL, &req, 1, false};
            completes[j] = (rl_complete_request){ids[j], NULL, NULL, 0};
        }
        if (w->complete) {
            if (rl_limiter_complete_batch(w->limiter, completes, n, statuses) != RL_OK) w->failures++;
            for (size_t j = 0; j < n; j++) w->failures += statuses[j] != RL_OK;
        } else {
            if (rl_limiter_reserve_batch(w->limiter, reserves, n, results) != RL_OK) w->failures++;
            for (size_t j = 0; j < n; j++) {
                w->failures += results[j].status != RL_OK;
                w->allowed[i + j] = results[j].allowed;
            }
        }
        w->calls++;
        i += n;
    }
    return NULL;
}

static worker workers[THREADS];

/* One reserve of one lease; its call status is kept. */
static void *one_reserve_main(void *arg) {
    worker *w = arg;
    char id[RL_ULID_TEXT_SIZE];
    rl_requirement req = {w->key, 1, false};
    rl_reserve_request request = {rl_test_lease_id(lease_number(w, 0), id), NULL, &req, 1, false};
    rl_reserve_result result;
    w->status = rl_limiter_reserve(w->limiter, &request, &result);
    return NULL;
}

/* Runs THREADS workers to the end; returns the calls they made. */
static uint64_t run_workers(rl_limiter *limiter, const char *key, bool complete) {
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.limiter = limiter, .index = t, .key = key, .complete = complete};
        assert_int_equal(pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]), 0);
    }
    uint64_t calls = 0;
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(workers[t].thread, NULL), 0);
        assert_int_equal(workers[t].failures, 0);
        calls += workers[t].calls;
    }
    return calls;
}

static bool reserve_one(rl_limiter *limiter, const char *key, uint64_t lease, uint64_t amount, rl_status *status) {
    char id[RL_ULID_TEXT_SIZE];
    rl_requirement req = {key, amount, false};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &req, 1, false};
    rl_reserve_result result = {0};
    *status = rl_limiter_reserve(limiter, &request, &result);
    return result.allowed;
}

static void reserves_from_many_threads_are_matched_to_their_callers(void **state) {
    fixture *f = *state;
    memset(recorded, 0, sizeof recorded);
    lease_base = SHARED_LEASE_BASE;
    f->counting->observe_reserve = record_outcomes;
    rl_test_counts before = rl_test_counting_snapshot(f->counting);
    uint64_t calls = run_workers(f->batcher, "b:shared", false);
    f->counting->observe_reserve = NULL;

    uint64_t allowed = 0;
    for (int t = 0; t < THREADS; t++)
        for (size_t i = 0; i < LEASES_PER_THREAD; i++) {
            const outcome *o = &recorded[lease_index(&workers[t], i)];
            assert_int_equal(o->seen, 1);
            assert_int_equal(o->allowed, workers[t].allowed[i]);
            allowed += workers[t].allowed[i];
        }
    assert_int_equal(allowed, SHARED_CAPACITY); /* the daemon's count, not ours */
    rl_status status;
    assert_false(reserve_one(f->batcher, "b:shared", SINGLE_LEASE_BASE + 1, 1, &status));
    assert_int_equal(status, RL_OK);

    rl_test_counts after = rl_test_counting_snapshot(f->counting);
    uint64_t inner_calls = after.reserve_calls - before.reserve_calls;
    print_message("%llu reserve calls went out in %llu batches\n", (unsigned long long)calls,
                  (unsigned long long)inner_calls);
    assert_true(inner_calls < calls); /* batching happened */
    assert_true(after.largest_reserve_batch <= MAX_BATCH);
}

/* Every slot of a concurrency limit taken, then given back by batched
 * completes: a reserve of the whole capacity fits again. */
static void batched_completes_release_on_the_daemon(void **state) {
    fixture *f = *state;
    lease_base = CONC_LEASE_BASE;
    run_workers(f->batcher, "b:conc", false);
    for (int t = 0; t < THREADS; t++)
        for (size_t i = 0; i < LEASES_PER_THREAD; i++) assert_true(workers[t].allowed[i]);
    rl_status status;
    assert_false(reserve_one(f->batcher, "b:conc", SINGLE_LEASE_BASE + 2, 1, &status));
    assert_int_equal(status, RL_OK);

    rl_test_counts before = rl_test_counting_snapshot(f->counting);
    uint64_t calls = run_workers(f->batcher, "b:conc", true);
    rl_test_counts after = rl_test_counting_snapshot(f->counting);
    assert_int_equal(after.complete_leases - before.complete_leases, CONC_CAPACITY);
    assert_true(after.complete_calls - before.complete_calls < calls);
    assert_true(after.largest_complete_batch <= MAX_BATCH);
    assert_true(reserve_one(f->batcher, "b:conc", SINGLE_LEASE_BASE + 3, CONC_CAPACITY, &status));
    assert_int_equal(status, RL_OK);
}

/* Nothing listens: the one flush fails (after the http limiter's retries)
 * and each of its callers gets that same error, none a made-up result. */
static void an_unreachable_daemon_fails_every_caller_of_the_flush(void **state) {
    (void)state;
    rl_http_limiter_options http_options;
    rl_http_limiter_options_default(&http_options);
    http_options.base_url = "http://127.0.0.1:1"; /* tcpmux: never a ratelimiterd */
    http_options.deadline_ms = 300;
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *http = NULL;
    assert_int_equal(rl_limiter_http_open(&http_options, &http, err), RL_OK);
    rl_test_counting_limiter *counting = rl_test_counting_new(http, true);
    assert_non_null(counting);
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    options.max_batch = 4;
    options.max_delay_us = RL_BATCHER_MAX_DELAY_US_LIMIT; /* only a full batch goes out */
    options.owns_inner = true;
    rl_limiter *batcher = NULL;
    assert_int_equal(rl_limiter_batching_open(&counting->base, &options, &batcher), RL_OK);

    lease_base = SINGLE_LEASE_BASE + 100;
    for (int t = 0; t < 4; t++) {
        workers[t] = (worker){.limiter = batcher, .index = t, .key = "b:shared"};
        assert_int_equal(pthread_create(&workers[t].thread, NULL, one_reserve_main, &workers[t]), 0);
    }
    for (int t = 0; t < 4; t++) assert_int_equal(pthread_join(workers[t].thread, NULL), 0);
    for (int t = 0; t < 4; t++) {
        assert_int_not_equal(workers[t].status, RL_OK);
        assert_int_equal(workers[t].status, workers[0].status);
    }
    rl_test_counts counts = rl_test_counting_snapshot(counting);
    assert_int_equal(counts.reserve_calls, 1);
    assert_int_equal(counts.reserve_leases, 4);
    rl_limiter_destroy(batcher);
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    rl_test_http_global_init();
    rl_test_daemon_init(&f.daemon);
    rl_test_daemon_write_registry(&f.daemon, limits_json);
    if (!rl_test_daemon_start(&f.daemon, NULL)) return -1;
    char url[64], err[RL_LIMITER_ERR_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)f.daemon.port);
    rl_http_limiter_options http_options;
    rl_http_limiter_options_default(&http_options);
    http_options.base_url = url;
    rl_limiter *http = NULL;
    if (rl_limiter_http_open(&http_options, &http, err) != RL_OK) {
        fprintf(stderr, "http open: %s\n", err);
        return -1;
    }
    f.counting = rl_test_counting_new(http, true);
    if (f.counting == NULL) return -1;
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    options.max_batch = MAX_BATCH;
    options.max_delay_us = 1000;
    options.owns_inner = true;
    if (rl_limiter_batching_open(&f.counting->base, &options, &f.batcher) != RL_OK) return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_limiter_destroy(f->batcher);
    int status = rl_test_daemon_stop(&f->daemon);
    rl_test_daemon_cleanup(&f->daemon);
    return status == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserves_from_many_threads_are_matched_to_their_callers),
        cmocka_unit_test(batched_completes_release_on_the_daemon),
        cmocka_unit_test(an_unreachable_daemon_fails_every_caller_of_the_flush),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
