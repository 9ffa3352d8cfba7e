/* service.c — registry + backend in step (see service.h). */
#include "server/service.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimiter/registry.h"

struct rl_service {
    rl_registry *registry;
    rl_backend *backend;
    const char *backend_name;
    /* Serialises admin puts and makes reads see a put whole (registry and
     * backend both updated), never half. Not taken on the hot path. */
    pthread_mutex_t admin_mutex;
};

static rl_status create_backend(const rl_service_options *options, rl_backend **out,
                                const char **name, char *err, size_t err_size) {
    if (options->backend_name != NULL && strcmp(options->backend_name, "memory") == 0) {
        rl_memory_options memory = options->memory;
        rl_status status = rl_memory_backend_create(&memory, out);
        if (status != RL_OK)
            snprintf(err, err_size, "cannot create the memory backend: %s", rl_status_name(status));
        *name = "memory";
        return status;
    }
    snprintf(err, err_size, "backend \"%.40s\" is not available in this build (use \"memory\")",
             options->backend_name != NULL ? options->backend_name : "");
    return RL_INVALID_REQUEST;
}

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
        snprintf(err, err_size, "out of memory");
        return RL_NO_MEMORY;
    }
    if (pthread_mutex_init(&service->admin_mutex, NULL) != 0) {
        free(service);
        snprintf(err, err_size, "cannot create a mutex");
        return RL_NO_MEMORY;
    }
    rl_status status = rl_registry_open(options->registry_path, options->max_limits,
                                        &service->registry, err, err_size);
    if (status == RL_OK)
        status = create_backend(options, &service->backend, &service->backend_name, err, err_size);
    if (status == RL_OK) status = apply_all(service, err, err_size);
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
    free(service);
}

rl_backend *rl_service_backend(rl_service *service) { return service->backend; }

const char *rl_service_backend_name(const rl_service *service) { return service->backend_name; }

size_t rl_service_limit_count(rl_service *service) { return rl_registry_count(service->registry); }

rl_status rl_service_put_limit(rl_service *service, const rl_limit_def *def,
                               rl_limit_status *out_status, char *err, size_t err_size) {
    if (!rl_limit_def_validate(def, err, err_size)) return RL_INVALID_REQUEST;
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def previous;
    bool had_previous = rl_registry_get(service->registry, def->key, &previous);
    rl_status status = rl_registry_put(service->registry, def, err, err_size);
    if (status == RL_OK) {
        status = rl_backend_apply_definition(service->backend, def, out_status);
        if (status != RL_OK) {
            /* The backend keeps its old state; make the registry agree with
             * it again. (A new key cannot be taken back: the registry has no
             * delete, and the next start applies it.) */
            snprintf(err, err_size, "the %s backend refused the definition: %s",
                     service->backend_name, rl_status_name(status));
            if (had_previous) {
                char ignored[128];
                (void)rl_registry_put(service->registry, &previous, ignored, sizeof ignored);
            }
            status = RL_BACKEND_ERROR;
        }
    }
    pthread_mutex_unlock(&service->admin_mutex);
    return status;
}

/* Usage of a limit the registry knows; a backend that does not know it
 * (cannot happen while puts hold the admin mutex) reads as idle. */
static void read_usage(rl_service *service, const rl_limit_def *def, rl_limit_usage *usage) {
    if (rl_backend_limit_usage(service->backend, def->key, usage) == RL_OK) return;
    memset(usage, 0, sizeof *usage);
    usage->status = RL_LIMIT_STATUS_ACTIVE;
    usage->capacity = def->capacity;
    usage->available = def->capacity;
}

bool rl_service_get_limit(rl_service *service, const char *key, rl_service_limit *out) {
    pthread_mutex_lock(&service->admin_mutex);
    bool found = rl_registry_get(service->registry, key, &out->def);
    if (found) read_usage(service, &out->def, &out->usage);
    pthread_mutex_unlock(&service->admin_mutex);
    return found;
}

rl_status rl_service_list_limits(rl_service *service, rl_service_limit **out, size_t *count) {
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&service->admin_mutex);
    rl_limit_def *defs = NULL;
    size_t n = 0;
    rl_status status = rl_registry_list(service->registry, &defs, &n);
    rl_service_limit *limits = NULL;
    if (status == RL_OK && n > 0) {
        limits = malloc(n * sizeof *limits);
        if (limits == NULL) status = RL_NO_MEMORY;
    }
    if (status == RL_OK) {
        for (size_t i = 0; i < n; i++) {
            limits[i].def = defs[i];
            read_usage(service, &defs[i], &limits[i].usage);
        }
        *out = limits;
        *count = n;
    }
    pthread_mutex_unlock(&service->admin_mutex);
    free(defs);
    return status;
}
