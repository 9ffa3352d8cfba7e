/* bench_memory.c — the in-process memory backend: reserve+complete pairs of a
 * 4-requirement LLM lease (rpm, tpm, concurrency, tenant daily tokens), on one
 * thread, as fast as it goes. Prints pairs/s and the p50/p99/p999 latency of
 * one pair (clock reads included).
 *
 *   build/bench_memory [seconds=3] [window_seconds=1] [lease_memory_ms=1000]
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

#include "ratelimiter/memory.h"

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

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    uint32_t window_seconds = argc > 2 ? (uint32_t)atoi(argv[2]) : 1;
    if (seconds <= 0 || window_seconds == 0) {
        fprintf(stderr, "usage: bench_memory [seconds=3] [window_seconds=1] [lease_memory_ms=1000]\n");
        return 2;
    }
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.lease_memory_ms = argc > 3 ? (uint32_t)atoi(argv[3]) : 1000;
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

    rl_requirement reqs[] = {{rpm, 1}, {tpm, 1800}, {conc, 1}, {daily, 1800}};
    rl_actual actuals[] = {{tpm, 740}, {daily, 740}};
    char id[27] = "01JAAAAAAAAAAAAAAAAAAAAAAA";
    uint32_t *histogram = calloc(HISTOGRAM_NS / 10 + 1, sizeof *histogram);
    uint64_t pairs = 0, denied = 0;
    /* Warm up until reservations and remembered leases expire as fast as
     * they are made: from then on the state no longer grows. */
    uint64_t warmup_ns = ((uint64_t)window_seconds * 1000u + options.lease_memory_ms + 1000u) * 1000000u;
    uint64_t warmup_end_ns = now_ns() + warmup_ns;
    while (now_ns() < warmup_end_ns) {
        for (int i = 0; i < 1000; i++) {
            next_ulid(id);
            rl_reserve_request reserve = {id, NULL, reqs, 4};
            rl_reserve_result result;
            rl_backend_reserve(backend, &reserve, &result);
            rl_complete_request complete = {id, NULL, actuals, 2};
            rl_backend_complete(backend, &complete);
        }
    }
    uint64_t start_ns = now_ns(), deadline_ns = start_ns + (uint64_t)(seconds * 1e9), t = start_ns;
    while (t < deadline_ns) {
        next_ulid(id);
        rl_reserve_request reserve = {id, NULL, reqs, 4};
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
