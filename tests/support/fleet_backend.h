/* support/fleet_backend.h — a fleet as one rl_backend, for the backend
 * tests: count redis backends with allotments (ratelimiter/redis.h) on one
 * Redis and one manual clock, each its own daemon, their keepers stepped by
 * hand (tick_ms 0): every keeper takes a step before and after every call,
 * as if its tick came between any two requests, so that allotments are
 * carved, refilled, drained and given back as the calls go, and a case
 * runs the same every time. A lease goes to the daemon its id hashes to (its
 * retries and its Complete too: a load balancer with lease affinity);
 * definitions, usage and the audit log go to the first daemon, and after a
 * definition changes, or before usage is read, every keeper looks at its
 * keys in Redis at its next step (the bounds of docs/allotments.md, on
 * definitions reaching daemons and on how old a limit's usage may be,
 * taken as instant).
 * Before every call each keeper looks at all its keys in Redis, telling
 * what it holds live, so that Redis's figures are exact (a running
 * keeper's lag by up to a look). Header-only; include <cmocka.h> first.
 */
#ifndef RL_TEST_FLEET_BACKEND_H
#define RL_TEST_FLEET_BACKEND_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/allot/allotted_backend.h"
#include "ratelimiter/redis.h"

#define RL_TEST_FLEET_MAX 4

typedef struct rl_test_fleet {
    rl_backend base;
    rl_backend *daemons[RL_TEST_FLEET_MAX];
    size_t count;
    pthread_mutex_t stepping; /* a keeper takes one step at a time, whoever calls */
    const rl_clock *clock;    /* the daemons' */
    /* Whether the keepers have looked since the last call or clock move:
     * reading usage again then needs no new look (a faster suite). */
    bool looked;
    uint64_t looked_at_ms;
} rl_test_fleet;

static inline rl_test_fleet *rl_test_fleet_of(rl_backend *base) { return (rl_test_fleet *)base; }

/* Every keeper takes a step; with look, each looks at every key in Redis
 * (and tells what it holds live), as a running keeper does at least every
 * PROBE_MS. */
static inline void rl_test_fleet_step_looking(rl_backend *base, bool look) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    pthread_mutex_lock(&fleet->stepping);
    for (size_t i = 0; i < fleet->count; i++) {
        if (look) rl__allot_keeper_recheck(rl__allotted_of(fleet->daemons[i]));
        rl__allot_keeper_step(rl__allotted_of(fleet->daemons[i]));
    }
    fleet->looked = look;
    fleet->looked_at_ms = fleet->clock->monotonic_ms(fleet->clock);
    pthread_mutex_unlock(&fleet->stepping);
}

static inline void rl_test_fleet_step(rl_backend *base) { rl_test_fleet_step_looking(base, false); }

/* A case that called a daemon directly: the next usage read looks again. */
static inline void rl_test_fleet_touched(rl_backend *base) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    pthread_mutex_lock(&fleet->stepping);
    fleet->looked = false;
    pthread_mutex_unlock(&fleet->stepping);
}

/* The daemon a lease id goes to: its ULID's last character, so that a
 * case's leases 1, 2, 3... spread over the daemons. */
static inline rl_backend *rl_test_fleet_daemon_of(rl_test_fleet *fleet, const char *lease_id) {
    size_t len = strlen(lease_id);
    return fleet->daemons[(unsigned char)lease_id[len - 1] % fleet->count];
}

static void rl_test_fleet_reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                                        rl_reserve_result *results) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    for (size_t i = 0; i < count; i++) {
        rl_test_fleet_step_looking(base, true);
        rl_backend_reserve_batch(rl_test_fleet_daemon_of(fleet, requests[i].lease_id), &requests[i], 1, &results[i]);
    }
    rl_test_fleet_step(base);
}

static void rl_test_fleet_complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                                         rl_status *statuses) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    for (size_t i = 0; i < count; i++) {
        rl_test_fleet_step_looking(base, true);
        rl_backend_complete_batch(rl_test_fleet_daemon_of(fleet, requests[i].lease_id), &requests[i], 1,
                                  &statuses[i]);
    }
    rl_test_fleet_step(base);
}

static rl_status rl_test_fleet_apply_definition(rl_backend *base, const rl_limit_def *def,
                                                rl_limit_status *out_status) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    rl_status status = rl_backend_apply_definition(fleet->daemons[0], def, out_status);
    /* two looks: one learns the change (a decrease: the key goes synchronous
     * and stops admitting), the next gives back the unused room */
    rl_test_fleet_step_looking(base, true);
    rl_test_fleet_step_looking(base, true);
    return status;
}

/* Deleted through the first daemon, which drops its mirror at once; the
 * others learn it as their followers would within a second (taken as
 * instant, as a definition's reaching them), then every keeper looks. */
static rl_status rl_test_fleet_delete_definition(rl_backend *base, const char *key) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    rl_status status = rl_backend_delete_definition(fleet->daemons[0], key);
    for (size_t i = 1; i < fleet->count && (status == RL_OK || status == RL_UNKNOWN_LIMIT_KEY); i++)
        rl__allot_key_deleted(rl__allotted_of(fleet->daemons[i]), key);
    rl_test_fleet_step_looking(base, true);
    return status;
}

/* Deleted through the first daemon, and no other told, no keeper stepping:
 * as when a PUT of the key follows at once, before any daemon looked (a
 * follower that reads the changes after both sees only the PUT). For a
 * delete followed at once by a PUT of the key: until then the others still
 * decide from their allotments of the deleted limit. */
static inline rl_status rl_test_fleet_delete_unseen(rl_backend *base, const char *key) {
    return rl_backend_delete_definition(rl_test_fleet_of(base)->daemons[0], key);
}

/* Every keeper tells Redis what it holds live first (a look at every key),
 * so that usage is exact; in a running fleet it lags by up to a look. */
static rl_status rl_test_fleet_limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    pthread_mutex_lock(&fleet->stepping);
    bool fresh = fleet->looked && fleet->looked_at_ms == fleet->clock->monotonic_ms(fleet->clock);
    pthread_mutex_unlock(&fleet->stepping);
    if (!fresh) rl_test_fleet_step_looking(base, true);
    return rl_backend_limit_usage(rl_test_fleet_of(base)->daemons[0], key, out);
}

static void rl_test_fleet_sweep(rl_backend *base) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    for (size_t i = 0; i < fleet->count; i++) rl_backend_sweep(fleet->daemons[i]);
    rl_test_fleet_step(base);
}

static void rl_test_fleet_destroy(rl_backend *base) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    for (size_t i = 0; i < fleet->count; i++) rl_backend_destroy(fleet->daemons[i]);
    pthread_mutex_destroy(&fleet->stepping);
    free(fleet);
}

static rl_status rl_test_fleet_list_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_backend_list_definitions(rl_test_fleet_of(base)->daemons[0], out, count);
}

static rl_status rl_test_fleet_audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    rl_test_fleet_step(base);
    return rl_backend_audit_query(rl_test_fleet_of(base)->daemons[0], query, page);
}

/* A template put through the first daemon; the others read the templates
 * at once, as their followers would within a second (taken as instant, as
 * a definition's reaching them). */
static rl_status rl_test_fleet_put_template(rl_backend *base, const rl_limit_def *def) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    rl_status status = rl_backend_put_template(fleet->daemons[0], def);
    for (size_t i = 1; i < fleet->count; i++) {
        rl_limit_def *templates = NULL;
        size_t count = 0;
        (void)rl_backend_list_templates(fleet->daemons[i], &templates, &count);
        free(templates);
    }
    rl_test_fleet_step_looking(base, true);
    return status;
}

/* Deleted through the first daemon; the others forget it at once (their
 * own delete of it finds it gone, and forgets it as a follower would). */
static rl_status rl_test_fleet_delete_template(rl_backend *base, const char *pattern) {
    rl_test_fleet *fleet = rl_test_fleet_of(base);
    rl_status status = rl_backend_delete_template(fleet->daemons[0], pattern);
    for (size_t i = 1; i < fleet->count; i++) (void)rl_backend_delete_template(fleet->daemons[i], pattern);
    rl_test_fleet_step_looking(base, true);
    return status;
}

static rl_status rl_test_fleet_list_templates(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_backend_list_templates(rl_test_fleet_of(base)->daemons[0], out, count);
}

static const rl_backend_ops rl_test_fleet_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "redis",
    .apply_definition = rl_test_fleet_apply_definition,
    .reserve_batch = rl_test_fleet_reserve_batch,
    .complete_batch = rl_test_fleet_complete_batch,
    .limit_usage = rl_test_fleet_limit_usage,
    .sweep = rl_test_fleet_sweep,
    .destroy = rl_test_fleet_destroy,
    .list_definitions = rl_test_fleet_list_definitions,
    .audit_query = rl_test_fleet_audit_query,
    .delete_definition = rl_test_fleet_delete_definition,
    .put_template = rl_test_fleet_put_template,
    .delete_template = rl_test_fleet_delete_template,
    .list_templates = rl_test_fleet_list_templates,
};

/* count daemons (1..RL_TEST_FLEET_MAX) on redis (its clock drives them all;
 * no submitter: calls go to Redis as they come). */
static inline rl_status rl_test_fleet_create(const rl_redis_options *redis, size_t count, rl_backend **out,
                                             char *err, size_t err_size) {
    rl_test_fleet *fleet = calloc(1, sizeof *fleet);
    if (fleet == NULL) return RL_NO_MEMORY;
    fleet->base.ops = &rl_test_fleet_ops;
    pthread_mutex_init(&fleet->stepping, NULL);
    fleet->clock = redis->clock != NULL ? redis->clock : rl_clock_system();
    rl_allotment_options allotments;
    rl_allotment_options_default(&allotments);
    allotments.tick_ms = 0;
    for (size_t i = 0; i < count && i < RL_TEST_FLEET_MAX; i++) {
        rl_status status = rl_allotted_backend_create(redis, NULL, &allotments, &fleet->daemons[i], err, err_size);
        if (status != RL_OK) {
            rl_test_fleet_destroy(&fleet->base);
            return status;
        }
        fleet->count++;
    }
    *out = &fleet->base;
    return RL_OK;
}

#endif
