/* service.c — registry + backend in step (see service.h): opening them,
 * then each call handed to the mode, local (service_local.c) or shared
 * (service_shared.c). */
#include "server/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "core/template_pattern.h"
#include "server/backend_table.h"
#include "server/service_internal.h"

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
    service->templates = rl__template_set_create();
    service->max_limits =
        options->max_limits > 0 ? options->max_limits : RL_REGISTRY_DEFAULT_MAX_LIMITS;
    service->registry_path =
        options->registry_path != NULL ? strdup(options->registry_path) : NULL;
    rl_status status = RL_OK;
    if (service->templates == NULL) {
        snprintf(err, err_size, "out of memory");
        status = RL_NO_MEMORY;
    } else if (service->registry_path == NULL) {
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
        /* A backend many daemons share is the authority on which limits
         * exist; otherwise the registry is. */
        service->mode = rl_backend_is_shared(service->backend) ? &rl__service_shared_mode : &rl__service_local_mode;
        status = service->mode->open(service, err, err_size);
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
    rl__template_set_free(service->templates);
    pthread_mutex_destroy(&service->admin_mutex);
    free(service->registry_path);
    free(service);
}

rl_backend *rl_service_backend(rl_service *service) { return service->backend; }

const char *rl_service_backend_name(const rl_service *service) { return service->backend_name; }

size_t rl_service_limit_count(rl_service *service) {
    size_t count = 0;
    char ignored[128];
    if (service->mode->count(service, &count, ignored, sizeof ignored) == RL_OK) return count;
    pthread_mutex_lock(&service->admin_mutex); /* the registry may be swapped (shared mode) */
    count = rl_registry_count(service->registry);
    pthread_mutex_unlock(&service->admin_mutex);
    return count;
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
    return service->mode->count(service, limits, detail, detail_size);
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

rl_status rl_service_delete_limit(rl_service *service, const char *key, char *err, size_t err_size) {
    rl_service_put put;
    memset(&put, 0, sizeof put);
    put.op = RL_SERVICE_DELETE;
    snprintf(put.def.key, sizeof put.def.key, "%s", key != NULL ? key : "");
    if (key != NULL && strlen(key) >= sizeof put.def.key) put.def.key[0] = '\0'; /* too long: refused as invalid */
    rl_service_put_limits(service, &put, 1);
    if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", put.err);
    return put.status;
}

rl_status rl_service_put_template(rl_service *service, const rl_limit_def *def, char *err, size_t err_size) {
    rl_service_put put;
    memset(&put, 0, sizeof put);
    put.op = RL_SERVICE_PUT_TEMPLATE;
    put.def = *def;
    rl_service_put_limits(service, &put, 1);
    if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", put.err);
    return put.status;
}

rl_status rl_service_delete_template(rl_service *service, const char *pattern, char *err, size_t err_size) {
    rl_service_put put;
    memset(&put, 0, sizeof put);
    put.op = RL_SERVICE_DELETE_TEMPLATE;
    snprintf(put.def.key, sizeof put.def.key, "%s", pattern != NULL ? pattern : "");
    if (pattern != NULL && strlen(pattern) >= sizeof put.def.key) put.def.key[0] = '\0'; /* too long: refused */
    rl_service_put_limits(service, &put, 1);
    if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", put.err);
    return put.status;
}

rl_status rl_service_list_templates(rl_service *service, rl_limit_def **out, size_t *count) {
    *out = NULL;
    *count = 0;
    return service->mode->list_templates(service, out, count);
}

/* Whether change is valid to do (else its answer says why). */
static bool check_change(rl_service_put *change) {
    change->err[0] = '\0';
    change->limit_status = RL_LIMIT_STATUS_ACTIVE;
    if (change->op == RL_SERVICE_PUT_TEMPLATE) {
        rl__template_pattern pattern;
        return rl__template_pattern_parse(change->def.key, strlen(change->def.key), &pattern, change->err,
                                          sizeof change->err) &&
               rl_limit_def_validate(&change->def, change->err, sizeof change->err);
    }
    if (change->op == RL_SERVICE_DELETE || change->op == RL_SERVICE_DELETE_TEMPLATE) {
        if (rl_key_is_valid(change->def.key, strlen(change->def.key))) return true;
        snprintf(change->err, sizeof change->err, "key must be 1..%d printable ASCII characters without spaces",
                 RL_KEY_MAX_LEN);
        return false;
    }
    return rl_limit_def_validate(&change->def, change->err, sizeof change->err);
}

/* In order: each run of puts of one origin as one group of the mode's (one
 * registry write), each delete on its own. A preset's puts see what the
 * operator's before them wrote: the rule decides on the registry as it is
 * when their group begins. */
void rl_service_put_limits(rl_service *service, rl_service_put *puts, size_t count) {
    for (size_t i = 0; i < count; i++) puts[i].status = check_change(&puts[i]) ? RL_OK : RL_INVALID_REQUEST;
    for (size_t i = 0; i < count;) {
        if (puts[i].op != RL_SERVICE_PUT) {
            if (puts[i].status == RL_OK && puts[i].op == RL_SERVICE_DELETE) service->mode->delete_limit(service, &puts[i]);
            else if (puts[i].status == RL_OK) service->mode->change_template(service, &puts[i]);
            i++;
            continue;
        }
        size_t run = 1;
        while (i + run < count && puts[i + run].op == RL_SERVICE_PUT &&
               strcmp(puts[i + run].origin, puts[i].origin) == 0)
            run++;
        service->mode->put_limits(service, puts + i, run);
        i += run;
    }
}

rl_status rl_service_get_limit(rl_service *service, const char *key, rl_service_limit *out) {
    out->template_pattern[0] = out->preset[0] = '\0';
    return service->mode->get(service, key, out);
}

rl_status rl_service_list_limits(rl_service *service, rl_service_limit **out, size_t *count) {
    *out = NULL;
    *count = 0;
    return service->mode->list(service, out, count);
}
