/* test_calendar.c — calendar periods in UTC and in local zones, from
 * Debian's tzdata: every period kind, months of 28/29/30/31 days, weeks
 * from Monday, America/New_York across both DST changes of 2026 (the day
 * clocks spring forward is 23 hours long, the day they fall back 25),
 * America/Havana's changes at midnight, Australia/Lord_Howe's half-hour
 * shift, and for many zones and instants around their changes that the
 * periods hold the instant and follow each other without gap or overlap. */
#include <glib.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/calendar.h"
#include "support/civil_time.h"

/* A UTC time as Unix ms (support/civil_time.h). */
static uint64_t utc(int y, int m, int d, int hh, int mm) { return rl_test_utc_ms(y, m, d, hh, mm); }


static rl__calendar *open_zone(const char *zone) {
    rl__calendar *c = NULL;
    char err[200];
    if (rl__calendar_open(zone, &c, err, sizeof err) != RL_OK) fail_msg("%s", err);
    return c;
}

static void expect_period(const rl__calendar *c, rl_period p, uint64_t at, uint64_t start, uint64_t end) {
    uint64_t s = 0, e = 0;
    assert_true(rl__calendar_period_of(c, p, at, &s, &e));
    if (s != start || e != end)
        fail_msg("%s %s at %llu: [%llu, %llu) want [%llu, %llu)", rl__calendar_zone(c), rl_period_name(p),
                 (unsigned long long)at, (unsigned long long)s, (unsigned long long)e, (unsigned long long)start,
                 (unsigned long long)end);
    /* the boundaries themselves: the start is in the period, the end in the next */
    assert_true(rl__calendar_period_of(c, p, start, &s, &e) && s == start && e == end);
    assert_true(rl__calendar_period_of(c, p, end - 1, &s, &e) && s == start && e == end);
    assert_true(rl__calendar_period_of(c, p, end, &s, &e) && s == end);
}

static void utc_periods(void **state) {
    (void)state;
    rl__calendar *c = open_zone("UTC");
    uint64_t at = utc(2026, 11, 25, 7, 42) + 123; /* a Wednesday */
    expect_period(c, RL_PERIOD_HOUR, at, utc(2026, 11, 25, 7, 0), utc(2026, 11, 25, 8, 0));
    expect_period(c, RL_PERIOD_DAY, at, utc(2026, 11, 25, 0, 0), utc(2026, 11, 26, 0, 0));
    expect_period(c, RL_PERIOD_WEEK, at, utc(2026, 11, 23, 0, 0), utc(2026, 11, 30, 0, 0));
    expect_period(c, RL_PERIOD_MONTH, at, utc(2026, 11, 1, 0, 0), utc(2026, 12, 1, 0, 0));
    /* a week across a month and a year end; Monday itself starts one */
    expect_period(c, RL_PERIOD_WEEK, utc(2027, 1, 2, 12, 0), utc(2026, 12, 28, 0, 0), utc(2027, 1, 4, 0, 0));
    expect_period(c, RL_PERIOD_WEEK, utc(2027, 1, 4, 0, 0), utc(2027, 1, 4, 0, 0), utc(2027, 1, 11, 0, 0));
    expect_period(c, RL_PERIOD_MONTH, utc(2026, 12, 31, 23, 59), utc(2026, 12, 1, 0, 0), utc(2027, 1, 1, 0, 0));
    rl__calendar_close(c);
}

static void months_of_every_length(void **state) {
    (void)state;
    rl__calendar *c = open_zone("UTC");
    static const struct { int year, month, days; } months[] = {
        {2028, 2, 29}, {2027, 2, 28}, {2100, 2, 28}, {2000, 2, 29}, {2026, 4, 30}, {2026, 1, 31}, {2026, 12, 31},
    };
    for (size_t i = 0; i < sizeof months / sizeof months[0]; i++) {
        int y = months[i].year, m = months[i].month;
        uint64_t start = utc(y, m, 1, 0, 0);
        uint64_t end = m == 12 ? utc(y + 1, 1, 1, 0, 0) : utc(y, m + 1, 1, 0, 0);
        assert_int_equal((end - start) / 86400000u, (uint64_t)months[i].days);
        expect_period(c, RL_PERIOD_MONTH, utc(y, m, months[i].days, 13, 0), start, end);
    }
    /* Feb 29, 2028 is a day of February */
    expect_period(c, RL_PERIOD_DAY, utc(2028, 2, 29, 23, 0), utc(2028, 2, 29, 0, 0), utc(2028, 3, 1, 0, 0));
    rl__calendar_close(c);
}

/* New York, 2026: EST (-5) until Sunday March 8, 02:00, EDT (-4) until
 * Sunday November 1, 02:00, then EST. */
static void new_york_across_both_dst_changes(void **state) {
    (void)state;
    rl__calendar *c = open_zone("America/New_York");
    /* spring forward: local midnight to midnight is 23 hours */
    uint64_t march8 = utc(2026, 3, 8, 17, 0); /* 13:00 EDT */
    expect_period(c, RL_PERIOD_DAY, march8, utc(2026, 3, 8, 5, 0), utc(2026, 3, 9, 4, 0));
    /* fall back: 25 hours */
    uint64_t nov1 = utc(2026, 11, 1, 17, 0); /* 12:00 EST */
    expect_period(c, RL_PERIOD_DAY, nov1, utc(2026, 11, 1, 4, 0), utc(2026, 11, 2, 5, 0));
    /* the weeks and months holding them start and end at local midnight */
    expect_period(c, RL_PERIOD_WEEK, march8, utc(2026, 3, 2, 5, 0), utc(2026, 3, 9, 4, 0));
    expect_period(c, RL_PERIOD_MONTH, march8, utc(2026, 3, 1, 5, 0), utc(2026, 4, 1, 4, 0));
    expect_period(c, RL_PERIOD_WEEK, nov1, utc(2026, 10, 26, 4, 0), utc(2026, 11, 2, 5, 0));
    expect_period(c, RL_PERIOD_MONTH, nov1, utc(2026, 11, 1, 4, 0), utc(2026, 12, 1, 5, 0));
    /* the hour 01:00-02:00 happens twice on November 1: two periods */
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 6, 0));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 6, 0), utc(2026, 11, 1, 7, 0));
    /* on March 8 the local clock skips 02:00-03:00: 01:59 EST is followed by 03:00 EDT */
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 3, 8, 6, 59), utc(2026, 3, 8, 6, 0), utc(2026, 3, 8, 7, 0));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 3, 8, 7, 0), utc(2026, 3, 8, 7, 0), utc(2026, 3, 8, 8, 0));
    rl__calendar_close(c);
}

/* Zones whose offset is not whole hours, and a midnight a zone skips. */
static void other_offsets_and_a_skipped_midnight(void **state) {
    (void)state;
    rl__calendar *c = open_zone("Asia/Kolkata"); /* +05:30 */
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 6, 1, 10, 45), utc(2026, 6, 1, 10, 30), utc(2026, 6, 1, 11, 30));
    expect_period(c, RL_PERIOD_DAY, utc(2026, 6, 1, 10, 45), utc(2026, 5, 31, 18, 30), utc(2026, 6, 1, 18, 30));
    rl__calendar_close(c);
    /* Santiago springs forward at 00:00 (to 01:00) on Sunday September 6,
     * 2026: that day starts at 01:00 local, 04:00 UTC. */
    c = open_zone("America/Santiago");
    expect_period(c, RL_PERIOD_DAY, utc(2026, 9, 6, 15, 0), utc(2026, 9, 6, 4, 0), utc(2026, 9, 7, 3, 0));
    rl__calendar_close(c);
}

/* Havana changes its clocks at midnight. On Sunday March 8, 2026 00:00 CST
 * (-5) is skipped to 01:00 CDT (-4): the day starts at 01:00 local, 05:00
 * UTC. On Sunday November 1, 01:00 CDT goes back to 00:00 CST: local
 * 00:00-00:59 happens twice, and the day (the week, the month) starts at
 * its first reading, 04:00 UTC, so that October ends where November starts. */
static void havana_changes_at_midnight(void **state) {
    (void)state;
    rl__calendar *c = open_zone("America/Havana");
    expect_period(c, RL_PERIOD_DAY, utc(2026, 3, 7, 12, 0), utc(2026, 3, 7, 5, 0), utc(2026, 3, 8, 5, 0));
    expect_period(c, RL_PERIOD_DAY, utc(2026, 3, 8, 5, 0), utc(2026, 3, 8, 5, 0), utc(2026, 3, 9, 4, 0));
    uint64_t first_half_hour = utc(2026, 11, 1, 4, 30); /* 00:30 CDT, the first of two */
    uint64_t second_half_hour = utc(2026, 11, 1, 5, 30); /* 00:30 CST */
    expect_period(c, RL_PERIOD_DAY, utc(2026, 10, 31, 12, 0), utc(2026, 10, 31, 4, 0), utc(2026, 11, 1, 4, 0));
    expect_period(c, RL_PERIOD_DAY, first_half_hour, utc(2026, 11, 1, 4, 0), utc(2026, 11, 2, 5, 0));
    expect_period(c, RL_PERIOD_DAY, second_half_hour, utc(2026, 11, 1, 4, 0), utc(2026, 11, 2, 5, 0));
    expect_period(c, RL_PERIOD_WEEK, first_half_hour, utc(2026, 10, 26, 4, 0), utc(2026, 11, 2, 5, 0));
    expect_period(c, RL_PERIOD_MONTH, utc(2026, 10, 15, 12, 0), utc(2026, 10, 1, 4, 0), utc(2026, 11, 1, 4, 0));
    expect_period(c, RL_PERIOD_MONTH, first_half_hour, utc(2026, 11, 1, 4, 0), utc(2026, 12, 1, 5, 0));
    /* the hour that happens twice is two hours, as in New York */
    expect_period(c, RL_PERIOD_HOUR, first_half_hour, utc(2026, 11, 1, 4, 0), utc(2026, 11, 1, 5, 0));
    expect_period(c, RL_PERIOD_HOUR, second_half_hour, utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 6, 0));
    rl__calendar_close(c);
}

/* Lord Howe Island is +10:30, and +11 in summer: its clocks move half an
 * hour. On Sunday April 5, 2026 02:00 (+11) goes back to 01:30 (+10:30), at
 * 15:00 UTC: the hour from 01:00 runs until the clock next reads 02:00, 90
 * minutes. On Sunday October 4, 02:00 (+10:30) jumps to 02:30 (+11), at
 * 15:30 UTC: the hour of 02:00 starts there and lasts 30 minutes. Hours
 * start when the clock reads hh:00, never half an hour off. */
static void lord_howe_moves_half_an_hour(void **state) {
    (void)state;
    rl__calendar *c = open_zone("Australia/Lord_Howe");
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 4, 4, 14, 45), utc(2026, 4, 4, 14, 0), utc(2026, 4, 4, 15, 30));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 4, 4, 15, 10), utc(2026, 4, 4, 14, 0), utc(2026, 4, 4, 15, 30));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 4, 4, 15, 30), utc(2026, 4, 4, 15, 30), utc(2026, 4, 4, 16, 30));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 10, 3, 15, 10), utc(2026, 10, 3, 14, 30), utc(2026, 10, 3, 15, 30));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 10, 3, 15, 40), utc(2026, 10, 3, 15, 30), utc(2026, 10, 3, 16, 0));
    expect_period(c, RL_PERIOD_HOUR, utc(2026, 10, 3, 16, 0), utc(2026, 10, 3, 16, 0), utc(2026, 10, 3, 17, 0));
    /* the days are 24.5 and 23.5 hours long */
    expect_period(c, RL_PERIOD_DAY, utc(2026, 4, 4, 15, 10), utc(2026, 4, 4, 13, 0), utc(2026, 4, 5, 13, 30));
    expect_period(c, RL_PERIOD_DAY, utc(2026, 10, 3, 15, 40), utc(2026, 10, 3, 13, 30), utc(2026, 10, 4, 13, 0));
    rl__calendar_close(c);
}

/* The period of at holds it; the period of its start is itself; the
 * period before it ends at its start, the one after starts at its end. */
static void expect_period_holds(const rl__calendar *c, rl_period p, uint64_t at) {
    uint64_t start, end, s, e;
    const char *zone = rl__calendar_zone(c), *kind = rl_period_name(p);
    assert_true(rl__calendar_period_of(c, p, at, &start, &end));
    if (!(start <= at && at < end))
        fail_msg("%s %s at %llu: [%llu, %llu) does not hold it", zone, kind, (unsigned long long)at,
                 (unsigned long long)start, (unsigned long long)end);
    assert_true(rl__calendar_period_of(c, p, start, &s, &e));
    if (s != start || e != end)
        fail_msg("%s %s: the period of its own start %llu is [%llu, %llu), not [%llu, %llu)", zone, kind,
                 (unsigned long long)start, (unsigned long long)s, (unsigned long long)e,
                 (unsigned long long)start, (unsigned long long)end);
    assert_true(rl__calendar_period_of(c, p, start - 1, &s, &e));
    if (e != start)
        fail_msg("%s %s: the period before [%llu, %llu) ends at %llu", zone, kind, (unsigned long long)start,
                 (unsigned long long)end, (unsigned long long)e);
    assert_true(rl__calendar_period_of(c, p, end, &s, &e));
    if (s != end)
        fail_msg("%s %s: the period after [%llu, %llu) starts at %llu", zone, kind, (unsigned long long)start,
                 (unsigned long long)end, (unsigned long long)s);
}

/* The property every zone must have: the period of an instant holds it, and
 * its neighbours are the periods of the instants just before its start and
 * at its end. Checked for every period kind at instants every 7 min 13 s
 * (so that they fall at every minute and second) from two days before to
 * a day after the first midnight UTC that sees each change of a zone's UTC
 * offset in 2011-2012 and 2023-2026 (found by GLib, apart from the code
 * under test), in zones with changes at midnight,
 * of half an hour, of a whole day (Samoa, 2011) and of two hours. */
static void periods_hold_every_instant_and_follow_each_other(void **state) {
    (void)state;
    static const char *const zones[] = {
        "America/New_York", "America/Havana", "Australia/Lord_Howe", "America/Santiago", "Asia/Beirut",
        "Europe/London", "Pacific/Apia", "Pacific/Chatham", "Asia/Tehran", "America/St_Johns",
        "Africa/Casablanca", "Antarctica/Troll", "America/Asuncion", "Asia/Gaza", "Europe/Moscow",
        "America/Nuuk", "Australia/Adelaide", "Asia/Kolkata", "UTC"};
    static const rl_period kinds[] = {RL_PERIOD_HOUR, RL_PERIOD_DAY, RL_PERIOD_WEEK, RL_PERIOD_MONTH};
    size_t changes = 0;
    for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        rl__calendar *c = open_zone(zones[z]);
        GTimeZone *tz = g_time_zone_new_identifier(zones[z]);
        assert_non_null(tz);
        static const int years[][2] = {{2011, 2013}, {2023, 2027}};
        for (size_t y = 0; y < sizeof years / sizeof years[0]; y++) {
            int64_t from_s = (int64_t)(utc(years[y][0], 1, 1, 0, 0) / 1000u);
            int64_t to_s = (int64_t)(utc(years[y][1], 1, 1, 0, 0) / 1000u);
            int previous = g_time_zone_find_interval(tz, G_TIME_TYPE_UNIVERSAL, from_s);
            for (int64_t day_s = from_s; day_s < to_s; day_s += 86400) {
                int interval = g_time_zone_find_interval(tz, G_TIME_TYPE_UNIVERSAL, day_s);
                bool changed = g_time_zone_get_offset(tz, interval) != g_time_zone_get_offset(tz, previous);
                previous = interval;
                if (!changed) continue;
                changes++;
                for (int64_t at_s = day_s - 2 * 86400; at_s < day_s + 86400; at_s += 7 * 60 + 13)
                    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                        expect_period_holds(c, kinds[k], (uint64_t)at_s * 1000u + 500u);
            }
        }
        g_time_zone_unref(tz);
        rl__calendar_close(c);
    }
    assert_true(changes > 150); /* the walk did meet the changes it is about */
}

static void names_and_unknown_zones(void **state) {
    (void)state;
    rl_period p;
    const char *names[] = {"hour", "day", "week", "month"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(rl_period_parse(names[i], &p));
        assert_string_equal(rl_period_name(p), names[i]);
    }
    assert_false(rl_period_parse("year", &p));
    assert_false(rl_period_parse("Day", &p));
    const char *bad[] = {"Mars/Olympus_Mons", "", "/etc/passwd", "../zoneinfo/UTC", "EST5EDT,M3.2.0,M11.1.0",
                         "+05:30", "America/New York"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl__calendar *c = (rl__calendar *)1;
        char err[200] = "";
        assert_int_equal(rl__calendar_open(bad[i], &c, err, sizeof err), RL_INVALID_REQUEST);
        assert_null(c);
        assert_non_null(strstr(err, "timezone"));
    }
    rl__calendar *c = open_zone("Europe/Paris");
    assert_string_equal(rl__calendar_zone(c), "Europe/Paris");
    rl__calendar_close(c);
}

/* One calendar, many threads at once (TSan checks that nothing is shared
 * but the immutable zone): each walks a year of days and checks them. */
static void *walk_days(void *arg) {
    const rl__calendar *c = arg;
    uint64_t at = utc(2026, 1, 1, 12, 0), start, end, previous_end = 0;
    for (int i = 0; i < 365; i++) {
        if (!rl__calendar_period_of(c, RL_PERIOD_DAY, at, &start, &end)) return "no period";
        if (previous_end != 0 && start != previous_end) return "days do not follow each other";
        uint64_t hours = (end - start) / 3600000u;
        if (hours < 23 || hours > 25) return "a day that is not 23..25 hours";
        previous_end = end;
        at = end + 3600000u;
    }
    return NULL;
}

static void threads_share_a_calendar(void **state) {
    (void)state;
    rl__calendar *c = open_zone("America/New_York");
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&threads[i], NULL, walk_days, c), 0);
    for (int i = 0; i < 4; i++) {
        void *failure = NULL;
        pthread_join(threads[i], &failure);
        if (failure != NULL) fail_msg("%s", (const char *)failure);
    }
    rl__calendar_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(utc_periods),
        cmocka_unit_test(months_of_every_length),
        cmocka_unit_test(new_york_across_both_dst_changes),
        cmocka_unit_test(other_offsets_and_a_skipped_midnight),
        cmocka_unit_test(havana_changes_at_midnight),
        cmocka_unit_test(lord_howe_moves_half_an_hour),
        cmocka_unit_test(periods_hold_every_instant_and_follow_each_other),
        cmocka_unit_test(names_and_unknown_zones),
        cmocka_unit_test(threads_share_a_calendar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
