/* lease_fingerprint.c — see lease_fingerprint.h. */
#include "core/lease_fingerprint.h"

/* FNV-1a over the key's bytes, mixed. */
uint64_t rl__lease_fingerprint_key(const char *key) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
        h ^= *p;
        h *= UINT64_C(0x100000001b3);
    }
    return rl__lease_fingerprint_mix(h);
}

uint64_t rl__lease_fingerprint(const rl_requirement *requirements, size_t count) {
    /* A sum of well-mixed hashes does not depend on the order; a request
     * names each key once, so no two terms cancel by being equal. */
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += rl__lease_fingerprint_term(rl__lease_fingerprint_key(requirements[i].key),
                                          rl__lease_fingerprint_amount(&requirements[i]));
    return rl__lease_fingerprint_end(sum, count);
}

void rl__lease_fingerprint_text(uint64_t fingerprint, char out[RL_LEASE_FINGERPRINT_TEXT_SIZE]) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < RL_LEASE_FINGERPRINT_TEXT_SIZE - 1; i++) {
        out[i] = digits[fingerprint & 63u];
        fingerprint >>= 6;
    }
    out[RL_LEASE_FINGERPRINT_TEXT_SIZE - 1] = '\0';
}
