/* percent_decode.c — see percent_decode.h. */
#include "server/api/percent_decode.h"

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int rl_percent_decode(const char *in, size_t in_len, char *out, size_t out_size) {
    size_t n = 0;
    for (size_t i = 0; i < in_len; i++) {
        char c = in[i];
        if (c == '%') {
            if (in_len - i < 3) return -1;
            int hi = hex_value(in[i + 1]);
            int lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (n + 1 >= out_size) return -1;
        out[n++] = c;
    }
    if (out_size == 0) return -1;
    out[n] = '\0';
    return (int)n;
}
