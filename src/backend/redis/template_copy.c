/* template_copy.c — see template_copy.h. The matching is the core's
 * (core/template_set.h); the JSONs sit in a definition cache keyed by
 * pattern, the calendars in a budget_periods keyed by pattern (apart from
 * the limits' own: a key may be written like a pattern). */
#include "backend/redis/template_copy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/definition_cache.h"
#include "core/template_set.h"

struct rl__template_copy {
    pthread_rwlock_t lock; /* over set */
    rl__template_set *set;
    _Atomic size_t count;
    rl_definition_cache *jsons;   /* pattern -> JSON; thread-safe on its own */
    rl_budget_periods *calendars; /* pattern -> a budget template's calendar; thread-safe on its own */
};

rl__template_copy *rl__template_copy_create(void) {
    rl__template_copy *copy = calloc(1, sizeof *copy);
    if (copy == NULL) return NULL;
    pthread_rwlock_init(&copy->lock, NULL);
    copy->set = rl__template_set_create();
    copy->jsons = rl_definition_cache_create();
    copy->calendars = rl__budget_periods_create();
    if (copy->set == NULL || copy->jsons == NULL || copy->calendars == NULL) {
        rl__template_copy_destroy(copy);
        return NULL;
    }
    return copy;
}

void rl__template_copy_destroy(rl__template_copy *copy) {
    if (copy == NULL) return;
    rl__template_set_free(copy->set);
    if (copy->jsons != NULL) rl_definition_cache_destroy(copy->jsons);
    if (copy->calendars != NULL) rl__budget_periods_destroy(copy->calendars);
    pthread_rwlock_destroy(&copy->lock);
    free(copy);
}

bool rl__template_copy_put(rl__template_copy *copy, const rl_limit_def *def, const char *json, size_t json_len) {
    char err[256];
    pthread_rwlock_wrlock(&copy->lock);
    rl_status status = rl__template_set_put(copy->set, def, NULL, err, sizeof err);
    atomic_store(&copy->count, rl__template_set_count(copy->set));
    pthread_rwlock_unlock(&copy->lock);
    if (status != RL_OK) return false;
    bool kept = rl_definition_cache_put(copy->jsons, def->key, json, json_len);
    /* a calendar learned, or a pattern that is no budget (any more) forgotten */
    return rl__budget_periods_learn(copy->calendars, def) && kept;
}

void rl__template_copy_remove(rl__template_copy *copy, const char *pattern) {
    pthread_rwlock_wrlock(&copy->lock);
    (void)rl__template_set_delete(copy->set, pattern);
    atomic_store(&copy->count, rl__template_set_count(copy->set));
    pthread_rwlock_unlock(&copy->lock);
    rl_definition_cache_remove(copy->jsons, pattern);
    rl__budget_periods_forget(copy->calendars, pattern);
}

size_t rl__template_copy_count(const rl__template_copy *copy) { return atomic_load(&copy->count); }

bool rl__template_copy_match(rl__template_copy *copy, const char *key, char pattern[RL_KEY_MAX_LEN + 1],
                             rl_kind *kind) {
    if (atomic_load(&copy->count) == 0) return false;
    pthread_rwlock_rdlock(&copy->lock);
    const rl__template *found = rl__template_set_match(copy->set, key, strlen(key));
    if (found != NULL) {
        memcpy(pattern, found->pattern.text, strlen(found->pattern.text) + 1);
        if (kind != NULL) *kind = found->def.kind;
    }
    pthread_rwlock_unlock(&copy->lock);
    return found != NULL;
}

bool rl__template_copy_bounds(rl__template_copy *copy, const char *pattern, uint64_t unix_ms, rl_budget_bounds *out) {
    return rl__budget_periods_bounds(copy->calendars, pattern, unix_ms, out);
}

char **rl__template_copy_jsons(rl__template_copy *copy, size_t *count) {
    return rl_definition_cache_all(copy->jsons, count);
}

char (*rl__template_copy_budget_patterns(rl__template_copy *copy, size_t *count))[RL_KEY_MAX_LEN + 1] {
    *count = 0;
    pthread_rwlock_rdlock(&copy->lock);
    size_t n = rl__template_set_count(copy->set), found = 0;
    char(*patterns)[RL_KEY_MAX_LEN + 1] = n > 0 ? malloc(n * sizeof *patterns) : NULL;
    for (size_t i = 0; patterns != NULL && i < n; i++) {
        const rl__template *t = rl__template_set_at(copy->set, i);
        if (t->def.kind == RL_KIND_BUDGET) memcpy(patterns[found++], t->pattern.text, sizeof *patterns);
    }
    pthread_rwlock_unlock(&copy->lock);
    if (found == 0) {
        free(patterns);
        return NULL;
    }
    *count = found;
    return patterns;
}
