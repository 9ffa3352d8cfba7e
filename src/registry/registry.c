/* registry.c — the limit registry: a key-sorted array of definitions behind
 * one mutex, persisted through registry_file.c on every put.
 *
 * A sorted array of pointers keeps lookups O(log n) and list() a copy in
 * order; a put is O(n) anyway because it rewrites the whole file.
 */
#include "core/error_text.h"
#include "core/limit_def.h"
#include "ratelimiter/registry.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_file.h"

struct rl_registry {
    pthread_mutex_t mutex;
    char *path;
    size_t max_limits;
    rl_limit_def **defs; /* sorted by key, each malloc'd */
    size_t count;
};

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* Index of key, or where it would go; *found says which. Caller holds the mutex. */
static size_t find(const rl_registry *registry, const char *key, bool *found) {
    size_t lo = 0, hi = registry->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(registry->defs[mid]->key, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

static void free_defs(rl_limit_def **defs, size_t count) {
    for (size_t i = 0; i < count; i++) free(defs[i]);
    free(defs);
}

rl_status rl_registry_open(const char *path, size_t max_limits, rl_registry **out, char *err,
                           size_t err_size) {
    *out = NULL;
    if (err != NULL && err_size > 0) err[0] = '\0';
    if (path == NULL || path[0] == '\0')
        return fail(RL_INVALID_REQUEST, err, err_size, "registry path is empty");
    if (max_limits == 0) max_limits = RL_REGISTRY_DEFAULT_MAX_LIMITS;

    rl_registry *registry = calloc(1, sizeof *registry);
    if (registry == NULL || (registry->path = strdup(path)) == NULL) {
        free(registry);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    }
    registry->max_limits = max_limits;
    rl_status status = rl__registry_file_load(path, max_limits, &registry->defs, &registry->count,
                                              err, err_size);
    if (status == RL_OK && pthread_mutex_init(&registry->mutex, NULL) != 0)
        status = fail(RL_NO_MEMORY, err, err_size, "%s: cannot create a mutex", path);
    if (status != RL_OK) {
        free_defs(registry->defs, registry->count);
        free(registry->path);
        free(registry);
        return status;
    }
    *out = registry;
    return RL_OK;
}

void rl_registry_close(rl_registry *registry) {
    if (registry == NULL) return;
    pthread_mutex_destroy(&registry->mutex);
    free_defs(registry->defs, registry->count);
    free(registry->path);
    free(registry);
}

size_t rl_registry_count(rl_registry *registry) {
    pthread_mutex_lock(&registry->mutex);
    size_t count = registry->count;
    pthread_mutex_unlock(&registry->mutex);
    return count;
}

bool rl_registry_get(rl_registry *registry, const char *key, rl_limit_def *out) {
    if (key == NULL) return false;
    bool found = false;
    pthread_mutex_lock(&registry->mutex);
    size_t at = find(registry, key, &found);
    if (found) *out = *registry->defs[at];
    pthread_mutex_unlock(&registry->mutex);
    return found;
}

/* A copy of def field by field (core/limit_def.h). */
static rl_limit_def *copy_of(const rl_limit_def *def) {
    rl_limit_def *copy = malloc(sizeof *copy);
    if (copy != NULL) rl__limit_def_copy(copy, def);
    return copy;
}

typedef struct indexed_def {
    rl_limit_def *def;
    size_t index; /* its place among the puts: for one key the last wins */
} indexed_def;

static int by_key_then_index(const void *a, const void *b) {
    const indexed_def *x = a, *y = b;
    int c = strcmp(x->def->key, y->def->key);
    return c != 0 ? c : (x->index < y->index ? -1 : x->index > y->index);
}

rl_status rl_registry_put(rl_registry *registry, const rl_limit_def *def, char *err,
                          size_t err_size) {
    return rl_registry_put_many(registry, def, 1, err, err_size);
}

rl_status rl_registry_put_many(rl_registry *registry, const rl_limit_def *defs, size_t count, char *err,
                               size_t err_size) {
    if (err != NULL && err_size > 0) err[0] = '\0';
    for (size_t i = 0; i < count; i++)
        if (!rl_limit_def_validate(&defs[i], err, err_size)) return RL_INVALID_REQUEST;
    if (count == 0) return RL_OK;

    /* Everything the new state needs is allocated before the file is
     * written, so that once the file holds it, memory can follow without
     * failing. */
    indexed_def *sorted = calloc(count, sizeof *sorted);
    rl_limit_def **group = malloc(count * sizeof *group);
    bool copied = sorted != NULL && group != NULL;
    for (size_t i = 0; copied && i < count; i++) {
        sorted[i] = (indexed_def){copy_of(&defs[i]), i};
        copied = sorted[i].def != NULL;
    }
    if (!copied) {
        for (size_t i = 0; sorted != NULL && i < count; i++) free(sorted[i].def);
        free(sorted);
        free(group);
        return fail(RL_NO_MEMORY, err, err_size, "out of memory");
    }
    qsort(sorted, count, sizeof *sorted, by_key_then_index);
    size_t kept = 0; /* the last put of each key, in key order */
    for (size_t i = 0; i < count; i++) {
        if (i + 1 < count && strcmp(sorted[i].def->key, sorted[i + 1].def->key) == 0)
            free(sorted[i].def);
        else
            group[kept++] = sorted[i].def;
    }
    free(sorted);
    rl_status status = RL_OK;

    pthread_mutex_lock(&registry->mutex);
    size_t added = 0;
    for (size_t i = 0; i < kept; i++) {
        bool found = false;
        (void)find(registry, group[i]->key, &found);
        if (!found) added++;
    }
    rl_limit_def **next = NULL;
    size_t next_count = registry->count + added;
    if (added > 0 && next_count > registry->max_limits) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "the registry is full: it holds %zu limits (max_limits)",
                      registry->max_limits);
        goto unlock;
    }
    next = malloc(next_count * sizeof *next);
    if (next == NULL) {
        status = fail(RL_NO_MEMORY, err, err_size, "out of memory");
        goto unlock;
    }
    /* Both sorted by key: merge, the group's definition taking an old key's place. */
    size_t old = 0, new = 0, at = 0;
    while (old < registry->count || new < kept) {
        int c = old == registry->count ? 1 : new == kept ? -1 : strcmp(registry->defs[old]->key, group[new]->key);
        if (c < 0) {
            next[at++] = registry->defs[old++];
        } else {
            if (c == 0) old++;
            next[at++] = group[new++];
        }
    }
    bool replaced = false;
    status = rl__registry_file_save(registry->path, next, next_count, &replaced, err, err_size);
    if (replaced) {
        /* The file holds the new state (even if its durability is in doubt,
         * status then says so): memory must agree with it. The old
         * definitions of replaced keys are the ones no longer in next. */
        for (size_t i = 0, j = 0; i < registry->count; i++) {
            while (j + 1 < next_count && strcmp(next[j]->key, registry->defs[i]->key) < 0) j++;
            if (next[j] != registry->defs[i]) free(registry->defs[i]);
        }
        free(registry->defs);
        registry->defs = next;
        registry->count = next_count;
        next = NULL;
        kept = 0; /* the group belongs to the registry now */
    }
unlock:
    pthread_mutex_unlock(&registry->mutex);
    free(next);
    for (size_t i = 0; i < kept; i++) free(group[i]);
    free(group);
    return status;
}

rl_status rl_registry_delete(rl_registry *registry, const char *key, char *err, size_t err_size) {
    if (err != NULL && err_size > 0) err[0] = '\0';
    if (key == NULL) return RL_UNKNOWN_LIMIT_KEY;
    pthread_mutex_lock(&registry->mutex);
    bool found = false;
    size_t at = find(registry, key, &found);
    rl_status status = RL_UNKNOWN_LIMIT_KEY;
    rl_limit_def **next = NULL;
    size_t next_count = registry->count - (found ? 1 : 0);
    if (found && next_count > 0 && (next = malloc(next_count * sizeof *next)) == NULL)
        status = fail(RL_NO_MEMORY, err, err_size, "out of memory");
    else if (found)
        status = RL_OK;
    if (status == RL_OK) {
        /* The rest, in order: the file first, then memory follows it. */
        for (size_t i = 0, j = 0; i < registry->count; i++)
            if (i != at) next[j++] = registry->defs[i];
        bool replaced = false;
        status = rl__registry_file_save(registry->path, next, next_count, &replaced, err, err_size);
        if (replaced) {
            free(registry->defs[at]);
            free(registry->defs);
            registry->defs = next;
            registry->count = next_count;
            next = NULL;
        }
    }
    pthread_mutex_unlock(&registry->mutex);
    free(next);
    return status;
}

rl_status rl_registry_list(rl_registry *registry, rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&registry->mutex);
    rl_status status = RL_OK;
    if (registry->count > 0) {
        rl_limit_def *copy = malloc(registry->count * sizeof *copy);
        if (copy == NULL) {
            status = RL_NO_MEMORY;
        } else {
            for (size_t i = 0; i < registry->count; i++) copy[i] = *registry->defs[i];
            *out = copy;
            *count = registry->count;
        }
    }
    pthread_mutex_unlock(&registry->mutex);
    return status;
}
