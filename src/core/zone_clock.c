/* zone_clock.c — when a zone's clock reads what (zone_clock.h), from
 * GTimeZone's intervals: the stretches of time with one UTC offset, which
 * GLib numbers in time order. */
#include "core/zone_clock.h"

/* Every UTC offset tzdata has ever held is within 16 hours (local mean
 * times included): a clock reads local_s somewhere in local_s ± this. */
#define MAX_OFFSET_S ((gint64)16 * 3600)
#define HOUR_S 3600
/* Changes of offset a step of rl__zone_hour_of may cross; tzdata's are
 * days apart, so one or two is all that happens. */
#define MAX_CHANGES_CROSSED 8

static gint interval_at(GTimeZone *zone, gint64 unix_s) {
    return g_time_zone_find_interval(zone, G_TIME_TYPE_UNIVERSAL, unix_s);
}

static gint64 offset_of(GTimeZone *zone, gint interval) { return g_time_zone_get_offset(zone, interval); }

/* The instant interval starts, where the clock changed offset: the first
 * instant in (before, after] that is in it or a later one. before is in an
 * earlier interval, after in this one or later. */
static gint64 interval_start(GTimeZone *zone, gint interval, gint64 before, gint64 after) {
    while (after - before > 1) {
        gint64 middle = before + (after - before) / 2;
        if (interval_at(zone, middle) >= interval)
            after = middle;
        else
            before = middle;
    }
    return after;
}

gint64 rl__zone_first_reading(GTimeZone *zone, gint64 local_s) {
    gint64 earliest = local_s - MAX_OFFSET_S - 1, latest = local_s + MAX_OFFSET_S;
    /* The intervals in time order: the clock rises within each, so the
     * first one whose clock reaches local_s holds the answer. */
    for (gint interval = interval_at(zone, earliest), last = interval_at(zone, latest); interval <= last; interval++) {
        gint64 reading = local_s - offset_of(zone, interval); /* reads local_s at this offset */
        gint holder = interval_at(zone, reading);
        if (holder == interval) return reading;
        /* The interval starts past local_s: the clock jumped over it. */
        if (holder < interval) return interval_start(zone, interval, reading, latest);
        /* holder > interval: it ended before its clock reached local_s */
    }
    return latest; /* not reached: by then every offset reads local_s or later */
}

static gint64 floor_mod(gint64 a, gint64 b) {
    gint64 r = a % b;
    return r < 0 ? r + b : r;
}

static gint64 floor_div(gint64 a, gint64 b) { return (a - floor_mod(a, b)) / b; }

/* Whether an hour starts at start_s, where interval starts: the clock reads
 * hh:00:00 there, or it jumped forward past such a reading. */
static bool starts_hour(GTimeZone *zone, gint interval, gint64 start_s) {
    gint64 reads = start_s + offset_of(zone, interval);
    gint64 read_before = start_s - 1 + offset_of(zone, interval - 1);
    return floor_mod(reads, HOUR_S) == 0 || floor_div(reads, HOUR_S) > floor_div(read_before, HOUR_S);
}

/* The latest start of an hour at or before unix_s. */
static bool hour_start(GTimeZone *zone, gint64 unix_s, gint64 *start_s) {
    for (int crossed = 0; crossed < MAX_CHANGES_CROSSED; crossed++) {
        gint interval = interval_at(zone, unix_s);
        gint64 on_the_hour = unix_s - floor_mod(unix_s + offset_of(zone, interval), HOUR_S);
        if (interval_at(zone, on_the_hour) == interval) {
            *start_s = on_the_hour;
            return true;
        }
        /* The offset changed since the clock last read hh:00 at it. */
        gint64 changed = interval_start(zone, interval, on_the_hour, unix_s);
        if (starts_hour(zone, interval, changed)) {
            *start_s = changed;
            return true;
        }
        unix_s = changed - 1; /* the hour before the change runs on */
    }
    return false;
}

/* The earliest start of an hour after unix_s. */
static bool hour_end(GTimeZone *zone, gint64 unix_s, gint64 *end_s) {
    for (int crossed = 0; crossed < MAX_CHANGES_CROSSED; crossed++) {
        gint interval = interval_at(zone, unix_s);
        gint64 next_hour = unix_s - floor_mod(unix_s + offset_of(zone, interval), HOUR_S) + HOUR_S;
        if (interval_at(zone, next_hour) == interval) {
            *end_s = next_hour;
            return true;
        }
        gint64 changed = interval_start(zone, interval + 1, unix_s, next_hour);
        if (starts_hour(zone, interval + 1, changed)) {
            *end_s = changed;
            return true;
        }
        unix_s = changed; /* not a start: the hour runs on at the new offset */
    }
    return false;
}

bool rl__zone_hour_of(GTimeZone *zone, gint64 unix_s, gint64 *start_s, gint64 *end_s) {
    return hour_start(zone, unix_s, start_s) && hour_end(zone, unix_s, end_s);
}
