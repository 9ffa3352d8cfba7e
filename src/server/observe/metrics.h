/* server/observe/metrics.h — what GET /metrics answers, in the Prometheus
 * text format (version 0.0.4): every answer counted by endpoint and status,
 * every lease decision by endpoint and result, answer latency histograms
 * per endpoint, the connections and the guard's refusals, the backend's own
 * counters (the memory journal's syncs, the redis script calls, batches,
 * errors and allotments held), and per limit its capacity and usage.
 *
 * Cheap enough to scrape every second under full load:
 *   - the answers are counted per event loop, each loop's counters written
 *     by that loop only (a relaxed load and store, no lock, no shared cache
 *     line), and added up at scrape time;
 *   - the limits are read off the loops by a collector thread every
 *     limits_refresh_ms (a Redis round trip or a walk of the registry must
 *     not hold a loop), at most max_limit_series of them in key order; a
 *     scrape copies the collector's last text under a short mutex.
 *
 * Lifecycle, from the daemon's controlling thread: create -> set_server
 * (before the server starts) -> start (the collector) -> destroy (after the
 * server is stopped, before the service closes).
 */
#ifndef RL_SERVER_METRICS_H
#define RL_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/api/outcome.h"
#include "server/service.h"
#include "wire/buf.h"

typedef struct rl_metrics rl_metrics;
typedef struct rl_http_server rl_http_server;

#define RL_METRICS_DEFAULT_MAX_LIMIT_SERIES 1000u
#define RL_METRICS_MAX_LIMIT_SERIES 100000u
#define RL_METRICS_DEFAULT_LIMITS_REFRESH_MS 1000u

typedef struct rl_metrics_options {
    uint32_t loops;             /* event loops that call rl_metrics_answered, >= 1 */
    uint32_t max_limit_series;  /* limits given gauges, in key order; 0: none */
    uint32_t limits_refresh_ms; /* how often the collector reads the limits, >= 100 */
} rl_metrics_options;

/* A new set of counters for options->loops loops, reading limits and
 * backend counters from service (borrowed: it must outlive the metrics).
 * NULL if out of memory. Controlling thread. */
rl_metrics *rl_metrics_create(const rl_metrics_options *options, rl_service *service);

/* The server whose connections are counted (borrowed); before it starts.
 * NULL (the default): no connection series. Controlling thread. */
void rl_metrics_set_server(rl_metrics *metrics, rl_http_server *server);

/* The access log whose written and dropped lines are counted (borrowed,
 * access_log.h); before the server starts. NULL (the default): the log is
 * off, no such series. Controlling thread. */
typedef struct rl_access_log rl_access_log;
void rl_metrics_set_access_log(rl_metrics *metrics, const rl_access_log *access_log);

/* Starts the collector thread (it reads the limits once before returning,
 * so the first scrape has them). False with err if the thread cannot be
 * had. Controlling thread. */
bool rl_metrics_start(rl_metrics *metrics, char *err, size_t err_size);

/* Stops the collector and frees everything. No loop may call in any more.
 * NULL is allowed. Controlling thread. */
void rl_metrics_destroy(rl_metrics *metrics);

/* Counts one answer (rl_http_observer.answered). Loop `loop`'s thread only:
 * no lock, nothing allocated. */
void rl_metrics_answered(rl_metrics *metrics, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us);

/* Writes the whole exposition into out (appended). Any thread: reads the
 * loops' counters without stopping them (each counter is exact; counters
 * of one scrape may be a few answers apart), copies the limits' text under
 * the collector's mutex, asks the backend for its counters (no Redis call).
 * out->failed on out of memory. */
void rl_metrics_write(rl_metrics *metrics, rl_buf *out);

/* rl_metrics_write as rl_metrics_page.write wants it (server/api/handler.h):
 * context is the rl_metrics. */
void rl_metrics_page_write(void *context, rl_buf *out);

/* The media type of the exposition. */
#define RL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The latency histogram's upper bounds, in microseconds (+Inf after). */
#define RL_METRICS_LATENCY_BUCKETS 16u
extern const uint64_t rl_metrics_latency_bounds_us[RL_METRICS_LATENCY_BUCKETS];

#endif
