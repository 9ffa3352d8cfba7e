/* test_batcher.c — client-side batching: many threads through a batcher onto
 * a counting decorator over the local limiter. Results are matched to
 * callers by lease id; the counting limiter shows how calls were coalesced.
 *
 * cmocka's asserts are not thread-safe (they longjmp), so worker threads
 * only record what they saw and the main thread asserts after joining.
 * No test depends on timing except as a bound far from the expected value
 * (a 10 s delay that must not be waited for).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/batcher.h"
#include "ratelimiter/ulid.h"
#include "support/counting_limiter.h"
#include "support/lease_ids.h"

#define SHARED_CAPACITY 1000u   /* rolling "t:shared" */
#define CONC_CAPACITY 800u      /* concurrency "t:conc" */
#define LONG_DELAY_US RL_BATCHER_MAX_DELAY_US_LIMIT /* a flush that must not wait for it */

static char dir[] = "/tmp/rl_batcher_XXXXXX";
static char limits_path[300];

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- fixture: batcher -> counting -> local ---- */

typedef struct fixture {
    rl_test_counting_limiter *counting; /* owns the local limiter */
    rl_limiter *batcher;
} fixture;

static void open_fixture(fixture *f, uint32_t max_batch, uint32_t max_delay_us) {
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *local = NULL;
    assert_int_equal(rl_limiter_local_open(limits_path, NULL, &local, err), RL_OK);
    f->counting = rl_test_counting_new(local, true);
    assert_non_null(f->counting);
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    options.max_batch = max_batch;
    options.max_delay_us = max_delay_us;
    assert_int_equal(rl_limiter_batching_open(&f->counting->base, &options, &f->batcher), RL_OK);
}

static void close_fixture(fixture *f) {
    rl_limiter_destroy(f->batcher);
    rl_limiter_destroy(&f->counting->base);
}

static rl_batcher_stats stats_of(rl_limiter *batcher) {
    rl_batcher_stats stats;
    assert_true(rl_limiter_batching_stats(batcher, &stats));
    return stats;
}

/* ---- one call on its own thread (up to 4 leases of 1 on one key) ---- */

typedef struct call {
    rl_limiter *limiter;
    bool complete;
    size_t count;
    char ids[4][RL_ULID_TEXT_SIZE];
    rl_requirement requirement;
    rl_reserve_request reserves[4];
    rl_reserve_result results[4];
    rl_complete_request completes[4];
    rl_status statuses[4];
    rl_status status;
    pthread_t thread;
} call;

static void call_init(call *c, rl_limiter *limiter, bool complete, uint64_t first_lease, size_t count,
                      const char *key) {
    memset(c, 0, sizeof *c);
    c->limiter = limiter;
    c->complete = complete;
    c->count = count;
    c->requirement = (rl_requirement){key, 1, false};
    for (size_t i = 0; i < count; i++) {
        rl_test_lease_id(first_lease + i, c->ids[i]);
        c->reserves[i] = (rl_reserve_request){c->ids[i], NULL, &c->requirement, 1, false};
        c->completes[i] = (rl_complete_request){c->ids[i], NULL, NULL, 0};
    }
}

static void *call_main(void *arg) {
    call *c = arg;
    c->status = c->complete ? rl_limiter_complete_batch(c->limiter, c->completes, c->count, c->statuses)
                            : rl_limiter_reserve_batch(c->limiter, c->reserves, c->count, c->results);
    return NULL;
}

static void call_start(call *c) { assert_int_equal(pthread_create(&c->thread, NULL, call_main, c), 0); }
static void call_join(call *c) { assert_int_equal(pthread_join(c->thread, NULL), 0); }

/* ---- many threads, results matched by lease id ---- */

#define THREADS 16
#define LEASES_PER_THREAD 500
#define MANY_MAX_BATCH 32u

/* What the inner limiter answered for each lease, written by the observer
 * (the reserve flusher thread only) and read after the threads are joined. */
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
        if (!rl_ulid_decode(requests[i].lease_id, RL_ULID_LEN, &hi, &lo) || lo == 0 ||
            lo > THREADS * LEASES_PER_THREAD)
            abort();
        recorded[lo].seen++;
        recorded[lo].allowed = results[i].allowed;
    }
}

typedef struct worker {
    rl_limiter *limiter;
    int index;
    pthread_t thread;
    char unknown_key[32]; /* this thread's own unknown key: its status_key must come back */
    bool allowed[LEASES_PER_THREAD];
    uint64_t calls;
    int mismatches; /* anything the main thread should fail on */
} worker;

static uint64_t lease_number(const worker *w, size_t i) { return (uint64_t)w->index * LEASES_PER_THREAD + i + 1; }

/* Calls of 1..4 leases (by thread), every tenth lease on an unknown key. */
static void *reserve_worker(void *arg) {
    worker *w = arg;
    size_t per_call = 1 + (size_t)w->index % 4;
    for (size_t i = 0; i < LEASES_PER_THREAD;) {
        size_t n = LEASES_PER_THREAD - i < per_call ? LEASES_PER_THREAD - i : per_call;
        char ids[4][RL_ULID_TEXT_SIZE];
        rl_requirement reqs[4];
        rl_reserve_request requests[4];
        rl_reserve_result results[4];
        memset(results, 0xab, sizeof results); /* garbage: unwritten results show */
        for (size_t j = 0; j < n; j++) {
            bool unknown = (i + j) % 10 == 9;
            reqs[j] = (rl_requirement){unknown ? w->unknown_key : "t:shared", 1, false};
            requests[j] = (rl_reserve_request){rl_test_lease_id(lease_number(w, i + j), ids[j]), NULL, &reqs[j], 1, false};
        }
        if (rl_limiter_reserve_batch(w->limiter, requests, n, results) != RL_OK) w->mismatches++;
        for (size_t j = 0; j < n; j++) {
            const rl_reserve_result *r = &results[j];
            if ((i + j) % 10 == 9) {
                if (r->allowed || r->status != RL_UNKNOWN_LIMIT_KEY || r->status_key == NULL ||
                    strcmp(r->status_key, w->unknown_key) != 0)
                    w->mismatches++;
            } else if (r->status != RL_OK || (r->allowed && r->reserved_at_unix_ms == 0)) {
                w->mismatches++;
            }
            w->allowed[i + j] = r->allowed;
        }
        w->calls++;
        i += n;
    }
    return NULL;
}

static void many_threads_get_their_own_results(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, MANY_MAX_BATCH, 1000);
    memset(recorded, 0, sizeof recorded);
    f.counting->observe_reserve = record_outcomes;

    static worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        memset(&workers[t], 0, sizeof workers[t]);
        workers[t].limiter = f.batcher;
        workers[t].index = t;
        snprintf(workers[t].unknown_key, sizeof workers[t].unknown_key, "t:unknown:%d", t);
        assert_int_equal(pthread_create(&workers[t].thread, NULL, reserve_worker, &workers[t]), 0);
    }
    uint64_t calls = 0, allowed = 0;
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(workers[t].thread, NULL), 0);
        worker *w = &workers[t];
        assert_int_equal(w->mismatches, 0);
        calls += w->calls;
        for (size_t i = 0; i < LEASES_PER_THREAD; i++) {
            const outcome *o = &recorded[lease_number(w, i)];
            assert_int_equal(o->seen, 1);           /* sent once, in one flush */
            assert_int_equal(o->allowed, w->allowed[i]); /* and its answer came back to this caller */
            allowed += w->allowed[i];
        }
    }
    assert_int_equal(allowed, SHARED_CAPACITY);

    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_leases, THREADS * LEASES_PER_THREAD);
    assert_true(counts.reserve_calls < calls); /* batching happened */
    assert_true(counts.largest_reserve_batch <= MANY_MAX_BATCH);
    rl_batcher_stats stats = stats_of(f.batcher);
    assert_int_equal(stats.reserve.calls, calls);
    assert_int_equal(stats.reserve.flushes, counts.reserve_calls);
    assert_int_equal(stats.reserve.leases, THREADS * LEASES_PER_THREAD);
    assert_int_equal(stats.reserve.largest_flush_leases, counts.largest_reserve_batch);
    assert_int_equal(stats.reserve.waiting_calls, 0);
    assert_int_equal(stats.reserve.direct_calls, 0);
    close_fixture(&f);
}

/* ---- complete batching: release a full concurrency limit ---- */

#define CONC_PER_THREAD (CONC_CAPACITY / THREADS)

typedef struct conc_worker {
    rl_limiter *limiter;
    int index;
    bool complete;
    pthread_t thread;
    int failures;
} conc_worker;

static void *conc_worker_main(void *arg) {
    conc_worker *w = arg;
    rl_requirement req = {"t:conc", 1, false};
    for (size_t i = 0; i < CONC_PER_THREAD; i++) {
        char id[RL_ULID_TEXT_SIZE];
        rl_test_lease_id((uint64_t)w->index * CONC_PER_THREAD + i + 1, id);
        if (w->complete) {
            rl_complete_request request = {id, NULL, NULL, 0};
            if (rl_limiter_complete(w->limiter, &request) != RL_OK) w->failures++;
        } else {
            rl_reserve_request request = {id, NULL, &req, 1, false};
            rl_reserve_result result;
            if (rl_limiter_reserve(w->limiter, &request, &result) != RL_OK || !result.allowed) w->failures++;
        }
    }
    return NULL;
}

static void run_conc_workers(rl_limiter *limiter, bool complete) {
    conc_worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (conc_worker){.limiter = limiter, .index = t, .complete = complete};
        assert_int_equal(pthread_create(&workers[t].thread, NULL, conc_worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(workers[t].thread, NULL), 0);
        assert_int_equal(workers[t].failures, 0);
    }
}

static bool reserve_conc(rl_limiter *limiter, uint64_t lease, uint64_t amount) {
    char id[RL_ULID_TEXT_SIZE];
    rl_requirement req = {"t:conc", amount, false};
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, &req, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    return result.allowed;
}

static void completes_are_batched_too(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, MANY_MAX_BATCH, 1000);
    run_conc_workers(f.batcher, false); /* every slot taken */
    assert_false(reserve_conc(f.batcher, 100000, 1));
    run_conc_workers(f.batcher, true); /* every slot given back */
    assert_true(reserve_conc(f.batcher, 100001, CONC_CAPACITY));

    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.complete_leases, CONC_CAPACITY);
    assert_true(counts.complete_calls < CONC_CAPACITY);
    assert_true(counts.largest_complete_batch <= MANY_MAX_BATCH);
    rl_batcher_stats stats = stats_of(f.batcher);
    assert_int_equal(stats.complete.calls, CONC_CAPACITY);
    assert_int_equal(stats.complete.flushes, counts.complete_calls);
    close_fixture(&f);
}

/* ---- when a flush goes out ---- */

static void a_lone_caller_is_flushed_after_the_delay(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, RL_LIMITER_MAX_BATCH, 2000);
    call c;
    call_init(&c, f.batcher, false, 1, 1, "t:shared");
    uint64_t start_us = now_us();
    call_main(&c);
    uint64_t elapsed_us = now_us() - start_us;
    assert_int_equal(c.status, RL_OK);
    assert_true(c.results[0].allowed);
    assert_true(elapsed_us >= 2000); /* it waited for company, as configured */
    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_calls, 1);
    assert_int_equal(counts.reserve_leases, 1);

    call_init(&c, f.batcher, true, 1, 1, NULL);
    call_main(&c);
    assert_int_equal(c.status, RL_OK);
    assert_int_equal(c.statuses[0], RL_OK);
    close_fixture(&f);
}

/* With a 10 s delay, only a full batch can release these callers; and one
 * caller's 2 leases stay together. */
static void a_full_batch_goes_out_at_once(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 4, LONG_DELAY_US);
    call calls[3];
    call_init(&calls[0], f.batcher, false, 1, 1, "t:shared");
    call_init(&calls[1], f.batcher, false, 2, 2, "t:shared");
    call_init(&calls[2], f.batcher, false, 4, 1, "t:shared");
    uint64_t start_us = now_us();
    for (int i = 0; i < 3; i++) call_start(&calls[i]);
    for (int i = 0; i < 3; i++) call_join(&calls[i]);
    assert_true(now_us() - start_us < LONG_DELAY_US / 2);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(calls[i].status, RL_OK);
        for (size_t j = 0; j < calls[i].count; j++) assert_true(calls[i].results[j].allowed);
    }
    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_calls, 1);
    assert_int_equal(counts.reserve_leases, 4);
    close_fixture(&f);
}

/* A call larger than max_batch is sent alone, unsplit, by its caller. */
static void an_oversized_call_goes_direct(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 4, LONG_DELAY_US);
    char ids[10][RL_ULID_TEXT_SIZE];
    rl_requirement req = {"t:shared", 1, false};
    rl_reserve_request requests[10];
    rl_reserve_result results[10];
    for (size_t i = 0; i < 10; i++) requests[i] = (rl_reserve_request){rl_test_lease_id(i + 1, ids[i]), NULL, &req, 1, false};
    assert_int_equal(rl_limiter_reserve_batch(f.batcher, requests, 10, results), RL_OK);
    for (size_t i = 0; i < 10; i++) assert_true(results[i].allowed);
    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_calls, 1);
    assert_int_equal(counts.largest_reserve_batch, 10);
    rl_batcher_stats stats = stats_of(f.batcher);
    assert_int_equal(stats.reserve.direct_calls, 1);
    assert_int_equal(stats.reserve.flushes, 0);
    close_fixture(&f);
}

/* ---- errors ---- */

static void an_inner_error_reaches_every_caller_of_its_flush(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 4, LONG_DELAY_US);
    rl_test_counting_fail_next(f.counting, RL_BACKEND_ERROR, RL_TIMEOUT);

    call calls[3];
    call_init(&calls[0], f.batcher, false, 1, 1, "t:shared");
    call_init(&calls[1], f.batcher, false, 2, 2, "t:shared");
    call_init(&calls[2], f.batcher, false, 4, 1, "t:shared");
    for (int i = 0; i < 3; i++) call_start(&calls[i]);
    for (int i = 0; i < 3; i++) call_join(&calls[i]);
    for (int i = 0; i < 3; i++) assert_int_equal(calls[i].status, RL_BACKEND_ERROR);
    assert_int_equal(stats_of(f.batcher).reserve.failed_flushes, 1);

    /* The failure was that flush's only: a retry with the same ids works. */
    for (int i = 0; i < 3; i++) call_start(&calls[i]);
    for (int i = 0; i < 3; i++) call_join(&calls[i]);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(calls[i].status, RL_OK);
        assert_true(calls[i].results[0].allowed);
    }

    call completes[4];
    for (int i = 0; i < 4; i++) call_init(&completes[i], f.batcher, true, (uint64_t)i + 1, 1, NULL);
    for (int i = 0; i < 4; i++) call_start(&completes[i]);
    for (int i = 0; i < 4; i++) call_join(&completes[i]);
    for (int i = 0; i < 4; i++) assert_int_equal(completes[i].status, RL_TIMEOUT);
    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_calls, 2);
    assert_int_equal(counts.complete_calls, 1);
    close_fixture(&f);
}

/* An invalid call is refused on its own, at once: it never joins a flush. */
static void an_invalid_call_is_refused_alone(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 4, LONG_DELAY_US);
    rl_requirement req = {"t:shared", 1, false};
    rl_reserve_request bad_id = {"not-a-ulid", NULL, &req, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(f.batcher, &bad_id, &result), RL_INVALID_REQUEST);
    char id[RL_ULID_TEXT_SIZE];
    rl_requirement zero = {"t:shared", 0, false};
    rl_reserve_request bad_amount = {rl_test_lease_id(1, id), NULL, &zero, 1, false};
    assert_int_equal(rl_limiter_reserve(f.batcher, &bad_amount, &result), RL_INVALID_REQUEST);
    rl_reserve_request good = {id, NULL, &req, 1, false};
    assert_int_equal(rl_limiter_reserve_batch(f.batcher, &good, 0, &result), RL_INVALID_REQUEST);
    assert_int_equal(rl_limiter_reserve_batch(f.batcher, &good, RL_LIMITER_MAX_BATCH + 1, &result),
                     RL_INVALID_REQUEST);
    rl_complete_request bad_complete = {"", NULL, NULL, 0};
    assert_int_equal(rl_limiter_complete(f.batcher, &bad_complete), RL_INVALID_REQUEST);

    rl_test_counts counts = rl_test_counting_snapshot(f.counting);
    assert_int_equal(counts.reserve_calls + counts.complete_calls, 0);
    rl_batcher_stats stats = stats_of(f.batcher);
    assert_int_equal(stats.reserve.calls + stats.reserve.waiting_calls + stats.complete.calls, 0);
    close_fixture(&f);
}

/* Lease 7's result is backend_error, as a backend that could not decide it
 * reports inside a batch. */
static void fail_lease_7(void *context, const rl_reserve_request *requests, size_t count,
                         rl_reserve_result *results) {
    (void)context;
    char id[RL_ULID_TEXT_SIZE];
    rl_test_lease_id(7, id);
    for (size_t i = 0; i < count; i++)
        if (strcmp(requests[i].lease_id, id) == 0) results[i] = (rl_reserve_result){.status = RL_BACKEND_ERROR};
}

/* A lone reserve that the backend could not decide fails the call, as it
 * does unbatched (limiter.h: single calls are batches of 1); in a caller's
 * batch it stays that lease's result. */
static void a_lone_undecided_reserve_fails_its_call(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 4, 0);
    f.counting->observe_reserve = fail_lease_7;
    call c;
    call_init(&c, f.batcher, false, 7, 1, "t:shared");
    call_main(&c);
    assert_int_equal(c.status, RL_BACKEND_ERROR);
    call_init(&c, f.batcher, false, 6, 2, "t:shared");
    call_main(&c);
    assert_int_equal(c.status, RL_OK);
    assert_true(c.results[0].allowed);
    assert_false(c.results[1].allowed);
    assert_int_equal(c.results[1].status, RL_BACKEND_ERROR);
    close_fixture(&f);
}

/* ---- destroy ---- */

/* Callers still waiting (for a 10 s delay) when destroy starts are flushed
 * and answered; the batcher destroys inner because it owns it. */
static void destroy_answers_waiting_callers(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *local = NULL;
    assert_int_equal(rl_limiter_local_open(limits_path, NULL, &local, err), RL_OK);
    rl_test_counting_limiter *counting = rl_test_counting_new(local, true);
    bool inner_destroyed = false;
    counting->destroyed = &inner_destroyed;
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    options.max_delay_us = LONG_DELAY_US;
    options.owns_inner = true;
    rl_limiter *batcher = NULL;
    assert_int_equal(rl_limiter_batching_open(&counting->base, &options, &batcher), RL_OK);

    enum { WAITING = 5 };
    call calls[WAITING];
    for (int i = 0; i < WAITING; i++) {
        call_init(&calls[i], batcher, false, (uint64_t)i + 1, 1, "t:shared");
        call_start(&calls[i]);
    }
    uint64_t start_us = now_us();
    while (stats_of(batcher).reserve.waiting_calls < WAITING) {
        assert_true(now_us() - start_us < LONG_DELAY_US / 2);
        usleep(1000);
    }
    rl_limiter_destroy(batcher);
    assert_true(now_us() - start_us < LONG_DELAY_US / 2); /* sent at once, not after the delay */
    assert_true(inner_destroyed);
    for (int i = 0; i < WAITING; i++) {
        call_join(&calls[i]);
        assert_int_equal(calls[i].status, RL_OK);
        assert_true(calls[i].results[0].allowed);
    }
}

/* ---- options ---- */

static void open_checks_its_options(void **state) {
    (void)state;
    fixture f;
    open_fixture(&f, 1, 0); /* the smallest valid settings work */
    call c;
    call_init(&c, f.batcher, false, 1, 1, "t:shared");
    call_main(&c);
    assert_int_equal(c.status, RL_OK);
    assert_string_equal(f.batcher->ops->name, "batching");

    rl_limiter *out = (rl_limiter *)1;
    rl_batcher_options options;
    rl_batcher_options_default(&options);
    assert_int_equal(options.max_batch, RL_LIMITER_MAX_BATCH);
    assert_int_equal(options.max_delay_us, RL_BATCHER_DEFAULT_MAX_DELAY_US);
    assert_false(options.owns_inner);
    assert_int_equal(rl_limiter_batching_open(NULL, &options, &out), RL_INVALID_REQUEST);
    assert_null(out);
    options.max_batch = 0;
    assert_int_equal(rl_limiter_batching_open(&f.counting->base, &options, &out), RL_INVALID_REQUEST);
    options.max_batch = RL_LIMITER_MAX_BATCH + 1;
    assert_int_equal(rl_limiter_batching_open(&f.counting->base, &options, &out), RL_INVALID_REQUEST);
    options.max_batch = 8;
    options.max_delay_us = RL_BATCHER_MAX_DELAY_US_LIMIT + 1;
    assert_int_equal(rl_limiter_batching_open(&f.counting->base, &options, &out), RL_INVALID_REQUEST);
    assert_null(out);
    assert_int_equal(rl_limiter_batching_open(&f.counting->base, NULL, &out), RL_OK); /* defaults */
    rl_limiter_destroy(out);

    rl_batcher_stats stats;
    assert_false(rl_limiter_batching_stats(&f.counting->base, &stats)); /* not a batcher */
    /* The batcher keeps no audit log of its own: ask the inner limiter. */
    rl_audit_entry entry;
    rl_audit_page page = {&entry, 0, 0};
    rl_audit_query query = {"t:shared", 0, 1};
    assert_null(f.batcher->ops->audit);
    assert_int_equal(rl_limiter_audit(f.batcher, &query, &page), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "keeps no audit log"));
    close_fixture(&f);
}

static int setup(void **state) {
    (void)state;
    if (mkdtemp(dir) == NULL) return -1;
    snprintf(limits_path, sizeof limits_path, "%s/limits.json", dir);
    FILE *file = fopen(limits_path, "w");
    if (file == NULL) return -1;
    fprintf(file,
            "[{\"key\":\"t:conc\",\"kind\":\"concurrency\",\"capacity\":%u,\"timeout_seconds\":3600},\n"
            " {\"key\":\"t:shared\",\"kind\":\"rolling\",\"capacity\":%u,\"window_seconds\":3600}]\n",
            CONC_CAPACITY, SHARED_CAPACITY);
    return fclose(file) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    unlink(limits_path);
    return rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_threads_get_their_own_results),
        cmocka_unit_test(completes_are_batched_too),
        cmocka_unit_test(a_lone_caller_is_flushed_after_the_delay),
        cmocka_unit_test(a_full_batch_goes_out_at_once),
        cmocka_unit_test(an_oversized_call_goes_direct),
        cmocka_unit_test(an_inner_error_reaches_every_caller_of_its_flush),
        cmocka_unit_test(an_invalid_call_is_refused_alone),
        cmocka_unit_test(a_lone_undecided_reserve_fails_its_call),
        cmocka_unit_test(destroy_answers_waiting_callers),
        cmocka_unit_test(open_checks_its_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
