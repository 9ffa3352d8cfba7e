/* metrics.c — the answers counted per loop, and the exposition put
 * together at scrape time (metrics.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_server.h"
#include "server/observe/access_log.h"
#include "server/observe/metrics_internal.h"
#include "server/observe/metrics_text.h"

const uint64_t rl_metrics_latency_bounds_us[RL_METRICS_LATENCY_BUCKETS] = {
    25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
};

/* The statuses the daemon answers, each its own series; any other is "other". */
static const int status_codes[RL_METRICS_STATUS_SLOTS - 1] = {200, 204, 302, 400, 401, 403, 404,
                                                               405, 409, 413, 500, 503};

static size_t status_slot(int status) {
    for (size_t i = 0; i < RL_METRICS_STATUS_SLOTS - 1; i++)
        if (status_codes[i] == status) return i;
    return RL_METRICS_STATUS_SLOTS - 1;
}

static size_t latency_bucket(uint64_t latency_us) {
    size_t i = 0;
    while (i < RL_METRICS_LATENCY_BUCKETS && latency_us > rl_metrics_latency_bounds_us[i]) i++;
    return i; /* RL_METRICS_LATENCY_BUCKETS: above every bound (+Inf only) */
}

/* One writer (the loop), readers on any thread: a relaxed load and store,
 * which are plain moves (no locked instruction on the hot path), yet no
 * data race for the readers. */
static inline void bump(uint64_t *counter, uint64_t by) {
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

static inline uint64_t read_counter(const uint64_t *counter) { return __atomic_load_n(counter, __ATOMIC_RELAXED); }

rl_metrics *rl_metrics_create(const rl_metrics_options *options, rl_service *service) {
    rl_metrics *metrics = calloc(1, sizeof *metrics);
    if (metrics == NULL) return NULL;
    metrics->options = *options;
    if (metrics->options.loops == 0) metrics->options.loops = 1;
    metrics->service = service;
    /* aligned_alloc: each loop's counters on cache lines of their own. */
    size_t size = (sizeof(rl_metrics_loop) * metrics->options.loops + 63u) & ~(size_t)63u;
    metrics->loops = aligned_alloc(64, size);
    if (metrics->loops == NULL || !rl__metrics_limits_init(&metrics->limits, options, service)) {
        free(metrics->loops);
        free(metrics);
        return NULL;
    }
    memset(metrics->loops, 0, size);
    return metrics;
}

void rl_metrics_set_server(rl_metrics *metrics, rl_http_server *server) { metrics->server = server; }

void rl_metrics_set_access_log(rl_metrics *metrics, const rl_access_log *access_log) {
    metrics->access_log = access_log;
}

bool rl_metrics_start(rl_metrics *metrics, char *err, size_t err_size) {
    return rl__metrics_limits_start(&metrics->limits, err, err_size);
}

void rl_metrics_destroy(rl_metrics *metrics) {
    if (metrics == NULL) return;
    rl__metrics_limits_destroy(&metrics->limits);
    free(metrics->loops);
    free(metrics);
}

void rl_metrics_answered(rl_metrics *metrics, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us) {
    if (loop >= metrics->options.loops) return;
    rl_metrics_loop *counters = &metrics->loops[loop];
    size_t endpoint = (size_t)outcome->endpoint < RL_API_ENDPOINT_COUNT ? (size_t)outcome->endpoint : RL_API_UNROUTED;
    bump(&counters->responses[endpoint][status_slot(outcome->http_status)], 1);
    bump(&counters->latency[endpoint][latency_bucket(latency_us)], 1);
    bump(&counters->latency_sum_us[endpoint], latency_us);
    if (outcome->items == 0) return;
    for (size_t r = 0; r < RL_API_RESULT_COUNT; r++)
        if (outcome->results[r] != 0) bump(&counters->decisions[endpoint][r], outcome->results[r]);
}

/* ---- the exposition ---- */

/* Every loop's counters added up into one. */
static void sum_loops(const rl_metrics *metrics, rl_metrics_loop *sum) {
    memset(sum, 0, sizeof *sum);
    const uint64_t *each;
    uint64_t *into = (uint64_t *)sum;
    size_t n = sizeof *sum / sizeof(uint64_t);
    for (uint32_t l = 0; l < metrics->options.loops; l++) {
        each = (const uint64_t *)&metrics->loops[l];
        for (size_t i = 0; i < n; i++) into[i] += read_counter(&each[i]);
    }
}

static bool is_lease_endpoint(size_t endpoint) {
    return endpoint == RL_API_RESERVE || endpoint == RL_API_RESERVE_BATCH || endpoint == RL_API_COMPLETE ||
           endpoint == RL_API_COMPLETE_BATCH;
}

static void write_answers(const rl_metrics_loop *sum, rl_buf *out) {
    rl__metrics_family(out, "ratelimiter_http_responses_total", "counter",
                       "Answers given, by endpoint and HTTP status (code \"other\": a status not listed).");
    for (size_t e = 0; e < RL_API_ENDPOINT_COUNT; e++) {
        for (size_t s = 0; s < RL_METRICS_STATUS_SLOTS; s++) {
            /* A status never answered on an endpoint gives no series: the
             * page stays short, and a rate() of a new one starts at its
             * first answer. The lease endpoints' usual ones always show. */
            uint64_t value = sum->responses[e][s];
            bool usual = is_lease_endpoint(e) && s < RL_METRICS_STATUS_SLOTS - 1 &&
                         (status_codes[s] == 200 || status_codes[s] == 400);
            if (value == 0 && !usual) continue;
            char code[8] = "other";
            if (s < RL_METRICS_STATUS_SLOTS - 1) snprintf(code, sizeof code, "%d", status_codes[s]);
            rl_metrics_label labels[] = {{"endpoint", rl_api_endpoint_name((rl_api_endpoint)e)}, {"code", code}};
            rl__metrics_sample(out, "ratelimiter_http_responses_total", labels, 2, value);
        }
    }
    rl__metrics_family(out, "ratelimiter_decisions_total", "counter",
                       "Lease items decided by the reserve and complete endpoints, by endpoint and result.");
    for (size_t e = 0; e < RL_API_ENDPOINT_COUNT; e++) {
        if (!is_lease_endpoint(e)) continue;
        bool reserving = e == RL_API_RESERVE || e == RL_API_RESERVE_BATCH;
        for (size_t r = 0; r < RL_API_RESULT_COUNT; r++) {
            /* A reserve is never "completed", a complete never allowed or denied. */
            bool reserve_result = r != RL_API_RESULT_COMPLETED;
            bool complete_result = r == RL_API_RESULT_COMPLETED || r == RL_API_RESULT_INVALID ||
                                   r == RL_API_RESULT_BACKEND_ERROR || r == RL_API_RESULT_UNKNOWN_KEY;
            if ((reserving ? !reserve_result : !complete_result) && sum->decisions[e][r] == 0) continue;
            rl_metrics_label labels[] = {{"endpoint", rl_api_endpoint_name((rl_api_endpoint)e)},
                                         {"result", rl_api_result_name((rl_api_result)r)}};
            rl__metrics_sample(out, "ratelimiter_decisions_total", labels, 2, sum->decisions[e][r]);
        }
    }
    rl__metrics_family(out, "ratelimiter_http_request_duration_seconds", "histogram",
                       "Time from a request's headers read to its answer handed over, by endpoint.");
    for (size_t e = 0; e < RL_API_ENDPOINT_COUNT; e++) {
        uint64_t count = 0;
        for (size_t b = 0; b <= RL_METRICS_LATENCY_BUCKETS; b++) count += sum->latency[e][b];
        if (count == 0 && !is_lease_endpoint(e)) continue;
        rl_metrics_label labels[] = {{"endpoint", rl_api_endpoint_name((rl_api_endpoint)e)}};
        rl__metrics_histogram(out, "ratelimiter_http_request_duration_seconds", labels, 1,
                              rl_metrics_latency_bounds_us, sum->latency[e], RL_METRICS_LATENCY_BUCKETS,
                              sum->latency_sum_us[e], count, 1000000u);
    }
}

static void write_connections(rl_http_server *server, rl_buf *out) {
    rl_http_connection_stats stats;
    rl_http_server_connection_stats(server, &stats);
    rl__metrics_family(out, "ratelimiter_connections_open", "gauge", "Client connections open now.");
    rl__metrics_sample(out, "ratelimiter_connections_open", NULL, 0, stats.open);
    rl__metrics_family(out, "ratelimiter_connections_max", "gauge",
                       "The bound on open client connections (server.max_connections, after the descriptor limit).");
    rl__metrics_sample(out, "ratelimiter_connections_max", NULL, 0, stats.max);
    rl__metrics_family(out, "ratelimiter_connections_accepted_total", "counter", "Client connections accepted.");
    rl__metrics_sample(out, "ratelimiter_connections_accepted_total", NULL, 0, stats.accepted);
    rl__metrics_family(out, "ratelimiter_connections_refused_total", "counter",
                       "Connections reset at once by the guard: at the bound with none idle to replace.");
    rl__metrics_sample(out, "ratelimiter_connections_refused_total", NULL, 0, stats.refused);
    rl__metrics_family(out, "ratelimiter_connections_closed_total", "counter",
                       "Connections the guard closed, by reason (evicted for a newcomer, idle, a request or an "
                       "answer too slow).");
    const struct {
        const char *reason;
        uint64_t value;
    } closed[] = {
        {"evicted", stats.evicted},
        {"idle_timeout", stats.idle_closed},
        {"request_timeout", stats.request_timeouts},
        {"answer_timeout", stats.answer_timeouts},
    };
    for (size_t i = 0; i < sizeof closed / sizeof closed[0]; i++) {
        rl_metrics_label labels[] = {{"reason", closed[i].reason}};
        rl__metrics_sample(out, "ratelimiter_connections_closed_total", labels, 1, closed[i].value);
    }
}

/* The access log's own counters (relaxed atomics its writer and the loops
 * keep): a line dropped is an answer the log does not show. */
static void write_access_log(const rl_access_log *access_log, rl_buf *out) {
    rl__metrics_family(out, "ratelimiter_access_log_lines_total", "counter",
                       "Access log lines (log.access): written to its file, or dropped because the file did not take "
                       "them in time.");
    rl_metrics_label written[] = {{"outcome", "written"}}, dropped[] = {{"outcome", "dropped"}};
    rl__metrics_sample(out, "ratelimiter_access_log_lines_total", written, 1, rl_access_log_written_lines(access_log));
    rl__metrics_sample(out, "ratelimiter_access_log_lines_total", dropped, 1, rl_access_log_dropped_lines(access_log));
}

void rl_metrics_write(rl_metrics *metrics, rl_buf *out) {
    rl_metrics_loop *sum = aligned_alloc(64, sizeof *sum); /* its type is cache-line aligned */
    if (sum == NULL) {
        out->failed = true;
        return;
    }
    sum_loops(metrics, sum);
    write_answers(sum, out);
    free(sum);
    if (metrics->server != NULL) write_connections(metrics->server, out);
    if (metrics->access_log != NULL) write_access_log(metrics->access_log, out);
    rl__metrics_write_backend(rl_service_backend(metrics->service), rl_service_backend_name(metrics->service), out);
    rl__metrics_limits_write(&metrics->limits, out);
}

void rl_metrics_page_write(void *context, rl_buf *out) { rl_metrics_write(context, out); }
