/* server/observe/metrics_text.h — writing the Prometheus text format
 * (exposition format 0.0.4): a family's HELP and TYPE lines, a sample with
 * its labels (values escaped), a histogram's buckets. Private to
 * server/observe. Pure: the caller's buffer only.
 */
#ifndef RL_SERVER_METRICS_TEXT_H
#define RL_SERVER_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "wire/buf.h"

/* "# HELP name help\n# TYPE name type\n"; help must hold no '\\' nor newline. */
void rl__metrics_family(rl_buf *out, const char *name, const char *type, const char *help);

/* One label pair for rl__metrics_sample: value escaped as the format says
 * ('\\', '"' and newline). */
typedef struct rl_metrics_label {
    const char *name;
    const char *value;
} rl_metrics_label;

/* name{labels...} value\n, labels[0..count) (none: no braces). */
void rl__metrics_sample(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t count, uint64_t value);
/* The same with a value in seconds from microseconds (six decimals). */
void rl__metrics_sample_seconds(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t count,
                                uint64_t value_us);

/* A histogram's samples: name_bucket{labels...,le=...} cumulated from
 * per-bucket counts[0..bucket_count) under bounds (le = bound / divisor,
 * written with up to six decimals) and +Inf = count, then name_sum (sum /
 * divisor) and name_count. labels may hold at most 3 pairs. */
void rl__metrics_histogram(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t label_count,
                           const uint64_t *bounds, const uint64_t *counts, size_t bucket_count, uint64_t sum,
                           uint64_t count, uint64_t divisor);

#endif
