/* support/metrics_page.h — reading a Prometheus text page (GET /metrics)
 * in tests: the value of one series. Header-only, pure.
 */
#ifndef RL_TEST_METRICS_PAGE_H
#define RL_TEST_METRICS_PAGE_H

#include <stdlib.h>
#include <string.h>

/* The value of the sample whose name and labels are exactly series (as the
 * page writes them: `name{a="x",b="y"}`), or -1 when the page has none. */
static inline double rl_test_metrics_sample(const char *text, const char *series) {
    size_t len = strlen(series);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, series, len) == 0 && line[len] == ' ') return strtod(line + len + 1, NULL);
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    return -1;
}

#endif
