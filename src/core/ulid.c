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

/* Accumulates count characters as base-32 digits; any invalid character
 * makes its table value negative, which sets the sign bit of *invalid (and
 * fills value with ones, unused then). Unrolled: four instructions a
 * character instead of nine with the loop's. */
static inline uint64_t digits(const unsigned char *text, int count, int *invalid) {
    uint64_t value = 0;
    int bad = 0;
#pragma GCC unroll 12
    for (int i = 0; i < count; i++) {
        int v = crockford_value[text[i]];
        bad |= v;
        value = (value << 5) | (uint64_t)(int64_t)v;
    }
    *invalid |= bad;
    return value;
}

bool rl_ulid_decode(const char *text, size_t len, uint64_t *hi, uint64_t *lo) {
    if (text == NULL || len != RL_ULID_LEN) return false;
    /* 26 characters, 130 bits of which the first character's top 2 must be
     * 0: a 48-bit timestamp (10 characters) then 80 random bits, read as
     * 20 + 60 so that every step stays in 64-bit arithmetic. */
    const unsigned char *bytes = (const unsigned char *)text;
    int invalid = 0;
    uint64_t timestamp = digits(bytes, 10, &invalid);
    uint64_t random_hi20 = digits(bytes + 10, 4, &invalid);
    uint64_t random_lo60 = digits(bytes + 14, 12, &invalid);
    if (invalid < 0 || crockford_value[bytes[0]] > 7) return false;
    if (hi != NULL) *hi = (timestamp << 16) | (random_hi20 >> 4);
    if (lo != NULL) *lo = ((random_hi20 & 15u) << 60) | random_lo60;
    return true;
}

bool rl_ulid_is_valid(const char *text, size_t len) { return rl_ulid_decode(text, len, NULL, NULL); }
