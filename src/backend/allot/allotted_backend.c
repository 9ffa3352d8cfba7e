/* allotted_backend.c — the redis backend with allotments (ratelimiter/redis.h,
 * docs/allotments.md): the vtable, the backend's life, and the one road of
 * a lease: decided from the allotments here if every key has room, else
 * forwarded to the synchronous path; a Complete goes where its lease was
 * decided. Everything that is not a lease goes to Redis as it would
 * without allotments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/allot/allotted_backend.h"
#include "backend/redis/redis_allot.h"
#include "ratelimiter/submitter.h"
#include "ratelimiter/ulid.h"

void rl_allotment_options_default(rl_allotment_options *options) {
    options->tick_ms = 50;
    options->duration_ms = 5000;
    options->horizon_ms = 500;
    options->idle_ms = 2000;
    options->max_leases = 0;
}

/* ---- reserves ---- */

/* The forwarded part of a reserve batch, on its way through the
 * synchronous path: one allocation, freed once answered. */
typedef struct reserve_join {
    rl_reserve_result *results; /* the caller's */
    size_t count;               /* forwarded leases */
    void (*done)(void *context);
    void *context;
    size_t *index;              /* forwarded lease k is the caller's index[k] */
    rl_reserve_request *requests;
    rl_reserve_result *answers;
} reserve_join;

/* Decides locally what fits and asks the keeper for allotments of the keys
 * of a lease that found none to be decided from (all its keys: the local
 * decider names one, others may lack one too); returns how many leases are
 * forwarded. */
static size_t decide_locally(allotted_backend *backend, const rl_reserve_request *requests, size_t count,
                             rl_reserve_result *results, bool *forwarded) {
    rl__memory_local_reserve(backend->local, requests, count, results, forwarded);
    size_t sent = 0;
    for (size_t i = 0; i < count; i++) {
        if (!forwarded[i]) continue;
        sent++;
        if (results[i].status_key == NULL) continue;
        for (size_t j = 0; j < requests[i].requirement_count; j++) {
            const char *key = requests[i].requirements[j].key;
            /* a limit made from a template is decided by Redis: no allotment to ask for */
            if (rl__redis_made_from_template(backend->redis, key)) continue;
            rl__allot_want_key(backend, key, requests[i].requirements[j].amount);
        }
    }
    atomic_fetch_add_explicit(&backend->leases_local, count - sent, memory_order_relaxed);
    atomic_fetch_add_explicit(&backend->leases_forwarded, sent, memory_order_relaxed);
    return sent;
}

static reserve_join *reserve_join_new(const rl_reserve_request *requests, size_t count, const bool *forwarded,
                                      size_t sent, rl_reserve_result *results) {
    reserve_join *j = malloc(sizeof *j + sent * (sizeof *j->index + sizeof *j->requests + sizeof *j->answers));
    if (j == NULL) return NULL;
    j->results = results;
    j->count = sent;
    j->requests = (rl_reserve_request *)(j + 1);
    j->answers = (rl_reserve_result *)(j->requests + sent);
    j->index = (size_t *)(j->answers + sent); /* every part a multiple of 8 bytes: aligned */
    for (size_t i = 0, k = 0; i < count; i++) {
        if (!forwarded[i]) continue;
        j->index[k] = i;
        j->requests[k++] = requests[i];
    }
    return j;
}

static void reserve_join_scatter(reserve_join *j) {
    for (size_t k = 0; k < j->count; k++) j->results[j->index[k]] = j->answers[k];
}

static void reserve_forwarded_done(void *context) {
    reserve_join *j = context;
    reserve_join_scatter(j);
    j->done(j->context);
    free(j);
}

/* Out of memory: the forwarded leases (every lease, forwarded NULL) answer so. */
static void fail_forwarded(rl_reserve_result *results, const bool *forwarded, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (forwarded != NULL && !forwarded[i]) continue;
        memset(&results[i], 0, sizeof results[i]);
        results[i].status = RL_NO_MEMORY;
    }
}

static void reserve_batch_async(rl_backend *base, const rl_reserve_request *requests, size_t count,
                                rl_reserve_result *results, void (*done)(void *context), void *context) {
    allotted_backend *backend = rl__allotted_of(base);
    bool on_stack[64];
    bool *forwarded = count <= 64 ? on_stack : malloc(count * sizeof *forwarded);
    if (forwarded == NULL) {
        fail_forwarded(results, NULL, count);
        done(context);
        return;
    }
    size_t sent = decide_locally(backend, requests, count, results, forwarded);
    if (sent == 0) {
        done(context);
    } else if (sent == count) {
        rl_backend_reserve_batch_async(backend->sync, requests, count, results, done, context);
    } else {
        reserve_join *j = reserve_join_new(requests, count, forwarded, sent, results);
        if (j == NULL) {
            fail_forwarded(results, forwarded, count);
            done(context);
        } else {
            j->done = done;
            j->context = context;
            rl_backend_reserve_batch_async(backend->sync, j->requests, sent, j->answers, reserve_forwarded_done, j);
        }
    }
    if (forwarded != on_stack) free(forwarded);
}

static void reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    allotted_backend *backend = rl__allotted_of(base);
    bool on_stack[64];
    bool *forwarded = count <= 64 ? on_stack : malloc(count * sizeof *forwarded);
    if (forwarded == NULL) {
        fail_forwarded(results, NULL, count);
        return;
    }
    size_t sent = decide_locally(backend, requests, count, results, forwarded);
    if (sent == count) {
        rl_backend_reserve_batch(backend->sync, requests, count, results);
    } else if (sent > 0) {
        reserve_join *j = reserve_join_new(requests, count, forwarded, sent, results);
        if (j == NULL) {
            fail_forwarded(results, forwarded, count);
        } else {
            rl_backend_reserve_batch(backend->sync, j->requests, sent, j->answers);
            reserve_join_scatter(j);
            free(j);
        }
    }
    if (forwarded != on_stack) free(forwarded);
}

/* ---- completes ---- */

/* A Complete batch: the local part's spends on their way to Redis, the
 * forwarded part through the synchronous path; answered when both are. */
typedef struct complete_join {
    _Atomic int parts;
    rl_status *statuses; /* the caller's */
    void (*done)(void *context);
    void *context;
    size_t count; /* forwarded */
    size_t *index;
    rl_complete_request *requests;
    rl_status *answers;
    rl__local_spend *spends;
} complete_join;

static complete_join *complete_join_new(size_t count, rl_status *statuses) {
    size_t spends = count * RL_MAX_REQUIREMENTS;
    complete_join *j = malloc(sizeof *j + spends * sizeof *j->spends +
                              count * (sizeof *j->index + sizeof *j->requests + sizeof *j->answers));
    if (j == NULL) return NULL;
    j->statuses = statuses;
    j->spends = (rl__local_spend *)(j + 1);
    j->requests = (rl_complete_request *)(j->spends + spends);
    j->index = (size_t *)(j->requests + count); /* the 8-byte ones first: the statuses last */
    j->answers = (rl_status *)(j->index + count);
    j->count = 0;
    return j;
}

/* Packs the forwarded Completes into j. */
static void complete_join_pack(complete_join *j, const rl_complete_request *requests, size_t count,
                               const bool *forwarded) {
    for (size_t i = 0; i < count; i++) {
        if (!forwarded[i]) continue;
        j->index[j->count] = i;
        j->requests[j->count++] = requests[i];
    }
}

static void complete_part_done(void *context) {
    complete_join *j = context;
    if (atomic_fetch_sub(&j->parts, 1) != 1) return;
    for (size_t k = 0; k < j->count; k++) j->statuses[j->index[k]] = j->answers[k];
    j->done(j->context);
    free(j);
}

static void complete_batch_async(rl_backend *base, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, void (*done)(void *context), void *context) {
    allotted_backend *backend = rl__allotted_of(base);
    complete_join *j = complete_join_new(count, statuses);
    bool *forwarded = malloc(count * sizeof *forwarded);
    if (j == NULL || forwarded == NULL) {
        free(j);
        free(forwarded);
        for (size_t i = 0; i < count; i++) statuses[i] = RL_NO_MEMORY;
        done(context);
        return;
    }
    size_t spent = rl__memory_local_complete(backend->local, requests, count, statuses, forwarded, j->spends);
    complete_join_pack(j, requests, count, forwarded);
    free(forwarded);
    j->done = done;
    j->context = context;
    /* one part for each road taken, and one for this function, so that
     * nothing is answered before both are on their way */
    atomic_init(&j->parts, 1 + (spent > 0) + (j->count > 0));
    if (spent > 0) rl__allot_settle_async(backend, j->spends, spent, complete_part_done, j);
    if (j->count > 0) rl_backend_complete_batch_async(backend->sync, j->requests, j->count, j->answers,
                                                      complete_part_done, j);
    complete_part_done(j);
}

static void complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    allotted_backend *backend = rl__allotted_of(base);
    complete_join *j = complete_join_new(count, statuses);
    bool *forwarded = malloc(count * sizeof *forwarded);
    if (j == NULL || forwarded == NULL) {
        free(j);
        free(forwarded);
        for (size_t i = 0; i < count; i++) statuses[i] = RL_NO_MEMORY;
        return;
    }
    size_t spent = rl__memory_local_complete(backend->local, requests, count, statuses, forwarded, j->spends);
    complete_join_pack(j, requests, count, forwarded);
    free(forwarded);
    if (spent > 0) rl__allot_settle(backend, j->spends, spent);
    if (j->count > 0) rl_backend_complete_batch(backend->sync, j->requests, j->count, j->answers);
    for (size_t k = 0; k < j->count; k++) statuses[j->index[k]] = j->answers[k];
    free(j);
}

/* ---- everything else: Redis's ---- */

/* Applied in Redis; this daemon's keeper looks at its allotments at once
 * (the others within a look of theirs: allot_keeper.c's PROBE_MS). */
static rl_status apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status) {
    allotted_backend *backend = rl__allotted_of(base);
    rl_status status = rl_backend_apply_definition(backend->redis, def, out_status);
    rl__memory_local_absent(backend->local, def->key, 0); /* defined now: no longer skipped here */
    rl__allot_keeper_recheck(backend);
    return status;
}

/* Deleted in Redis, with every daemon's allotment of it; the mirror here
 * goes at the keeper's next step (the hook, rl__allot_key_deleted), the
 * other daemons' when they learn it (their followers, or their keepers
 * finding it unknown). */
static rl_status delete_definition(rl_backend *base, const char *key) {
    return rl_backend_delete_definition(rl__allotted_of(base)->redis, key);
}

static rl_status restore_definition(rl_backend *base, const rl_limit_def *def) {
    return rl_backend_restore_definition(rl__allotted_of(base)->redis, def);
}

/* Templates are Redis's: the limits made from them are decided there
 * (never allotted), so nothing here changes with them. */
static rl_status put_template(rl_backend *base, const rl_limit_def *def) {
    return rl_backend_put_template(rl__allotted_of(base)->redis, def);
}

static rl_status delete_template(rl_backend *base, const char *pattern) {
    return rl_backend_delete_template(rl__allotted_of(base)->redis, pattern);
}

static rl_status list_templates(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_backend_list_templates(rl__allotted_of(base)->redis, out, count);
}

static rl_status limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    return rl_backend_limit_usage(rl__allotted_of(base)->redis, key, out);
}

static void sweep(rl_backend *base) {
    allotted_backend *backend = rl__allotted_of(base);
    rl_backend_sweep(backend->redis);
    rl__memory_local_sweep(backend->local);
}

static rl_status list_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_backend_list_definitions(rl__allotted_of(base)->redis, out, count);
}

static rl_status get_definition(rl_backend *base, const char *key, rl_limit_def *out) {
    return rl_backend_get_definition(rl__allotted_of(base)->redis, key, out);
}

/* While Redis cannot tell, what this daemon knows: it still decides from
 * its allotments (health says so). */
static rl_status count_definitions(rl_backend *base, size_t *count) {
    allotted_backend *backend = rl__allotted_of(base);
    rl_status status = rl_backend_count_definitions(backend->redis, count);
    if (status == RL_BACKEND_ERROR && atomic_load(&backend->admit_until_ms) > backend->clock->monotonic_ms(backend->clock)) {
        *count = rl__redis_known_definitions(backend->redis);
        return RL_OK;
    }
    return status;
}

static rl_status audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    return rl_backend_audit_query(rl__allotted_of(base)->redis, query, page);
}

/* Redis's health; while Redis cannot be reached the daemon still serves
 * from its allotments until they end (degraded), then fails closed. */
static rl_status health(rl_backend *base, char *detail, size_t detail_size) {
    allotted_backend *backend = rl__allotted_of(base);
    char why[384] = "";
    rl_status status = rl_backend_health(backend->redis, why, sizeof why);
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t until_ms = atomic_load(&backend->admit_until_ms);
    if (status == RL_OK) {
        snprintf(detail, detail_size, "%s", why);
        return RL_OK;
    }
    if (until_ms > now_ms) {
        snprintf(detail, detail_size,
                 "Redis cannot serve (%s): deciding from allotments for %llu ms more, then failing closed", why,
                 (unsigned long long)(until_ms - now_ms));
        return RL_OK;
    }
    snprintf(detail, detail_size, "Redis cannot serve (%s) and no allotment is left to decide from", why);
    return RL_BACKEND_ERROR;
}

static void destroy(rl_backend *base) {
    allotted_backend *backend = rl__allotted_of(base);
    rl__redis_on_deleted(backend->redis, NULL, NULL); /* before what the hook touches goes */
    if (backend->keeper != NULL) rl__allot_keeper_stop(backend); /* gives back what it holds */
    uint64_t local = atomic_load(&backend->leases_local), forwarded = atomic_load(&backend->leases_forwarded);
    if (local + forwarded > 0)
        fprintf(stderr, "ratelimiterd: allotments: %llu leases decided locally, %llu by Redis (%.2f %%)\n",
                (unsigned long long)local, (unsigned long long)forwarded, 100.0 * (double)forwarded / (double)(local + forwarded));
    rl__allot_settle_stop(backend);
    rl_backend_destroy(backend->sync);
    rl_backend_destroy(backend->local);
    pthread_mutex_destroy(&backend->inbox_lock);
    free(backend);
}

/* What the keeper holds as of its last step, then the synchronous road's
 * counters (the submitter and Redis under it). */
static void stats(rl_backend *base, rl_backend_stats *out) {
    allotted_backend *backend = rl__allotted_of(base);
    out->allotments = 1;
    out->allotments_held += atomic_load_explicit(&backend->allotments_held, memory_order_relaxed);
    out->allotment_amount_held += atomic_load_explicit(&backend->allotment_amount_held, memory_order_relaxed);
    if (backend->sync->ops->stats != NULL) backend->sync->ops->stats(backend->sync, out);
}

/* Limits made from templates are decided by Redis, never allotted
 * (docs/allotments.md): their usage is the store's. */
static rl_status template_usage(rl_backend *base, const char *const *patterns, size_t count, rl_template_usage *out) {
    return rl_backend_template_usage(rl__allotted_of(base)->sync, patterns, count, out);
}

static const rl_backend_ops allotted_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "redis",
    .apply_definition = apply_definition,
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .limit_usage = limit_usage,
    .sweep = sweep,
    .destroy = destroy,
    .health = health,
    .list_definitions = list_definitions,
    .reserve_batch_async = reserve_batch_async,
    .complete_batch_async = complete_batch_async,
    .get_definition = get_definition,
    .count_definitions = count_definitions,
    .audit_query = audit_query,
    .delete_definition = delete_definition,
    .restore_definition = restore_definition,
    .put_template = put_template,
    .delete_template = delete_template,
    .list_templates = list_templates,
    .stats = stats,
    .template_usage = template_usage,
};

rl_status rl_allotted_backend_create(const rl_redis_options *redis_options, const rl_submitter_options *submitter,
                                     const rl_allotment_options *allotments, rl_backend **out, char *err,
                                     size_t err_size) {
    *out = NULL;
    rl_redis_options redis_defaults;
    rl_allotment_options allot_defaults;
    rl_redis_options_default(&redis_defaults);
    rl_allotment_options_default(&allot_defaults);
    if (redis_options == NULL) redis_options = &redis_defaults;
    if (allotments == NULL) allotments = &allot_defaults;
    allotted_backend *backend = calloc(1, sizeof *backend);
    if (backend == NULL) return RL_NO_MEMORY;
    backend->base.ops = &allotted_ops;
    backend->options = *allotments;
    backend->clock = redis_options->clock != NULL ? redis_options->clock : rl_clock_system();
    pthread_mutex_init(&backend->inbox_lock, NULL);
    rl_ulid_new(backend->daemon_id);

    rl_status status = rl_redis_backend_create(redis_options, &backend->redis, err, err_size);
    if (status != RL_OK) {
        pthread_mutex_destroy(&backend->inbox_lock);
        free(backend);
        return status;
    }
    backend->sync = backend->redis;
    rl__redis_relay_on(backend->redis); /* Completes of leases decided here may reach other daemons */
    if (submitter != NULL && submitter->max_leases > 1) {
        status = rl_submitter_create(backend->redis, submitter, &backend->sync);
        if (status != RL_OK) {
            snprintf(err, err_size, "cannot start the submitter: %s", rl_status_name(status));
            rl_backend_destroy(backend->redis);
            pthread_mutex_destroy(&backend->inbox_lock);
            free(backend);
            return status;
        }
    }
    status = rl__memory_local_create(backend->clock, redis_options->lease_memory_ms, allotments->max_leases,
                                     &backend->local);
    if (status == RL_OK) status = rl__allot_settle_start(backend);
    if (status != RL_OK) {
        snprintf(err, err_size, "cannot set up allotments: %s", rl_status_name(status));
        if (backend->local != NULL) rl_backend_destroy(backend->local);
        rl_backend_destroy(backend->sync);
        pthread_mutex_destroy(&backend->inbox_lock);
        free(backend);
        return status;
    }
    status = rl__allot_keeper_start(backend);
    if (status != RL_OK) {
        snprintf(err, err_size, "cannot start the allotment keeper: %s", rl_status_name(status));
        destroy(&backend->base);
        return status;
    }
    rl__redis_on_deleted(backend->redis, rl__allot_key_deleted, backend); /* the mirror and keeper exist */
    *out = &backend->base;
    return RL_OK;
}
