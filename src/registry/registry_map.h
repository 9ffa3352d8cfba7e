/* registry/registry_map.h — private: the registry's entries by key, an
 * open-addressing hash table (linear probing, deletion by moving back the
 * entries after the hole, so no tombstones).
 *
 * Lookups, puts and removals cost O(1) whatever the number of limits; the
 * key order the files and listings need is made when asked
 * (rl__reg_map_sorted). Puts never allocate: the caller reserves room first,
 * so that a group of changes, once checked, is applied without a failure
 * half-way (and undone the same way).
 *
 * Not thread-safe: the registry's mutex serialises every call. The map owns
 * its entries (freed by rl__reg_map_free).
 */
#ifndef RL_REGISTRY_MAP_H
#define RL_REGISTRY_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "registry/registry_entry.h"

typedef struct rl__reg_map {
    rl__reg_entry **slots; /* capacity of them, NULL where free */
    size_t capacity;       /* 0 or a power of two */
    size_t count;
} rl__reg_map;

/* An empty map (no allocation until room is reserved). */
void rl__reg_map_init(rl__reg_map *map);

/* Frees every entry and the table; the map is empty again. */
void rl__reg_map_free(rl__reg_map *map);

/* Makes room for count entries in all, so that puts up to that many never
 * fail. False without memory (the map is unchanged). */
bool rl__reg_map_reserve(rl__reg_map *map, size_t count);

/* The entry of key, or NULL. */
rl__reg_entry *rl__reg_map_find(const rl__reg_map *map, const char *key);

/* Puts entry in place of the one with its key: returns the one it replaced
 * (the caller's to free), or NULL if the key is new. Room must have been
 * reserved for a new key. */
rl__reg_entry *rl__reg_map_put(rl__reg_map *map, rl__reg_entry *entry);

/* Takes key's entry out and returns it (the caller's to free), or NULL. */
rl__reg_entry *rl__reg_map_remove(rl__reg_map *map, const char *key);

/* Every entry, sorted by key, in a malloc'd array of map->count pointers
 * (the entries stay the map's). NULL when empty or without memory:
 * *no_memory says which. */
rl__reg_entry **rl__reg_map_sorted(const rl__reg_map *map, bool *no_memory);

#endif
