/* metrics_text.c — the Prometheus text format (metrics_text.h). */
#include <stdio.h>
#include <string.h>

#include "server/observe/metrics_text.h"

void rl__metrics_family(rl_buf *out, const char *name, const char *type, const char *help) {
    rl__buf_append_str(out, "# HELP ");
    rl__buf_append_str(out, name);
    rl__buf_append_str(out, " ");
    rl__buf_append_str(out, help);
    rl__buf_append_str(out, "\n# TYPE ");
    rl__buf_append_str(out, name);
    rl__buf_append_str(out, " ");
    rl__buf_append_str(out, type);
    rl__buf_append_str(out, "\n");
}

static void append_label_value(rl_buf *out, const char *value) {
    const char *run = value;
    for (const char *p = value; *p != '\0'; p++) {
        const char *escaped = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
        if (escaped == NULL) continue;
        rl__buf_append(out, run, (size_t)(p - run));
        rl__buf_append_str(out, escaped);
        run = p + 1;
    }
    rl__buf_append_str(out, run);
}

static void append_name_labels(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t count) {
    rl__buf_append_str(out, name);
    if (count == 0) return;
    rl__buf_append_str(out, "{");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) rl__buf_append_str(out, ",");
        rl__buf_append_str(out, labels[i].name);
        rl__buf_append_str(out, "=\"");
        append_label_value(out, labels[i].value);
        rl__buf_append_str(out, "\"");
    }
    rl__buf_append_str(out, "}");
}

void rl__metrics_sample(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t count, uint64_t value) {
    append_name_labels(out, name, labels, count);
    rl__buf_append_str(out, " ");
    rl__buf_append_u64(out, value);
    rl__buf_append_str(out, "\n");
}

/* value / divisor with up to six decimals, trailing zeros cut ("0.00025",
 * "1"), into text (48 bytes); returns its length. divisor is a power of ten
 * up to 10^6. */
static int format_ratio(char text[48], uint64_t value, uint64_t divisor) {
    int len = snprintf(text, 48, "%llu", (unsigned long long)(value / divisor));
    uint64_t rest = value % divisor;
    if (rest != 0) {
        uint64_t micro = rest * (1000000u / divisor);
        len += snprintf(text + len, 48 - (size_t)len, ".%06llu", (unsigned long long)micro);
        while (text[len - 1] == '0') text[--len] = '\0';
    }
    return len;
}

static void append_ratio(rl_buf *out, uint64_t value, uint64_t divisor) {
    char text[48];
    rl__buf_append(out, text, (size_t)format_ratio(text, value, divisor));
}

void rl__metrics_sample_seconds(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t count,
                                uint64_t value_us) {
    append_name_labels(out, name, labels, count);
    rl__buf_append_str(out, " ");
    append_ratio(out, value_us, 1000000u);
    rl__buf_append_str(out, "\n");
}

void rl__metrics_histogram(rl_buf *out, const char *name, const rl_metrics_label *labels, size_t label_count,
                           const uint64_t *bounds, const uint64_t *counts, size_t bucket_count, uint64_t sum,
                           uint64_t count, uint64_t divisor) {
    char family[128];
    rl_metrics_label with_le[4];
    if (label_count > 3) label_count = 3;
    if (label_count > 0) memcpy(with_le, labels, label_count * sizeof *labels);
    snprintf(family, sizeof family, "%s_bucket", name);
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bucket_count; i++) {
        char le[48] = "+Inf";
        if (i < bucket_count) {
            format_ratio(le, bounds[i], divisor);
            cumulative += counts[i];
        }
        with_le[label_count] = (rl_metrics_label){"le", le};
        /* The loops write while this reads: a bucket read after the total
         * may have grown past it, and +Inf must stay the largest. */
        uint64_t value = i < bucket_count ? cumulative : (count > cumulative ? count : cumulative);
        rl__metrics_sample(out, family, with_le, label_count + 1, value);
    }
    uint64_t total = count > cumulative ? count : cumulative;
    snprintf(family, sizeof family, "%s_sum", name);
    append_name_labels(out, family, labels, label_count);
    rl__buf_append_str(out, " ");
    append_ratio(out, sum, divisor);
    rl__buf_append_str(out, "\n");
    snprintf(family, sizeof family, "%s_count", name);
    rl__metrics_sample(out, family, labels, label_count, total);
}
