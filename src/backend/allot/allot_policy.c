/* allot_policy.c — see allot_policy.h. */
#include "backend/allot/allot_policy.h"

#include "core/counter.h"
#include "ratelimiter/types.h"

/* a * b / c without overflow, saturating at RL_AMOUNT_MAX (c > 0). */
static uint64_t scale(uint64_t a, uint64_t b, uint64_t c) {
    unsigned __int128 v = (unsigned __int128)a * b / c;
    return v > RL_AMOUNT_MAX ? RL_AMOUNT_MAX : (uint64_t)v;
}

uint64_t rl__allot_rate_per_s(uint64_t rate_per_s, uint64_t units, uint64_t elapsed_ms) {
    if (elapsed_ms == 0) return rate_per_s;
    uint64_t observed = scale(units, 1000, elapsed_ms);
    if (observed == 0 && units > 0) observed = 1; /* a trickle under a unit a second is demand too */
    if (observed >= rate_per_s) return observed; /* demand that grows is followed at once */
    unsigned __int128 sum = (unsigned __int128)rate_per_s * 3 + observed;
    unsigned __int128 mean = sum / 4 + (observed > 0 && sum % 4 != 0); /* any demand keeps it above 0 */
    return mean > RL_AMOUNT_MAX ? RL_AMOUNT_MAX : (uint64_t)mean;
}

uint64_t rl__allot_min_room(uint64_t largest_amount) {
    uint64_t room = rl__counter_add(largest_amount, largest_amount);
    return room < 2 ? 2 : room;
}

uint64_t rl__allot_want(uint64_t used, uint64_t rate_per_s, uint64_t horizon_ms, uint64_t min_room) {
    uint64_t ahead = scale(rate_per_s, horizon_ms, 1000);
    return rl__counter_add(used, ahead > min_room ? ahead : min_room);
}

bool rl__allot_needs_carve(uint64_t capacity, uint64_t used, uint64_t want, uint64_t ends_in_ms,
                           uint64_t duration_ms) {
    uint64_t room = capacity > used ? capacity - used : 0;
    uint64_t wanted_room = want > used ? want - used : 0;
    return room * 2 < wanted_room || ends_in_ms * 2 < duration_ms || capacity / 2 > want;
}

bool rl__allot_goes_sync(uint64_t share, uint64_t min_room) { return share < min_room; }

bool rl__allot_leaves_sync(uint64_t share, uint64_t min_room) { return share / 2 >= min_room; }
