/* ulid.c — validation and decoding of ULID lease ids (Crockford base32). */
#include "ratelimiter/ulid.h"

#include "ratelimiter/types.h"

/* Value of each character, or -1. Lower case is accepted; I L O U are not
 * (Crockford decoding would map I/L to 1 and O to 0, but the ULID text form
 * is canonical, so a lease id written with them is more likely a mistake). */
static int crockford_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') c = (unsigned char)(c - 'a' + 'A');
    static const char alphabet[] = "ABCDEFGHJKMNPQRSTVWXYZ";
    for (int i = 0; alphabet[i] != '\0'; i++) {
        if (alphabet[i] == c) return 10 + i;
    }
    return -1;
}

bool rl_ulid_decode(const char *text, size_t len, uint64_t *hi, uint64_t *lo) {
    if (text == NULL || len != RL_ULID_LEN) return false;
    /* 26 chars * 5 bits = 130 bits: the first char carries only 3. */
    uint64_t h = 0, l = 0;
    for (size_t i = 0; i < len; i++) {
        int v = crockford_value((unsigned char)text[i]);
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
