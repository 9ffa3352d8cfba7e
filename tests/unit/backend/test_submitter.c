/* test_submitter.c — the submitter in front of a backend: many threads'
 * leases go out in fewer, larger calls, each caller gets its own results,
 * and nothing is admitted twice or lost. The inner backend is the memory
 * backend behind a counting wrapper. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ratelimiter/memory.h"
#include "ratelimiter/submitter.h"
#include "support/lease_ids.h"

/* Counts the calls, the largest batch and the most calls at once that reach
 * the real backend; slow_ms makes each reserve call take that long (a
 * round trip to a store). */
typedef struct counting {
    rl_backend base;
    rl_backend *real;
    atomic_uint calls;
    atomic_uint largest;
    atomic_uint in_flight, most_in_flight;
    long slow_ms;
} counting;

static void raise_to(atomic_uint *most, unsigned value) {
    unsigned seen = atomic_load(most);
    while (value > seen && !atomic_compare_exchange_weak(most, &seen, value)) {
    }
}

static void counting_reserve(rl_backend *b, const rl_reserve_request *r, size_t n, rl_reserve_result *out) {
    counting *c = (counting *)b;
    atomic_fetch_add(&c->calls, 1);
    raise_to(&c->largest, (unsigned)n);
    raise_to(&c->most_in_flight, atomic_fetch_add(&c->in_flight, 1) + 1);
    if (c->slow_ms > 0) {
        struct timespec pause = {c->slow_ms / 1000, (c->slow_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    rl_backend_reserve_batch(c->real, r, n, out);
    atomic_fetch_sub(&c->in_flight, 1);
}
static void counting_complete(rl_backend *b, const rl_complete_request *r, size_t n, rl_status *out) {
    rl_backend_complete_batch(((counting *)b)->real, r, n, out);
}
static rl_status counting_apply(rl_backend *b, const rl_limit_def *d, rl_limit_status *s) {
    return rl_backend_apply_definition(((counting *)b)->real, d, s);
}
static rl_status counting_usage(rl_backend *b, const char *k, rl_limit_usage *u) {
    return rl_backend_limit_usage(((counting *)b)->real, k, u);
}
static void counting_sweep(rl_backend *b) { rl_backend_sweep(((counting *)b)->real); }
static void counting_destroy(rl_backend *b) { rl_backend_destroy(((counting *)b)->real); }

static const rl_backend_ops counting_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION, .name = "counting", .apply_definition = counting_apply,
    .reserve_batch = counting_reserve, .complete_batch = counting_complete, .limit_usage = counting_usage,
    .sweep = counting_sweep, .destroy = counting_destroy,
};

enum { THREADS = 16, PER_THREAD = 300, CAPACITY = 1000 };

typedef struct worker {
    rl_backend *backend;
    int thread;
    int allowed;
    int mismatched;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    char own_key[32];
    snprintf(own_key, sizeof own_key, "own:%d", w->thread); /* undefined: an unknown key, this thread's own */
    for (int i = 0; i < PER_THREAD; i++) {
        char id[27];
        rl_test_lease_id((uint64_t)w->thread * 100000u + (uint64_t)i + 1, id);
        rl_requirement shared = {"shared:rpm", 1, false};
        rl_requirement own = {own_key, 1, false};
        rl_reserve_request request = {id, NULL, i % 10 == 9 ? &own : &shared, 1, false};
        rl_reserve_result result;
        rl_backend_reserve(w->backend, &request, &result);
        if (i % 10 == 9) {
            /* the unknown key named must be this thread's own, pointing into its request */
            if (result.status != RL_UNKNOWN_LIMIT_KEY || result.status_key != own.key) w->mismatched++;
        } else if (result.allowed) {
            w->allowed++;
            rl_complete_request done = {id, NULL, NULL, 0};
            if (rl_backend_complete(w->backend, &done) != RL_OK) w->mismatched++;
        }
    }
    return NULL;
}

static void many_threads_share_fewer_larger_calls(void **state) {
    (void)state;
    rl_memory_options memory;
    rl_memory_options_default(&memory);
    memory.sweep_interval_ms = 0;
    counting *c = calloc(1, sizeof *c);
    c->base.ops = &counting_ops;
    assert_int_equal(rl_memory_backend_create(&memory, &c->real), RL_OK);
    rl_limit_def def = {.key = "shared:rpm", .kind = RL_KIND_ROLLING, .capacity = CAPACITY, .window_seconds = 3600};
    assert_int_equal(rl_backend_apply_definition(&c->base, &def, NULL), RL_OK);

    rl_submitter_options options;
    rl_submitter_options_default(&options);
    options.max_leases = 64;
    options.flush_interval_us = 1000;
    rl_backend *submitter;
    assert_int_equal(rl_submitter_create(&c->base, &options, &submitter), RL_OK);

    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){submitter, t, 0, 0};
        pthread_create(&threads[t], NULL, work, &workers[t]);
    }
    int allowed = 0, mismatched = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        allowed += workers[t].allowed;
        mismatched += workers[t].mismatched;
    }
    assert_int_equal(mismatched, 0);
    assert_int_equal(allowed, CAPACITY); /* 16 x 270 shared attempts, exactly the capacity admitted */
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(submitter, "shared:rpm", &usage), RL_OK);
    assert_int_equal(usage.used, CAPACITY);
    unsigned calls = atomic_load(&c->calls);
    assert_true(calls < THREADS * PER_THREAD); /* leases shared calls */
    assert_true(atomic_load(&c->largest) <= 64);
    rl_backend_destroy(submitter); /* and the counting backend, and the memory backend */
    free(c);
}

static void a_lone_caller_is_flushed_after_the_interval(void **state) {
    (void)state;
    rl_backend *memory;
    assert_int_equal(rl_memory_backend_create(NULL, &memory), RL_OK);
    rl_limit_def def = {.key = "k", .kind = RL_KIND_CONCURRENCY, .capacity = 1, .timeout_seconds = 60};
    assert_int_equal(rl_backend_apply_definition(memory, &def, NULL), RL_OK);
    rl_backend *submitter;
    assert_int_equal(rl_submitter_create(memory, NULL, &submitter), RL_OK);
    assert_string_equal(submitter->ops->name, "memory"); /* transparent */
    assert_null(submitter->ops->list_definitions); /* as the memory backend under it */
    char id[27];
    rl_requirement one = {"k", 1, false};
    rl_reserve_request request = {rl_test_lease_id(1, id), NULL, &one, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(submitter, &request, &result);
    assert_true(result.allowed);
    rl_backend_reserve(submitter, &request, &result); /* idempotent through it too */
    assert_true(result.allowed);
    assert_int_equal(rl_backend_health(submitter, NULL, 0), RL_OK);
    rl_backend_destroy(submitter);
}

/* ---- async callers: reserve_batch_async through the lane ---------------- */

enum { ASYNC_THREADS = 8, ASYNC_PER_THREAD = 200, ASYNC_MAX_LEASES = 16, ASYNC_BIG = 20, ASYNC_CAPACITY = 500 };

typedef struct async_call {
    size_t count;
    char ids[ASYNC_BIG][27];
    char keys[ASYNC_BIG][32];
    rl_requirement requirements[ASYNC_BIG];
    rl_reserve_request requests[ASYNC_BIG];
    rl_reserve_result results[ASYNC_BIG];
    atomic_int answered; /* times the callback ran: must end at exactly 1 */
    atomic_int *total;   /* every callback of the test */
} async_call;

static void async_answered(void *context) {
    async_call *call = context;
    atomic_fetch_add(&call->answered, 1);
    atomic_fetch_add(call->total, 1);
}

typedef struct async_worker {
    rl_backend *backend;
    int thread;
    async_call *calls; /* ASYNC_PER_THREAD */
    atomic_int *total;
} async_worker;

/* Lease j of call i: even j take one of the shared limit, odd j name a key
 * of their own that the backend does not know. Every ~50th call is bigger
 * than max_leases (the lane's direct path: answered before the call returns). */
static void *async_work(void *arg) {
    async_worker *w = arg;
    for (int i = 0; i < ASYNC_PER_THREAD; i++) {
        async_call *call = &w->calls[i];
        call->count = i % 50 == 49 ? ASYNC_BIG : (size_t)(1 + i % 4);
        call->total = w->total;
        atomic_init(&call->answered, 0);
        for (size_t j = 0; j < call->count; j++) {
            rl_test_lease_id((uint64_t)w->thread * 10000000u + (uint64_t)i * 100u + j + 1, call->ids[j]);
            if (j % 2 == 0) snprintf(call->keys[j], sizeof call->keys[j], "shared:rpm");
            else snprintf(call->keys[j], sizeof call->keys[j], "own:%d:%d:%zu", w->thread, i, j);
            call->requirements[j] = (rl_requirement){call->keys[j], 1, false};
            call->requests[j] = (rl_reserve_request){call->ids[j], NULL, &call->requirements[j], 1, false};
        }
        w->backend->ops->reserve_batch_async(w->backend, call->requests, call->count, call->results,
                                             async_answered, call);
    }
    return NULL;
}

static void many_async_callers_each_get_their_own_answer_once(void **state) {
    (void)state;
    rl_memory_options memory;
    rl_memory_options_default(&memory);
    memory.sweep_interval_ms = 0;
    counting *c = calloc(1, sizeof *c);
    c->base.ops = &counting_ops;
    assert_int_equal(rl_memory_backend_create(&memory, &c->real), RL_OK);
    rl_limit_def def = {.key = "shared:rpm", .kind = RL_KIND_ROLLING, .capacity = ASYNC_CAPACITY, .window_seconds = 3600};
    assert_int_equal(rl_backend_apply_definition(&c->base, &def, NULL), RL_OK);
    rl_submitter_options options;
    rl_submitter_options_default(&options);
    options.max_leases = ASYNC_MAX_LEASES;
    options.flush_interval_us = 500;
    rl_backend *submitter;
    assert_int_equal(rl_submitter_create(&c->base, &options, &submitter), RL_OK);
    assert_true(rl_backend_has_async(submitter));

    atomic_int total;
    atomic_init(&total, 0);
    async_worker workers[ASYNC_THREADS];
    pthread_t threads[ASYNC_THREADS];
    for (int t = 0; t < ASYNC_THREADS; t++) {
        workers[t] = (async_worker){submitter, t, calloc(ASYNC_PER_THREAD, sizeof(async_call)), &total};
        assert_non_null(workers[t].calls);
        pthread_create(&threads[t], NULL, async_work, &workers[t]);
    }
    for (int t = 0; t < ASYNC_THREADS; t++) pthread_join(threads[t], NULL);
    /* The callers did not wait: the answers come in their own time. */
    for (int waited_ms = 0; atomic_load(&total) < ASYNC_THREADS * ASYNC_PER_THREAD && waited_ms < 10000; waited_ms++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_int_equal(atomic_load(&total), ASYNC_THREADS * ASYNC_PER_THREAD);

    int allowed = 0, wrong = 0, twice = 0;
    for (int t = 0; t < ASYNC_THREADS; t++) {
        for (int i = 0; i < ASYNC_PER_THREAD; i++) {
            async_call *call = &workers[t].calls[i];
            if (atomic_load(&call->answered) != 1) twice++;
            for (size_t j = 0; j < call->count; j++) {
                const rl_reserve_result *r = &call->results[j];
                if (j % 2 == 1) {
                    /* its own unknown key, pointing into its own request */
                    if (r->allowed || r->status != RL_UNKNOWN_LIMIT_KEY || r->status_key != call->keys[j]) wrong++;
                } else if (r->allowed) {
                    allowed++;
                } else if (r->status != RL_OK) {
                    wrong++;
                }
            }
        }
        free(workers[t].calls);
    }
    assert_int_equal(twice, 0);
    assert_int_equal(wrong, 0);
    assert_int_equal(allowed, ASYNC_CAPACITY); /* more asked than the capacity: exactly it admitted */
    assert_true(atomic_load(&c->largest) <= ASYNC_BIG);
    assert_true(atomic_load(&c->calls) < ASYNC_THREADS * ASYNC_PER_THREAD); /* calls shared flushes */
    rl_backend_destroy(submitter);
    free(c);
}

/* Queues an async reserve of one unit of "k" as lease `lease`. */
static void queue_one(rl_backend *submitter, async_call *call, uint64_t lease, atomic_int *total) {
    call->count = 1;
    call->total = total;
    atomic_init(&call->answered, 0);
    call->requirements[0] = (rl_requirement){"k", 1, false};
    call->requests[0] = (rl_reserve_request){rl_test_lease_id(lease, call->ids[0]), NULL, &call->requirements[0], 1, false};
    submitter->ops->reserve_batch_async(submitter, call->requests, 1, call->results, async_answered, call);
}

/* Destroy answers the async calls still queued before it returns. */
static void destroy_answers_queued_async_calls(void **state) {
    (void)state;
    rl_backend *memory;
    assert_int_equal(rl_memory_backend_create(NULL, &memory), RL_OK);
    rl_limit_def def = {.key = "k", .kind = RL_KIND_ROLLING, .capacity = 1000, .window_seconds = 60};
    assert_int_equal(rl_backend_apply_definition(memory, &def, NULL), RL_OK);
    rl_submitter_options options;
    rl_submitter_options_default(&options);
    options.flush_interval_us = 1000000; /* a second: only destroy flushes them */
    rl_backend *submitter;
    assert_int_equal(rl_submitter_create(memory, &options, &submitter), RL_OK);
    enum { N = 10 };
    static async_call calls[N];
    atomic_int total;
    atomic_init(&total, 0);
    for (int i = 0; i < N; i++) queue_one(submitter, &calls[i], (uint64_t)i + 1, &total);
    rl_backend_destroy(submitter);
    assert_int_equal(atomic_load(&total), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&calls[i].answered), 1);
        assert_true(calls[i].results[0].allowed);
    }
}

/* With flushes_in_flight N, up to N inner calls run at once (a slow store
 * is kept busy while the next batch is gathered), never more; with 1 they
 * go strictly one after the other. Every caller is answered once. */
static void flushes_overlap_up_to_flushes_in_flight(void **state) {
    (void)state;
    for (unsigned flushers = 1; flushers <= 3; flushers += 2) {
        counting *c = calloc(1, sizeof *c);
        c->base.ops = &counting_ops;
        c->slow_ms = 5;
        assert_int_equal(rl_memory_backend_create(NULL, &c->real), RL_OK);
        rl_limit_def def = {.key = "k", .kind = RL_KIND_ROLLING, .capacity = 100000, .window_seconds = 60};
        assert_int_equal(rl_backend_apply_definition(&c->base, &def, NULL), RL_OK);
        rl_submitter_options options;
        rl_submitter_options_default(&options);
        options.max_leases = 8;
        options.flush_interval_us = 100;
        options.flushes_in_flight = flushers;
        rl_backend *submitter;
        assert_int_equal(rl_submitter_create(&c->base, &options, &submitter), RL_OK);
        enum { N = 200 };
        static async_call calls[N];
        atomic_int total;
        atomic_init(&total, 0);
        for (int i = 0; i < N; i++) queue_one(submitter, &calls[i], (uint64_t)i + 1, &total); /* 25 full batches */
        for (int waited_ms = 0; atomic_load(&total) < N && waited_ms < 10000; waited_ms++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        assert_int_equal(atomic_load(&total), N);
        for (int i = 0; i < N; i++) {
            assert_int_equal(atomic_load(&calls[i].answered), 1);
            assert_true(calls[i].results[0].allowed);
        }
        assert_int_equal(atomic_load(&c->most_in_flight), flushers);
        assert_true(atomic_load(&c->largest) <= 8);
        rl_backend_destroy(submitter);
        free(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_threads_share_fewer_larger_calls),
        cmocka_unit_test(a_lone_caller_is_flushed_after_the_interval),
        cmocka_unit_test(many_async_callers_each_get_their_own_answer_once),
        cmocka_unit_test(destroy_answers_queued_async_calls),
        cmocka_unit_test(flushes_overlap_up_to_flushes_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
