/* core/zone_clock.h — private: when a time zone's wall clock reads what,
 * across its changes of UTC offset, for the calendar's periods
 * (calendar.h).
 *
 * A zone's clock is not a function one can invert: where it jumps forward
 * some readings never happen (a skipped midnight), where it goes back some
 * happen twice. So a date starts at the first instant at which the clock
 * reads its midnight or later: a skipped midnight is the instant the clock
 * jumps past it, a repeated one its first reading. An hour starts at every
 * reading of hh:00:00 and at every jump past one (rl__zone_hour_of). Periods
 * built from such boundaries follow each other, and every instant falls in
 * exactly one.
 *
 * Instants are Unix seconds; a "local" time is what the clock reads, as
 * seconds from 1970-01-01 00:00 of that clock.
 *
 * Threading: pure functions of an immutable GTimeZone: any thread, at once.
 */
#ifndef RL_CORE_ZONE_CLOCK_H
#define RL_CORE_ZONE_CLOCK_H

#include <glib.h>
#include <stdbool.h>

/* The first instant at which zone's clock reads local_s or later. */
gint64 rl__zone_first_reading(GTimeZone *zone, gint64 local_s);

/* The clock hour that holds unix_s: [*start_s, *end_s). An hour starts
 * where the clock reads hh:00:00, or where it jumps forward past such a
 * reading; so an hour the clock repeats (back from 02:00 to 01:00) is two
 * periods, as it lasts two hours, while after a change of half an hour the
 * hour runs on until the clock next reads hh:00 (Lord Howe Island: back
 * from 02:00 to 01:30 makes the hour of 01:00 90 minutes long; forward from
 * 02:00 to 02:30 makes the hour of 02:00 30 minutes long). false if the
 * zone's changes are too close together to tell (none in tzdata). */
bool rl__zone_hour_of(GTimeZone *zone, gint64 unix_s, gint64 *start_s, gint64 *end_s);

#endif
