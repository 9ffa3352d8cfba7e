/* redis_backend.c — the backend vtable over Redis (see ratelimiter/redis.h)
 * and the backend's life; its operations are in redis_reserve.c,
 * redis_complete.c, redis_upkeep.c (usage, sweep, health, the background
 * step) and redis_definitions.c.
 *
 * Each operation is one script call: the C side only checks requests, lays
 * them out as the script's ARGV and maps the answer back. All accounting
 * happens inside the scripts (src/backend/redis/lua), atomically. Every
 * operation has one deadline for all its calls to Redis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/redis/redis_backend_internal.h"
#include "core/call_wait.h"
#include "ratelimiter/memory.h"

/* The background thread's step: definitions followed, sweeps when due. */
#define PERIODIC_STEP_MS 1000u

uint64_t rl_redis_operation_deadline_ms(const redis_backend *backend) {
    return rl_redis_pool_deadline_ms(backend->pool, rl__call_wait_since_ms());
}

void rl_redis_options_default(rl_redis_options *options) {
    memset(options, 0, sizeof *options);
    options->host = "127.0.0.1";
    options->port = 6379;
    options->key_prefix = "rl:";
    options->connections = 4;
    options->connect_timeout_ms = 200;
    options->command_timeout_ms = 500;
    options->lease_memory_ms = RL_MEMORY_DEFAULT_LEASE_MEMORY_MS;
    options->complete_retry_deadline_ms = 30000;
    options->max_pending_completes = 100000;
    options->sweep_interval_ms = 1000;
    options->audit_retention_days = RL_AUDIT_DEFAULT_RETENTION_DAYS;
}

static void destroy(rl_backend *base) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_complete_retry_stop(backend->retry); /* its last try still uses the pool */
    rl_redis_pool_destroy(backend->pool);
    rl_definition_cache_destroy(backend->definitions);
    rl__budget_periods_destroy(backend->budgets);
    rl__template_copy_destroy(backend->templates);
    for (size_t i = 0; i < backend->interned_count; i++) free(backend->interned[i]);
    free(backend->interned);
    pthread_mutex_destroy(&backend->interned_lock);
    pthread_mutex_destroy(&backend->hook_lock);
    free(backend->prefix);
    free(backend);
}

static void stats(rl_backend *base, rl_backend_stats *out) {
    rl_redis_pool_stats(rl_redis_backend_of(base)->pool, out);
}

static const rl_backend_ops redis_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "redis",
    .apply_definition = rl_redis_apply_definition,
    .reserve_batch = rl__redis_reserve_batch,
    .complete_batch = rl__redis_complete_batch,
    .limit_usage = rl__redis_limit_usage,
    .sweep = rl__redis_sweep,
    .destroy = destroy,
    .health = rl__redis_health,
    .list_definitions = rl_redis_list_definitions,
    .get_definition = rl_redis_get_definition,
    .count_definitions = rl_redis_count_definitions,
    .audit_query = rl__redis_audit_query,
    .delete_definition = rl_redis_delete_definition,
    .restore_definition = rl_redis_restore_definition,
    .put_template = rl_redis_put_template,
    .delete_template = rl_redis_delete_template,
    .list_templates = rl_redis_list_templates,
    .stats = stats,
    .template_usage = rl__redis_template_usage,
};

rl_status rl_redis_backend_create(const rl_redis_options *options, rl_backend **out, char *err, size_t err_size) {
    *out = NULL;
    rl_redis_options defaults;
    rl_redis_options_default(&defaults);
    if (options == NULL) options = &defaults;
    uint32_t retention_days =
        options->audit_retention_days != 0 ? options->audit_retention_days : RL_AUDIT_DEFAULT_RETENTION_DAYS;
    if (retention_days > RL_AUDIT_MAX_RETENTION_DAYS) {
        snprintf(err, err_size, "audit_retention_days must be 1..%u, not %u", RL_AUDIT_MAX_RETENTION_DAYS,
                 retention_days);
        return RL_INVALID_REQUEST;
    }
    redis_backend *backend = calloc(1, sizeof *backend);
    if (backend == NULL) return RL_NO_MEMORY;
    backend->base.ops = &redis_ops;
    pthread_mutex_init(&backend->interned_lock, NULL);
    pthread_mutex_init(&backend->hook_lock, NULL);
    backend->prefix = strdup(options->key_prefix != NULL ? options->key_prefix : "rl:");
    backend->lease_memory_ms = options->lease_memory_ms;
    backend->sweep_interval_ms = options->sweep_interval_ms;
    backend->clock = options->clock;
    backend->audit_retention_ms = (uint64_t)retention_days * 86400000u;
    backend->definitions = rl_definition_cache_create();
    backend->budgets = rl__budget_periods_create();
    backend->templates = rl__template_copy_create();
    rl_status status = backend->prefix != NULL && backend->definitions != NULL && backend->budgets != NULL &&
                               backend->templates != NULL
                           ? RL_OK
                           : RL_NO_MEMORY;
    if (status == RL_OK) status = rl_redis_pool_create(options, &backend->pool, err, err_size);
    if (status == RL_OK) status = rl_redis_definitions_follow(backend, err, err_size);
    /* after the version is taken: a template put meanwhile is read twice, none missed */
    if (status == RL_OK) status = rl__redis_templates_load(backend, err, err_size);
    if (status == RL_OK) {
        /* Sweeps more often than the step run at the sweep's own pace. */
        uint32_t step_ms = backend->sweep_interval_ms != 0 && backend->sweep_interval_ms < PERIODIC_STEP_MS
                               ? backend->sweep_interval_ms
                               : PERIODIC_STEP_MS;
        backend->next_sweep_ms = rl__redis_monotonic_ms() + backend->sweep_interval_ms;
        status = rl_complete_retry_start(backend, rl__redis_retry_send, rl__redis_periodic,
                                         options->complete_retry_deadline_ms ? options->complete_retry_deadline_ms : 30000,
                                         options->max_pending_completes ? options->max_pending_completes : 100000,
                                         step_ms, &backend->retry);
    }
    if (status != RL_OK) {
        destroy(&backend->base); /* takes what was made, and NULLs */
        return status;
    }
    *out = &backend->base;
    return RL_OK;
}
