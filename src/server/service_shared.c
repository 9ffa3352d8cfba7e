/* service_shared.c — the shared mode of the service (see service.h): the
 * backend (redis) is the authority on which limits exist, and the registry
 * file follows it as a cache and a backup.
 *
 * Every function here runs under the admin mutex except the count (health),
 * which only reads the backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limit_def.h"
#include "core/preset_rule.h"
#include "server/service_internal.h"

static int compare_defs(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

static const rl_limit_def *find_def(const rl_limit_def *defs, size_t count, const char *key) {
    if (count == 0) return NULL;
    rl_limit_def probe;
    snprintf(probe.key, sizeof probe.key, "%s", key);
    return bsearch(&probe, defs, count, sizeof *defs, compare_defs);
}

/* Every definition the backend holds, sorted by key (sorted again here: a
 * cheap guarantee for the binary searches). */
static rl_status list_backend(rl_service *service, rl_limit_def **out, size_t *count, char *err,
                              size_t err_size) {
    *out = NULL;
    *count = 0;
    rl_status status = rl_backend_list_definitions(service->backend, out, count);
    if (status != RL_OK) {
        free(*out);
        *out = NULL;
        *count = 0;
        snprintf(err, err_size, "cannot list the limits held by the %s backend: %s",
                 service->backend_name, rl_status_name(status));
        return status == RL_NO_MEMORY ? RL_NO_MEMORY : RL_BACKEND_ERROR;
    }
    if (*count > 1) qsort(*out, *count, sizeof **out, compare_defs);
    return RL_OK;
}

/* Makes the registry hold the backend's definitions (remote, sorted): the
 * changed ones are put in one group (one durable write, however many), and
 * nothing is written when the two agree. Keys only the registry holds stay
 * in it as a backup: a store that lost a key gets it back at the next
 * start, and one the store deleted leaves the file then (shared_open). */
static rl_status refresh_registry(rl_service *service, const rl_limit_def *remote,
                                  size_t remote_count, char *err, size_t err_size) {
    rl_limit_def *changed = remote_count > 0 ? malloc(remote_count * sizeof *changed) : NULL;
    if (remote_count > 0 && changed == NULL) {
        snprintf(err, err_size, "out of memory");
        return RL_NO_MEMORY;
    }
    size_t changed_count = 0, known = 0;
    for (size_t i = 0; i < remote_count; i++) {
        rl_limit_def mine;
        bool held = rl_registry_get(service->registry, remote[i].key, &mine);
        if (held) known++;
        if (!held || !rl__limit_def_equal(&mine, &remote[i])) changed[changed_count++] = remote[i];
    }
    rl_status status = RL_OK;
    size_t total = rl_registry_count(service->registry) + remote_count - known;
    if (total > service->max_limits) {
        snprintf(err, err_size,
                 "the registry is full: the %s backend holds %zu limits, more than the registry's max_limits (%zu)",
                 service->backend_name, total, service->max_limits);
        status = RL_INVALID_REQUEST;
    } else if (changed_count > 0) {
        status = rl_registry_put_many(service->registry, changed, changed_count, err, err_size);
    }
    free(changed);
    return status;
}

/* The registry is a cache here: failing to write it must not fail the call
 * that the backend (the authority) already served. */
static void refresh_registry_best_effort(rl_service *service, const rl_limit_def *remote,
                                         size_t remote_count) {
    char err[512] = "";
    if (refresh_registry(service, remote, remote_count, err, sizeof err) != RL_OK)
        fprintf(stderr, "ratelimiterd: warning: cannot refresh the registry %s from the %s backend: %s\n",
                service->registry_path, service->backend_name, err);
}

static rl_status shared_open(rl_service *service, char *err, size_t err_size) {
    rl_limit_def *remote = NULL, *local = NULL;
    size_t remote_count = 0, local_count = 0;
    rl_status status = list_backend(service, &remote, &remote_count, err, err_size);
    if (status == RL_OK) {
        status = rl_registry_list(service->registry, &local, &local_count);
        if (status != RL_OK)
            snprintf(err, err_size, "cannot list the registry: %s", rl_status_name(status));
    }
    /* The backend wins: a key it holds keeps the backend's definition even
     * when limits.json says otherwise, since the file may be stale (another
     * daemon changed the limit since this one last ran) while the backend
     * holds what every daemon enforces now. Only keys the backend does not
     * hold yet are taken from the file, as restores: the first daemon seeds
     * the store, and a store that lost its data gets the limits back, but a
     * key the store deleted (through another daemon, while this one was
     * away) stays deleted and leaves the file. (Two daemons starting at once
     * may both seed a key; the first one's stays.) */
    size_t applied = 0, deleted = 0;
    for (size_t i = 0; i < local_count && status == RL_OK; i++) {
        if (find_def(remote, remote_count, local[i].key) != NULL) continue;
        status = rl_backend_restore_definition(service->backend, &local[i]);
        if (status == RL_UNKNOWN_LIMIT_KEY) {
            local[deleted++] = local[i]; /* i >= deleted: the deleted ones, packed at the front */
            status = RL_OK;
            continue;
        }
        if (status != RL_OK)
            snprintf(err, err_size, "the %s backend refused limit \"%s\" of the registry: %s",
                     service->backend_name, local[i].key, rl_status_name(status));
        applied++;
    }
    for (size_t i = 0; i < deleted && status == RL_OK; i++) {
        char why[256];
        if (rl_registry_delete(service->registry, local[i].key, why, sizeof why) != RL_OK)
            fprintf(stderr, "ratelimiterd: warning: limit \"%s\" was deleted but stays in the registry %s: %s\n",
                    local[i].key, service->registry_path, why);
    }
    free(local);
    if (status == RL_OK && applied > 0) {
        free(remote);
        status = list_backend(service, &remote, &remote_count, err, err_size);
    }
    if (status == RL_OK) {
        char why[512] = "";
        status = refresh_registry(service, remote, remote_count, why, sizeof why);
        if (status == RL_INVALID_REQUEST) {
            snprintf(err, err_size, "%s", why); /* more limits than max_limits: say so at start */
        } else if (status != RL_OK) {
            fprintf(stderr, "ratelimiterd: warning: cannot refresh the registry %s from the %s backend: %s\n",
                    service->registry_path, service->backend_name, why);
            status = RL_OK;
        }
    }
    free(remote);
    return status;
}

static rl_status get_backend(rl_service *service, const char *key, rl_limit_def *out);

/* Whether a preset's put goes ahead (rl__service_preset_goes), on what the
 * store holds for its key now: Redis keeps no origins, so the definition's
 * own words say who made it (core/preset_rule.h). A store that cannot be
 * read fails the put. */
static bool preset_goes(rl_service *service, rl_service_put *put) {
    rl_limit_def held;
    rl_status status = get_backend(service, put->def.key, &held);
    if (status == RL_UNKNOWN_LIMIT_KEY) return rl__service_preset_goes(put, NULL, "");
    if (status != RL_OK) {
        put->status = status == RL_NO_MEMORY ? RL_NO_MEMORY : RL_BACKEND_ERROR;
        snprintf(put->err, sizeof put->err, "cannot read what the %s backend holds for it: %s", service->backend_name,
                 rl_status_name(status));
        return false;
    }
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl__preset_origin_of_def(&held, origin);
    return rl__service_preset_goes(put, &held, origin);
}

static void shared_put_limits(rl_service *service, rl_service_put *puts, size_t count) {
    rl_limit_def *changed = malloc(count * sizeof *changed);
    size_t changed_count = 0, new_keys = 0, applied_count = 0;
    pthread_mutex_lock(&service->admin_mutex);
    for (size_t i = 0; i < count; i++) {
        rl_service_put *put = &puts[i];
        if (put->status != RL_OK) continue;
        if (put->origin[0] != '\0' && !preset_goes(service, put)) continue;
        rl_limit_def previous;
        bool known = rl_registry_get(service->registry, put->def.key, &previous);
        for (size_t j = 0; !known && j < changed_count; j++) known = strcmp(changed[j].key, put->def.key) == 0;
        /* The registry bounds the number of limits; check before the backend
         * takes a key the file could not hold. */
        if (!known && rl_registry_count(service->registry) + new_keys >= service->max_limits) {
            snprintf(put->err, sizeof put->err, "the registry is full: it holds %zu limits (max_limits)",
                     service->max_limits);
            put->status = RL_INVALID_REQUEST;
            continue;
        }
        rl_status applied = rl_backend_apply_definition(service->backend, &put->def, &put->limit_status);
        if (applied != RL_OK) {
            rl__service_backend_refused(service, put, applied, NULL);
            continue;
        }
        applied_count++;
        if (!known) new_keys++;
        bool same = known && rl_registry_get(service->registry, put->def.key, &previous) &&
                    rl__limit_def_equal(&previous, &put->def);
        if (!same && changed != NULL) changed[changed_count++] = put->def;
    }
    /* Once the backend holds them the puts have happened for every daemon:
     * the local copy is written once for all, and a failure only warned. */
    char why[256] = "";
    if (changed == NULL ? applied_count > 0
                        : changed_count > 0 &&
                              rl_registry_put_many(service->registry, changed, changed_count, why, sizeof why) != RL_OK)
        fprintf(stderr, "ratelimiterd: warning: %zu limits are set in the %s backend but not in the registry %s: %s\n",
                changed == NULL ? applied_count : changed_count, service->backend_name, service->registry_path,
                changed == NULL ? "out of memory" : why);
    pthread_mutex_unlock(&service->admin_mutex);
    free(changed);
}

/* The backend (the authority) first: once it has deleted the key, the
 * delete has happened for every daemon, so the local copy follows
 * best-effort, as for a put. A key the backend does not hold leaves the
 * file too (deleted through another daemon). */
static void shared_delete_limit(rl_service *service, rl_service_put *put) {
    const char *key = put->def.key;
    pthread_mutex_lock(&service->admin_mutex);
    rl_status status = rl_backend_delete_definition(service->backend, key);
    if (status == RL_OK || status == RL_UNKNOWN_LIMIT_KEY) {
        char why[256];
        rl_status removed = rl_registry_delete(service->registry, key, why, sizeof why);
        if (removed != RL_OK && removed != RL_UNKNOWN_LIMIT_KEY)
            fprintf(stderr, "ratelimiterd: warning: limit \"%s\" is deleted in the %s backend but not in the registry %s: %s\n",
                    key, service->backend_name, service->registry_path, why);
    } else if (service->backend->ops->delete_definition == NULL) {
        snprintf(put->err, sizeof put->err, "the %s backend cannot delete limits", service->backend_name);
    } else {
        snprintf(put->err, sizeof put->err, "the %s backend could not delete it: %s", service->backend_name,
                 rl_status_name(status));
    }
    put->status = status;
    pthread_mutex_unlock(&service->admin_mutex);
}

/* The backend's definition of key: one lookup where the backend has
 * get_definition, else found in the whole listing. */
static rl_status get_backend(rl_service *service, const char *key, rl_limit_def *out) {
    rl_backend *backend = service->backend;
    if (backend->ops->get_definition != NULL) {
        rl_status status = rl_backend_get_definition(backend, key, out);
        return status == RL_OK || status == RL_UNKNOWN_LIMIT_KEY || status == RL_NO_MEMORY ? status
                                                                                           : RL_BACKEND_ERROR;
    }
    rl_limit_def *remote = NULL;
    size_t remote_count = 0;
    char err[256];
    rl_status status = list_backend(service, &remote, &remote_count, err, sizeof err);
    if (status == RL_OK) {
        const rl_limit_def *found = find_def(remote, remote_count, key);
        if (found != NULL) *out = *found;
        else status = RL_UNKNOWN_LIMIT_KEY;
    }
    free(remote);
    return status;
}

/* The backend's templates (the authority), into a set that says which
 * makes a key's definition; NULL when they cannot be read (*status says
 * why) or the backend has none. */
static rl__template_set *backend_templates(rl_service *service, rl_status *status) {
    rl_limit_def *templates = NULL;
    size_t count = 0;
    *status = rl_backend_list_templates(service->backend, &templates, &count);
    if (*status == RL_INVALID_REQUEST) *status = RL_OK; /* a backend without templates */
    rl__template_set *set = *status == RL_OK && count > 0 ? rl__template_set_create() : NULL;
    if (*status == RL_OK && count > 0 && set == NULL) *status = RL_NO_MEMORY;
    char err[256];
    for (size_t i = 0; set != NULL && i < count; i++) (void)rl__template_set_put(set, &templates[i], NULL, err, sizeof err);
    free(templates);
    return set;
}

static rl_status shared_get(rl_service *service, const char *key, rl_service_limit *out) {
    pthread_mutex_lock(&service->admin_mutex);
    rl_status status = get_backend(service, key, &out->def);
    if (status == RL_OK) {
        rl_limit_def mine;
        if (!rl_registry_get(service->registry, key, &mine) || !rl__limit_def_equal(&mine, &out->def))
            refresh_registry_best_effort(service, &out->def, 1);
        rl__service_limit_source(out, NULL);
        status = rl__service_read_usage(service, &out->def, &out->usage);
    } else if (status == RL_UNKNOWN_LIMIT_KEY) {
        rl__template_set *templates = backend_templates(service, &status);
        if (status == RL_OK)
            status = templates != NULL ? rl__service_get_made(service, templates, key, out) : RL_UNKNOWN_LIMIT_KEY;
        rl__template_set_free(templates);
    }
    pthread_mutex_unlock(&service->admin_mutex);
    return status;
}

/* The backend (the authority) first: once it has the change, every daemon
 * has; the registry's copy follows best-effort, as for a put. */
static void shared_change_template(rl_service *service, rl_service_put *put) {
    bool putting = put->op == RL_SERVICE_PUT_TEMPLATE;
    const char *pattern = put->def.key;
    pthread_mutex_lock(&service->admin_mutex);
    rl_status status = putting ? rl_backend_put_template(service->backend, &put->def)
                               : rl_backend_delete_template(service->backend, pattern);
    if (status == RL_OK || (!putting && status == RL_UNKNOWN_LIMIT_KEY)) {
        char why[256];
        rl_status copied = putting ? rl_registry_put_template(service->registry, &put->def, NULL, why, sizeof why)
                                   : rl_registry_delete_template(service->registry, pattern, why, sizeof why);
        if (copied != RL_OK && copied != RL_UNKNOWN_LIMIT_KEY)
            fprintf(stderr, "ratelimiterd: warning: template \"%s\" changed in the %s backend but not in the registry %s: %s\n",
                    pattern, service->backend_name, service->registry_path, why);
    }
    if (status == RL_OK || status == RL_UNKNOWN_LIMIT_KEY) put->status = status;
    else rl__service_template_refused(service, put, status);
    pthread_mutex_unlock(&service->admin_mutex);
}

static rl_status shared_list_templates(rl_service *service, rl_limit_def **out, size_t *count) {
    rl_status status = rl_backend_list_templates(service->backend, out, count);
    if (status == RL_INVALID_REQUEST) { /* a backend without templates holds none */
        *out = NULL;
        *count = 0;
        return RL_OK;
    }
    return status == RL_OK || status == RL_NO_MEMORY ? status : RL_BACKEND_ERROR;
}

static rl_status shared_list(rl_service *service, rl_service_limit **out, size_t *count) {
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def *remote = NULL;
    size_t n = 0;
    char err[256];
    rl_status status = list_backend(service, &remote, &n, err, sizeof err);
    rl_service_limit *limits = NULL;
    if (status == RL_OK) {
        refresh_registry_best_effort(service, remote, n);
        if (n > 0) {
            limits = calloc(n, sizeof *limits); /* no template or preset unless said */
            if (limits == NULL) status = RL_NO_MEMORY;
        }
    }
    for (size_t i = 0; i < n && status == RL_OK; i++) {
        limits[i].def = remote[i];
        rl__service_limit_source(&limits[i], NULL);
        status = rl__service_read_usage(service, &remote[i], &limits[i].usage);
    }
    pthread_mutex_unlock(&service->admin_mutex);
    free(remote);
    if (status != RL_OK) {
        free(limits);
        return status;
    }
    *out = limits;
    *count = n;
    return RL_OK;
}

static rl_status shared_count(rl_service *service, size_t *count, char *err,
                                   size_t err_size) {
    rl_backend *backend = service->backend;
    if (backend->ops->count_definitions != NULL) {
        rl_status status = rl_backend_count_definitions(backend, count);
        if (status != RL_OK)
            snprintf(err, err_size, "cannot count the limits held by the %s backend: %s",
                     service->backend_name, rl_status_name(status));
        return status;
    }
    rl_limit_def *remote = NULL;
    rl_status status = list_backend(service, &remote, count, err, err_size);
    free(remote);
    return status;
}

const rl_service_mode rl__service_shared_mode = {
    .name = "shared",
    .open = shared_open,
    .put_limits = shared_put_limits,
    .delete_limit = shared_delete_limit,
    .change_template = shared_change_template,
    .list_templates = shared_list_templates,
    .get = shared_get,
    .list = shared_list,
    .count = shared_count,
};
