/* allot/allot_policy.h — private: how much of a limit a daemon asks to hold,
 * and when a key is decided synchronously instead (docs/allotments.md
 * "Sizing and progressive tightening"). The other half of the rule, the
 * most a daemon may take of what is left, is allot.lua's (its share), where
 * the whole fleet's figures are.
 *
 * Amounts saturate at RL_AMOUNT_MAX; nothing here is accounting (it sizes
 * requests for capacity, which Redis grants or not). Pure, thread-safe.
 */
#ifndef RL_ALLOT_ALLOT_POLICY_H
#define RL_ALLOT_ALLOT_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* A key's recent demand in units a second, from units asked over
 * elapsed_ms: a rise is taken at once (an allotment that lags a burst
 * forwards it all to the synchronous path), a fall as an exponential mean
 * that gives the newest observation a quarter. */
uint64_t rl__allot_rate_per_s(uint64_t rate_per_s, uint64_t units, uint64_t elapsed_ms);

/* The least room an allotment must leave to be worth holding: two of the
 * largest leases seen lately (at least 2). */
uint64_t rl__allot_min_room(uint64_t largest_amount);

/* What to hold: what is live now, plus horizon_ms of demand at rate_per_s,
 * and never less than min_room of room. */
uint64_t rl__allot_want(uint64_t used, uint64_t rate_per_s, uint64_t horizon_ms, uint64_t min_room);

/* Whether an allotment of capacity, used live, ending in ends_in_ms, is to
 * be carved again now: half its room for demand gone, half its time gone,
 * or more than twice what is wanted (give the rest back). */
bool rl__allot_needs_carve(uint64_t capacity, uint64_t used, uint64_t want, uint64_t ends_in_ms,
                           uint64_t duration_ms);

/* Near exhaustion: what this daemon could still grow by (allot.lua's share)
 * no longer holds min_room, so the key is decided synchronously, one script
 * call a lease, and what it holds is given back. */
bool rl__allot_goes_sync(uint64_t share, uint64_t min_room);

/* Leaving the synchronous path takes twice as much (hysteresis, so that a
 * key near the edge does not flip every tick). */
bool rl__allot_leaves_sync(uint64_t share, uint64_t min_room);

#endif
