/* registry.c — the limit registry: its definitions and templates in two hash
 * maps of compact entries behind one mutex, each change applied in memory
 * and made durable in the log before the call returns (registry_store.h).
 *
 * A group of changes is checked and its entries made before the lock; under
 * it, the changes are applied in order (each seeing the ones before), then
 * written as one group. If the write fails they are undone in reverse
 * order: memory and files agree again, as if nothing had happened. Room in
 * the maps is reserved first, so that neither applying nor undoing can
 * fail half-way.
 */
#include "core/error_text.h"
#include "core/limit_def.h"
#include "ratelimiter/registry.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/registry_entry.h"
#include "registry/registry_internal.h"
#include "registry/registry_map.h"
#include "registry/registry_store.h"

struct rl_registry {
    pthread_mutex_t mutex;
    size_t max_limits;
    rl__reg_map limits;    /* key -> definition */
    rl__reg_map templates; /* pattern -> definition */
    rl__reg_store *store;
};

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

rl_status rl_registry_open(const char *path, size_t max_limits, rl_registry **out, char *err, size_t err_size) {
    *out = NULL;
    if (err != NULL && err_size > 0) err[0] = '\0';
    if (path == NULL || path[0] == '\0') return fail(RL_INVALID_REQUEST, err, err_size, "registry path is empty");
    if (max_limits == 0) max_limits = RL_REGISTRY_DEFAULT_MAX_LIMITS;
    rl_registry *registry = calloc(1, sizeof *registry);
    if (registry == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    registry->max_limits = max_limits;
    rl__reg_map_init(&registry->limits);
    rl__reg_map_init(&registry->templates);
    rl_status status = rl__reg_store_open(path, max_limits, RL_REGISTRY_MAX_TEMPLATES, &registry->limits,
                                          &registry->templates, &registry->store, err, err_size);
    if (status == RL_OK && pthread_mutex_init(&registry->mutex, NULL) != 0) {
        rl__reg_store_close(registry->store, &registry->limits, &registry->templates);
        rl__reg_map_free(&registry->limits);
        rl__reg_map_free(&registry->templates);
        status = fail(RL_NO_MEMORY, err, err_size, "%s: cannot create a mutex", path);
    }
    if (status != RL_OK) {
        free(registry);
        return status;
    }
    *out = registry;
    return RL_OK;
}

void rl_registry_close(rl_registry *registry) {
    if (registry == NULL) return;
    rl__reg_store_close(registry->store, &registry->limits, &registry->templates);
    rl__reg_map_free(&registry->limits);
    rl__reg_map_free(&registry->templates);
    pthread_mutex_destroy(&registry->mutex);
    free(registry);
}

/* ---- reading ---------------------------------------------------------------- */

static size_t count_of(rl_registry *registry, const rl__reg_map *map) {
    pthread_mutex_lock(&registry->mutex);
    size_t count = map->count;
    pthread_mutex_unlock(&registry->mutex);
    return count;
}

size_t rl_registry_count(rl_registry *registry) { return count_of(registry, &registry->limits); }

size_t rl_registry_template_count(rl_registry *registry) { return count_of(registry, &registry->templates); }

/* Copies the entry of key in map into *out and its origin (origin may be NULL). */
static bool get_from(rl_registry *registry, const rl__reg_map *map, const char *key, rl_limit_def *out,
                     char *origin) {
    if (key == NULL) return false;
    pthread_mutex_lock(&registry->mutex);
    const rl__reg_entry *entry = rl__reg_map_find(map, key);
    if (entry != NULL) {
        rl__reg_entry_def(entry, out);
        if (origin != NULL) memcpy(origin, rl__reg_entry_origin(entry), entry->origin_len + 1u);
    }
    pthread_mutex_unlock(&registry->mutex);
    return entry != NULL;
}

bool rl_registry_get(rl_registry *registry, const char *key, rl_limit_def *out) {
    return get_from(registry, &registry->limits, key, out, NULL);
}

bool rl_registry_get_origin(rl_registry *registry, const char *key, rl_limit_def *out,
                            char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]) {
    return get_from(registry, &registry->limits, key, out, origin);
}

bool rl_registry_get_template(rl_registry *registry, const char *pattern, rl_limit_def *out,
                              char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]) {
    return get_from(registry, &registry->templates, pattern, out, origin);
}

static rl_status list_of(rl_registry *registry, const rl__reg_map *map, rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&registry->mutex);
    bool no_memory = false;
    rl__reg_entry **sorted = rl__reg_map_sorted(map, &no_memory);
    rl_limit_def *copy = sorted != NULL ? malloc(map->count * sizeof *copy) : NULL;
    if (copy != NULL) {
        for (size_t i = 0; i < map->count; i++) rl__reg_entry_def(sorted[i], &copy[i]);
        *out = copy;
        *count = map->count;
    }
    pthread_mutex_unlock(&registry->mutex);
    free(sorted);
    return no_memory || (sorted != NULL && copy == NULL) ? RL_NO_MEMORY : RL_OK;
}

rl_status rl_registry_list(rl_registry *registry, rl_limit_def **out, size_t *count) {
    return list_of(registry, &registry->limits, out, count);
}

rl_status rl_registry_list_templates(rl_registry *registry, rl_limit_def **out, size_t *count) {
    return list_of(registry, &registry->templates, out, count);
}

/* ---- changing --------------------------------------------------------------- */

/* One change of a group on its way. */
typedef struct planned {
    rl_registry_op op;
    const rl_limit_def *def; /* a delete reads def->key only */
    const char *origin;
    rl__reg_entry *entry; /* a put: made before the lock; the registry's once applied */
    rl__reg_entry *old;   /* what applying it replaced or removed */
    bool applied;
    rl_status status;
    char *err; /* err_size bytes, or NULL */
    size_t err_size;
} planned;

static bool is_put(rl_registry_op op) { return op == RL_REGISTRY_PUT || op == RL_REGISTRY_PUT_TEMPLATE; }
static bool is_template(rl_registry_op op) {
    return op == RL_REGISTRY_PUT_TEMPLATE || op == RL_REGISTRY_DELETE_TEMPLATE;
}

/* Checks a change and makes its entry; status RL_OK if it may apply. */
static void prepare(planned *p) {
    p->status = RL_OK;
    if (p->op == RL_REGISTRY_DELETE || p->op == RL_REGISTRY_DELETE_TEMPLATE) return;
    if (!is_put(p->op)) {
        p->status = fail(RL_INVALID_REQUEST, p->err, p->err_size, "unknown registry operation %d", (int)p->op);
    } else if (!rl_limit_def_validate(p->def, p->err, p->err_size)) {
        p->status = RL_INVALID_REQUEST;
    } else if (!rl__registry_origin_is_valid(p->origin)) {
        p->status = fail(RL_INVALID_REQUEST, p->err, p->err_size,
                         "origin must be at most %d printable ASCII characters", RL_REGISTRY_ORIGIN_MAX_LEN);
    } else if ((p->entry = rl__reg_entry_new(p->def, p->origin)) == NULL) {
        p->status = fail(RL_NO_MEMORY, p->err, p->err_size, "out of memory");
    }
}

/* Applies p to its map (the mutex held, room reserved): RL_OK, or why not. */
static rl_status apply_one(rl_registry *registry, planned *p) {
    rl__reg_map *map = is_template(p->op) ? &registry->templates : &registry->limits;
    const char *key = p->def->key;
    if (is_put(p->op)) {
        size_t most = is_template(p->op) ? RL_REGISTRY_MAX_TEMPLATES : registry->max_limits;
        if (map->count >= most && rl__reg_map_find(map, key) == NULL)
            return is_template(p->op)
                       ? fail(RL_INVALID_REQUEST, p->err, p->err_size,
                              "the registry is full: it holds %zu templates (the most it keeps)", most)
                       : fail(RL_INVALID_REQUEST, p->err, p->err_size,
                              "the registry is full: it holds %zu limits (max_limits)", most);
        p->old = rl__reg_map_put(map, p->entry);
    } else {
        /* A key that is not a C string within its array cannot be held. */
        bool terminated = memchr(key, '\0', sizeof p->def->key) != NULL;
        if (!terminated || (p->old = rl__reg_map_remove(map, key)) == NULL)
            return fail(RL_UNKNOWN_LIMIT_KEY, p->err, p->err_size, is_template(p->op) ? "no template has the pattern \"%.*s\"" : "no limit has the key \"%.*s\"",
                        RL_KEY_MAX_LEN, key);
    }
    p->applied = true;
    return RL_OK;
}

/* Undoes an applied change (the mutex held). */
static void undo_one(rl_registry *registry, planned *p) {
    rl__reg_map *map = is_template(p->op) ? &registry->templates : &registry->limits;
    if (is_put(p->op)) (void)rl__reg_map_remove(map, p->def->key); /* p->entry, freed by the caller */
    if (p->old != NULL) (void)rl__reg_map_put(map, p->old);
    p->old = NULL;
    p->applied = false;
}

/* Writes the applied changes of plan as one group (the mutex held). On
 * failure they are undone, unless they reached the file (*kept). */
static rl_status write_group(rl_registry *registry, planned *plan, size_t count, bool *kept, char *err,
                             size_t err_size) {
    *kept = false;
    rl_status status = rl__reg_store_ready(registry->store, err, err_size);
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        if (!plan[i].applied) continue;
        status = rl__reg_store_add(registry->store, plan[i].op, plan[i].def, plan[i].origin);
        if (status != RL_OK) rl__error_text(err, err_size, "out of memory");
    }
    bool written = false;
    if (status == RL_OK) status = rl__reg_store_commit(registry->store, &written, err, err_size);
    if (status == RL_OK || written) {
        *kept = true;
        return status;
    }
    rl__reg_store_discard(registry->store);
    for (size_t i = count; i-- > 0;)
        if (plan[i].applied) undo_one(registry, &plan[i]);
    return status;
}

/* The one road of every change: plan[0..count) prepared (statuses set),
 * applied in order and written once. all_or_nothing: the first change that
 * cannot apply stops the whole group, its reason in err. */
static rl_status apply_plan(rl_registry *registry, planned *plan, size_t count, bool all_or_nothing, char *err,
                            size_t err_size) {
    size_t puts = 0, template_puts = 0;
    for (size_t i = 0; i < count; i++) {
        if (plan[i].status != RL_OK || !is_put(plan[i].op)) continue;
        if (is_template(plan[i].op)) template_puts++;
        else puts++;
    }
    pthread_mutex_lock(&registry->mutex);
    rl_status status = RL_OK;
    if (!rl__reg_map_reserve(&registry->limits, registry->limits.count + puts) ||
        !rl__reg_map_reserve(&registry->templates, registry->templates.count + template_puts))
        status = fail(RL_NO_MEMORY, err, err_size, "out of memory");
    size_t applied = 0;
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        if (plan[i].status != RL_OK) continue;
        plan[i].status = apply_one(registry, &plan[i]);
        if (plan[i].status == RL_OK) {
            applied++;
        } else if (all_or_nothing) {
            status = plan[i].status;
            if (err != NULL && plan[i].err != err) rl__error_text(err, err_size, "%s", plan[i].err);
        }
    }
    bool kept = false;
    if (status != RL_OK) {
        for (size_t i = count; i-- > 0;)
            if (plan[i].applied) undo_one(registry, &plan[i]);
    } else if (applied > 0) {
        status = write_group(registry, plan, count, &kept, err, err_size);
    }
    if (kept) {
        for (size_t i = 0; i < count; i++) {
            if (!plan[i].applied) continue;
            free(plan[i].old);
            plan[i].entry = NULL; /* the map's now (or freed as a later change's old) */
            if (status != RL_OK) plan[i].status = fail(status, plan[i].err, plan[i].err_size, "%s", err);
        }
        rl__reg_store_maybe_compact(registry->store, &registry->limits, &registry->templates);
    } else if (status != RL_OK) {
        for (size_t i = 0; i < count; i++) {
            if (plan[i].status != RL_OK || all_or_nothing) continue;
            plan[i].status = status; /* would have applied */
            if (plan[i].err != err) rl__error_text(plan[i].err, plan[i].err_size, "%s", err != NULL ? err : "");
        }
    }
    pthread_mutex_unlock(&registry->mutex);
    for (size_t i = 0; i < count; i++) free(plan[i].entry);
    return status;
}

rl_status rl_registry_apply(rl_registry *registry, rl_registry_change *changes, size_t count, char *err,
                            size_t err_size) {
    if (err != NULL && err_size > 0) err[0] = '\0';
    if (count == 0) return RL_OK;
    planned *plan = calloc(count, sizeof *plan);
    if (plan == NULL) {
        for (size_t i = 0; i < count; i++)
            changes[i].status = fail(RL_NO_MEMORY, changes[i].err, sizeof changes[i].err, "out of memory");
        return fail(RL_NO_MEMORY, err, err_size, "out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        changes[i].err[0] = '\0';
        plan[i] = (planned){.op = changes[i].op, .def = &changes[i].def, .origin = changes[i].origin,
                            .err = changes[i].err, .err_size = sizeof changes[i].err};
        prepare(&plan[i]);
    }
    /* A change that could not get its entry: the group cannot be done. */
    char why[256] = "";
    rl_status status = RL_OK;
    for (size_t i = 0; i < count; i++)
        if (plan[i].status == RL_NO_MEMORY) status = fail(RL_NO_MEMORY, why, sizeof why, "out of memory");
    if (status == RL_OK) {
        status = apply_plan(registry, plan, count, false, why, sizeof why);
    } else {
        for (size_t i = 0; i < count; i++) {
            free(plan[i].entry);
            if (plan[i].status == RL_OK) plan[i].status = fail(RL_NO_MEMORY, plan[i].err, plan[i].err_size, "out of memory");
        }
    }
    for (size_t i = 0; i < count; i++) changes[i].status = plan[i].status;
    free(plan);
    if (status != RL_OK) rl__error_text(err, err_size, "%s", why);
    return status;
}

rl_status rl_registry_put_many(rl_registry *registry, const rl_limit_def *defs, size_t count, char *err,
                               size_t err_size) {
    if (err != NULL && err_size > 0) err[0] = '\0';
    for (size_t i = 0; i < count; i++)
        if (!rl_limit_def_validate(&defs[i], err, err_size)) return RL_INVALID_REQUEST;
    if (count == 0) return RL_OK;
    planned *plan = calloc(count, sizeof *plan);
    if (plan == NULL) return fail(RL_NO_MEMORY, err, err_size, "out of memory");
    rl_status status = RL_OK;
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        plan[i] = (planned){.op = RL_REGISTRY_PUT, .def = &defs[i], .origin = "", .err = err, .err_size = err_size};
        prepare(&plan[i]);
        status = plan[i].status;
    }
    if (status == RL_OK) status = apply_plan(registry, plan, count, true, err, err_size);
    else
        for (size_t i = 0; i < count; i++) free(plan[i].entry);
    free(plan);
    return status;
}

rl_status rl_registry_put(rl_registry *registry, const rl_limit_def *def, char *err, size_t err_size) {
    return rl_registry_put_many(registry, def, 1, err, err_size);
}

/* One change through rl_registry_apply: its status, its err in err. */
static rl_status apply_single(rl_registry *registry, rl_registry_change *change, char *err, size_t err_size) {
    (void)rl_registry_apply(registry, change, 1, NULL, 0);
    if (change->status != RL_OK) rl__error_text(err, err_size, "%s", change->err);
    else if (err != NULL && err_size > 0) err[0] = '\0';
    return change->status;
}

/* A delete of key (op says of what): the key copied into a change. */
static rl_status delete_one(rl_registry *registry, rl_registry_op op, const char *key, char *err, size_t err_size) {
    rl_registry_change *change = calloc(1, sizeof *change);
    if (change == NULL) return fail(RL_NO_MEMORY, err, err_size, "out of memory");
    change->op = op;
    rl_status status;
    if (key == NULL || strlen(key) > RL_KEY_MAX_LEN) {
        status = fail(RL_UNKNOWN_LIMIT_KEY, err, err_size, "no %s has that %s", op == RL_REGISTRY_DELETE ? "limit" : "template",
                      op == RL_REGISTRY_DELETE ? "key" : "pattern");
    } else {
        memcpy(change->def.key, key, strlen(key) + 1);
        status = apply_single(registry, change, err, err_size);
    }
    free(change);
    return status;
}

rl_status rl_registry_delete(rl_registry *registry, const char *key, char *err, size_t err_size) {
    return delete_one(registry, RL_REGISTRY_DELETE, key, err, err_size);
}

rl_status rl_registry_delete_template(rl_registry *registry, const char *pattern, char *err, size_t err_size) {
    return delete_one(registry, RL_REGISTRY_DELETE_TEMPLATE, pattern, err, err_size);
}

rl_status rl_registry_put_template(rl_registry *registry, const rl_limit_def *def, const char *origin, char *err,
                                   size_t err_size) {
    rl_registry_change *change = calloc(1, sizeof *change);
    if (change == NULL) return fail(RL_NO_MEMORY, err, err_size, "out of memory");
    change->op = RL_REGISTRY_PUT_TEMPLATE;
    change->def = *def;
    rl_status status;
    if (origin != NULL && strnlen(origin, sizeof change->origin) == sizeof change->origin) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "origin must be at most %d printable ASCII characters",
                      RL_REGISTRY_ORIGIN_MAX_LEN);
    } else {
        if (origin != NULL) strcpy(change->origin, origin);
        status = apply_single(registry, change, err, err_size);
    }
    free(change);
    return status;
}

/* ---- internal ------------------------------------------------------------------- */

rl_status rl__registry_compact(rl_registry *registry, char *err, size_t err_size) {
    pthread_mutex_lock(&registry->mutex);
    rl_status status = rl__reg_store_compact(registry->store, &registry->limits, &registry->templates, err, err_size);
    pthread_mutex_unlock(&registry->mutex);
    return status;
}

void rl__registry_set_compact_bytes(rl_registry *registry, uint64_t bytes) {
    pthread_mutex_lock(&registry->mutex);
    rl__reg_store_set_compact_bytes(registry->store, bytes);
    pthread_mutex_unlock(&registry->mutex);
}
