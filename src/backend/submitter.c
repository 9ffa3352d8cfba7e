/* submitter.c — micro-batching in front of a backend (see ratelimiter/submitter.h):
 * two lanes (core/batch_lane.h), one for reserves and one for completes. */
#include "ratelimiter/submitter.h"

#include <stdlib.h>

#include "core/batch_lane.h"

typedef struct submitter {
    rl_backend base; /* first: the rl_backend * handed out points here */
    rl_backend_ops ops; /* the inner backend's shape: its name, its optional ops */
    rl_backend *inner;
    rl__batcher_lane reserve;
    rl__batcher_lane complete;
} submitter;

static inline submitter *from_base(rl_backend *base) { return (submitter *)base; }

void rl_submitter_options_default(rl_submitter_options *options) {
    options->max_leases = 1024;
    options->flush_interval_us = 200;
    options->flushes_in_flight = 2;
}

/* A backend answers every lease (failures included) in its results. */
static rl_status send_reserve(void *inner, const void *requests, size_t count, void *results) {
    rl_backend_reserve_batch(inner, requests, count, results);
    return RL_OK;
}

static rl_status send_complete(void *inner, const void *requests, size_t count, void *results) {
    rl_backend_complete_batch(inner, requests, count, results);
    return RL_OK;
}

static void reserve_batch(rl_backend *base, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results) {
    (void)rl__batcher_lane_call(&from_base(base)->reserve, requests, count, results);
}

static void complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    (void)rl__batcher_lane_call(&from_base(base)->complete, requests, count, statuses);
}

/* The lane answers from its flusher; send_* never fail, so the results are
 * always written and no status is needed. */
static void reserve_batch_async(rl_backend *base, const rl_reserve_request *requests, size_t count,
                                rl_reserve_result *results, void (*done)(void *context), void *context) {
    rl__batcher_lane_call_async(&from_base(base)->reserve, requests, count, results, NULL, done, context);
}

static void complete_batch_async(rl_backend *base, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, void (*done)(void *context), void *context) {
    rl__batcher_lane_call_async(&from_base(base)->complete, requests, count, statuses, NULL, done, context);
}

static rl_status template_usage(rl_backend *base, const char *const *patterns, size_t count,
                                rl_template_usage *out) {
    return rl_backend_template_usage(from_base(base)->inner, patterns, count, out);
}

/* Both lanes' batches, then whatever the inner backend counts. */
static void stats(rl_backend *base, rl_backend_stats *out) {
    submitter *s = from_base(base);
    rl__batcher_lane_batch_stats(&s->reserve, out);
    rl__batcher_lane_batch_stats(&s->complete, out);
    if (s->inner->ops->stats != NULL) s->inner->ops->stats(s->inner, out);
}

static rl_status apply_definition(rl_backend *base, const rl_limit_def *def, rl_limit_status *out_status) {
    return rl_backend_apply_definition(from_base(base)->inner, def, out_status);
}

static rl_status limit_usage(rl_backend *base, const char *key, rl_limit_usage *out) {
    return rl_backend_limit_usage(from_base(base)->inner, key, out);
}

static void sweep(rl_backend *base) { rl_backend_sweep(from_base(base)->inner); }

static rl_status health(rl_backend *base, char *detail, size_t detail_size) {
    return rl_backend_health(from_base(base)->inner, detail, detail_size);
}

static rl_status list_definitions(rl_backend *base, rl_limit_def **out, size_t *count) {
    rl_backend *inner = from_base(base)->inner;
    return rl_backend_list_definitions(inner, out, count);
}

static rl_status get_definition(rl_backend *base, const char *key, rl_limit_def *out) {
    rl_backend *inner = from_base(base)->inner;
    return rl_backend_get_definition(inner, key, out);
}

static rl_status count_definitions(rl_backend *base, size_t *count) {
    rl_backend *inner = from_base(base)->inner;
    return rl_backend_count_definitions(inner, count);
}

static rl_status delete_definition(rl_backend *base, const char *key) {
    return rl_backend_delete_definition(from_base(base)->inner, key);
}

static rl_status restore_definition(rl_backend *base, const rl_limit_def *def) {
    return rl_backend_restore_definition(from_base(base)->inner, def);
}

static rl_status put_template(rl_backend *base, const rl_limit_def *def) {
    return rl_backend_put_template(from_base(base)->inner, def);
}

static rl_status delete_template(rl_backend *base, const char *pattern) {
    return rl_backend_delete_template(from_base(base)->inner, pattern);
}

static rl_status list_templates(rl_backend *base, rl_limit_def **out, size_t *count) {
    return rl_backend_list_templates(from_base(base)->inner, out, count);
}

static rl_status audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    return from_base(base)->inner->ops->audit_query(from_base(base)->inner, query, page);
}

static void destroy(rl_backend *base) {
    submitter *s = from_base(base);
    rl__batcher_lane_destroy(&s->reserve); /* its last flush still uses inner */
    rl__batcher_lane_destroy(&s->complete);
    rl_backend_destroy(s->inner);
    free(s);
}

rl_status rl_submitter_create(rl_backend *inner, const rl_submitter_options *options, rl_backend **out) {
    *out = NULL;
    rl_submitter_options defaults;
    if (options == NULL) {
        rl_submitter_options_default(&defaults);
        options = &defaults;
    }
    if (inner == NULL || options->max_leases == 0 || options->flushes_in_flight == 0) return RL_INVALID_REQUEST;
    submitter *s = calloc(1, sizeof *s);
    if (s == NULL) return RL_NO_MEMORY;
    /* Transparent: it answers to the inner backend's name, and has an
     * optional op only where the inner backend has it (a submitter over the
     * memory backend has no list_definitions, as the memory backend). */
    s->ops = (rl_backend_ops){
        .abi_version = RL_BACKEND_ABI_VERSION, .name = inner->ops->name, .apply_definition = apply_definition,
        .reserve_batch = reserve_batch, .complete_batch = complete_batch, .limit_usage = limit_usage,
        .sweep = sweep, .destroy = destroy, .health = health,
        .list_definitions = inner->ops->list_definitions != NULL ? list_definitions : NULL,
        .get_definition = inner->ops->get_definition != NULL ? get_definition : NULL,
        .count_definitions = inner->ops->count_definitions != NULL ? count_definitions : NULL,
        .audit_query = inner->ops->audit_query != NULL ? audit_query : NULL,
        .delete_definition = inner->ops->delete_definition != NULL ? delete_definition : NULL,
        .restore_definition = inner->ops->restore_definition != NULL ? restore_definition : NULL,
        .put_template = inner->ops->put_template != NULL ? put_template : NULL,
        .delete_template = inner->ops->delete_template != NULL ? delete_template : NULL,
        .list_templates = inner->ops->list_templates != NULL ? list_templates : NULL,
        /* Always: waiting for a flush is the submitter's, whatever inner is. */
        .reserve_batch_async = reserve_batch_async, .complete_batch_async = complete_batch_async,
        .stats = stats,
        .template_usage = inner->ops->template_usage != NULL ? template_usage : NULL,
    };
    s->base.ops = &s->ops;
    s->inner = inner;
    uint64_t delay_ns = (uint64_t)options->flush_interval_us * 1000u;
    if (rl__batcher_lane_init(&s->reserve, inner, send_reserve, sizeof(rl_reserve_request), sizeof(rl_reserve_result),
                              options->max_leases, delay_ns, options->flushes_in_flight) != RL_OK) {
        free(s);
        return RL_NO_MEMORY;
    }
    if (rl__batcher_lane_init(&s->complete, inner, send_complete, sizeof(rl_complete_request), sizeof(rl_status),
                              options->max_leases, delay_ns, options->flushes_in_flight) != RL_OK) {
        rl__batcher_lane_destroy(&s->reserve);
        free(s);
        return RL_NO_MEMORY;
    }
    *out = &s->base;
    return RL_OK;
}
