/* registry/registry_entry.h — private: one definition as the registry keeps
 * it in memory, in about a tenth of an rl_limit_def.
 *
 * An rl_limit_def holds its strings inline (1.4 KB, mostly an empty
 * description), which 100,000 limits would make 140 MB. An entry keeps the
 * key and the origin as C strings and the rest of the definition as its
 * bytes with every run of zeros counted instead of stored: the canonical
 * copy (core/limit_def.h: nothing after a string's NUL, no stray padding)
 * is mostly zeros. Packing the struct's bytes, not its fields, means a field
 * added to rl_limit_def is kept with no change here.
 *
 * Pure; an entry is immutable once made, so readers under the registry's
 * mutex may copy from it while nothing else changes it.
 */
#ifndef RL_REGISTRY_ENTRY_H
#define RL_REGISTRY_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/registry.h"
#include "ratelimiter/types.h"

typedef struct rl__reg_entry {
    uint64_t hash;       /* of the key (registry_map.h) */
    uint16_t key_len;    /* bytes, without the NUL */
    uint16_t packed_len; /* bytes of the packed definition */
    uint8_t origin_len;
    /* key NUL, origin NUL, then the packed definition (its key zeroed). */
    char text[];
} rl__reg_entry;

/* A new entry (malloc'd, freed with free()) for def and origin (NULL: ""),
 * which the caller has validated (rl_limit_def_validate,
 * rl__registry_origin_is_valid). NULL without memory. */
rl__reg_entry *rl__reg_entry_new(const rl_limit_def *def, const char *origin);

/* The definition back, exactly as rl__limit_def_copy would copy it. */
void rl__reg_entry_def(const rl__reg_entry *entry, rl_limit_def *out);

static inline const char *rl__reg_entry_key(const rl__reg_entry *entry) { return entry->text; }
static inline const char *rl__reg_entry_origin(const rl__reg_entry *entry) {
    return entry->text + entry->key_len + 1;
}

/* The hash of key[0..len) that entries and lookups use. */
uint64_t rl__reg_hash(const char *key, size_t len);

/* An origin: at most RL_REGISTRY_ORIGIN_MAX_LEN bytes of printable ASCII
 * (0x20..0x7e), "" included; origin NUL-terminated within
 * RL_REGISTRY_ORIGIN_MAX_LEN + 1 bytes. */
bool rl__registry_origin_is_valid(const char *origin);

#endif
