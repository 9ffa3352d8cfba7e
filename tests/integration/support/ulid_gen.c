/* ulid_gen.c — see ulid_gen.h. */
#include "ulid_gen.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

char *rl_test_ulid_new(char out[27]) {
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    unsigned char random_bytes[10];
    if (getrandom(random_bytes, sizeof random_bytes, 0) != (ssize_t)sizeof random_bytes) abort();

    /* 128 bits = 48-bit time || 80 random bits, as (hi, lo). */
    uint64_t hi = ms << 16 | (uint64_t)random_bytes[0] << 8 | random_bytes[1];
    uint64_t lo = 0;
    for (int i = 2; i < 10; i++) lo = lo << 8 | random_bytes[i];
    /* 26 characters of 5 bits from the right; the first carries 3 bits. */
    for (int i = 25; i >= 0; i--) {
        out[i] = alphabet[lo & 31u];
        lo = lo >> 5 | (hi & 31u) << 59;
        hi >>= 5;
    }
    out[26] = '\0';
    return out;
}
