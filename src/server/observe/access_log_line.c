/* access_log_line.c — one access log line (access_log_line.h), written
 * straight into the caller's buffer: no allocation on the event loop. */
#include "server/observe/access_log_line.h"

#include <string.h>
#include <time.h>

#include "core/text.h"

bool rl_access_log_format_parse(const char *text, rl_access_log_format *out) {
    static const rl_access_log_format formats[] = {RL_ACCESS_LOG_OFF, RL_ACCESS_LOG_TEXT, RL_ACCESS_LOG_JSON};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(text, rl_access_log_format_name(formats[i])) != 0) continue;
        *out = formats[i];
        return true;
    }
    return false;
}

const char *rl_access_log_format_name(rl_access_log_format format) {
    return format == RL_ACCESS_LOG_TEXT ? "text" : format == RL_ACCESS_LOG_JSON ? "json" : "off";
}

/* ---- a cursor in the line --------------------------------------------------- */

typedef struct line {
    char *at; /* the next byte; the bounds above keep it inside */
} line;

static void put(line *l, const char *bytes, size_t len) {
    memcpy(l->at, bytes, len);
    l->at += len;
}

#define PUT_LIT(l, literal) put((l), literal, sizeof literal - 1)

static void put_u64(line *l, uint64_t value) {
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0);
    while (n > 0) *l->at++ = digits[--n];
}

static void put_digits(char *out, unsigned value, size_t width) {
    for (size_t i = width; i > 0; i--) {
        out[i - 1] = (char)('0' + value % 10u);
        value /= 10u;
    }
}

void rl_access_log_time_format(int64_t unix_ms, char out[RL_ACCESS_LOG_TIME_SIZE]) {
    time_t seconds = (time_t)(unix_ms / 1000);
    struct tm utc;
    memcpy(out, "0000-00-00T00:00:00.000Z", RL_ACCESS_LOG_TIME_SIZE);
    if (unix_ms < 0 || gmtime_r(&seconds, &utc) == NULL || utc.tm_year + 1900 > 9999) return;
    put_digits(out, (unsigned)(utc.tm_year + 1900), 4);
    put_digits(out + 5, (unsigned)(utc.tm_mon + 1), 2);
    put_digits(out + 8, (unsigned)utc.tm_mday, 2);
    put_digits(out + 11, (unsigned)utc.tm_hour, 2);
    put_digits(out + 14, (unsigned)utc.tm_min, 2);
    put_digits(out + 17, (unsigned)utc.tm_sec, 2);
    put_digits(out + 20, (unsigned)(unix_ms % 1000), 3);
}

/* ---- strings ---------------------------------------------------------------- */

static const char hex[] = "0123456789abcdef";

/* Whether the valid UTF-8 sequence s[0..n) is a character that ends a line
 * for some readers besides '\n' (Python's splitlines, Unicode-aware log
 * viewers): a C1 control (U+0080..U+009F, NEL among them), the line
 * separator U+2028 or the paragraph separator U+2029. A job_id may hold
 * them, so both formats escape them: a line stays one line for any reader. */
static bool breaks_lines(const unsigned char *s, size_t n) {
    return (n == 2 && s[0] == 0xc2 && s[1] < 0xa0) ||
           (n == 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9));
}

/* "\uXXXX" for a code point of the Basic Multilingual Plane. */
static void put_json_u_escape(line *l, unsigned code_point) {
    PUT_LIT(l, "\\u");
    for (int shift = 12; shift >= 0; shift -= 4) *l->at++ = hex[(code_point >> shift) & 0xfu];
}

/* Inside a JSON string: '"', '\', control characters and the characters
 * that break lines escaped, a byte that is not part of valid UTF-8 written
 * as U+FFFD. */
static void put_json_escaped(line *l, const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            *l->at++ = '\\';
            *l->at++ = (char)c;
            i++;
        } else if (c < 0x20) {
            const char *short_form = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
            if (short_form != NULL) put(l, short_form, 2);
            else put_json_u_escape(l, c);
            i++;
        } else if (c < 0x80) {
            *l->at++ = (char)c;
            i++;
        } else {
            size_t n = rl__utf8_sequence_len(s + i, len - i);
            if (n == 0) {
                PUT_LIT(l, "\\ufffd");
                i++;
            } else if (breaks_lines(s + i, n)) { /* C2 xx is U+00xx; E2 80 A8, A9 are U+2028, U+2029 */
                put_json_u_escape(l, n == 2 ? s[i + 1] : 0x2028u + (s[i + 2] & 1u));
                i += n;
            } else {
                put(l, text + i, n);
                i += n;
            }
        }
    }
}

/* A JSON string, or null for none. */
static void put_json_string(line *l, const char *text, size_t max) {
    if (text == NULL) {
        PUT_LIT(l, "null");
        return;
    }
    *l->at++ = '"';
    put_json_escaped(l, text, strnlen(text, max));
    *l->at++ = '"';
}

static bool is_bare(const char *text, size_t len) {
    if (len == 0 || (len == 1 && text[0] == '-')) return false;
    for (size_t i = 0; i < len; i++)
        if (text[i] <= ' ' || text[i] > '~' || text[i] == '"' || text[i] == '\\' || text[i] == '=') return false;
    return true;
}

/* A text value: "-" for none, bare when nothing in it needs quoting, else
 * quoted with \" \\ \n \r \t \xHH (control characters, DEL, bytes outside
 * valid UTF-8, and each byte of a character that breaks lines); other valid
 * UTF-8 stays as it is. */
static void put_text_value(line *l, const char *text, size_t max) {
    if (text == NULL) {
        *l->at++ = '-';
        return;
    }
    size_t len = strnlen(text, max);
    if (is_bare(text, len)) {
        put(l, text, len);
        return;
    }
    const unsigned char *s = (const unsigned char *)text;
    *l->at++ = '"';
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = c < 0x80 ? 1 : rl__utf8_sequence_len(s + i, len - i);
        if (c == '"' || c == '\\') {
            *l->at++ = '\\';
            *l->at++ = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            *l->at++ = '\\';
            *l->at++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c == 0x7f || n == 0 || breaks_lines(s + i, n)) {
            PUT_LIT(l, "\\x");
            *l->at++ = hex[c >> 4];
            *l->at++ = hex[c & 0xf];
            n = 1;
        } else {
            put(l, text + i, n);
            i += n;
            continue;
        }
        i++;
    }
    *l->at++ = '"';
}

/* ---- the line ------------------------------------------------------------------ */

static uint32_t denied_items(const rl_api_outcome *o) {
    return o->results[RL_API_RESULT_DENIED_CAPACITY] + o->results[RL_API_RESULT_DENIED_DECREASING] +
           o->results[RL_API_RESULT_DENIED_EXCEEDS_CAPACITY];
}

/* The first item's result; NULL for a request that held no lease. */
static const char *decision_of(const rl_api_outcome *o) {
    return o->items > 0 ? rl_api_result_name(o->first_result) : NULL;
}

static const char *denied_by_of(const rl_api_outcome *o) {
    return o->denied_by_key[0] != '\0' ? o->denied_by_key : NULL;
}

/* The fields after time, endpoint and status, in their order: a string
 * (NULL: none) cut at max bytes, or a number. */
typedef struct named_field {
    const char *name;
    const char *text;
    size_t max;
    uint64_t number;
    bool is_number;
} named_field;

#define FIELD_COUNT 7

static void fields_of(const rl_api_outcome *o, uint64_t latency_us, named_field out[FIELD_COUNT]) {
    out[0] = (named_field){"lease_id", o->lease_id, RL_ACCESS_LOG_LEASE_ID_MAX, 0, false};
    out[1] = (named_field){"job_id", o->job_id, RL_ACCESS_LOG_JOB_ID_MAX, 0, false};
    out[2] = (named_field){"decision", decision_of(o), 64, 0, false};
    out[3] = (named_field){"denied_by", denied_by_of(o), RL_ACCESS_LOG_KEY_MAX, 0, false};
    out[4] = (named_field){"items", NULL, 0, o->items, true};
    out[5] = (named_field){"denied", NULL, 0, denied_items(o), true};
    out[6] = (named_field){"latency_us", NULL, 0, latency_us, true};
}

static void put_json_line(line *l, const char *time, const rl_api_outcome *o, const named_field *fields) {
    PUT_LIT(l, "{\"time\":\"");
    put(l, time, RL_ACCESS_LOG_TIME_SIZE - 1);
    PUT_LIT(l, "\",\"endpoint\":\"");
    const char *endpoint = rl_api_endpoint_name(o->endpoint);
    put(l, endpoint, strlen(endpoint));
    PUT_LIT(l, "\",\"status\":");
    put_u64(l, (uint64_t)(unsigned)o->http_status);
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        PUT_LIT(l, ",\"");
        put(l, fields[i].name, strlen(fields[i].name));
        PUT_LIT(l, "\":");
        if (fields[i].is_number) put_u64(l, fields[i].number);
        else put_json_string(l, fields[i].text, fields[i].max);
    }
    PUT_LIT(l, "}\n");
}

static void put_text_line(line *l, const char *time, const rl_api_outcome *o, const named_field *fields) {
    put(l, time, RL_ACCESS_LOG_TIME_SIZE - 1);
    *l->at++ = ' ';
    const char *endpoint = rl_api_endpoint_name(o->endpoint);
    put(l, endpoint, strlen(endpoint));
    *l->at++ = ' ';
    put_u64(l, (uint64_t)(unsigned)o->http_status);
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        *l->at++ = ' ';
        put(l, fields[i].name, strlen(fields[i].name));
        *l->at++ = '=';
        if (fields[i].is_number) put_u64(l, fields[i].number);
        else put_text_value(l, fields[i].text, fields[i].max);
    }
    *l->at++ = '\n';
}

size_t rl_access_log_line_format(rl_access_log_format format, const char *time, const rl_api_outcome *outcome,
                                 uint64_t latency_us, char *out) {
    line l = {out};
    named_field fields[FIELD_COUNT];
    fields_of(outcome, latency_us, fields);
    if (format == RL_ACCESS_LOG_JSON) put_json_line(&l, time, outcome, fields);
    else put_text_line(&l, time, outcome, fields);
    return (size_t)(l.at - out);
}
