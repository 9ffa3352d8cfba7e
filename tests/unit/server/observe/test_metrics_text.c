/* test_metrics_text.c — the Prometheus text format (server/observe/metrics_text.h):
 * label values escaped, seconds written with their decimals, histograms
 * cumulated with +Inf never below a bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/observe/metrics_text.h"

static void test_family_and_plain_sample(void **state) {
    (void)state;
    rl_buf out;
    rl__buf_init(&out);
    rl__metrics_family(&out, "x_total", "counter", "Things.");
    rl__metrics_sample(&out, "x_total", NULL, 0, 42);
    assert_string_equal(out.data, "# HELP x_total Things.\n# TYPE x_total counter\nx_total 42\n");
    rl__buf_free(&out);
}

static void test_label_values_are_escaped(void **state) {
    (void)state;
    rl_buf out;
    rl__buf_init(&out);
    rl_metrics_label labels[] = {{"key", "a\"b\\c\nd"}, {"kind", ""}};
    rl__metrics_sample(&out, "g", labels, 2, 7);
    assert_string_equal(out.data, "g{key=\"a\\\"b\\\\c\\nd\",kind=\"\"} 7\n");
    rl__buf_free(&out);
}

static void test_seconds_keep_their_decimals(void **state) {
    (void)state;
    rl_buf out;
    rl__buf_init(&out);
    rl__metrics_sample_seconds(&out, "s", NULL, 0, 0);
    rl__metrics_sample_seconds(&out, "s", NULL, 0, 250);
    rl__metrics_sample_seconds(&out, "s", NULL, 0, 1500000);
    rl__metrics_sample_seconds(&out, "s", NULL, 0, 12000001);
    assert_string_equal(out.data, "s 0\ns 0.00025\ns 1.5\ns 12.000001\n");
    rl__buf_free(&out);
}

static void test_histogram_is_cumulative(void **state) {
    (void)state;
    rl_buf out;
    rl__buf_init(&out);
    const uint64_t bounds[] = {100, 2500};
    const uint64_t counts[] = {3, 4, 5}; /* the last: above every bound */
    rl_metrics_label labels[] = {{"endpoint", "reserve"}};
    rl__metrics_histogram(&out, "h", labels, 1, bounds, counts, 2, 3000100, 12, 1000000);
    assert_string_equal(out.data, "h_bucket{endpoint=\"reserve\",le=\"0.0001\"} 3\n"
                                  "h_bucket{endpoint=\"reserve\",le=\"0.0025\"} 7\n"
                                  "h_bucket{endpoint=\"reserve\",le=\"+Inf\"} 12\n"
                                  "h_sum{endpoint=\"reserve\"} 3.0001\n"
                                  "h_count{endpoint=\"reserve\"} 12\n");
    rl__buf_free(&out);
}

/* Read while the loops write, the buckets may count an answer the total
 * did not yet: +Inf and count never fall below the buckets. */
static void test_histogram_total_never_below_buckets(void **state) {
    (void)state;
    rl_buf out;
    rl__buf_init(&out);
    const uint64_t bounds[] = {1, 2};
    const uint64_t counts[] = {5, 5, 0};
    rl__metrics_histogram(&out, "n", NULL, 0, bounds, counts, 2, 15, 9, 1);
    assert_string_equal(out.data, "n_bucket{le=\"1\"} 5\nn_bucket{le=\"2\"} 10\nn_bucket{le=\"+Inf\"} 10\n"
                                  "n_sum 15\nn_count 10\n");
    rl__buf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_plain_sample),
        cmocka_unit_test(test_label_values_are_escaped),
        cmocka_unit_test(test_seconds_keep_their_decimals),
        cmocka_unit_test(test_histogram_is_cumulative),
        cmocka_unit_test(test_histogram_total_never_below_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
