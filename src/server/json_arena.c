/* json_arena.c — see json_arena.h. */
#include "server/json_arena.h"

#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#define ARENA_ALIGN 16u /* enough for any cJSON field (max_align_t) */

/* The arena of this thread between begin and end, else NULL. */
static _Thread_local rl_json_arena *active_arena;
/* The last arena this thread used: a pointer inside it must never reach
 * free(), even if deleted after end (which the contract forbids anyway). */
static _Thread_local rl_json_arena *owned_arena;

static bool inside(const rl_json_arena *arena, const void *p) {
    return arena != NULL && (const char *)p >= arena->base && (const char *)p < arena->base + arena->cap;
}

static void *arena_malloc(size_t size) {
    rl_json_arena *arena = active_arena;
    if (arena != NULL) {
        size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
        if (rounded >= size && rounded <= arena->cap - arena->used) {
            void *p = arena->base + arena->used;
            arena->used += rounded;
            return p;
        }
    }
    return malloc(size);
}

static void arena_free(void *p) {
    if (p == NULL || inside(owned_arena, p)) return; /* rewound by end() */
    free(p);
}

void rl_json_arena_install(void) {
    static bool installed = false;
    if (installed) return;
    cJSON_Hooks hooks = {arena_malloc, arena_free};
    cJSON_InitHooks(&hooks);
    installed = true;
}

bool rl_json_arena_init(rl_json_arena *arena, size_t cap) {
    arena->cap = cap;
    arena->used = 0;
    arena->base = aligned_alloc(ARENA_ALIGN, (cap + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1));
    return arena->base != NULL;
}

void rl_json_arena_free(rl_json_arena *arena) {
    if (owned_arena == arena) owned_arena = NULL;
    if (active_arena == arena) active_arena = NULL;
    free(arena->base);
    arena->base = NULL;
    arena->cap = 0;
    arena->used = 0;
}

void rl_json_arena_begin(rl_json_arena *arena) {
    arena->used = 0;
    active_arena = arena;
    owned_arena = arena;
}

void rl_json_arena_end(rl_json_arena *arena) {
    arena->used = 0;
    if (active_arena == arena) active_arena = NULL;
}
