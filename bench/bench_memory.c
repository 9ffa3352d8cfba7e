/* bench_memory.c — the in-process memory backend: reserve+complete pairs of a
 * 4-requirement LLM lease (rpm, tpm, concurrency, tenant daily tokens), on one
 * thread, as fast as it goes. Prints pairs/s and the p50/p99/p999 latency of
 * one pair (clock reads included).
 *
 *   build/bench_memory [seconds=3] [window_seconds=1] [lease_memory_ms=1000]
 *   build/bench_memory --pairs N [window_seconds=1] [lease_memory_ms=1000]
 *
 * The second form runs exactly N pairs on a simulated clock (a millisecond
 * every 1,000 pairs, about the rate of a timed run, after a simulated warm-up
 * as long as the timed one), so that the state, and the instructions a pair
 * takes, are the same on any machine and under any load:
 *
 *   valgrind --tool=callgrind --instr-atstart=no --toggle-collect=measured_pairs \
 *       build/bench_memory --pairs 200000
 *
 * gives Ir per pair as the events collected / N (the warm-up runs without
 * instrumentation where valgrind/callgrind.h is installed, so faster). The simulated clock also
 * reads the system clock (and drops it), so that a clock read costs what it
 * does in a timed run; there is no sweeper thread.
 *
 * Windows are short by default so that the run reaches a steady state (as many
 * reservations expire per second as are made) instead of measuring a heap that
 * only grows (the concurrency timeout too: a lease is remembered until its
 * longest hold could have timed out); lease memory is 1 s for the same reason, and the measurement
 * starts after a warm-up long enough for both to turn over. Capacities are large
 * enough that every lease is admitted: this measures the admit path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ratelimiter/clock.h"
#include "ratelimiter/memory.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The next ULID in Crockford order, in place: a fresh lease id per attempt
 * at the cost of a few byte compares. */
static void next_ulid(char id[27]) {
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    for (int i = 25; i > 0; i--) {
        const char *at = strchr(alphabet, id[i]);
        if (at[1] != '\0') {
            id[i] = at[1];
            return;
        }
        id[i] = '0';
    }
}

static void define(rl_backend *backend, const char *key, rl_kind kind, uint32_t seconds) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = kind;
    def.capacity = RL_AMOUNT_MAX;
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    if (rl_backend_apply_definition(backend, &def, NULL) != RL_OK) {
        fprintf(stderr, "bench_memory: cannot define %s\n", key);
        exit(1);
    }
}

#define HISTOGRAM_NS 100000 /* 10 ns buckets up to 1 ms */

/* --pairs: time moves by the pair, a millisecond every PAIRS_PER_MS. */
#define PAIRS_PER_MS 1000u

typedef struct simulated_clock {
    rl_clock base;
    uint64_t monotonic_ms, unix_ms;
} simulated_clock;

static uint64_t simulated_read(clockid_t id, uint64_t ms) {
    struct timespec ts;
    clock_gettime(id, &ts); /* what a read of the system clock costs */
    __asm__ volatile("" : : "r"(ts.tv_nsec) : "memory");
    return ms;
}

static uint64_t simulated_monotonic_ms(const rl_clock *clock) {
    return simulated_read(CLOCK_MONOTONIC, ((const simulated_clock *)clock)->monotonic_ms);
}

static uint64_t simulated_unix_ms(const rl_clock *clock) {
    return simulated_read(CLOCK_REALTIME, ((const simulated_clock *)clock)->unix_ms);
}

typedef struct bench_lease {
    rl_backend *backend;
    rl_requirement *reqs;
    rl_actual *actuals;
    char id[27];
} bench_lease;

/* One pair of a fresh lease id; false if it was denied. */
static bool pair(bench_lease *b) {
    next_ulid(b->id);
    rl_reserve_request reserve = {b->id, NULL, b->reqs, 4, false};
    rl_reserve_result result;
    rl_backend_reserve(b->backend, &reserve, &result);
    rl_complete_request complete = {b->id, NULL, b->actuals, 2};
    rl_backend_complete(b->backend, &complete);
    return result.allowed;
}

/* count pairs on the simulated clock; how many were denied. Kept out of
 * line: callgrind counts what it runs (--toggle-collect=measured_pairs). */
__attribute__((noinline)) static uint64_t measured_pairs(bench_lease *b, simulated_clock *clock, uint64_t count) {
    uint64_t denied = 0;
    for (uint64_t i = 1; i <= count; i++) {
        if (!pair(b)) denied++;
        if (i % PAIRS_PER_MS == 0) clock->monotonic_ms++, clock->unix_ms++;
    }
    return denied;
}

int main(int argc, char **argv) {
    uint64_t simulated_pairs = 0;
    if (argc > 2 && strcmp(argv[1], "--pairs") == 0) {
        simulated_pairs = strtoull(argv[2], NULL, 10);
        if (simulated_pairs == 0) {
            fprintf(stderr, "bench_memory: --pairs wants a count\n");
            return 2;
        }
        argv += 1; /* the rest as in the timed form, N in the place of seconds */
        argc -= 1;
    }
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    uint32_t window_seconds = argc > 2 ? (uint32_t)atoi(argv[2]) : 1;
    if (seconds <= 0 || window_seconds == 0) {
        fprintf(stderr, "usage: bench_memory [seconds=3] [window_seconds=1] [lease_memory_ms=1000]\n");
        return 2;
    }
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.lease_memory_ms = argc > 3 ? (uint32_t)atoi(argv[3]) : 1000;
    simulated_clock clock = {{simulated_monotonic_ms, simulated_unix_ms}, 1000000, 1700000000000};
    if (simulated_pairs != 0) {
        options.clock = &clock.base;
        options.sweep_interval_ms = 0;
    }
    rl_backend *backend;
    if (rl_memory_backend_create(&options, &backend) != RL_OK) return 1;

    const char *rpm = "global:llm:openai:gpt-4o:rpm";
    const char *tpm = "global:llm:openai:gpt-4o:tpm";
    const char *conc = "global:llm:openai:gpt-4o:concurrency";
    const char *daily = "tenant:tenant_a:llm:daily_tokens";
    define(backend, rpm, RL_KIND_ROLLING, window_seconds);
    define(backend, tpm, RL_KIND_ROLLING, window_seconds);
    define(backend, conc, RL_KIND_CONCURRENCY, window_seconds);
    define(backend, daily, RL_KIND_ROLLING, window_seconds);

    rl_requirement reqs[] = {{rpm, 1, false}, {tpm, 1800, false}, {conc, 1, false}, {daily, 1800, false}};
    rl_actual actuals[] = {{tpm, 740}, {daily, 740}};
    char id[27] = "01JAAAAAAAAAAAAAAAAAAAAAAA";
    /* Warm up until reservations and remembered leases expire as fast as
     * they are made: from then on the state no longer grows. */
    uint64_t warmup_ns = ((uint64_t)window_seconds * 1000u + options.lease_memory_ms + 1000u) * 1000000u;
    if (simulated_pairs != 0) {
        bench_lease b = {backend, reqs, actuals, {0}};
        memcpy(b.id, id, sizeof id);
        for (uint64_t i = 1; i <= warmup_ns / 1000000u * PAIRS_PER_MS; i++) {
            (void)pair(&b);
            if (i % PAIRS_PER_MS == 0) clock.monotonic_ms++, clock.unix_ms++;
        }
        CALLGRIND_START_INSTRUMENTATION;
        uint64_t denied = measured_pairs(&b, &clock, simulated_pairs);
        CALLGRIND_STOP_INSTRUMENTATION;
        printf("memory backend, 1 thread, 4-requirement lease, window %us, simulated clock\n", window_seconds);
        printf("pairs: %llu measured after %llu of warm-up (denied %llu)\n", (unsigned long long)simulated_pairs,
               (unsigned long long)(warmup_ns / 1000000u * PAIRS_PER_MS), (unsigned long long)denied);
        rl_backend_destroy(backend);
        return denied == 0 ? 0 : 1;
    }
    uint32_t *histogram = calloc(HISTOGRAM_NS / 10 + 1, sizeof *histogram);
    uint64_t pairs = 0, denied = 0;
    uint64_t warmup_end_ns = now_ns() + warmup_ns;
    while (now_ns() < warmup_end_ns) {
        for (int i = 0; i < 1000; i++) {
            next_ulid(id);
            rl_reserve_request reserve = {id, NULL, reqs, 4, false};
            rl_reserve_result result;
            rl_backend_reserve(backend, &reserve, &result);
            rl_complete_request complete = {id, NULL, actuals, 2};
            rl_backend_complete(backend, &complete);
        }
    }
    uint64_t start_ns = now_ns(), deadline_ns = start_ns + (uint64_t)(seconds * 1e9), t = start_ns;
    while (t < deadline_ns) {
        next_ulid(id);
        rl_reserve_request reserve = {id, NULL, reqs, 4, false};
        rl_reserve_result result;
        rl_backend_reserve(backend, &reserve, &result);
        if (!result.allowed) denied++;
        rl_complete_request complete = {id, NULL, actuals, 2};
        rl_backend_complete(backend, &complete);
        uint64_t after = now_ns();
        uint64_t took_ns = after - t;
        histogram[took_ns < HISTOGRAM_NS ? took_ns / 10 : HISTOGRAM_NS / 10]++;
        t = after;
        pairs++;
    }
    double elapsed_s = (double)(t - start_ns) / 1e9;
    uint64_t p50 = 0, p99 = 0, p999 = 0, seen = 0;
    for (uint32_t b = 0; b <= HISTOGRAM_NS / 10; b++) {
        seen += histogram[b];
        if (!p50 && seen * 2 >= pairs) p50 = (uint64_t)b * 10 + 10;
        if (!p99 && seen * 100 >= pairs * 99) p99 = (uint64_t)b * 10 + 10;
        if (!p999 && seen * 1000 >= pairs * 999) p999 = (uint64_t)b * 10 + 10;
    }
    printf("memory backend, 1 thread, 4-requirement lease, window %us\n", window_seconds);
    printf("pairs: %llu in %.2f s = %.0f pairs/s (denied %llu)\n", (unsigned long long)pairs, elapsed_s,
           (double)pairs / elapsed_s, (unsigned long long)denied);
    printf("pair latency: p50 <= %llu ns, p99 <= %llu ns, p99.9 <= %llu ns\n", (unsigned long long)p50,
           (unsigned long long)p99, (unsigned long long)p999);
    free(histogram);
    rl_backend_destroy(backend);
    return denied == 0 ? 0 : 1;
}
