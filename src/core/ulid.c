/* ulid.c — validation and decoding of ULID lease ids (Crockford base32). */
#include "ratelimiter/ulid.h"

#include "ratelimiter/types.h"

/* Value of each byte in Crockford base32, or -1. Lower case is accepted;
 * I L O U are not (Crockford decoding would map I/L to 1 and O to 0, but the
 * ULID text form is canonical, so a lease id written with them is more
 * likely a mistake). A table: this runs on every reserve and complete. */
static const signed char crockford_value[256] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, -1, -1, -1, -1, -1, -1,
    -1, 10, 11, 12, 13, 14, 15, 16, 17, -1, 18, 19, -1, 20, 21, -1,
    22, 23, 24, 25, 26, -1, 27, 28, 29, 30, 31, -1, -1, -1, -1, -1,
    -1, 10, 11, 12, 13, 14, 15, 16, 17, -1, 18, 19, -1, 20, 21, -1,
    22, 23, 24, 25, 26, -1, 27, 28, 29, 30, 31, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

bool rl_ulid_decode(const char *text, size_t len, uint64_t *hi, uint64_t *lo) {
    if (text == NULL || len != RL_ULID_LEN) return false;
    /* 26 chars * 5 bits = 130 bits: the first char carries only 3. */
    uint64_t h = 0, l = 0;
    for (size_t i = 0; i < len; i++) {
        int v = crockford_value[(unsigned char)text[i]];
        if (v < 0) return false;
        if (i == 0 && v > 7) return false;
        /* shift the 128-bit (h,l) left by 5 and add v */
        h = (h << 5) | (l >> 59);
        l = (l << 5) | (uint64_t)v;
    }
    if (hi != NULL) *hi = h;
    if (lo != NULL) *lo = l;
    return true;
}

bool rl_ulid_is_valid(const char *text, size_t len) { return rl_ulid_decode(text, len, NULL, NULL); }
