/* service.c — registry + backend in step (see service.h); the local mode
 * here, the shared mode in service_shared.c. */
#include "server/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/backend_table.h"
#include "server/service_internal.h"

/* Gives the backend every definition the registry holds. */
static rl_status apply_all(rl_service *service, char *err, size_t err_size) {
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
    free(defs);
    return status;
}

rl_status rl_service_open(const rl_service_options *options, rl_service **out, char *err,
                          size_t err_size) {
    *out = NULL;
    rl_service *service = calloc(1, sizeof *service);
    if (service == NULL) {
        rl_backend_destroy(options->backend);
        snprintf(err, err_size, "out of memory");
        return RL_NO_MEMORY;
    }
    if (pthread_mutex_init(&service->admin_mutex, NULL) != 0) {
        free(service);
        rl_backend_destroy(options->backend);
        snprintf(err, err_size, "cannot create a mutex");
        return RL_NO_MEMORY;
    }
    service->backend = options->backend; /* owned from here on, if given */
    service->max_limits =
        options->max_limits > 0 ? options->max_limits : RL_REGISTRY_DEFAULT_MAX_LIMITS;
    service->registry_path =
        options->registry_path != NULL ? strdup(options->registry_path) : NULL;
    rl_status status = RL_OK;
    if (service->registry_path == NULL) {
        snprintf(err, err_size, options->registry_path == NULL ? "no registry path" : "out of memory");
        status = options->registry_path == NULL ? RL_INVALID_REQUEST : RL_NO_MEMORY;
    }
    if (status == RL_OK)
        status = rl_registry_open(service->registry_path, service->max_limits, &service->registry,
                                  err, err_size);
    if (status == RL_OK && service->backend == NULL) {
        const rl_backend_kind *kind = rl_backend_kind_find(options->backend_name);
        if (kind == NULL) {
            rl_backend_kind_unknown(options->backend_name, err, err_size);
            status = RL_INVALID_REQUEST;
        } else {
            status = kind->create(options, &service->backend, err, err_size);
        }
    }
    if (status == RL_OK) status = rl_backend_abi_check(service->backend, err, err_size);
    if (status == RL_OK) {
        service->backend_name = service->backend->ops->name;
        service->shared = rl_backend_is_shared(service->backend);
        status = service->shared ? rl__service_shared_open(service, err, err_size)
                                 : apply_all(service, err, err_size);
    }
    if (status != RL_OK) {
        rl_service_close(service);
        return status;
    }
    *out = service;
    return RL_OK;
}

void rl_service_close(rl_service *service) {
    if (service == NULL) return;
    rl_backend_destroy(service->backend);
    rl_registry_close(service->registry);
    pthread_mutex_destroy(&service->admin_mutex);
    free(service->registry_path);
    free(service);
}

rl_backend *rl_service_backend(rl_service *service) { return service->backend; }

const char *rl_service_backend_name(const rl_service *service) { return service->backend_name; }

size_t rl_service_limit_count(rl_service *service) {
    if (service->shared) {
        size_t count = 0;
        char ignored[128];
        if (rl__service_shared_count(service, &count, ignored, sizeof ignored) == RL_OK) return count;
        pthread_mutex_lock(&service->admin_mutex); /* the registry may be swapped */
        count = rl_registry_count(service->registry);
        pthread_mutex_unlock(&service->admin_mutex);
        return count;
    }
    return rl_registry_count(service->registry);
}

rl_status rl_service_health(rl_service *service, size_t *limits, char *detail,
                            size_t detail_size) {
    *limits = 0;
    rl_status status = rl_backend_health(service->backend, detail, detail_size);
    if (status != RL_OK) {
        if (detail != NULL && detail_size > 0 && detail[0] == '\0')
            snprintf(detail, detail_size, "the %s backend cannot serve: %s", service->backend_name,
                     rl_status_name(status));
        return RL_BACKEND_ERROR;
    }
    if (!service->shared) {
        *limits = rl_registry_count(service->registry);
        return RL_OK;
    }
    return rl__service_shared_count(service, limits, detail, detail_size);
}

rl_status rl_service_put_limit(rl_service *service, const rl_limit_def *def,
                               rl_limit_status *out_status, char *err, size_t err_size) {
    rl_service_put put;
    memset(&put, 0, sizeof put);
    put.def = *def;
    rl_service_put_limits(service, &put, 1);
    if (out_status != NULL && put.status == RL_OK) *out_status = put.limit_status;
    if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", put.err);
    return put.status;
}

void rl__service_backend_refused(rl_service *service, rl_service_put *put, rl_status status) {
    if (status == RL_LIMIT_IN_USE) {
        rl__service_in_use_detail(service, &put->def, put->err, sizeof put->err);
        put->status = RL_LIMIT_IN_USE;
    } else {
        snprintf(put->err, sizeof put->err, "the %s backend refused the definition: %s", service->backend_name,
                 rl_status_name(status));
        put->status = RL_BACKEND_ERROR;
    }
}

/* What the registry must hold for the key of puts[last] (the last put of
 * that key in the group, refused by the backend) to agree with the backend:
 * the last earlier put of the key it took, else what the registry held
 * before the group. False: nothing to put back (a new key cannot be taken
 * back: the registry has no delete, and the next start applies it). */
static bool held_by_backend(const rl_service_put *puts, size_t last, const rl_limit_def *before, bool had_before,
                            rl_limit_def *out) {
    for (size_t j = last; j-- > 0;) {
        if (strcmp(puts[j].def.key, puts[last].def.key) == 0 && puts[j].status == RL_OK) {
            *out = puts[j].def;
            return true;
        }
    }
    if (had_before) *out = *before;
    return had_before;
}

/* Local mode: the registry first (durable), then the backend; what the
 * backend refused is put back in the registry. puts with status RL_OK are
 * the valid ones to do. */
static void local_put_limits(rl_service *service, rl_service_put *puts, size_t count) {
    rl_limit_def *defs = malloc(count * sizeof *defs), *before = malloc(count * sizeof *before);
    bool *had_before = malloc(count * sizeof *had_before);
    size_t *index_of = malloc(count * sizeof *index_of), n = 0;
    if (defs == NULL || before == NULL || had_before == NULL || index_of == NULL) {
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
        had_before[i] = rl_registry_get(service->registry, puts[i].def.key, &before[i]);
        defs[n] = puts[i].def;
        index_of[n++] = i;
    }
    char err[256] = "";
    rl_status written = rl_registry_put_many(service->registry, defs, n, err, sizeof err);
    for (size_t j = 0; j < n; j++) {
        rl_service_put *put = &puts[index_of[j]];
        if (written != RL_OK) {
            put->status = written;
            snprintf(put->err, sizeof put->err, "%s", err);
            continue;
        }
        rl_status applied = rl_backend_apply_definition(service->backend, &put->def, &put->limit_status);
        if (applied != RL_OK) rl__service_backend_refused(service, put, applied);
    }
    /* The registry agrees with the backend again for every key whose last
     * put the backend refused. */
    size_t fixes = 0;
    for (size_t j = 0; written == RL_OK && j < n; j++) {
        size_t i = index_of[j];
        bool last_of_key = true;
        for (size_t k = j + 1; k < n && last_of_key; k++) last_of_key = strcmp(puts[index_of[k]].def.key, puts[i].def.key) != 0;
        if (last_of_key && puts[i].status != RL_OK && held_by_backend(puts, i, &before[i], had_before[i], &defs[fixes]))
            fixes++;
    }
    if (fixes > 0) (void)rl_registry_put_many(service->registry, defs, fixes, err, sizeof err);
    pthread_mutex_unlock(&service->admin_mutex);
done:
    free(defs);
    free(before);
    free(had_before);
    free(index_of);
}

void rl_service_put_limits(rl_service *service, rl_service_put *puts, size_t count) {
    for (size_t i = 0; i < count; i++) {
        puts[i].err[0] = '\0';
        puts[i].limit_status = RL_LIMIT_STATUS_ACTIVE;
        puts[i].status = rl_limit_def_validate(&puts[i].def, puts[i].err, sizeof puts[i].err) ? RL_OK
                                                                                               : RL_INVALID_REQUEST;
    }
    if (service->shared)
        rl__service_shared_put_limits(service, puts, count);
    else
        local_put_limits(service, puts, count);
}

void rl__service_in_use_detail(rl_service *service, const rl_limit_def *def, char *err, size_t err_size) {
    rl_limit_usage usage;
    bool read = rl_backend_limit_usage(service->backend, def->key, &usage) == RL_OK;
    const char *to = def->kind == RL_KIND_ROLLING ? "rolling" : "concurrency";
    const char *from = def->kind == RL_KIND_ROLLING ? "concurrency" : "rolling";
    char held[96] = "reservations";
    if (read) snprintf(held, sizeof held, "%llu in %llu %s", (unsigned long long)usage.used,
                       (unsigned long long)usage.active, usage.active == 1 ? "reservation" : "reservations");
    snprintf(err, err_size,
             "limit \"%s\" holds %s of its %s kind: its kind can change to %s only when it holds nothing "
             "(rolling usage leaves at the end of its window, concurrency holds at Complete or their timeout); "
             "or define the new limit under another key",
             def->key, held, from, to);
}

/* A backend that does not know a defined key (local mode: cannot happen
 * while puts hold the admin mutex; shared mode: a race with a store that
 * lost it) reads as idle. */
rl_status rl__service_read_usage(rl_service *service, const rl_limit_def *def,
                                 rl_limit_usage *usage) {
    rl_status status = rl_backend_limit_usage(service->backend, def->key, usage);
    if (status == RL_OK) return RL_OK;
    if (status != RL_UNKNOWN_LIMIT_KEY) return status;
    memset(usage, 0, sizeof *usage);
    usage->status = RL_LIMIT_STATUS_ACTIVE;
    usage->capacity = def->capacity;
    usage->available = def->capacity;
    return RL_OK;
}

rl_status rl_service_get_limit(rl_service *service, const char *key, rl_service_limit *out) {
    if (service->shared) return rl__service_shared_get(service, key, out);
    pthread_mutex_lock(&service->admin_mutex);
    rl_status status = RL_UNKNOWN_LIMIT_KEY;
    if (rl_registry_get(service->registry, key, &out->def))
        status = rl__service_read_usage(service, &out->def, &out->usage);
    pthread_mutex_unlock(&service->admin_mutex);
    return status;
}

rl_status rl_service_list_limits(rl_service *service, rl_service_limit **out, size_t *count) {
    *out = NULL;
    *count = 0;
    if (service->shared) return rl__service_shared_list(service, out, count);
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def *defs = NULL;
    size_t n = 0;
    rl_status status = rl_registry_list(service->registry, &defs, &n);
    rl_service_limit *limits = NULL;
    if (status == RL_OK && n > 0) {
        limits = malloc(n * sizeof *limits);
        if (limits == NULL) status = RL_NO_MEMORY;
    }
    for (size_t i = 0; i < n && status == RL_OK; i++) {
        limits[i].def = defs[i];
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
