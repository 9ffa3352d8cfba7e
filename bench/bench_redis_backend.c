/* bench_redis_backend.c — the redis backend without HTTP: batches of
 * 4-requirement leases sent straight to rl_backend_reserve_batch, so that
 * Redis's time per lease in the scripts can be read off INFO commandstats.
 *
 *   redis-server --port 16411 --save '' --appendonly no &
 *   redis-cli -p 16411 config resetstat
 *   build/bench_redis_backend 16411 256        # port, leases per call
 *   redis-cli -p 16411 info commandstats       # evalsha usec_per_call / 256
 *
 * Capacities are huge and windows 1 s: every lease is admitted. Uses key
 * prefix "bench:" so that it does not touch a daemon's keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ratelimiter/redis.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_redis_backend PORT [leases_per_call=256] [calls=200]\n");
        return 2;
    }
    int per_call = argc > 2 ? atoi(argv[2]) : 256, calls = argc > 3 ? atoi(argv[3]) : 200;
    if (per_call < 1 || calls < 1) return 2;
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = (uint16_t)atoi(argv[1]);
    options.key_prefix = "bench:";
    options.sweep_interval_ms = 0;
    rl_backend *backend;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) {
        fprintf(stderr, "bench_redis_backend: %s\n", err);
        return 1;
    }
    const char *keys[4] = {"global:llm:openai:gpt-4o:rpm", "global:llm:openai:gpt-4o:tpm",
                           "global:llm:openai:gpt-4o:concurrency", "tenant:tenant_a:llm:daily_tokens"};
    for (int i = 0; i < 4; i++) {
        rl_limit_def def = {.kind = i == 2 ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING, .capacity = UINT64_C(1) << 50};
        snprintf(def.key, sizeof def.key, "%s", keys[i]);
        if (i == 2) def.timeout_seconds = 1;
        else def.window_seconds = 1;
        rl_backend_apply_definition(backend, &def, NULL);
    }
    rl_requirement requirements[4] = {{keys[0], 1, false}, {keys[1], 1800, false}, {keys[2], 1, false}, {keys[3], 1800, false}};
    char (*ids)[27] = malloc((size_t)per_call * 27);
    rl_reserve_request *requests = malloc(sizeof *requests * (size_t)per_call);
    rl_reserve_result *results = malloc(sizeof *results * (size_t)per_call);
    unsigned long long leases = 0, allowed = 0;
    unsigned run = (unsigned)time(NULL) % 100000u; /* fresh lease ids for every run */
    double start = now_s();
    for (int c = 0; c < calls; c++) {
        for (int i = 0; i < per_call; i++) {
            snprintf(ids[i], 27, "01J%05u%05d%013d", run, c % 100000, i);
            requests[i] = (rl_reserve_request){ids[i], NULL, requirements, 4, false};
        }
        rl_backend_reserve_batch(backend, requests, (size_t)per_call, results);
        for (int i = 0; i < per_call; i++) allowed += results[i].allowed;
        leases += (unsigned long long)per_call;
    }
    double elapsed = now_s() - start;
    printf("%llu leases (%llu allowed) in %d calls of %d: %.2f s, %.0f leases/s at the client\n", leases, allowed,
           calls, per_call, elapsed, (double)leases / elapsed);
    free(ids);
    free(requests);
    free(results);
    rl_backend_destroy(backend);
    return allowed == leases ? 0 : 1;
}
