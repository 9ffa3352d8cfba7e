/* audit_query.c — see audit_query.h. */
#include "server/api/audit_query.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "server/api/percent_decode.h"

#define USAGE "GET /v1/admin/audit?key=K[&since_unix_ms=T][&limit=N]"
#define KNOWN "the parameters are key, since_unix_ms and limit"

enum { P_KEY, P_SINCE, P_LIMIT, P_COUNT };
static const char *const names[P_COUNT] = {"key", "since_unix_ms", "limit"};

/* Writes the sentence; returns false. */
__attribute__((format(printf, 2, 3))) static bool fail(char *detail, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(detail, RL_WIRE_DETAIL_SIZE, format, args);
    va_end(args);
    return false;
}

/* text[0..len) is decimal digits only, their value min..max. */
static bool parse_decimal(const char *text, size_t len, uint64_t min, uint64_t max, uint64_t *out) {
    if (len == 0) return false;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return false;
        uint64_t digit = (uint64_t)(text[i] - '0');
        if (value > (max - digit) / 10u) return false;
        value = value * 10u + digit;
    }
    *out = value;
    return value >= min;
}

/* A number, percent-decoded first like every value. */
static bool read_number(const char *raw, size_t len, uint64_t min, uint64_t max, uint64_t *out) {
    char text[32];
    int text_len = rl_percent_decode(raw, len, text, sizeof text);
    return text_len >= 0 && parse_decimal(text, (size_t)text_len, min, max, out);
}

/* Names the unknown parameter only when it is short printable ASCII:
 * anything else would make a poor (or invalid) JSON sentence. */
static bool unknown(const char *raw, size_t len, char *detail) {
    char name[33];
    int n = rl_percent_decode(raw, len, name, sizeof name);
    bool printable = n > 0;
    for (int i = 0; printable && i < n; i++) printable = name[i] > ' ' && name[i] < 0x7f;
    if (printable) return fail(detail, "unknown parameter \"%s\" (" KNOWN ")", name);
    return fail(detail, "an unknown parameter (" KNOWN ")");
}

/* One NAME=VALUE of len bytes at at. */
static bool read_param(const char *at, size_t len, bool seen[P_COUNT], rl__audit_params *out, char *detail) {
    if (len == 0) return fail(detail, "the query has an empty parameter: " USAGE);
    const char *eq = memchr(at, '=', len);
    if (eq == NULL) return fail(detail, "every parameter must be NAME=VALUE: " USAGE);
    size_t name_len = (size_t)(eq - at), value_len = len - name_len - 1;
    const char *value = eq + 1;
    char name[16];
    int decoded = rl_percent_decode(at, name_len, name, sizeof name);
    size_t which = 0;
    /* By length too: "key%00" is not "key". */
    while (decoded >= 0 && which < P_COUNT &&
           ((size_t)decoded != strlen(names[which]) || memcmp(name, names[which], (size_t)decoded) != 0))
        which++;
    if (decoded < 0 || which == P_COUNT) return unknown(at, name_len, detail);
    if (seen[which]) return fail(detail, "%s appears twice", names[which]);
    seen[which] = true;

    uint64_t number = 0;
    if (which == P_KEY) {
        int key_len = rl_percent_decode(value, value_len, out->key, sizeof out->key);
        if (key_len < 0 || !rl_key_is_valid(out->key, (size_t)key_len))
            return fail(detail, "key must be 1..256 printable ASCII characters without spaces, percent-encoded "
                                "where needed");
    } else if (which == P_SINCE) {
        if (!read_number(value, value_len, 0, RL__AUDIT_SINCE_MAX, &out->since_unix_ms))
            return fail(detail, "since_unix_ms must be a decimal integer 0..%llu",
                        (unsigned long long)RL__AUDIT_SINCE_MAX);
    } else {
        if (!read_number(value, value_len, 1, RL_AUDIT_QUERY_MAX, &number))
            return fail(detail, "limit must be a decimal integer 1..%u", RL_AUDIT_QUERY_MAX);
        out->limit = (uint32_t)number;
    }
    return true;
}

bool rl__audit_params_decode(const char *query, size_t len, rl__audit_params *out,
                             char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    out->limit = RL__AUDIT_DEFAULT_LIMIT;
    detail[0] = '\0';
    bool seen[P_COUNT] = {false};
    /* "&"-separated; no query at all is one missing key, not an empty parameter. */
    size_t start = 0;
    for (size_t i = 0; len > 0 && i <= len; i++) {
        if (i < len && query[i] != '&') continue;
        if (!read_param(query + start, i - start, seen, out, detail)) return false;
        start = i + 1;
    }
    if (!seen[P_KEY]) return fail(detail, "key is required: " USAGE);
    return true;
}
