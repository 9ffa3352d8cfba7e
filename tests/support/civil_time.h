/* support/civil_time.h — Unix milliseconds of a UTC date and time, by days
 * from civil (Howard Hinnant's algorithm): expected values for calendar
 * tests that do not come from the code under test. Header-only. */
#ifndef RL_TEST_CIVIL_TIME_H
#define RL_TEST_CIVIL_TIME_H

#include <stdint.h>

static inline uint64_t rl_test_utc_ms(int y, int m, int d, int hh, int mm) {
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400;
    int yoe = y - era * 400;
    int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = (int64_t)era * 146097 + doe - 719468;
    return (uint64_t)((days * 86400 + hh * 3600 + mm * 60) * 1000);
}

#endif
