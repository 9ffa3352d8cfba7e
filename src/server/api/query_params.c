/* query_params.c — see query_params.h. */
#include "server/api/query_params.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/api/percent_decode.h"

bool rl__query_fail(char *detail, const char *format, ...) {
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

bool rl__query_number(const char *raw, size_t len, uint64_t min, uint64_t max, uint64_t *out) {
    char text[32];
    int text_len = rl_percent_decode(raw, len, text, sizeof text);
    return text_len >= 0 && parse_decimal(text, (size_t)text_len, min, max, out);
}

/* Names the unknown parameter only when it is short printable ASCII:
 * anything else would make a poor (or invalid) JSON sentence. */
static bool unknown(const char *raw, size_t len, const rl__query_spec *spec, char *detail) {
    char name[33];
    int n = rl_percent_decode(raw, len, name, sizeof name);
    bool printable = n > 0;
    for (int i = 0; printable && i < n; i++) printable = name[i] > ' ' && name[i] < 0x7f;
    if (printable) return rl__query_fail(detail, "unknown parameter \"%s\" (%s)", name, spec->known);
    return rl__query_fail(detail, "an unknown parameter (%s)", spec->known);
}

/* One NAME=VALUE of len bytes at at. */
static bool read_param(const char *at, size_t len, const rl__query_spec *spec, bool *seen, rl__query_take_fn take,
                       void *context, char *detail) {
    if (len == 0) return rl__query_fail(detail, "the query has an empty parameter: %s", spec->usage);
    const char *eq = memchr(at, '=', len);
    if (eq == NULL) return rl__query_fail(detail, "every parameter must be NAME=VALUE: %s", spec->usage);
    size_t name_len = (size_t)(eq - at);
    char name[32];
    int decoded = rl_percent_decode(at, name_len, name, sizeof name);
    size_t which = 0;
    /* By length too: "key%00" is not "key". */
    while (decoded >= 0 && which < spec->count &&
           ((size_t)decoded != strlen(spec->names[which]) || memcmp(name, spec->names[which], (size_t)decoded) != 0))
        which++;
    if (decoded < 0 || which == spec->count) return unknown(at, name_len, spec, detail);
    if (seen[which]) return rl__query_fail(detail, "%s appears twice", spec->names[which]);
    seen[which] = true;
    return take(context, which, eq + 1, len - name_len - 1, detail);
}

bool rl__query_read(const char *query, size_t len, const rl__query_spec *spec, bool *seen, rl__query_take_fn take,
                    void *context, char detail[RL_WIRE_DETAIL_SIZE]) {
    detail[0] = '\0';
    memset(seen, 0, sizeof *seen * spec->count);
    /* "&"-separated; no query at all is no parameter, not an empty one. */
    size_t start = 0;
    for (size_t i = 0; len > 0 && i <= len; i++) {
        if (i < len && query[i] != '&') continue;
        if (!read_param(query + start, i - start, spec, seen, take, context, detail)) return false;
        start = i + 1;
    }
    return true;
}
