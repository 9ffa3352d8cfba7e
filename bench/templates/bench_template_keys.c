/* bench_template_keys.c — a million tenants' keys made from one template:
 * what they cost in memory while they hold something, and after.
 *
 *   build/bench_template_keys [KEYS]        (default 1,000,000)
 *
 * One memory backend (no journal, no sweeper thread: the bench sweeps) on
 * a manual clock, with the default lease memory (600 s), one rolling
 * template "tenant:{tenant}:llm:daily_tokens" with a 60 s window. Round 1
 * reserves once on each of KEYS distinct tenant keys (every one made on
 * first use); then the clock moves past the window and a sweep forgets
 * their limits; then past the lease memory, and a sweep forgets their
 * leases; round 2 does the same with KEYS other tenants. The process's
 * resident memory (Rss) is printed at each step with the limits and the
 * leases the backend holds, and the reserve rate of first uses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/memory/memory_backend.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/ulid.h"

/* Resident memory as smaps_rollup counts it: exact, where status's VmRSS
 * may lag. */
static long rss_kb(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Rss:", 4) == 0) kb = strtol(line + 4, NULL, 10);
    if (f != NULL) fclose(f);
    return kb;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void step(const char *what, rl_backend *backend) {
    const memory_backend *inside = (const memory_backend *)backend; /* the bench's look inside */
    printf("%-52s %8.1f MB   limits held %zu, leases %llu\n", what, (double)rss_kb() / 1024.0,
           inside->limits.count, (unsigned long long)inside->leases.count);
    fflush(stdout);
}

/* Reserves 1 on each of count keys tenant:<first + i>:llm:daily_tokens. */
static double round_of(rl_backend *backend, uint64_t first, uint64_t count) {
    char key[64], id[27];
    rl_requirement requirement = {key, 1, false};
    rl_reserve_request request = {id, NULL, &requirement, 1, false};
    rl_reserve_result result;
    double start = seconds_now();
    for (uint64_t i = 0; i < count; i++) {
        snprintf(key, sizeof key, "tenant:t%llu:llm:daily_tokens", (unsigned long long)(first + i));
        rl_ulid_new(id);
        rl_backend_reserve(backend, &request, &result);
        if (!result.allowed) {
            fprintf(stderr, "bench_template_keys: %s was not allowed (status %d)\n", key, (int)result.status);
            exit(1);
        }
    }
    return (double)count / (seconds_now() - start);
}

int main(int argc, char **argv) {
    uint64_t keys = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000u;
    rl_manual_clock clock;
    rl_manual_clock_init(&clock, 1000, 1795000000000u);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &clock.base;
    options.sweep_interval_ms = 0;
    rl_backend *backend;
    if (rl_memory_backend_create(&options, &backend) != RL_OK) return 1;
    rl_limit_def daily = {.key = "tenant:{tenant}:llm:daily_tokens", .kind = RL_KIND_ROLLING, .capacity = 1000000,
                          .window_seconds = 60};
    if (rl_backend_put_template(backend, &daily) != RL_OK) return 1;
    printf("%llu keys through one template (rolling, 60 s window), leases remembered %llu s after it\n",
           (unsigned long long)keys, (unsigned long long)options.lease_memory_ms / 1000);
    step("before", backend);
    for (int round = 1; round <= 2; round++) {
        double rate = round_of(backend, (uint64_t)round * keys, keys);
        char what[96];
        snprintf(what, sizeof what, "round %d: %llu keys made (%.0f first reserves/s)", round,
                 (unsigned long long)keys, rate);
        step(what, backend);
        rl_manual_clock_advance(&clock, 62000); /* the windows over */
        rl_backend_sweep(backend);
        rl_limit_usage usage;
        /* the first key of the round: forgotten, so made again (empty) by this read */
        char key[64];
        snprintf(key, sizeof key, "tenant:t%llu:llm:daily_tokens", (unsigned long long)round * keys);
        if (rl_backend_limit_usage(backend, key, &usage) != RL_OK || usage.used != 0) return 1;
        rl_backend_sweep(backend);
        snprintf(what, sizeof what, "round %d: after the window, swept", round);
        step(what, backend);
        rl_manual_clock_advance(&clock, options.lease_memory_ms); /* the leases' memory over */
        rl_backend_sweep(backend);
        snprintf(what, sizeof what, "round %d: after the lease memory, swept", round);
        step(what, backend);
    }
    rl_backend_destroy(backend);
    return 0;
}
