/* calendar.c — calendar periods in a time zone (calendar.h), on GLib's
 * GTimeZone and GDateTime. */
#include "core/calendar.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "core/error_text.h"

struct rl__calendar {
    GTimeZone *zone;
    char name[];
};

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
    GTimeZone *tz = plain ? g_time_zone_new_identifier(zone) : NULL;
    if (tz == NULL) {
        rl__error_text(err, err_size, "timezone \"%s\" is not an IANA time zone this system's tzdata knows",
                       zone != NULL ? zone : "");
        return RL_INVALID_REQUEST;
    }
    size_t len = strlen(zone);
    rl__calendar *calendar = malloc(sizeof *calendar + len + 1);
    if (calendar == NULL) {
        g_time_zone_unref(tz);
        return RL_NO_MEMORY;
    }
    calendar->zone = tz;
    memcpy(calendar->name, zone, len + 1);
    *out = calendar;
    return RL_OK;
}

void rl__calendar_close(rl__calendar *calendar) {
    if (calendar == NULL) return;
    g_time_zone_unref(calendar->zone);
    free(calendar);
}

const char *rl__calendar_zone(const rl__calendar *calendar) { return calendar->name; }

/* Local 00:00 of a local date, as Unix seconds. A midnight the zone skips
 * (a DST change at 00:00) is the first instant of that date. */
static bool midnight_of(GTimeZone *zone, GDate *date, gint64 *unix_s) {
    GDateTime *local = g_date_time_new(zone, g_date_get_year(date), g_date_get_month(date),
                                       g_date_get_day(date), 0, 0, 0);
    if (local == NULL) return false;
    *unix_s = g_date_time_to_unix(local);
    g_date_time_unref(local);
    return true;
}

bool rl__calendar_period_of(const rl__calendar *calendar, rl_period period, uint64_t unix_ms, uint64_t *start_ms,
                            uint64_t *end_ms) {
    gint64 unix_s = (gint64)(unix_ms / 1000u);
    GDateTime *utc = g_date_time_new_from_unix_utc(unix_s);
    if (utc == NULL) return false;
    GDateTime *local = g_date_time_to_timezone(utc, calendar->zone);
    g_date_time_unref(utc);
    if (local == NULL) return false;
    bool ok = true;
    gint64 start_s = 0, end_s = 0;
    if (period == RL_PERIOD_HOUR) {
        /* The local clock hour this instant is in: its start is this
         * instant's own offset away, so an hour repeated when clocks go back
         * is two periods, as it is two hours. */
        start_s = unix_s - g_date_time_get_minute(local) * 60 - g_date_time_get_second(local);
        end_s = start_s + 3600;
    } else {
        GDate date, next;
        g_date_clear(&date, 1);
        g_date_set_dmy(&date, (GDateDay)g_date_time_get_day_of_month(local), (GDateMonth)g_date_time_get_month(local),
                       (GDateYear)g_date_time_get_year(local));
        if (period == RL_PERIOD_WEEK) g_date_subtract_days(&date, (guint)(g_date_time_get_day_of_week(local) - 1));
        if (period == RL_PERIOD_MONTH) g_date_set_day(&date, 1);
        next = date;
        if (period == RL_PERIOD_DAY) g_date_add_days(&next, 1);
        else if (period == RL_PERIOD_WEEK) g_date_add_days(&next, 7);
        else g_date_add_months(&next, 1);
        ok = g_date_valid(&date) && g_date_valid(&next) && midnight_of(calendar->zone, &date, &start_s) &&
             midnight_of(calendar->zone, &next, &end_s);
    }
    g_date_time_unref(local);
    if (!ok || start_s < 0 || end_s <= start_s) return false;
    *start_ms = (uint64_t)start_s * 1000u;
    *end_ms = (uint64_t)end_s * 1000u;
    return true;
}
