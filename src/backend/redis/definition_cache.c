/* definition_cache.c — see definition_cache.h. A sorted array: written on
 * admin changes only, read only when Redis has lost a definition. */
#include "backend/redis/definition_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    char *json;
} entry;

struct rl_definition_cache {
    pthread_mutex_t lock;
    entry *entries;
    size_t count, capacity;
};

rl_definition_cache *rl_definition_cache_create(void) {
    rl_definition_cache *cache = calloc(1, sizeof *cache);
    if (cache != NULL) pthread_mutex_init(&cache->lock, NULL);
    return cache;
}

void rl_definition_cache_destroy(rl_definition_cache *cache) {
    if (cache == NULL) return;
    for (size_t i = 0; i < cache->count; i++) {
        free(cache->entries[i].key);
        free(cache->entries[i].json);
    }
    free(cache->entries);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

/* Index of key, or where it would go. Caller holds the lock. */
static size_t find(const rl_definition_cache *cache, const char *key, bool *found) {
    size_t lo = 0, hi = cache->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int order = strcmp(cache->entries[mid].key, key);
        if (order == 0) {
            *found = true;
            return mid;
        }
        if (order < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = false;
    return lo;
}

bool rl_definition_cache_put(rl_definition_cache *cache, const char *key, const char *json, size_t json_len) {
    char *copy = strndup(json, json_len);
    if (copy == NULL) return false;
    pthread_mutex_lock(&cache->lock);
    bool found;
    size_t at = find(cache, key, &found);
    bool ok = true;
    if (found) {
        free(cache->entries[at].json);
        cache->entries[at].json = copy;
    } else {
        if (cache->count == cache->capacity) {
            size_t capacity = cache->capacity ? cache->capacity * 2 : 64;
            entry *grown = realloc(cache->entries, capacity * sizeof *grown);
            if (grown != NULL) {
                cache->entries = grown;
                cache->capacity = capacity;
            }
        }
        char *key_copy = cache->count < cache->capacity ? strdup(key) : NULL;
        if (key_copy == NULL) {
            free(copy);
            ok = false;
        } else {
            memmove(&cache->entries[at + 1], &cache->entries[at], (cache->count - at) * sizeof *cache->entries);
            cache->entries[at] = (entry){key_copy, copy};
            cache->count++;
        }
    }
    pthread_mutex_unlock(&cache->lock);
    return ok;
}

void rl_definition_cache_remove(rl_definition_cache *cache, const char *key) {
    pthread_mutex_lock(&cache->lock);
    bool found;
    size_t at = find(cache, key, &found);
    if (found) {
        free(cache->entries[at].key);
        free(cache->entries[at].json);
        memmove(&cache->entries[at], &cache->entries[at + 1], (cache->count - at - 1) * sizeof *cache->entries);
        cache->count--;
    }
    pthread_mutex_unlock(&cache->lock);
}

char *rl_definition_cache_get(rl_definition_cache *cache, const char *key) {
    pthread_mutex_lock(&cache->lock);
    bool found;
    size_t at = find(cache, key, &found);
    char *json = found ? strdup(cache->entries[at].json) : NULL;
    pthread_mutex_unlock(&cache->lock);
    return json;
}

bool rl_definition_cache_has(rl_definition_cache *cache, const char *key) {
    pthread_mutex_lock(&cache->lock);
    bool found;
    (void)find(cache, key, &found);
    pthread_mutex_unlock(&cache->lock);
    return found;
}

size_t rl_definition_cache_count(rl_definition_cache *cache) {
    pthread_mutex_lock(&cache->lock);
    size_t count = cache->count;
    pthread_mutex_unlock(&cache->lock);
    return count;
}

char **rl_definition_cache_all(rl_definition_cache *cache, size_t *count) {
    *count = 0;
    pthread_mutex_lock(&cache->lock);
    size_t n = cache->count;
    char **all = n > 0 ? calloc(n, sizeof *all) : NULL;
    bool ok = all != NULL;
    for (size_t i = 0; ok && i < n; i++) ok = (all[i] = strdup(cache->entries[i].json)) != NULL;
    pthread_mutex_unlock(&cache->lock);
    if (!ok) {
        for (size_t i = 0; all != NULL && i < n; i++) free(all[i]);
        free(all);
        return NULL;
    }
    *count = n;
    return all;
}
