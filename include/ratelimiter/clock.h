/* ratelimiter/clock.h — where time comes from.
 *
 * Expiries run on a monotonic clock; reserved_at_unix_ms is wall-clock time.
 * Both are behind one small vtable so that tests inject a manual clock.
 */
#ifndef RATELIMITER_CLOCK_H
#define RATELIMITER_CLOCK_H

#include "ratelimiter/export.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_clock rl_clock;
struct rl_clock {
    /* Milliseconds on a clock that never goes back. Thread-safe. */
    uint64_t (*monotonic_ms)(const rl_clock *clock);
    /* Milliseconds since the Unix epoch. Thread-safe. */
    uint64_t (*unix_ms)(const rl_clock *clock);
};

/* The process clock (CLOCK_MONOTONIC, CLOCK_REALTIME). Static, never freed. */
RL_API const rl_clock *rl_clock_system(void);

/* A clock that moves only when told to: for tests. Reading it from other
 * threads while one advances it is safe (each reading is the time before
 * or after an advance); advance it from one thread at a time. */
typedef struct rl_manual_clock {
    rl_clock base; /* first: pass &manual.base wherever an rl_clock is wanted */
    uint64_t monotonic_now_ms;
    uint64_t unix_now_ms;
} rl_manual_clock;

RL_API void rl_manual_clock_init(rl_manual_clock *clock, uint64_t monotonic_ms, uint64_t unix_ms);
RL_API void rl_manual_clock_advance(rl_manual_clock *clock, uint64_t delta_ms);

#ifdef __cplusplus
}
#endif
#endif
