/* metrics_limits.c — each limit's capacity and usage as gauges, read by a
 * collector thread off the event loops (metrics.h says why), at most
 * max_series limits in key order; the templates' capacities beside them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/observe/metrics_internal.h"
#include "server/observe/metrics_text.h"

typedef struct gauge {
    const char *name;
    const char *help;
    bool budgets_only;
    uint64_t (*value)(const rl_service_limit *limit);
} gauge;

static uint64_t capacity_of(const rl_service_limit *l) { return l->usage.capacity; }
static uint64_t used_of(const rl_service_limit *l) { return l->usage.used; }
static uint64_t reserved_of(const rl_service_limit *l) { return l->usage.reserved; }
static uint64_t committed_of(const rl_service_limit *l) { return l->usage.committed; }
static uint64_t debt_of(const rl_service_limit *l) { return l->usage.debt; }
static uint64_t available_of(const rl_service_limit *l) { return l->usage.available; }
static uint64_t active_of(const rl_service_limit *l) { return l->usage.active; }
static uint64_t period_start_of(const rl_service_limit *l) { return l->usage.period_start_unix_ms / 1000u; }
static uint64_t period_end_of(const rl_service_limit *l) { return l->usage.period_end_unix_ms / 1000u; }

static const gauge gauges[] = {
    {"ratelimiter_limit_capacity", "The capacity a limit enforces now, in its unit.", false, capacity_of},
    {"ratelimiter_limit_used", "What a limit's live reservations and holds use (a budget: committed + reserved).",
     false, used_of},
    {"ratelimiter_limit_available", "Capacity minus used, or 0.", false, available_of},
    {"ratelimiter_limit_debt", "Used above capacity now (overage: debt).", false, debt_of},
    {"ratelimiter_limit_active", "Live reservations (rolling, budget) or holds (concurrency).", false, active_of},
    {"ratelimiter_limit_reserved", "A budget's open reservations in its current period.", true, reserved_of},
    {"ratelimiter_limit_committed", "A budget's actuals charged in its current period.", true, committed_of},
    {"ratelimiter_limit_period_start_seconds", "When a budget's current period began (Unix seconds).", true,
     period_start_of},
    {"ratelimiter_limit_period_end_seconds", "When a budget's current period ends (Unix seconds).", true,
     period_end_of},
};

/* The series of a template, from its definition or the sum over the
 * limits made from it. */
typedef struct template_gauge {
    const char *name;
    const char *help;
    uint64_t (*value)(const rl_limit_def *def, const rl_template_usage *sum);
} template_gauge;

static uint64_t template_capacity(const rl_limit_def *d, const rl_template_usage *s) { (void)s; return d->capacity; }
static uint64_t template_limits(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->limits; }
static uint64_t template_used(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->used; }
static uint64_t template_available(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->available; }
static uint64_t template_debt(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->debt; }
static uint64_t template_reserved(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->reserved; }
static uint64_t template_committed(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->committed; }
static uint64_t template_partial(const rl_limit_def *d, const rl_template_usage *s) { (void)d; return s->partial; }

static const template_gauge template_gauges[] = {
    {"ratelimiter_template_capacity", "The capacity each limit made from a template gets, by template pattern.",
     template_capacity},
    {"ratelimiter_template_limits", "Limits made from a template and live now (keys that hold something).",
     template_limits},
    {"ratelimiter_template_used", "Used, summed over the limits made from a template.", template_used},
    {"ratelimiter_template_available", "Available, summed over the live limits made from a template.",
     template_available},
    {"ratelimiter_template_debt", "Debt, summed over the limits made from a template.", template_debt},
    {"ratelimiter_template_reserved", "Budgets: open reservations, summed over the limits made from a template.",
     template_reserved},
    {"ratelimiter_template_committed",
     "Budgets: actuals charged this period, summed over the limits made from a template.", template_committed},
    {"ratelimiter_template_sums_partial",
     "1 if the sums above cover only the limits the backend read before its bound (redis: 2,000 a template), "
     "else 0.",
     template_partial},
};

/* A template stands for any number of limits made from it: one series per
 * template, never per made key, keeps the page bounded. Its capacity
 * always; the sums when the backend could add them up. */
static void write_templates(rl_service *service, uint32_t max_series, rl_buf *text) {
    rl_limit_def *templates = NULL;
    size_t count = 0;
    if (rl_service_list_templates(service, &templates, &count) != RL_OK) count = 0;
    if (count > max_series) count = max_series;
    const char **patterns = count > 0 ? malloc(count * sizeof *patterns) : NULL;
    rl_template_usage *sums = count > 0 ? calloc(count, sizeof *sums) : NULL;
    bool summed = false;
    if (patterns != NULL && sums != NULL) {
        for (size_t i = 0; i < count; i++) patterns[i] = templates[i].key;
        summed = rl_backend_template_usage(rl_service_backend(service), patterns, count, sums) == RL_OK;
    }
    size_t families = summed ? sizeof template_gauges / sizeof template_gauges[0] : 1;
    for (size_t g = 0; g < families; g++) {
        rl__metrics_family(text, template_gauges[g].name, "gauge", template_gauges[g].help);
        for (size_t i = 0; i < count; i++) {
            rl_metrics_label labels[] = {{"template", templates[i].key},
                                         {"kind", rl_kind_name(templates[i].kind)},
                                         {"unit", templates[i].unit}};
            static const rl_template_usage none;
            rl__metrics_sample(text, template_gauges[g].name, labels, 3,
                               template_gauges[g].value(&templates[i], summed ? &sums[i] : &none));
        }
    }
    free(patterns);
    free(sums);
    free(templates);
}

void rl__metrics_limits_collect(rl_service *service, uint32_t max_series, rl_buf *text) {
    rl__buf_reset(text);
    rl_service_limit *list = NULL;
    size_t shown = 0, count = 0;
    rl_status listed = rl_service_list_usage(service, max_series, &list, &shown, &count);

    rl__metrics_family(text, "ratelimiter_limits_read_ok", "gauge",
                       "1 if the collector's last read of the limits succeeded, else 0 (series below are absent).");
    rl__metrics_sample(text, "ratelimiter_limits_read_ok", NULL, 0, listed == RL_OK);
    rl__metrics_family(text, "ratelimiter_limits", "gauge", "Limits defined (each its own key; not templates).");
    rl__metrics_sample(text, "ratelimiter_limits", NULL, 0, (uint64_t)count);
    rl__metrics_family(text, "ratelimiter_limit_series_omitted", "gauge",
                       "Limits given no series because of metrics.max_limit_series (the last in key order).");
    rl__metrics_sample(text, "ratelimiter_limit_series_omitted", NULL, 0, (uint64_t)(count - shown));
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        rl__metrics_family(text, gauges[g].name, "gauge", gauges[g].help);
        for (size_t i = 0; i < shown; i++) {
            const rl_service_limit *limit = &list[i];
            if (gauges[g].budgets_only && limit->def.kind != RL_KIND_BUDGET) continue;
            rl_metrics_label labels[] = {{"key", limit->def.key},
                                         {"kind", rl_kind_name(limit->def.kind)},
                                         {"unit", limit->def.unit}};
            rl__metrics_sample(text, gauges[g].name, labels, 3, gauges[g].value(limit));
        }
    }
    free(list);

    write_templates(service, max_series, text);
}

bool rl__metrics_limits_init(rl_metrics_limits *limits, const rl_metrics_options *options, rl_service *service) {
    memset(limits, 0, sizeof *limits);
    limits->service = service;
    limits->max_series = options->max_limit_series;
    limits->refresh_ms = options->limits_refresh_ms >= 100 ? options->limits_refresh_ms : 100;
    rl__buf_init(&limits->text);
    pthread_mutex_init(&limits->lock, NULL);
    pthread_mutex_init(&limits->stop_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&limits->stop_cond, &attr);
    pthread_condattr_destroy(&attr);
    return true;
}

/* Collects into a buffer of its own, then swaps it in: a scrape waits for
 * a pointer swap, never for a collection. */
static void collect_and_publish(rl_metrics_limits *limits, rl_buf *spare) {
    rl__metrics_limits_collect(limits->service, limits->max_series, spare);
    if (spare->failed) return; /* out of memory: keep the last text */
    pthread_mutex_lock(&limits->lock);
    rl_buf swapped = limits->text;
    limits->text = *spare;
    *spare = swapped;
    pthread_mutex_unlock(&limits->lock);
}

static void *collector_main(void *arg) {
    rl_metrics_limits *limits = arg;
    rl_buf spare;
    rl__buf_init(&spare);
    pthread_mutex_lock(&limits->stop_lock);
    while (!limits->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += limits->refresh_ms / 1000u;
        until.tv_nsec += (long)(limits->refresh_ms % 1000u) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int waited = 0;
        while (!limits->stopping && waited != ETIMEDOUT)
            waited = pthread_cond_timedwait(&limits->stop_cond, &limits->stop_lock, &until);
        if (limits->stopping) break;
        pthread_mutex_unlock(&limits->stop_lock);
        collect_and_publish(limits, &spare);
        pthread_mutex_lock(&limits->stop_lock);
    }
    pthread_mutex_unlock(&limits->stop_lock);
    rl__buf_free(&spare);
    return NULL;
}

bool rl__metrics_limits_start(rl_metrics_limits *limits, char *err, size_t err_size) {
    rl_buf first;
    rl__buf_init(&first);
    collect_and_publish(limits, &first);
    rl__buf_free(&first);
    int rc = pthread_create(&limits->thread, NULL, collector_main, limits);
    if (rc != 0) {
        snprintf(err, err_size, "cannot start the metrics collector thread: %s", strerror(rc));
        return false;
    }
    limits->running = true;
    return true;
}

void rl__metrics_limits_destroy(rl_metrics_limits *limits) {
    if (limits->running) {
        pthread_mutex_lock(&limits->stop_lock);
        limits->stopping = true;
        pthread_cond_signal(&limits->stop_cond);
        pthread_mutex_unlock(&limits->stop_lock);
        pthread_join(limits->thread, NULL);
        limits->running = false;
    }
    pthread_cond_destroy(&limits->stop_cond);
    pthread_mutex_destroy(&limits->stop_lock);
    pthread_mutex_destroy(&limits->lock);
    rl__buf_free(&limits->text);
}

void rl__metrics_limits_write(rl_metrics_limits *limits, rl_buf *out) {
    pthread_mutex_lock(&limits->lock);
    if (limits->text.len > 0) rl__buf_append(out, limits->text.data, limits->text.len);
    pthread_mutex_unlock(&limits->lock);
}
