/* metrics_backend.c — the backend's own counters as series (backend.h,
 * rl_backend_stats): the memory journal's syncs and bytes, and whether
 * its audit log was found apart from it; Redis's script
 * calls and failures, the submitter's batch sizes, the allotments held. A
 * part the backend does not keep gives no series. */
#include "server/observe/metrics_internal.h"
#include "server/observe/metrics_text.h"

static void counter(rl_buf *out, const char *name, const char *help, uint64_t value) {
    rl__metrics_family(out, name, "counter", help);
    rl__metrics_sample(out, name, NULL, 0, value);
}

static void gauge(rl_buf *out, const char *name, const char *help, uint64_t value) {
    rl__metrics_family(out, name, "gauge", help);
    rl__metrics_sample(out, name, NULL, 0, value);
}

static uint64_t total(const uint64_t *counts, unsigned n) {
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) sum += counts[i];
    return sum;
}

void rl__metrics_write_backend(rl_backend *backend, const char *backend_name, rl_buf *out) {
    rl_backend_stats stats;
    rl_backend_stats_get(backend, &stats);
    rl__metrics_family(out, "ratelimiter_build_info", "gauge", "The daemon's version (always 1).");
    rl_metrics_label version[] = {{"version", RL_VERSION}};
    rl__metrics_sample(out, "ratelimiter_build_info", version, 1, 1);
    rl__metrics_family(out, "ratelimiter_backend_info", "gauge", "The backend this daemon runs (always 1).");
    rl_metrics_label name[] = {{"backend", backend_name}};
    rl__metrics_sample(out, "ratelimiter_backend_info", name, 1, 1);
    if (stats.journal) {
        rl__metrics_family(out, "ratelimiter_journal_fsync_duration_seconds", "histogram",
                           "Time each fdatasync of the memory backend's journal took.");
        rl__metrics_histogram(out, "ratelimiter_journal_fsync_duration_seconds", NULL, 0,
                              rl_backend_stats_sync_bounds_us, stats.journal_sync_us, RL_BACKEND_STATS_SYNC_BUCKETS,
                              stats.journal_sync_us_sum,
                              total(stats.journal_sync_us, RL_BACKEND_STATS_SYNC_BUCKETS + 1), 1000000u);
        counter(out, "ratelimiter_journal_written_bytes_total", "Bytes written to the memory backend's journal.",
                stats.journal_bytes);
        counter(out, "ratelimiter_journal_write_errors_total",
                "Journal flushes that failed (their answers refused as backend errors).", stats.journal_write_errors);
    }
    if (stats.audit) {
        gauge(out, "ratelimiter_audit_journal_mismatch",
              "1 when start-up found the audit log and the journal apart (no journal, a new one, another log's, or "
              "one behind the log): every entry was kept, and the counters do not hold them all.",
              stats.audit_journal_mismatch);
        gauge(out, "ratelimiter_audit_entries_unmatched",
              "Audit entries kept at start-up that the journal's usage does not hold.", stats.audit_entries_unmatched);
    }
    if (stats.redis) {
        counter(out, "ratelimiter_redis_script_calls_total", "Redis script calls (EVALSHA) made.",
                stats.redis_script_calls);
        counter(out, "ratelimiter_redis_errors_total",
                "Redis script calls that failed: unreachable, timed out, or refused.", stats.redis_errors);
    }
    if (stats.batches) {
        /* Bounds are lease counts: divisor 1. */
        rl__metrics_family(out, "ratelimiter_redis_batch_leases", "histogram",
                           "Leases sent in each batch (one script call) by the submitter.");
        rl__metrics_histogram(out, "ratelimiter_redis_batch_leases", NULL, 0, rl_backend_stats_batch_bounds,
                              stats.batch_size, RL_BACKEND_STATS_BATCH_BUCKETS, stats.batch_leases,
                              stats.batch_count, 1u);
    }
    if (stats.allotments) {
        gauge(out, "ratelimiter_allotments_held", "Limits this daemon holds an allotment of now.",
              stats.allotments_held);
        gauge(out, "ratelimiter_allotment_amount_held",
              "What those allotments hold together, each in its limit's unit.", stats.allotment_amount_held);
    }
}
