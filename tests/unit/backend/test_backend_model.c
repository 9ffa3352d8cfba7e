/* test_backend_model.c — random interleavings of reserve, complete, time and
 * capacity changes against a backend, checked step by step against a small,
 * obviously-correct reference model (a flat list of entries). Two groups run
 * the same model: "memory" (30 seeds x 4000 steps) and "redis" (a private
 * redis-server, tests/support/redis_server.h; 10 seeds x 1500 steps, since
 * every step there is several round trips to Redis). Time is a manual clock
 * that both the backend and the model read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/memory.h"
#include "ratelimiter/redis.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

enum { LIMITS = 4, MAX_ENTRIES = 20000, MAX_LEASES = 5000 };

#define LEASE_MEMORY_MS 1000000000u /* remember every lease for the whole run */

typedef struct model_limit {
    rl_limit_def def;
    uint64_t capacity;
    uint64_t pending_decrease_to;
    uint64_t debt_total, overage_denied_total;
} model_limit;

typedef struct model_entry {
    int limit;
    uint64_t amount, expires_at_ms;
    rl_kind kind;
    int live;
} model_entry;

typedef struct model_lease {
    int decided, allowed, completed;
    rl_reserve_result first;
    int entries[LIMITS], entry_count;
} model_lease;

static model_limit limits[LIMITS];
static model_entry entries[MAX_ENTRIES];
static int entry_count;
static model_lease leases[MAX_LEASES];
static uint64_t now_ms;

static uint64_t used_of(int limit) {
    uint64_t used = 0;
    for (int i = 0; i < entry_count; i++)
        if (entries[i].live && entries[i].limit == limit) used += entries[i].amount;
    return used;
}

static void try_decrease(int l) {
    if (limits[l].pending_decrease_to != 0 && used_of(l) <= limits[l].pending_decrease_to) {
        limits[l].capacity = limits[l].pending_decrease_to;
        limits[l].pending_decrease_to = 0;
    }
}

static void expire(void) {
    for (int i = 0; i < entry_count; i++)
        if (entries[i].live && entries[i].expires_at_ms <= now_ms) entries[i].live = 0;
    for (int l = 0; l < LIMITS; l++) try_decrease(l);
}

static int by_expiry(const void *a, const void *b) {
    const model_entry *x = *(model_entry *const *)a, *y = *(model_entry *const *)b;
    return x->expires_at_ms < y->expires_at_ms ? -1 : x->expires_at_ms > y->expires_at_ms;
}

static uint64_t retry_after(int l, uint64_t amount) {
    static model_entry *sorted[MAX_ENTRIES];
    int n = 0;
    for (int i = 0; i < entry_count; i++)
        if (entries[i].live && entries[i].limit == l) sorted[n++] = &entries[i];
    qsort(sorted, (size_t)n, sizeof *sorted, by_expiry);
    uint64_t need = used_of(l) + amount - limits[l].capacity;
    for (int i = 0; i < n; i++) {
        if (sorted[i]->amount >= need) return sorted[i]->expires_at_ms > now_ms ? sorted[i]->expires_at_ms - now_ms : 1;
        need -= sorted[i]->amount;
    }
    fail_msg("retry walk ran out");
    return 0;
}

static rl_reserve_result model_reserve(int lease, const int *keys, const uint64_t *amounts, int n) {
    model_lease *m = &leases[lease];
    if (m->decided) return m->first;
    expire();
    rl_reserve_result r = {.allowed = false};
    int decreasing = -1, fits = 1;
    uint64_t wait = 0;
    for (int i = 0; i < n; i++) {
        int l = keys[i];
        if (amounts[i] > limits[l].capacity) {
            r.status = RL_EXCEEDS_CAPACITY;
            r.status_key = limits[l].def.key;
            goto decided;
        }
        if (limits[l].pending_decrease_to != 0) {
            if (decreasing < 0) decreasing = l;
            continue;
        }
        if (used_of(l) + amounts[i] > limits[l].capacity) {
            fits = 0;
            uint64_t w = retry_after(l, amounts[i]);
            if (w > wait) wait = w;
        }
    }
    if (decreasing >= 0) {
        r.status = RL_LIMIT_DECREASING;
        r.status_key = limits[decreasing].def.key;
        r.retry_after_ms = RL_DECREASING_RETRY_AFTER_MS;
    } else if (!fits) {
        r.retry_after_ms = wait;
    } else {
        r.allowed = true;
        for (int i = 0; i < n; i++) {
            model_entry *e = &entries[entry_count];
            e->limit = keys[i];
            e->amount = amounts[i];
            e->kind = limits[keys[i]].def.kind;
            e->expires_at_ms = now_ms + 1000u * (e->kind == RL_KIND_ROLLING ? limits[keys[i]].def.window_seconds
                                                                              : limits[keys[i]].def.timeout_seconds);
            e->live = 1;
            m->entries[m->entry_count++] = entry_count++;
        }
    }
decided:
    m->decided = 1;
    m->allowed = r.allowed;
    m->first = r;
    return r;
}

static void model_complete(int lease, const int *keys, const uint64_t *actuals, int n) {
    model_lease *m = &leases[lease];
    if (!m->decided || !m->allowed || m->completed) return;
    m->completed = 1;
    expire();
    for (int i = 0; i < m->entry_count; i++) {
        model_entry *e = &entries[m->entries[i]];
        if (e->kind == RL_KIND_CONCURRENCY) e->live = 0;
    }
    for (int a = 0; a < n; a++) {
        for (int i = 0; i < m->entry_count; i++) {
            model_entry *e = &entries[m->entries[i]];
            if (e->limit != keys[a] || e->kind != RL_KIND_ROLLING || !e->live) continue;
            model_limit *lim = &limits[e->limit];
            if (actuals[a] < e->amount) {
                e->amount = actuals[a];
                if (e->amount == 0) e->live = 0;
            } else if (actuals[a] > e->amount) {
                uint64_t extra = actuals[a] - e->amount, used = used_of(e->limit);
                if (lim->def.overage == RL_OVERAGE_DEBT) {
                    uint64_t before = used > lim->capacity ? used - lim->capacity : 0;
                    uint64_t after = used + extra > lim->capacity ? used + extra - lim->capacity : 0;
                    lim->debt_total += after - before;
                    e->amount += extra;
                } else {
                    uint64_t room = used < lim->capacity ? lim->capacity - used : 0;
                    uint64_t charged = extra < room ? extra : room;
                    e->amount += charged;
                    lim->overage_denied_total += extra - charged;
                }
            }
        }
    }
    for (int l = 0; l < LIMITS; l++) try_decrease(l);
}

static void check_usage(rl_backend *backend, int step) {
    expire();
    for (int l = 0; l < LIMITS; l++) {
        rl_limit_usage u;
        assert_int_equal(rl_backend_limit_usage(backend, limits[l].def.key, &u), RL_OK);
        uint64_t used = used_of(l);
        if (u.used != used || u.capacity != limits[l].capacity ||
            u.pending_decrease_to != limits[l].pending_decrease_to || u.debt_total != limits[l].debt_total ||
            u.overage_denied_total != limits[l].overage_denied_total)
            fail_msg("step %d limit %s: used %llu/%llu capacity %llu/%llu pending %llu/%llu debt %llu/%llu", step,
                     limits[l].def.key, (unsigned long long)u.used, (unsigned long long)used,
                     (unsigned long long)u.capacity, (unsigned long long)limits[l].capacity,
                     (unsigned long long)u.pending_decrease_to, (unsigned long long)limits[l].pending_decrease_to,
                     (unsigned long long)u.debt_total, (unsigned long long)limits[l].debt_total);
        /* the invariant that matters most: never more admitted than capacity,
         * except by debt that Complete charged */
        if (limits[l].def.overage == RL_OVERAGE_DENY) assert_true(used <= limits[l].capacity || u.status);
    }
}

/* --- the backends under test --- */

static rl_backend *create_memory(const rl_clock *clock, unsigned seed) {
    (void)seed;
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = clock;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    rl_backend *backend;
    assert_int_equal(rl_memory_backend_create(&options, &backend), RL_OK);
    return backend;
}

static rl_test_redis redis_server; /* the "redis" group's, started by its group setup */

static rl_backend *create_redis(const rl_clock *clock, unsigned seed) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "m%u:", seed); /* a fresh keyspace per seed */
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.host = "127.0.0.1";
    options.port = redis_server.port;
    options.key_prefix = prefix;
    options.clock = clock;
    options.lease_memory_ms = LEASE_MEMORY_MS;
    options.sweep_interval_ms = 0; /* as the memory fixture: no thread reads the clock while a case advances it */
    rl_backend *backend = NULL;
    char err[256] = "";
    rl_status status = rl_redis_backend_create(&options, &backend, err, sizeof err);
    if (status != RL_OK) fail_msg("rl_redis_backend_create on port %u: %d %s", (unsigned)redis_server.port, status, err);
    return backend;
}

static int start_redis(void **state) {
    (void)state;
    if (rl_test_redis_start(&redis_server) != RL_TEST_REDIS_STARTED) return -1;
    print_message("redis-server %s on 127.0.0.1:%u (log: %s)\n", redis_server.executable,
                  (unsigned)redis_server.port, redis_server.log_path);
    return 0;
}

static int stop_redis(void **state) {
    (void)state;
    rl_test_redis_cleanup(&redis_server);
    return 0;
}

static void run_seed(unsigned seed, int steps, rl_backend *(*create)(const rl_clock *, unsigned)) {
    srand(seed);
    memset(limits, 0, sizeof limits);
    memset(leases, 0, sizeof leases);
    entry_count = 0;
    rl_manual_clock clock;
    rl_manual_clock_init(&clock, 5000, 1700000000000u);
    now_ms = 5000;
    rl_backend *backend = create(&clock.base, seed);
    for (int l = 0; l < LIMITS; l++) {
        rl_limit_def *d = &limits[l].def;
        snprintf(d->key, sizeof d->key, "model:%d", l);
        d->kind = l == 3 ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING;
        d->capacity = (uint64_t)(5 + rand() % 40);
        if (d->kind == RL_KIND_ROLLING) d->window_seconds = (uint32_t)(1 + rand() % 5);
        else d->timeout_seconds = (uint32_t)(1 + rand() % 5);
        d->overage = rand() % 2 ? RL_OVERAGE_DEBT : RL_OVERAGE_DENY;
        limits[l].capacity = d->capacity;
        assert_int_equal(rl_backend_apply_definition(backend, d, NULL), RL_OK);
    }
    int next_lease = 1;
    for (int step = 0; step < steps && next_lease < MAX_LEASES && entry_count < MAX_ENTRIES - LIMITS; step++) {
        int op = rand() % 100;
        if (op < 45) { /* reserve: a fresh lease, or a retry of an old one */
            int lease = (rand() % 5 == 0 && next_lease > 1) ? 1 + rand() % (next_lease - 1) : next_lease++;
            int keys[LIMITS], n = 0;
            uint64_t amounts[LIMITS];
            for (int l = 0; l < LIMITS; l++)
                if (rand() % 2) {
                    keys[n] = l;
                    amounts[n++] = (uint64_t)(1 + rand() % (l == 3 ? 2 : 20));
                }
            if (n == 0) {
                keys[n] = 0;
                amounts[n++] = 1;
            }
            rl_requirement reqs[LIMITS];
            for (int i = 0; i < n; i++) reqs[i] = (rl_requirement){limits[keys[i]].def.key, amounts[i]};
            char id[27];
            rl_reserve_request request = {rl_test_lease_id((uint64_t)lease, id), NULL, reqs, (size_t)n};
            rl_reserve_result got;
            rl_backend_reserve(backend, &request, &got);
            rl_reserve_result want = model_reserve(lease, keys, amounts, n);
            if (got.allowed != want.allowed || got.status != want.status || got.retry_after_ms != want.retry_after_ms)
                fail_msg("seed %u step %d lease %d: allowed %d/%d status %d/%d retry %llu/%llu", seed, step, lease,
                         got.allowed, want.allowed, got.status, want.status, (unsigned long long)got.retry_after_ms,
                         (unsigned long long)want.retry_after_ms);
            if ((got.status_key == NULL) != (want.status_key == NULL) ||
                (got.status_key != NULL && strcmp(got.status_key, want.status_key) != 0))
                fail_msg("seed %u step %d lease %d: status_key %s/%s", seed, step, lease,
                         got.status_key != NULL ? got.status_key : "(null)",
                         want.status_key != NULL ? want.status_key : "(null)");
        } else if (op < 75) { /* complete some lease with random actuals */
            if (next_lease == 1) continue;
            int lease = 1 + rand() % (next_lease - 1);
            int keys[LIMITS], n = 0;
            uint64_t actuals[LIMITS];
            for (int l = 0; l < LIMITS; l++)
                if (rand() % 2) {
                    keys[n] = l;
                    actuals[n++] = (uint64_t)(rand() % 30);
                }
            rl_actual acts[LIMITS];
            for (int i = 0; i < n; i++) acts[i] = (rl_actual){limits[keys[i]].def.key, actuals[i]};
            char id[27];
            rl_complete_request request = {rl_test_lease_id((uint64_t)lease, id), NULL, acts, (size_t)n};
            assert_int_equal(rl_backend_complete(backend, &request), RL_OK);
            model_complete(lease, keys, actuals, n);
        } else if (op < 95) { /* time passes */
            uint64_t delta = (uint64_t)(rand() % 1500);
            rl_manual_clock_advance(&clock, delta);
            now_ms += delta;
        } else { /* an admin changes a capacity */
            int l = rand() % LIMITS;
            limits[l].def.capacity = (uint64_t)(3 + rand() % 50);
            rl_limit_status status;
            assert_int_equal(rl_backend_apply_definition(backend, &limits[l].def, &status), RL_OK);
            expire();
            if (limits[l].def.capacity >= limits[l].capacity) {
                limits[l].capacity = limits[l].def.capacity;
                limits[l].pending_decrease_to = 0;
            } else {
                limits[l].pending_decrease_to = limits[l].def.capacity;
                try_decrease(l);
            }
            assert_int_equal(status, limits[l].pending_decrease_to ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE);
        }
        check_usage(backend, step);
    }
    rl_backend_sweep(backend);
    rl_backend_destroy(backend);
}

static void random_interleavings_match_the_model(void **state) {
    (void)state;
    for (unsigned seed = 1; seed <= 30; seed++) run_seed(seed, 4000, create_memory);
}

static void random_interleavings_match_the_model_on_redis(void **state) {
    (void)state;
    for (unsigned seed = 1; seed <= 10; seed++) run_seed(seed, 1500, create_redis);
}

static void redis_server_missing(void **state) {
    (void)state;
    skip();
}

int main(void) {
    const struct CMUnitTest memory_tests[] = {
        cmocka_unit_test(random_interleavings_match_the_model),
    };
    struct CMUnitTest redis_tests[] = {
        cmocka_unit_test(random_interleavings_match_the_model_on_redis),
    };
    char executable[512];
    bool have_redis = rl_test_redis_find_executable(executable, sizeof executable);
    if (!have_redis) {
        fprintf(stderr, "no redis-server on PATH (make deps installs it): the redis group is skipped\n");
        redis_tests[0].test_func = redis_server_missing;
    }
    int failed = cmocka_run_group_tests_name("memory", memory_tests, NULL, NULL);
    failed += have_redis ? cmocka_run_group_tests_name("redis", redis_tests, start_redis, stop_redis)
                         : cmocka_run_group_tests_name("redis", redis_tests, NULL, NULL);
    return failed;
}
