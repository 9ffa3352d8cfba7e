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
 *
 * A fourth argument says where the limits come from: "explicit" (the
 * default: each key PUT), "templates" (the same four keys, each made from a
 * template), or "tenants" (three keys PUT, the fourth a tenant's key made
 * from a template, another tenant every lease: a limit made per lease, as a
 * million tenants touched once each). A fifth sets the lease memory in ms
 * (default 600000) and a sixth the windows and hold timeouts in seconds
 * (default 1): bench/redis/made_memory.sh measures Redis's memory with
 * them.
 */
#include <stdbool.h>
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
        fprintf(stderr, "usage: bench_redis_backend PORT [leases_per_call=256] [calls=200] "
                        "[explicit|templates|tenants] [lease_memory_ms=600000] [window_seconds=1]\n");
        return 2;
    }
    int per_call = argc > 2 ? atoi(argv[2]) : 256, calls = argc > 3 ? atoi(argv[3]) : 200;
    const char *mode = argc > 4 ? argv[4] : "explicit";
    bool templates = strcmp(mode, "templates") == 0, tenants = strcmp(mode, "tenants") == 0;
    if (per_call < 1 || calls < 1 || (!templates && !tenants && strcmp(mode, "explicit") != 0)) return 2;
    rl_redis_options options;
    rl_redis_options_default(&options);
    options.port = (uint16_t)atoi(argv[1]);
    options.key_prefix = "bench:";
    options.sweep_interval_ms = 0;
    if (argc > 5) options.lease_memory_ms = (uint32_t)atoi(argv[5]);
    uint32_t window_seconds = argc > 6 ? (uint32_t)atoi(argv[6]) : 1;
    if (window_seconds < 1) return 2;
    rl_backend *backend;
    char err[256];
    if (rl_redis_backend_create(&options, &backend, err, sizeof err) != RL_OK) {
        fprintf(stderr, "bench_redis_backend: %s\n", err);
        return 1;
    }
    const char *keys[4] = {"global:llm:openai:gpt-4o:rpm", "global:llm:openai:gpt-4o:tpm",
                           "global:llm:openai:gpt-4o:concurrency", "tenant:tenant_a:llm:daily_tokens"};
    const char *patterns[4] = {"global:llm:{provider}:{model}:rpm", "global:llm:{provider}:{model}:tpm",
                               "global:llm:{provider}:{model}:concurrency", "tenant:{tenant}:llm:daily_tokens"};
    for (int i = 0; i < 4; i++) {
        rl_limit_def def = {.kind = i == 2 ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING, .capacity = UINT64_C(1) << 50};
        bool made = templates || (tenants && i == 3);
        snprintf(def.key, sizeof def.key, "%s", made ? patterns[i] : keys[i]);
        if (i == 2) def.timeout_seconds = window_seconds;
        else def.window_seconds = window_seconds;
        rl_status status = made ? rl_backend_put_template(backend, &def) : rl_backend_apply_definition(backend, &def, NULL);
        if (status != RL_OK) {
            fprintf(stderr, "bench_redis_backend: %s: %s\n", def.key, rl_status_name(status));
            return 1;
        }
    }
    char (*ids)[27] = malloc((size_t)per_call * 27);
    char (*tenant_keys)[64] = malloc((size_t)per_call * 64);
    rl_requirement (*requirements)[4] = malloc((size_t)per_call * sizeof *requirements);
    for (int i = 0; i < per_call; i++) {
        rl_requirement lease[4] = {{keys[0], 1, false}, {keys[1], 1800, false}, {keys[2], 1, false}, {keys[3], 1800, false}};
        memcpy(requirements[i], lease, sizeof lease);
        if (tenants) requirements[i][3].key = tenant_keys[i];
    }
    rl_reserve_request *requests = malloc(sizeof *requests * (size_t)per_call);
    rl_reserve_result *results = malloc(sizeof *results * (size_t)per_call);
    unsigned long long leases = 0, allowed = 0;
    unsigned run = (unsigned)time(NULL) % 100000u; /* fresh lease ids for every run */
    double start = now_s();
    for (int c = 0; c < calls; c++) {
        for (int i = 0; i < per_call; i++) {
            snprintf(ids[i], 27, "01J%05u%05d%013d", run, c % 100000, i);
            if (tenants) snprintf(tenant_keys[i], 64, "tenant:t%05u_%d_%d:llm:daily_tokens", run, c, i);
            requests[i] = (rl_reserve_request){ids[i], NULL, requirements[i], 4, false};
        }
        rl_backend_reserve_batch(backend, requests, (size_t)per_call, results);
        for (int i = 0; i < per_call; i++) allowed += results[i].allowed;
        leases += (unsigned long long)per_call;
    }
    double elapsed = now_s() - start;
    printf("%llu leases (%llu allowed) in %d calls of %d: %.2f s, %.0f leases/s at the client\n", leases, allowed,
           calls, per_call, elapsed, (double)leases / elapsed);
    free(ids);
    free(tenant_keys);
    free(requirements);
    free(requests);
    free(results);
    rl_backend_destroy(backend);
    return allowed == leases ? 0 : 1;
}
