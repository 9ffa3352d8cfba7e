/* lease_fingerprint.c — see lease_fingerprint.h. */
#include "core/lease_fingerprint.h"

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* FNV-1a over the key's bytes, then the amount mixed in. */
static uint64_t requirement_hash(const rl_requirement *requirement) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *p = (const unsigned char *)requirement->key; *p != '\0'; p++) {
        h ^= *p;
        h *= UINT64_C(0x100000001b3);
    }
    return mix(mix(h) ^ requirement->amount);
}

uint64_t rl__lease_fingerprint(const rl_requirement *requirements, size_t count) {
    /* A sum of well-mixed hashes does not depend on the order; a request
     * names each key once, so no two terms cancel by being equal. */
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++) sum += requirement_hash(&requirements[i]);
    return mix(sum ^ (uint64_t)count);
}

void rl__lease_fingerprint_text(uint64_t fingerprint, char out[RL_LEASE_FINGERPRINT_TEXT_SIZE]) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < RL_LEASE_FINGERPRINT_TEXT_SIZE - 1; i++) {
        out[i] = digits[fingerprint & 63u];
        fingerprint >>= 6;
    }
    out[RL_LEASE_FINGERPRINT_TEXT_SIZE - 1] = '\0';
}
