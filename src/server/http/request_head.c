/* request_head.c — see request_head.h. */
#include "server/http/request_head.h"

#include <string.h>

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* The line at bytes[at..len): its length without the '\n' (a '\r' before
 * it stays), or -1 if it does not end within len. */
static long line_at(const char *bytes, size_t len, size_t at) {
    const char *newline = at < len ? memchr(bytes + at, '\n', len - at) : NULL;
    return newline != NULL ? (long)(newline - (bytes + at)) : -1;
}

static bool is_empty_line(const char *line, long line_len) {
    return line_len == 0 || (line_len == 1 && line[0] == '\r');
}

/* "name:" at the start of line, name in any case. */
static bool names(const char *line, long line_len, const char *name, size_t name_len) {
    if ((size_t)line_len <= name_len || line[name_len] != ':') return false;
    for (size_t i = 0; i < name_len; i++)
        if (lower(line[i]) != name[i]) return false;
    return true;
}

long rl_request_head_field_count(const char *bytes, size_t len, const char *method, size_t method_len,
                                 const char *name, size_t name_len) {
    size_t at = 0;
    long line_len = line_at(bytes, len, at);
    if (line_len >= 0 && is_empty_line(bytes, line_len)) { /* one empty line first, as h2o allows */
        at = (size_t)line_len + 1;
        line_len = line_at(bytes, len, at);
    }
    if (line_len < 0 || (size_t)line_len <= method_len || memcmp(bytes + at, method, method_len) != 0 ||
        bytes[at + method_len] != ' ')
        return -1;
    long count = 0;
    for (;;) {
        at += (size_t)line_len + 1;
        line_len = line_at(bytes, len, at);
        if (line_len < 0) return -1;
        const char *line = bytes + at;
        if (is_empty_line(line, line_len)) return count;
        if (names(line, line_len, name, name_len)) count++; /* a folded line starts with a blank: no name */
    }
}
