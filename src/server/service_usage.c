/* service_usage.c — what both modes of the service say about a limit's
 * usage (service_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/service_internal.h"

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

/* A change of kind refused while the limit holds something: its key, what
 * it holds (at most HELD_SIZE bytes), the kind it has and the one asked
 * for; a change's err holds all of it. */
#define IN_USE_SENTENCE                                                                                   \
    "limit \"%s\" holds %s of its %s kind: its kind can change to %s only when it holds nothing "          \
    "(rolling usage leaves at the end of its window, concurrency holds and budget reservations at "        \
    "Complete or their timeout); or define the new limit under another key"
#define HELD_SIZE 96
_Static_assert(sizeof IN_USE_SENTENCE + RL_KEY_MAX_LEN + HELD_SIZE + 2 * sizeof "concurrency" <= RL_SERVICE_ERR_SIZE,
               "the sentence fits whole in a change's err");

void rl__service_in_use_detail(rl_service *service, const rl_limit_def *def, const rl_limit_def *previous, char *err,
                               size_t err_size) {
    rl_limit_usage usage;
    bool read = rl_backend_limit_usage(service->backend, def->key, &usage) == RL_OK;
    /* The kind it has: the caller's previous definition, else the
     * registry's (which the shared mode writes only after the backend; the
     * caller holds the admin mutex). */
    rl_limit_def now;
    if (previous == NULL && rl_registry_get(service->registry, def->key, &now)) previous = &now;
    const char *to = rl_kind_name(def->kind);
    const char *from = previous != NULL ? rl_kind_name(previous->kind) : "other";
    char held[HELD_SIZE] = "reservations";
    if (read) snprintf(held, sizeof held, "%llu in %llu %s", (unsigned long long)usage.used,
                       (unsigned long long)usage.active, usage.active == 1 ? "reservation" : "reservations");
    snprintf(err, err_size, IN_USE_SENTENCE, def->key, held, from, to);
}

void rl__service_backend_refused(rl_service *service, rl_service_put *put, rl_status status,
                                 const rl_limit_def *previous) {
    if (status == RL_LIMIT_IN_USE) {
        rl__service_in_use_detail(service, &put->def, previous, put->err, sizeof put->err);
        put->status = RL_LIMIT_IN_USE;
    } else if (status == RL_INVALID_REQUEST) { /* valid, but not for this backend */
        snprintf(put->err, sizeof put->err,
                 "the %s backend cannot count this limit of kind \"%s\" (a time zone this machine's tzdata lacks?)",
                 service->backend_name, rl_kind_name(put->def.kind));
        put->status = RL_INVALID_REQUEST;
    } else {
        snprintf(put->err, sizeof put->err, "the %s backend refused the definition: %s", service->backend_name,
                 rl_status_name(status));
        put->status = RL_BACKEND_ERROR;
    }
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const rl_limit_def *)a)->key, ((const rl_limit_def *)b)->key);
}

rl_status rl_service_list_usage(rl_service *service, size_t max, rl_service_limit **out, size_t *count,
                                size_t *total) {
    *out = NULL;
    *count = *total = 0;
    rl_limit_def *defs = NULL;
    size_t n = 0;
    /* The authority: the store many daemons share, else the registry
     * (never replaced in local mode, thread-safe on its own). */
    rl_status status = rl_backend_is_shared(service->backend) ? rl_backend_list_definitions(service->backend, &defs, &n)
                                                              : rl_registry_list(service->registry, &defs, &n);
    if (status != RL_OK) {
        free(defs);
        return status == RL_NO_MEMORY ? RL_NO_MEMORY : RL_BACKEND_ERROR;
    }
    if (n > 1) qsort(defs, n, sizeof *defs, by_key);
    size_t shown = n < max ? n : max;
    rl_service_limit *limits = shown > 0 ? calloc(shown, sizeof *limits) : NULL;
    if (shown > 0 && limits == NULL) status = RL_NO_MEMORY;
    for (size_t i = 0; i < shown && status == RL_OK; i++) {
        limits[i].def = defs[i];
        status = rl__service_read_usage(service, &defs[i], &limits[i].usage);
    }
    free(defs);
    if (status != RL_OK) {
        free(limits);
        return status;
    }
    *out = limits;
    *count = shown;
    *total = n;
    return RL_OK;
}
