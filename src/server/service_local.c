/* service_local.c — the local mode (service.h): the registry is the
 * authority on which limits exist, the backend (memory) is given every
 * definition at start and each put or delete after the registry has
 * written it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_internal.h"

static int by_key(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

/* Deletes from a memory backend the limits its journal brought back that
 * the registry (defs, sorted) no longer holds: a delete that a crash cut
 * between the registry and the backend is finished here. */
static rl_status delete_unregistered(rl_service *service, const rl_limit_def *defs, size_t count, char *err,
                                     size_t err_size) {
    rl_limit_def *held = NULL;
    size_t held_count = 0;
    if (rl_memory_backend_definitions(service->backend, &held, &held_count) != RL_OK) return RL_OK; /* another kind */
    rl_status status = RL_OK;
    for (size_t i = 0; i < held_count && status == RL_OK; i++) {
        if (count > 0 && bsearch(&held[i], defs, count, sizeof *defs, by_key) != NULL) continue;
        status = rl_backend_delete_definition(service->backend, held[i].key);
        if (status != RL_OK)
            snprintf(err, err_size, "the %s backend could not delete limit \"%s\", which the registry no longer holds: %s",
                     service->backend_name, held[i].key, rl_status_name(status));
    }
    free(held);
    return status;
}

/* Gives the backend every template the registry holds, and only those
 * (deleting one its journal brought back that the registry no longer has:
 * a delete a crash cut between the two), and keeps them to say which
 * makes a key's definition. A backend without templates is given none. */
static rl_status open_templates(rl_service *service, char *err, size_t err_size) {
    rl_limit_def *templates = NULL, *held = NULL;
    size_t count = 0, held_count = 0;
    rl_status status = rl_registry_list_templates(service->registry, &templates, &count);
    if (status != RL_OK) snprintf(err, err_size, "cannot list the registry's templates: %s", rl_status_name(status));
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        status = rl_backend_put_template(service->backend, &templates[i]);
        if (status == RL_OK) status = rl__template_set_put(service->templates, &templates[i], NULL, err, err_size);
        else snprintf(err, err_size, "the %s backend refused template \"%s\": %s", service->backend_name,
                      templates[i].key, rl_status_name(status));
    }
    if (status == RL_OK && rl_memory_backend_templates(service->backend, &held, &held_count) == RL_OK) {
        for (size_t i = 0; i < held_count && status == RL_OK; i++) {
            if (rl__template_set_find(service->templates, held[i].key) != NULL) continue;
            status = rl_backend_delete_template(service->backend, held[i].key);
            if (status != RL_OK)
                snprintf(err, err_size, "the %s backend could not delete template \"%s\", which the registry no "
                         "longer holds: %s", service->backend_name, held[i].key, rl_status_name(status));
        }
    }
    free(held);
    free(templates);
    return status;
}

/* Gives the backend every definition the registry holds, and only those. */
static rl_status local_open(rl_service *service, char *err, size_t err_size) {
    rl_limit_def *defs = NULL;
    size_t count = 0;
    rl_status status = rl_registry_list(service->registry, &defs, &count);
    if (status != RL_OK) {
        snprintf(err, err_size, "cannot list the registry: %s", rl_status_name(status));
        return status;
    }
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        rl_limit_status limit_status;
        status = rl_backend_apply_definition(service->backend, &defs[i], &limit_status);
        if (status != RL_OK)
            snprintf(err, err_size, "the %s backend refused limit \"%s\": %s", service->backend_name,
                     defs[i].key, rl_status_name(status));
    }
    if (status == RL_OK) status = delete_unregistered(service, defs, count, err, err_size);
    free(defs);
    if (status == RL_OK) status = open_templates(service, err, err_size);
    return status;
}

/* What the registry must hold for the key of puts[last] (the last put of
 * that key in the group, refused by the backend) to agree with the backend:
 * the last earlier put of the key it took, else what the registry held
 * before the group, each with its origin. False: nothing to put back (a new
 * key the backend refused stays in the registry, which the next start
 * applies again). */
static bool held_by_backend(const rl_service_put *puts, size_t last, const rl_limit_def *before,
                            const char *origin_before, bool had_before, rl_registry_change *out) {
    for (size_t j = last; j-- > 0;) {
        if (strcmp(puts[j].def.key, puts[last].def.key) == 0 && puts[j].status == RL_OK &&
            !rl__service_put_skipped(&puts[j])) {
            out->def = puts[j].def;
            memcpy(out->origin, puts[j].origin, sizeof out->origin);
            return true;
        }
    }
    if (!had_before) return false;
    out->def = *before;
    memcpy(out->origin, origin_before, sizeof out->origin);
    return true;
}

/* Local mode: the registry first (durable, each definition with its
 * origin), then the backend; what the backend refused is put back in the
 * registry. puts with status RL_OK are the valid ones to do; a preset's
 * that the rule holds back (kept, unchanged) are answered as they are. */
static void local_put_limits(rl_service *service, rl_service_put *puts, size_t count) {
    rl_registry_change *changes = calloc(count, sizeof *changes), *fixes = NULL;
    rl_limit_def *before = malloc(count * sizeof *before);
    char(*origin_before)[RL_REGISTRY_ORIGIN_MAX_LEN + 1] = malloc(count * sizeof *origin_before);
    bool *had_before = malloc(count * sizeof *had_before);
    size_t *index_of = malloc(count * sizeof *index_of), n = 0;
    if (changes == NULL || before == NULL || origin_before == NULL || had_before == NULL || index_of == NULL) {
        for (size_t i = 0; i < count; i++) {
            if (puts[i].status != RL_OK) continue;
            puts[i].status = RL_NO_MEMORY;
            snprintf(puts[i].err, sizeof puts[i].err, "out of memory");
        }
        goto done;
    }
    pthread_mutex_lock(&service->admin_mutex);
    for (size_t i = 0; i < count; i++) {
        if (puts[i].status != RL_OK) continue;
        had_before[i] = rl_registry_get_origin(service->registry, puts[i].def.key, &before[i], origin_before[i]);
        if (!had_before[i]) origin_before[i][0] = '\0';
        if (puts[i].origin[0] != '\0' &&
            !rl__service_preset_goes(&puts[i], had_before[i] ? &before[i] : NULL, origin_before[i]))
            continue;
        changes[n].op = RL_REGISTRY_PUT;
        changes[n].def = puts[i].def;
        memcpy(changes[n].origin, puts[i].origin, sizeof changes[n].origin);
        index_of[n++] = i;
    }
    char err[256] = "";
    (void)rl_registry_apply(service->registry, changes, n, err, sizeof err);
    for (size_t j = 0; j < n; j++) {
        rl_service_put *put = &puts[index_of[j]];
        if (changes[j].status != RL_OK) { /* not written: this one (full), or the group (I/O) */
            put->status = changes[j].status;
            snprintf(put->err, sizeof put->err, "%s", changes[j].err);
            continue;
        }
        rl_status applied = rl_backend_apply_definition(service->backend, &put->def, &put->limit_status);
        /* The registry holds the new definition already: say the old kind. */
        size_t i = index_of[j];
        if (applied != RL_OK) rl__service_backend_refused(service, put, applied, had_before[i] ? &before[i] : NULL);
    }
    /* The registry agrees with the backend again for every key whose last
     * put the backend refused. */
    size_t fix_count = 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = index_of[j];
        if (changes[j].status != RL_OK || puts[i].status == RL_OK) continue;
        bool last_of_key = true;
        for (size_t k = j + 1; k < n && last_of_key; k++) last_of_key = strcmp(puts[index_of[k]].def.key, puts[i].def.key) != 0;
        if (!last_of_key) continue;
        if (fixes == NULL && (fixes = calloc(n, sizeof *fixes)) == NULL) {
            fprintf(stderr, "ratelimiterd: out of memory: the registry %s holds limits the %s backend refused\n",
                    service->registry_path, service->backend_name);
            break;
        }
        fixes[fix_count].op = RL_REGISTRY_PUT;
        if (held_by_backend(puts, i, &before[i], origin_before[i], had_before[i], &fixes[fix_count])) fix_count++;
    }
    if (fix_count > 0) (void)rl_registry_apply(service->registry, fixes, fix_count, err, sizeof err);
    pthread_mutex_unlock(&service->admin_mutex);
done:
    free(changes);
    free(fixes);
    free(before);
    free(origin_before);
    free(had_before);
    free(index_of);
}

/* The registry first (durable), then the backend. A backend that cannot
 * take the delete gets nothing changed: the registry has the definition
 * back. */
static void local_delete_limit(rl_service *service, rl_service_put *put) {
    const char *key = put->def.key;
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def before;
    bool had = rl_registry_get(service->registry, key, &before);
    rl_status status = rl_registry_delete(service->registry, key, put->err, sizeof put->err);
    /* Gone from the file (RL_IO_ERROR may still say so, when only its
     * directory's fsync failed), or never there: the backend follows. A
     * key the registry does not hold may still be in the backend, left by
     * a delete that a crash cut between the two: it goes too. */
    rl_limit_def still;
    if (!rl_registry_get(service->registry, key, &still)) {
        rl_status deleted = rl_backend_delete_definition(service->backend, key);
        if (had && deleted != RL_OK && deleted != RL_UNKNOWN_LIMIT_KEY && deleted != RL_IO_ERROR) {
            /* Refused, nothing changed there: nor here. (RL_IO_ERROR: done
             * in memory, not durable: the journal says why.) */
            char why[256];
            if (rl_registry_put(service->registry, &before, why, sizeof why) != RL_OK)
                fprintf(stderr, "ratelimiterd: limit \"%s\" is deleted from the registry %s but not from the %s backend: %s\n",
                        before.key, service->registry_path, service->backend_name, why);
            if (service->backend->ops->delete_definition == NULL)
                snprintf(put->err, sizeof put->err, "the %s backend cannot delete limits", service->backend_name);
            else
                snprintf(put->err, sizeof put->err, "the %s backend could not delete it: %s", service->backend_name,
                         rl_status_name(deleted));
            status = deleted;
        } else if (status == RL_OK && deleted == RL_IO_ERROR) {
            snprintf(put->err, sizeof put->err, "the %s backend's journal could not be written", service->backend_name);
            status = deleted;
        }
    }
    put->status = status;
    pthread_mutex_unlock(&service->admin_mutex);
}

/* The registry first (durable), then the backend; what the backend
 * refused, the registry gets back as it was. */
static void local_change_template(rl_service *service, rl_service_put *put) {
    bool putting = put->op == RL_SERVICE_PUT_TEMPLATE;
    const char *pattern = put->def.key;
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def before;
    char origin_before[RL_REGISTRY_ORIGIN_MAX_LEN + 1] = "";
    bool had = rl_registry_get_template(service->registry, pattern, &before, origin_before);
    rl_status status = RL_UNKNOWN_LIMIT_KEY;
    if (putting || had)
        status = putting ? rl_registry_put_template(service->registry, &put->def, NULL, put->err, sizeof put->err)
                         : rl_registry_delete_template(service->registry, pattern, put->err, sizeof put->err);
    if (status == RL_OK) {
        status = putting ? rl_backend_put_template(service->backend, &put->def)
                         : rl_backend_delete_template(service->backend, pattern);
        /* A backend without it: a put a crash cut between the two. */
        if (!putting && status == RL_UNKNOWN_LIMIT_KEY) status = RL_OK;
        if (status != RL_OK) {
            char ignored[256];
            if (had) (void)rl_registry_put_template(service->registry, &before, origin_before, ignored, sizeof ignored);
            else (void)rl_registry_delete_template(service->registry, pattern, ignored, sizeof ignored);
            rl__service_template_refused(service, put, status);
            pthread_mutex_unlock(&service->admin_mutex);
            return;
        }
        if (putting) (void)rl__template_set_put(service->templates, &put->def, NULL, put->err, sizeof put->err);
        else (void)rl__template_set_delete(service->templates, pattern);
        put->err[0] = '\0';
    }
    put->status = status;
    pthread_mutex_unlock(&service->admin_mutex);
}

static rl_status local_list_templates(rl_service *service, rl_limit_def **out, size_t *count) {
    return rl_registry_list_templates(service->registry, out, count);
}

static rl_status local_get(rl_service *service, const char *key, rl_service_limit *out) {
    pthread_mutex_lock(&service->admin_mutex);
    rl_status status = RL_UNKNOWN_LIMIT_KEY;
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    if (rl_registry_get_origin(service->registry, key, &out->def, origin)) {
        rl__service_limit_source(out, origin);
        status = rl__service_read_usage(service, &out->def, &out->usage);
    } else {
        status = rl__service_get_made(service, service->templates, key, out);
    }
    pthread_mutex_unlock(&service->admin_mutex);
    return status;
}

static rl_status local_list(rl_service *service, rl_service_limit **out, size_t *count) {
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def *defs = NULL;
    size_t n = 0;
    rl_status status = rl_registry_list(service->registry, &defs, &n);
    rl_service_limit *limits = NULL;
    if (status == RL_OK && n > 0) {
        limits = calloc(n, sizeof *limits); /* no template or preset unless said */
        if (limits == NULL) status = RL_NO_MEMORY;
    }
    for (size_t i = 0; i < n && status == RL_OK; i++) {
        char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
        if (!rl_registry_get_origin(service->registry, defs[i].key, &limits[i].def, origin)) origin[0] = '\0';
        limits[i].def = defs[i];
        rl__service_limit_source(&limits[i], origin);
        status = rl__service_read_usage(service, &defs[i], &limits[i].usage);
    }
    if (status == RL_OK) {
        *out = limits;
        *count = n;
    } else {
        free(limits);
    }
    pthread_mutex_unlock(&service->admin_mutex);
    free(defs);
    return status;
}

static rl_status local_count(rl_service *service, size_t *count, char *err, size_t err_size) {
    (void)err;
    (void)err_size;
    *count = rl_registry_count(service->registry);
    return RL_OK;
}

const rl_service_mode rl__service_local_mode = {
    .name = "local",
    .open = local_open,
    .put_limits = local_put_limits,
    .delete_limit = local_delete_limit,
    .change_template = local_change_template,
    .list_templates = local_list_templates,
    .get = local_get,
    .list = local_list,
    .count = local_count,
};
