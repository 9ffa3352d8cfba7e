/* clock.c — the system clock and a manual clock for tests. */
#include "ratelimiter/clock.h"

#include <time.h>

static uint64_t timespec_ms(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t system_monotonic_ms(const rl_clock *clock) {
    (void)clock;
    return timespec_ms(CLOCK_MONOTONIC);
}

static uint64_t system_unix_ms(const rl_clock *clock) {
    (void)clock;
    return timespec_ms(CLOCK_REALTIME);
}

static const rl_clock system_clock = {system_monotonic_ms, system_unix_ms};

const rl_clock *rl_clock_system(void) { return &system_clock; }

/* A manual clock is read by backends' own threads (a redis backend's
 * upkeep, a memory backend's sweep) while the test advances it: each field
 * is read and moved atomically (GCC/Clang builtins, so that the public
 * struct keeps plain uint64_t fields). */
static uint64_t manual_monotonic_ms(const rl_clock *clock) {
    return __atomic_load_n(&((const rl_manual_clock *)clock)->monotonic_now_ms, __ATOMIC_ACQUIRE);
}

static uint64_t manual_unix_ms(const rl_clock *clock) {
    return __atomic_load_n(&((const rl_manual_clock *)clock)->unix_now_ms, __ATOMIC_ACQUIRE);
}

void rl_manual_clock_init(rl_manual_clock *clock, uint64_t monotonic_ms, uint64_t unix_ms) {
    clock->base.monotonic_ms = manual_monotonic_ms;
    clock->base.unix_ms = manual_unix_ms;
    clock->monotonic_now_ms = monotonic_ms;
    clock->unix_now_ms = unix_ms;
}

void rl_manual_clock_advance(rl_manual_clock *clock, uint64_t delta_ms) {
    __atomic_fetch_add(&clock->unix_now_ms, delta_ms, __ATOMIC_RELEASE);
    __atomic_fetch_add(&clock->monotonic_now_ms, delta_ms, __ATOMIC_RELEASE);
}
