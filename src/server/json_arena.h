/* server/json_arena.h — a per-thread bump arena for the cJSON trees that the
 * wire decoders build for each request.
 *
 * A 256-lease batch parses into some 10,000 cJSON nodes and strings: with
 * malloc, freeing and re-allocating them cost half the CPU of the batch
 * endpoint (measured with perf; glibc's tcache holds only 7 chunks a size).
 * Inside rl_json_arena_begin/end every cJSON allocation of the calling
 * thread is a pointer bump into the arena, cJSON_Delete frees nothing, and
 * end() rewinds the arena. When the arena is full, allocations fall back to
 * malloc, so a body of any size still parses.
 *
 * rl_json_arena_install sets cJSON's hooks for the whole process (once,
 * before any thread parses JSON); outside begin/end the hooks are plain
 * malloc and free, so every other cJSON user is unaffected.
 */
#ifndef RL_SERVER_JSON_ARENA_H
#define RL_SERVER_JSON_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rl_json_arena {
    char *base;
    size_t cap;  /* bytes */
    size_t used; /* bytes handed out since begin */
} rl_json_arena;

#define RL_JSON_ARENA_DEFAULT_BYTES (2u * 1024u * 1024u)

/* Installs the cJSON hooks. Idempotent; not thread-safe: call at start-up. */
void rl_json_arena_install(void);

/* Reserves cap bytes for one thread's arena. False if out of memory. */
bool rl_json_arena_init(rl_json_arena *arena, size_t cap);
void rl_json_arena_free(rl_json_arena *arena);

/* Makes arena the calling thread's arena until end. Every tree parsed in
 * between must be deleted before end (its memory is reused after). */
void rl_json_arena_begin(rl_json_arena *arena);
void rl_json_arena_end(rl_json_arena *arena);

#endif
