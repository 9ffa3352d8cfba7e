/* memory_templates.c — limits made from templates in the memory backend
 * (backend.h: put_template, delete_template).
 *
 * A key that no definition of its own names and that a template matches is
 * a limit made from the template when first named, like any other limit
 * but for its mark (rl_mem_limit.template_pattern). The sweep forgets it
 * once it is idle, so that a million tenants' keys made once each cost
 * memory only while they hold something; named again, it is made again,
 * empty. A made limit keeps to the template it was made from: a put of
 * that pattern changes it as a put of a limit would, a delete of the
 * pattern deletes it, and a template put later never takes it over.
 *
 * The journal has the templates (TEMPLATE, UNTEMPLATE) and nothing of the
 * making: a lease or a snapshot's counters that name a made limit make it
 * again on replay, from the templates replayed before them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/memory/memory_backend.h"

static bool made_from(const rl_mem_limit *limit, const char *pattern) {
    return limit->template_pattern != NULL && strcmp(limit->template_pattern, pattern) == 0;
}

rl_mem_limit *rl__mem_limit_made(memory_backend *backend, const char *key) {
    if (backend->templates == NULL) return NULL;
    const rl__template *template_ = rl__template_set_match(backend->templates, key, strlen(key));
    if (template_ == NULL) return NULL;
    rl_limit_def def;
    rl__template_instance_def(template_, key, &def);
    /* Out of memory: NULL, as if unknown, nothing made. */
    return rl__mem_limit_table_add_made(&backend->limits, &def, template_->pattern.text);
}

/* Every limit made from pattern, into a malloc'd array (*count of them):
 * the table is walked once, and the limits are changed after the walk. */
static rl_mem_limit **made_limits(memory_backend *backend, const char *pattern, size_t *count, bool *failed) {
    *count = 0;
    *failed = false;
    size_t n = 0;
    RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) n += made_from(limit, pattern);
    if (n == 0) return NULL;
    rl_mem_limit **made = malloc(n * sizeof *made);
    if (made == NULL) {
        *failed = true;
        return NULL;
    }
    RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) if (made_from(limit, pattern)) made[(*count)++] = limit;
    return made;
}

rl_status rl__mem_put_template_locked(memory_backend *backend, const rl_limit_def *def, uint64_t now_ms,
                                      uint64_t now_unix_ms, char *err, size_t err_size) {
    rl__template_pattern pattern;
    if (!rl__template_pattern_parse(def->key, strlen(def->key), &pattern, err, err_size) ||
        !rl_limit_def_validate(def, err, err_size))
        return RL_INVALID_REQUEST;
    if (backend->templates == NULL && (backend->templates = rl__template_set_create()) == NULL) return RL_NO_MEMORY;
    if (rl__template_set_find(backend->templates, def->key) == NULL &&
        rl__template_set_count(backend->templates) >= RL_TEMPLATE_MAX_COUNT) {
        snprintf(err, err_size, "there are %u templates already, the most there may be", RL_TEMPLATE_MAX_COUNT);
        return RL_INVALID_REQUEST;
    }
    size_t count;
    bool failed;
    rl_mem_limit **made = made_limits(backend, def->key, &count, &failed);
    if (failed) return RL_NO_MEMORY;
    /* A change of kind needs every limit made from the pattern idle, as a
     * limit's own does (entries of the old kind would go on by its rules). */
    for (size_t i = 0; i < count; i++) {
        if (made[i]->def.kind == def->kind) continue;
        rl__mem_limit_expire(made[i], now_ms, now_unix_ms);
        if (!rl_mem_limit_is_idle(made[i])) {
            snprintf(err, err_size, "limit %s, made from this template, holds %llu reservations: its kind changes once it holds none",
                     made[i]->def.key, (unsigned long long)rl_mem_limit_active(made[i]));
            free(made);
            return RL_LIMIT_IN_USE;
        }
    }
    if (!rl__mem_journal_template(backend, def, now_unix_ms)) {
        free(made);
        return RL_NO_MEMORY;
    }
    rl_status status = rl__template_set_put(backend->templates, def, NULL, err, err_size);
    for (size_t i = 0; status == RL_OK && i < count; i++) {
        if (made[i]->def.kind != def->kind) { /* idle: made again, of the new kind, when named */
            rl__mem_limit_table_remove(&backend->limits, made[i]);
            continue;
        }
        rl_limit_def follows = *def;
        snprintf(follows.key, sizeof follows.key, "%s", made[i]->def.key);
        rl_limit_status limit_status;
        (void)rl__mem_limit_apply(made[i], &follows, now_ms, now_unix_ms, &limit_status); /* same kind: applies */
    }
    free(made);
    return status;
}

rl_status rl__mem_delete_template_locked(memory_backend *backend, const char *pattern, uint64_t now_unix_ms) {
    if (backend->templates == NULL || rl__template_set_find(backend->templates, pattern) == NULL)
        return RL_UNKNOWN_LIMIT_KEY;
    size_t count;
    bool failed;
    rl_mem_limit **made = made_limits(backend, pattern, &count, &failed);
    if (failed || !rl__mem_journal_untemplate(backend, pattern, now_unix_ms)) {
        free(made);
        return RL_NO_MEMORY;
    }
    (void)rl__template_set_delete(backend->templates, pattern);
    for (size_t i = 0; i < count; i++) rl__mem_limit_table_remove(&backend->limits, made[i]);
    free(made);
    return RL_OK;
}

size_t rl__mem_forget_idle(memory_backend *backend, uint64_t now_ms, uint64_t now_unix_ms) {
    rl_mem_limit_table *table = &backend->limits;
    size_t forgotten = 0;
    for (size_t b = 0; b < table->bucket_count; b++) {
        for (rl_mem_limit *limit = table->buckets[b], *next; limit != NULL; limit = next) {
            next = limit->next_in_bucket; /* the limit may be freed below */
            if (limit->template_pattern == NULL) continue;
            rl__mem_limit_expire(limit, now_ms, now_unix_ms);
            if (!rl_mem_limit_is_idle(limit)) continue;
            limit->forgotten = true;
            rl__mem_limit_table_remove(table, limit);
            forgotten++;
        }
    }
    return forgotten;
}
