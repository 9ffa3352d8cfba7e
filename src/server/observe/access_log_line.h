/* server/observe/access_log_line.h — one line of the access log: what one
 * answered request was (api/outcome.h), as text or as JSON.
 *
 * Both carry the same fields, in this order: time (UTC, RFC 3339 with
 * milliseconds), endpoint, HTTP status, lease_id, job_id, decision (the
 * first item's result, rl_api_result_name; none for an endpoint that is not
 * a lease's), denied_by (the key of the limit that refused the first denied
 * item), items (how many leases the request held), denied (how many of
 * them were denied) and latency_us (headers read to answer given).
 *
 *   json: {"time":"2026-11-28T07:48:03.123Z","endpoint":"reserve","status":200,
 *          "lease_id":"01J...","job_id":"batch \"7\"","decision":"denied_capacity",
 *          "denied_by":"global:llm:openai:gpt-4o:tpm","items":1,"denied":1,"latency_us":41}
 *         one JSON object a line; a field with nothing to say is null.
 *   text: 2026-11-28T07:48:03.123Z reserve 200 lease_id=01J... job_id="batch \"7\""
 *         decision=denied_capacity denied_by=global:llm:openai:gpt-4o:tpm items=1 denied=1 latency_us=41
 *         (one line), logfmt-like: a value of printable ASCII without space,
 *         '"', '\' or '=' stands bare, any other is quoted; "-" is nothing.
 *
 * job_id is free text from the client (UTF-8 without C0 control characters
 * when it was accepted, but a refused item's may be anything), and so, on a
 * refused item, is lease_id: every string is escaped so that a line stays
 * one line and valid JSON whatever it holds. JSON escapes '"', '\', control
 * characters and the characters some readers end a line at (the C1
 * controls, NEL among them, and U+2028, U+2029, which an accepted job_id
 * may hold), and writes a byte that is not part of valid UTF-8 as U+FFFD;
 * text escapes the same as \" \\ \n \t \xHH (a byte of each), and keeps
 * other valid UTF-8 as it is. Each string is cut to a bound first (RL_ACCESS_LOG_*_MAX,
 * larger than anything valid), so a line never exceeds
 * RL_ACCESS_LOG_LINE_MAX bytes.
 *
 * Pure functions: any thread.
 */
#ifndef RL_SERVER_ACCESS_LOG_LINE_H
#define RL_SERVER_ACCESS_LOG_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/api/outcome.h"

/* log.access */
typedef enum rl_access_log_format {
    RL_ACCESS_LOG_OFF,
    RL_ACCESS_LOG_TEXT,
    RL_ACCESS_LOG_JSON,
} rl_access_log_format;

/* The bytes of a string written at most (longer ones are cut): a lease id
 * is 26 characters, a job id at most RL_JOB_ID_MAX_LEN bytes, a key
 * RL_KEY_MAX_LEN. */
#define RL_ACCESS_LOG_LEASE_ID_MAX 64u
#define RL_ACCESS_LOG_JOB_ID_MAX 256u
#define RL_ACCESS_LOG_KEY_MAX RL_KEY_MAX_LEN
/* "2026-11-28T07:48:03.123Z" and its NUL. */
#define RL_ACCESS_LOG_TIME_SIZE 25u
/* A line with every string at its bound and every byte escaped (6 bytes
 * for one), newline included, fits. */
#define RL_ACCESS_LOG_LINE_MAX 4096u

/* "off", "text", "json" into *out. False for anything else. */
bool rl_access_log_format_parse(const char *text, rl_access_log_format *out);
const char *rl_access_log_format_name(rl_access_log_format format);

/* unix_ms as "2026-11-28T07:48:03.123Z" into out (RL_ACCESS_LOG_TIME_SIZE
 * bytes). */
void rl_access_log_time_format(int64_t unix_ms, char out[RL_ACCESS_LOG_TIME_SIZE]);

/* One line for outcome in format (text or json), ending in '\n', into out
 * (at least RL_ACCESS_LOG_LINE_MAX bytes; not NUL-terminated). time is
 * rl_access_log_time_format's. Returns its length in bytes. */
size_t rl_access_log_line_format(rl_access_log_format format, const char *time, const rl_api_outcome *outcome,
                                 uint64_t latency_us, char *out);

#endif
