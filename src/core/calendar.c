/* calendar.c — calendar periods in a time zone (calendar.h), on GLib's
 * GTimeZone and GDateTime. */
#include "core/calendar.h"

#include <glib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error_text.h"
#include "core/zone_clock.h"

struct rl__calendar {
    GTimeZone *zone;
    char name[];
};

/* GLib keeps one GTimeZone a name in a process-wide cache, under its own
 * lock. That lock is a bare futex, which ThreadSanitizer cannot see, so two
 * threads opening or closing zones look to it like a race on the cache's
 * strings. Taking ours around both makes the ordering visible; a zone is
 * opened when a limit is defined, read or made, not for each request. */
static pthread_mutex_t zone_cache_lock = PTHREAD_MUTEX_INITIALIZER;

rl_status rl__calendar_open(const char *zone, rl__calendar **out, char *err, size_t err_size) {
    *out = NULL;
    /* GLib reads a zone from tzdata by name; "UTC" and names like
     * "Europe/Paris" only: no POSIX TZ strings ("EST5EDT,M3.2.0"), no
     * paths, no offsets, which would be zones no operator meant. */
    bool plain = zone != NULL && zone[0] != '\0' && zone[0] != '/' && zone[0] != '.' && strstr(zone, "..") == NULL &&
                 strlen(zone) < 64;
    for (const char *c = zone; plain && *c != '\0'; c++)
        plain = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '/' ||
                *c == '_' || *c == '-' || *c == '+';
    GTimeZone *tz = NULL;
    if (plain) {
        pthread_mutex_lock(&zone_cache_lock);
        tz = g_time_zone_new_identifier(zone);
        pthread_mutex_unlock(&zone_cache_lock);
    }
    if (tz == NULL) {
        rl__error_text(err, err_size, "timezone \"%s\" is not an IANA time zone this system's tzdata knows",
                       zone != NULL ? zone : "");
        return RL_INVALID_REQUEST;
    }
    size_t len = strlen(zone);
    rl__calendar *calendar = malloc(sizeof *calendar + len + 1);
    if (calendar == NULL) {
        pthread_mutex_lock(&zone_cache_lock);
        g_time_zone_unref(tz);
        pthread_mutex_unlock(&zone_cache_lock);
        return RL_NO_MEMORY;
    }
    calendar->zone = tz;
    memcpy(calendar->name, zone, len + 1);
    *out = calendar;
    return RL_OK;
}

void rl__calendar_close(rl__calendar *calendar) {
    if (calendar == NULL) return;
    pthread_mutex_lock(&zone_cache_lock);
    g_time_zone_unref(calendar->zone);
    pthread_mutex_unlock(&zone_cache_lock);
    free(calendar);
}

const char *rl__calendar_zone(const rl__calendar *calendar) { return calendar->name; }

/* Local 00:00 of date, as the clock reads it (zone_clock.h). */
static gint64 local_midnight_of(const GDate *date) {
    static const gint64 unix_epoch_julian = 719163; /* 1970-01-01, GDate counting 0001-01-01 as 1 */
    return ((gint64)g_date_get_julian(date) - unix_epoch_julian) * 86400;
}

/* Moves date (the first day of a period) by one period, back or forward. */
static void step_period(GDate *date, rl_period period, bool forward) {
    guint days = period == RL_PERIOD_WEEK ? 7 : 1;
    if (period == RL_PERIOD_MONTH && forward) g_date_add_months(date, 1);
    else if (period == RL_PERIOD_MONTH) g_date_subtract_months(date, 1);
    else if (forward) g_date_add_days(date, days);
    else g_date_subtract_days(date, days);
}

/* The day, week or month holding unix_s, from the first day of the one
 * its local date is in. Each starts at the first instant the clock reads
 * its local midnight or later; an instant the clock shows on a date whose
 * period has not started yet (a fall back across midnight) or has already
 * ended belongs to the neighbour, so that the periods follow each other. */
static bool days_of(GTimeZone *zone, rl_period period, gint64 unix_s, GDate date, gint64 *start_s, gint64 *end_s) {
    for (int step = 0; step < 3; step++) {
        GDate next = date;
        step_period(&next, period, true);
        if (!g_date_valid(&date) || !g_date_valid(&next)) return false;
        *start_s = rl__zone_first_reading(zone, local_midnight_of(&date));
        *end_s = rl__zone_first_reading(zone, local_midnight_of(&next));
        if (unix_s < *start_s) step_period(&date, period, false);
        else if (unix_s >= *end_s) date = next;
        else return true;
    }
    return false;
}

bool rl__calendar_period_of(const rl__calendar *calendar, rl_period period, uint64_t unix_ms, uint64_t *start_ms,
                            uint64_t *end_ms) {
    gint64 unix_s = (gint64)(unix_ms / 1000u);
    GDateTime *utc = g_date_time_new_from_unix_utc(unix_s);
    if (utc == NULL) return false;
    GDateTime *local = g_date_time_to_timezone(utc, calendar->zone);
    g_date_time_unref(utc);
    if (local == NULL) return false;
    bool ok;
    gint64 start_s = 0, end_s = 0;
    if (period == RL_PERIOD_HOUR) {
        ok = rl__zone_hour_of(calendar->zone, unix_s, &start_s, &end_s);
    } else {
        GDate date;
        g_date_clear(&date, 1);
        g_date_set_dmy(&date, (GDateDay)g_date_time_get_day_of_month(local), (GDateMonth)g_date_time_get_month(local),
                       (GDateYear)g_date_time_get_year(local));
        if (period == RL_PERIOD_WEEK) g_date_subtract_days(&date, (guint)(g_date_time_get_day_of_week(local) - 1));
        if (period == RL_PERIOD_MONTH) g_date_set_day(&date, 1);
        ok = days_of(calendar->zone, period, unix_s, date, &start_s, &end_s);
    }
    g_date_time_unref(local);
    if (!ok || start_s < 0 || end_s <= start_s) return false;
    *start_ms = (uint64_t)start_s * 1000u;
    *end_ms = (uint64_t)end_s * 1000u;
    return true;
}
