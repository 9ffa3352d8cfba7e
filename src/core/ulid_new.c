/* ulid_new.c — lease ids for clients: time-ordered, unpredictable, and
 * strictly increasing within a process (ULID "monotonic" mode). */
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/ulid_text.h"
#include "ratelimiter/ulid.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The last id made: its time and its 80 random bits (16 high, 64 low). Within
 * one millisecond the next id is the last plus one, so ids never repeat and
 * sort in the order they were made, even if the wall clock steps back. */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_ms;
static uint64_t last_random_hi16, last_random_lo64;

static uint64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool fresh_random(uint64_t *hi16, uint64_t *lo64) {
    unsigned char bytes[10];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n <= 0) return false;
        got += (size_t)n;
    }
    *hi16 = (uint64_t)bytes[0] << 8 | bytes[1];
    uint64_t lo = 0;
    for (int i = 2; i < 10; i++) lo = lo << 8 | bytes[i];
    *lo64 = lo;
    return true;
}

char *rl_ulid_new(char out[RL_ULID_TEXT_SIZE]) {
    uint64_t now_ms = wall_ms(), time_ms, hi16, lo64;
    pthread_mutex_lock(&last_lock);
    if (now_ms > last_ms) {
        if (!fresh_random(&hi16, &lo64)) {
            pthread_mutex_unlock(&last_lock);
            out[0] = '\0';
            return NULL;
        }
        time_ms = now_ms;
    } else {
        /* Same millisecond (or the clock went back): one more than the last. */
        time_ms = last_ms;
        lo64 = last_random_lo64 + 1;
        hi16 = last_random_hi16 + (lo64 == 0);
        if (hi16 > 0xffffu) { /* 2^80 ids in one ms: move to the next ms */
            time_ms++;
            hi16 = 0;
        }
    }
    last_ms = time_ms;
    last_random_hi16 = hi16;
    last_random_lo64 = lo64;
    pthread_mutex_unlock(&last_lock);

    time_ms &= (UINT64_C(1) << 48) - 1;
    rl__ulid_text(time_ms << 16 | hi16, lo64, out);
    return out;
}

void rl__ulid_text(uint64_t hi, uint64_t lo, char out[RL_ULID_TEXT_SIZE]) {
    uint64_t time_ms = hi >> 16;
    for (int i = 9; i >= 0; i--, time_ms >>= 5) out[i] = crockford[time_ms & 31];
    /* 80 random bits = 16 characters: 4 from (hi16 << 4 | lo >> 60), 12 from lo's 60 low bits */
    uint64_t top20 = (hi & 0xffffu) << 4 | lo >> 60, low60 = lo & ((UINT64_C(1) << 60) - 1);
    for (int i = 13; i >= 10; i--, top20 >>= 5) out[i] = crockford[top20 & 31];
    for (int i = 25; i >= 14; i--, low60 >>= 5) out[i] = crockford[low60 & 31];
    out[26] = '\0';
}
