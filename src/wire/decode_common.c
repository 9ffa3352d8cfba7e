/* decode_common.c — path-qualified details and the shared value readers
 * (decode_common.h). */
#include "wire/decode_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Writes "<path>.<field> <message>" into path->detail. */
__attribute__((format(printf, 3, 0))) static void vformat(const rl__json_path *path,
                                                         const char *field, const char *format,
                                                         va_list args) {
    char *out = path->detail;
    size_t size = RL_WIRE_DETAIL_SIZE;
    int n = 0;
    /* Each piece is joined to the previous one by '.'; the sentence follows
     * the path after a space, or stands alone when there is no path. */
    const char *sep = "";
    if (path->outer != NULL) {
        n += snprintf(out + n, size - (size_t)n, "%s[%zu]", path->outer, path->outer_index);
        sep = ".";
    }
    if (path->inner != NULL && (size_t)n < size) {
        n += snprintf(out + n, size - (size_t)n, "%s%s[%zu]", sep, path->inner,
                      path->inner_index);
        sep = ".";
    }
    if (field != NULL && (size_t)n < size) {
        n += snprintf(out + n, size - (size_t)n, "%s%s", sep, field);
    }
    if (n > 0 && (size_t)n < size) n += snprintf(out + n, size - (size_t)n, " ");
    if ((size_t)n < size) vsnprintf(out + n, size - (size_t)n, format, args);
}

bool rl__json_fail(const rl__json_path *path, const char *field, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vformat(path, field, format, args);
    va_end(args);
    return false;
}

bool rl__json_note(uint32_t *best, uint32_t rank, const rl__json_path *path, const char *field,
                   const char *format, ...) {
    if (rank >= *best) return false;
    *best = rank;
    va_list args;
    va_start(args, format);
    vformat(path, field, format, args);
    va_end(args);
    return false;
}

bool rl__read_string_or_skip(rl__json_scan *s, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    if (rl__scan_peek(s) == '"') return rl__scan_string(s, text, len);
    return rl__scan_skip(s);
}

bool rl__read_integer(rl__json_scan *s, uint64_t min, uint64_t max, uint64_t *out, bool *valid) {
    char c = rl__scan_peek(s);
    *valid = false;
    if (c != '-' && (c < '0' || c > '9')) return rl__scan_skip(s);
    rl__json_number number;
    if (!rl__scan_number(s, &number)) return false;
    if (!number.integral || (number.negative && number.magnitude != 0)) return true;
    *valid = number.magnitude >= min && number.magnitude <= max;
    *out = number.magnitude;
    return true;
}

bool rl__read_bool_or_skip(rl__json_scan *s, bool *out, bool *valid) {
    char c = rl__scan_peek(s);
    *valid = c == 't' || c == 'f'; /* anything else starting so is not JSON: the skip says */
    if (*valid) *out = c == 't';
    return rl__scan_skip(s);
}

bool rl__read_bool(rl__json_scan *s, bool *out) {
    char c = rl__scan_peek(s);
    if (c != 't' && c != 'f') return rl__scan_fail(s, RL__JSON_SYNTAX, s->cur);
    *out = c == 't';
    return rl__scan_skip(s); /* checks the rest of the literal */
}

bool rl__read_u64(rl__json_scan *s, uint64_t *out) {
    const char *at = s->cur;
    rl__json_number n;
    if (!rl__scan_number(s, &n)) return false;
    if (!n.integral || (n.negative && n.magnitude != 0)) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
    *out = n.magnitude;
    return true;
}
