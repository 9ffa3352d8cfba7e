/* core/lease_fingerprint.h — private: what makes a retry the same request.
 *
 * A reserve that reuses a lease id is a retry, and must be the request it
 * retries: the same keys with the same amounts, optional where it was
 * (listed in any order). The
 * backends remember this fingerprint with each decided lease and answer a
 * reuse whose requirements differ with RL_LEASE_ID_CONFLICT instead of the
 * first outcome, which would make the caller believe it holds what it never
 * reserved. Completes are not checked: their actuals differ by design,
 * and a dry run is no part of it (it is never remembered).
 *
 * 64 bits of mixing: two different requests share a fingerprint
 * with a chance of about 2^-64, and then the reuse is answered as a retry,
 * as it was before fingerprints. Pure and thread-safe.
 */
#ifndef RL_CORE_LEASE_FINGERPRINT_H
#define RL_CORE_LEASE_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

/* 11 characters of base64url (64 bits) and a NUL. */
#define RL_LEASE_FINGERPRINT_TEXT_SIZE 12

/* The fingerprint of count requirements (their keys NUL-terminated), the
 * same for any order of them. */
uint64_t rl__lease_fingerprint(const rl_requirement *requirements, size_t count);

/* The same fingerprint in parts, for a backend that keeps each key's part
 * with the key (the memory backend's limits) rather than hash the key's
 * text on every lease: rl__lease_fingerprint(requirements, count) is
 * rl__lease_fingerprint_end(the sum over i of
 * rl__lease_fingerprint_term(rl__lease_fingerprint_key(key_i),
 * rl__lease_fingerprint_amount(&requirements[i])), count). */
uint64_t rl__lease_fingerprint_key(const char *key);

/* A requirement's amount as the fingerprint counts it: an optional one
 * with bit 63 set, which no amount has (at most 2^53), so that it differs
 * from the same requirement without the flag while a lease without
 * optional requirements keeps the fingerprint it had before the flag
 * existed (leases remembered across an upgrade still match). */
#define RL__LEASE_FINGERPRINT_OPTIONAL (UINT64_C(1) << 63)
static inline uint64_t rl__lease_fingerprint_amount(const rl_requirement *requirement) {
    return requirement->optional ? requirement->amount | RL__LEASE_FINGERPRINT_OPTIONAL : requirement->amount;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t rl__lease_fingerprint_mix(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static inline uint64_t rl__lease_fingerprint_term(uint64_t key_part, uint64_t amount) {
    return rl__lease_fingerprint_mix(key_part ^ amount);
}

static inline uint64_t rl__lease_fingerprint_end(uint64_t sum, size_t count) {
    return rl__lease_fingerprint_mix(sum ^ (uint64_t)count);
}

/* fingerprint as text, for stores that keep text (redis). */
void rl__lease_fingerprint_text(uint64_t fingerprint, char out[RL_LEASE_FINGERPRINT_TEXT_SIZE]);

#endif
