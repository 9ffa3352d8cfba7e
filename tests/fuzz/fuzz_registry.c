/* fuzz_registry.c — limits.json content into rl__registry_parse, the parsing
 * half of the registry's snapshot loader (rl__registry_file_load, what
 * rl_registry_open reads first), with max_limits 64.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a message
 * naming the file and an empty map; an accepted file is at most 64
 * definitions, each valid and kept exactly (the entry gives back the
 * definition it was made from: rl__reg_entry_def of a fresh entry of it is
 * the same bytes), with distinct keys (one entry each), and the file the
 * registry writes of that map (rl__registry_text: sorted, one a line)
 * parses to the same definitions and is written again byte for byte.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/limit_def.h"
#include "fuzz.h"
#include "registry/registry_file.h"
#include "wire/wire.h"

#define NAME "fuzz/limits.json"
#define MAX_LIMITS 64u

static void check_round_trip(const rl__reg_map *map) {
    rl_buf text;
    rl__buf_init(&text);
    FUZZ_CHECK(rl__registry_text(map, &text) == RL_OK);
    rl__reg_map again;
    rl__reg_map_init(&again);
    char err[512];
    FUZZ_CHECK(rl__registry_parse(text.data, text.len, NAME, MAX_LIMITS, &again, err, sizeof err) == RL_OK);
    FUZZ_CHECK(again.count == map->count);
    for (size_t i = 0; i < map->capacity; i++) {
        const rl__reg_entry *entry = map->slots[i];
        if (entry == NULL) continue;
        const rl__reg_entry *other = rl__reg_map_find(&again, rl__reg_entry_key(entry));
        FUZZ_CHECK(other != NULL);
        rl_limit_def a, b;
        rl__reg_entry_def(entry, &a);
        rl__reg_entry_def(other, &b);
        FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
    }
    rl_buf text2;
    rl__buf_init(&text2);
    FUZZ_CHECK(rl__registry_text(&again, &text2) == RL_OK);
    FUZZ_CHECK(text2.len == text.len && memcmp(text2.data, text.data, text.len) == 0);
    rl__buf_free(&text2);
    rl__reg_map_free(&again);
    rl__buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_copy(data, size);
    rl__reg_map map;
    rl__reg_map_init(&map);
    char err[512];
    err[0] = '\0';
    rl_status status = rl__registry_parse(text, size, NAME, MAX_LIMITS, &map, err, sizeof err);
    free(text);
    FUZZ_CHECK_TEXT(err);

    if (status != RL_OK) {
        FUZZ_CHECK(status == RL_INVALID_REQUEST);
        FUZZ_CHECK(strncmp(err, NAME ": ", strlen(NAME ": ")) == 0);
        FUZZ_CHECK(map.count == 0 && map.slots == NULL);
        return 0;
    }
    FUZZ_CHECK(map.count <= MAX_LIMITS);
    size_t seen = 0;
    for (size_t i = 0; i < map.capacity; i++) {
        const rl__reg_entry *entry = map.slots[i];
        if (entry == NULL) continue;
        seen++;
        FUZZ_CHECK(rl__reg_map_find(&map, rl__reg_entry_key(entry)) == entry);
        FUZZ_CHECK(rl__reg_entry_origin(entry)[0] == '\0');
        rl_limit_def def, canonical;
        rl__reg_entry_def(entry, &def);
        char why[RL_WIRE_DETAIL_SIZE];
        FUZZ_CHECK(rl_limit_def_validate(&def, why, sizeof why));
        rl__limit_def_copy(&canonical, &def);
        FUZZ_CHECK(memcmp(&canonical, &def, sizeof def) == 0);
    }
    FUZZ_CHECK(seen == map.count);
    check_round_trip(&map);
    rl__reg_map_free(&map);
    return 0;
}
