/* support/lease_ids.h — deterministic ULID lease ids for tests.
 *
 * rl_test_lease_id(n, out) writes a valid 26-character ULID whose value is n
 * (timestamp 0), so tests can name leases by number. Header-only.
 */
#ifndef RL_TEST_LEASE_IDS_H
#define RL_TEST_LEASE_IDS_H

#include <stdint.h>

static inline const char *rl_test_lease_id(uint64_t n, char out[27]) {
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    for (int i = 25; i >= 0; i--) {
        out[i] = alphabet[n & 31u];
        n >>= 5;
    }
    out[26] = '\0';
    return out;
}

#endif
