/* registry_map.c — see registry_map.h. */
#include "registry/registry_map.h"

#include <stdlib.h>
#include <string.h>

/* At most this many entries per 8 slots: probes stay short. */
#define LOAD_EIGHTHS 6

void rl__reg_map_init(rl__reg_map *map) { memset(map, 0, sizeof *map); }

void rl__reg_map_free(rl__reg_map *map) {
    for (size_t i = 0; i < map->capacity; i++) free(map->slots[i]);
    free(map->slots);
    rl__reg_map_init(map);
}

/* The slot of key (hash h): where it is, or the free slot where it would go. */
static size_t slot_of(const rl__reg_map *map, const char *key, size_t len, uint64_t h) {
    size_t mask = map->capacity - 1, at = (size_t)h & mask;
    for (const rl__reg_entry *e; (e = map->slots[at]) != NULL; at = (at + 1) & mask)
        if (e->hash == h && e->key_len == len && memcmp(e->text, key, len) == 0) break;
    return at;
}

bool rl__reg_map_reserve(rl__reg_map *map, size_t count) {
    size_t capacity = map->capacity > 0 ? map->capacity : 16;
    while (count > capacity / 8 * LOAD_EIGHTHS) {
        if (capacity > SIZE_MAX / 2 / sizeof *map->slots) return false;
        capacity *= 2;
    }
    if (capacity == map->capacity) return true;
    rl__reg_entry **slots = calloc(capacity, sizeof *slots);
    if (slots == NULL) return false;
    rl__reg_map bigger = {slots, capacity, map->count};
    for (size_t i = 0; i < map->capacity; i++) {
        rl__reg_entry *e = map->slots[i];
        if (e != NULL) slots[slot_of(&bigger, e->text, e->key_len, e->hash)] = e;
    }
    free(map->slots);
    *map = bigger;
    return true;
}

rl__reg_entry *rl__reg_map_find(const rl__reg_map *map, const char *key) {
    if (map->count == 0) return NULL;
    size_t len = strlen(key);
    return map->slots[slot_of(map, key, len, rl__reg_hash(key, len))];
}

rl__reg_entry *rl__reg_map_put(rl__reg_map *map, rl__reg_entry *entry) {
    size_t at = slot_of(map, entry->text, entry->key_len, entry->hash);
    rl__reg_entry *old = map->slots[at];
    map->slots[at] = entry;
    if (old == NULL) map->count++;
    return old;
}

rl__reg_entry *rl__reg_map_remove(rl__reg_map *map, const char *key) {
    if (map->count == 0) return NULL;
    size_t len = strlen(key), mask = map->capacity - 1;
    size_t hole = slot_of(map, key, len, rl__reg_hash(key, len));
    rl__reg_entry *removed = map->slots[hole];
    if (removed == NULL) return NULL;
    map->slots[hole] = NULL;
    map->count--;
    /* Entries after the hole whose probe started at or before it move back
     * into it, so that every entry stays reachable from its home slot. */
    for (size_t at = (hole + 1) & mask; map->slots[at] != NULL; at = (at + 1) & mask) {
        size_t home = (size_t)map->slots[at]->hash & mask;
        bool reaches_hole = hole <= at ? (home <= hole || home > at) : (home <= hole && home > at);
        if (reaches_hole) {
            map->slots[hole] = map->slots[at];
            map->slots[at] = NULL;
            hole = at;
        }
    }
    return removed;
}

static int by_key(const void *a, const void *b) {
    return strcmp((*(rl__reg_entry *const *)a)->text, (*(rl__reg_entry *const *)b)->text);
}

rl__reg_entry **rl__reg_map_sorted(const rl__reg_map *map, bool *no_memory) {
    *no_memory = false;
    if (map->count == 0) return NULL;
    rl__reg_entry **sorted = malloc(map->count * sizeof *sorted);
    if (sorted == NULL) {
        *no_memory = true;
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < map->capacity; i++)
        if (map->slots[i] != NULL) sorted[n++] = map->slots[i];
    qsort(sorted, n, sizeof *sorted, by_key);
    return sorted;
}
