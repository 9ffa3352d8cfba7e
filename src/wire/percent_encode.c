/* percent_encode.c — a limit key in a URL (wire.h): the http limiter's
 * audit query and rlctl's paths. The daemon decodes it again
 * (server/api/percent_decode.h), where '+' is a plus: so '+' is escaped
 * here like every other byte that is not plainly safe. */
#include <stdbool.h>

#include "wire/wire.h"

size_t rl__wire_percent_encode(const char *text, char *out, size_t out_size) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0' && n + 4 <= out_size; p++) {
        unsigned char c = *p;
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                     c == '_' || c == '.' || c == '~' || c == ':';
        if (plain) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    if (out_size == 0) return 0;
    if (n >= out_size) n = out_size - 1;
    out[n] = '\0';
    return n;
}
