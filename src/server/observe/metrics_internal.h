/* server/observe/metrics_internal.h — private to server/observe/metrics*.c:
 * the counters of one loop, the limits collector, the backend's series.
 */
#ifndef RL_SERVER_METRICS_INTERNAL_H
#define RL_SERVER_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ratelimiter/backend.h"
#include "server/observe/metrics.h"

/* 200 204 302 400 401 403 404 405 409 413 500 503, and any other. */
#define RL_METRICS_STATUS_SLOTS 13u

/* One loop's counters: written by that loop only (relaxed stores), read by
 * a scrape on any thread. Only uint64_t in it: a scrape adds the loops up
 * as arrays. Aligned so that two loops never share a cache line. */
typedef struct rl_metrics_loop {
    uint64_t responses[RL_API_ENDPOINT_COUNT][RL_METRICS_STATUS_SLOTS];
    uint64_t decisions[RL_API_ENDPOINT_COUNT][RL_API_RESULT_COUNT];
    uint64_t latency[RL_API_ENDPOINT_COUNT][RL_METRICS_LATENCY_BUCKETS + 1]; /* per bucket, not cumulated */
    uint64_t latency_sum_us[RL_API_ENDPOINT_COUNT];
} __attribute__((aligned(64))) rl_metrics_loop;

/* The limits' series, made by the collector thread (metrics_limits.c). */
typedef struct rl_metrics_limits {
    rl_service *service;
    uint32_t max_series;
    uint32_t refresh_ms;
    pthread_mutex_t lock; /* text */
    rl_buf text;          /* the last collection's series; lock */
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping, running;
    pthread_t thread;
} rl_metrics_limits;

struct rl_metrics {
    rl_metrics_options options;
    rl_service *service;
    rl_http_server *server; /* NULL: no connection series */
    const rl_access_log *access_log; /* NULL: the access log is off, no series */
    rl_metrics_loop *loops; /* options.loops of them */
    rl_metrics_limits limits;
};

/* metrics_limits.c. init: false if out of memory (nothing to free). start:
 * collects once, then starts the thread. destroy: stops it (if started) and
 * frees. write: appends the last collection (any thread). */
bool rl__metrics_limits_init(rl_metrics_limits *limits, const rl_metrics_options *options, rl_service *service);
bool rl__metrics_limits_start(rl_metrics_limits *limits, char *err, size_t err_size);
void rl__metrics_limits_destroy(rl_metrics_limits *limits);
void rl__metrics_limits_write(rl_metrics_limits *limits, rl_buf *out);
/* The collection itself, into text (reset first): the limits' series.
 * The collector's thread; also for tests. */
void rl__metrics_limits_collect(rl_service *service, uint32_t max_series, rl_buf *text);

/* metrics_backend.c: the backend's own counters (backend.h, stats), if it
 * keeps any. Any thread: the backend's stats op must not block. */
void rl__metrics_write_backend(rl_backend *backend, const char *backend_name, rl_buf *out);

#endif
