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

/* Accumulates count characters as base-32 digits. An invalid character's
 * -1 (every bit set) fills the value's bits from its place up: rl_ulid_decode
 * finds it there, without a test per character. */
static inline uint64_t digits(const unsigned char *text, int count) {
    uint64_t value = 0;
#pragma GCC unroll 13
    for (int i = 0; i < count; i++) value = (value << 5) | (uint64_t)(int64_t)crockford_value[text[i]];
    return value;
}

bool rl_ulid_decode(const char *text, size_t len, uint64_t *hi, uint64_t *lo) {
    if (text == NULL || len != RL_ULID_LEN) return false;
    /* 26 characters, 130 bits of which the first character's top 2 must be
     * 0 (a 48-bit timestamp, 80 random bits), read as 13 characters (63
     * bits: the first at most 7), one split 1 + 4, and 12 (60 bits), so that
     * every step stays in 64-bit arithmetic. An invalid character sets bit
     * 63 of the first part, bits 60-63 of the last, or the sign of the one
     * between; a first character above 7 is refused on its own. */
    const unsigned char *bytes = (const unsigned char *)text;
    uint64_t head = digits(bytes, 13);
    int64_t middle = crockford_value[bytes[13]];
    uint64_t tail = digits(bytes + 14, 12);
    if ((head >> 63) != 0 || middle < 0 || (tail >> 60) != 0 || crockford_value[bytes[0]] > 7) return false;
    if (hi != NULL) *hi = (head << 1) | ((uint64_t)middle >> 4);
    if (lo != NULL) *lo = ((uint64_t)(middle & 15) << 60) | tail;
    return true;
}

bool rl_ulid_is_valid(const char *text, size_t len) { return rl_ulid_decode(text, len, NULL, NULL); }
