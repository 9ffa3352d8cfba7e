/* redis/definition_cache.h — the definitions this daemon has seen, as the
 * JSON that Redis stores, kept so that the backend can define them again in
 * a Redis that lost them (restarted without persistence, flushed): reserves
 * then heal instead of answering unknown_limit_key until an admin notices.
 * A deleted one is forgotten, never to be defined again from here. Sorted
 * by key; thread-safe. */
#ifndef RL_REDIS_DEFINITION_CACHE_H
#define RL_REDIS_DEFINITION_CACHE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rl_definition_cache rl_definition_cache;

rl_definition_cache *rl_definition_cache_create(void);
void rl_definition_cache_destroy(rl_definition_cache *cache);

/* Remembers (or replaces) key's definition JSON. False on allocation failure. */
bool rl_definition_cache_put(rl_definition_cache *cache, const char *key, const char *json, size_t json_len);

/* Forgets key (a limit deleted: never to be defined again from here). */
void rl_definition_cache_remove(rl_definition_cache *cache, const char *key);

/* A malloc'd copy of key's JSON (the caller frees it), or NULL if unknown. */
char *rl_definition_cache_get(rl_definition_cache *cache, const char *key);

/* True if key's definition is kept. */
bool rl_definition_cache_has(rl_definition_cache *cache, const char *key);

/* How many definitions are kept. */
size_t rl_definition_cache_count(rl_definition_cache *cache);

/* Copies of every JSON kept, sorted by key, in one malloc'd array of
 * malloc'd strings (*count of them): the caller frees each, then the array.
 * NULL with *count 0 when empty or out of memory. */
char **rl_definition_cache_all(rl_definition_cache *cache, size_t *count);

#endif
