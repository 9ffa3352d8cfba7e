/* server/service_internal.h — private to service*.c: the service's state,
 * its two modes behind one interface, and what both say about usage. See
 * service.h for the modes. */
#ifndef RL_SERVER_SERVICE_INTERNAL_H
#define RL_SERVER_SERVICE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/template_set.h"
#include "ratelimiter/registry.h"
#include "server/service.h"

struct rl_service {
    rl_registry *registry; /* shared mode: replaced only under admin_mutex */
    rl_backend *backend;
    const char *backend_name;
    const struct rl_service_mode *mode; /* local or shared: who is the authority on limits */
    char *registry_path; /* copy, to reopen the registry after a bulk refresh */
    size_t max_limits;   /* the registry's bound, 0 replaced by the default */
    /* Serialises admin puts and makes reads see a put whole (registry and
     * backend both updated), never half. Not taken on the hot path. */
    pthread_mutex_t admin_mutex;
    /* Local mode: the registry's templates, to say which makes a key's
     * definition (GET of a key no definition names). Under admin_mutex. */
    rl__template_set *templates;
};

/* The service's two modes (service.h), one interface: the registry is the
 * authority (local, service_local.c) or the backend is (shared,
 * service_shared.c). Each call as the service.h call of the same name;
 * put_limits does the puts whose status is RL_OK (the valid ones), all of
 * them RL_SERVICE_PUT (service.c cuts a group into runs of puts), and
 * delete_limit one valid delete, its answer in put; count says why in err
 * when it fails. */
typedef struct rl_service_mode {
    const char *name;
    rl_status (*open)(rl_service *service, char *err, size_t err_size);
    void (*put_limits)(rl_service *service, rl_service_put *puts, size_t count);
    void (*delete_limit)(rl_service *service, rl_service_put *put);
    /* One valid template change (RL_SERVICE_PUT_TEMPLATE or
     * RL_SERVICE_DELETE_TEMPLATE), its answer in put. */
    void (*change_template)(rl_service *service, rl_service_put *put);
    rl_status (*list_templates)(rl_service *service, rl_limit_def **out, size_t *count);
    rl_status (*get)(rl_service *service, const char *key, rl_service_limit *out);
    rl_status (*list)(rl_service *service, rl_service_limit **out, size_t *count);
    rl_status (*count)(rl_service *service, size_t *count, char *err, size_t err_size);
} rl_service_mode;

extern const rl_service_mode rl__service_local_mode;
extern const rl_service_mode rl__service_shared_mode;

/* ---- what both modes say about templates (service_templates.c) ---- */

/* The answer of a template change the backend refused with status (or
 * that failed): 409 limit_in_use / 400 invalid_request with why, or the
 * failure with a sentence for the operator. */
void rl__service_template_refused(rl_service *service, rl_service_put *put, rl_status status);

/* out for key made from the template of templates that matches it (its
 * definition, live usage, and pattern): RL_OK, RL_UNKNOWN_LIMIT_KEY (none
 * matches), or the backend's failure. */
rl_status rl__service_get_made(rl_service *service, const rl__template_set *templates, const char *key,
                               rl_service_limit *out);

/* ---- what both modes say about usage (service_usage.c) ---- */

/* Usage of a defined limit; a backend that does not know the key reads as
 * idle. Returns RL_OK, or the backend's failure (RL_BACKEND_ERROR...). */
rl_status rl__service_read_usage(rl_service *service, const rl_limit_def *def, rl_limit_usage *usage);

/* Why the backend refused def with RL_LIMIT_IN_USE (a change of kind while
 * the limit holds reservations), in err: what it holds and when it can change. */
void rl__service_in_use_detail(rl_service *service, const rl_limit_def *def, const rl_limit_def *previous, char *err,
                               size_t err_size);

/* put's answer (previous: the definition before it, or NULL) when the
 * backend refused its definition with status: 409
 * limit_in_use with what the limit holds, 400 invalid_request for a kind
 * the backend does not count (a budget on redis), or backend_error with why. */
void rl__service_backend_refused(rl_service *service, rl_service_put *put, rl_status status,
                                 const rl_limit_def *previous);

/* ---- who made a definition: provider presets (service_preset.c) ---- */

/* Whether a preset's put (put->origin not "") goes ahead against what its
 * key holds now (held, NULL for nothing, made by held_origin): sets
 * put->outcome (core/preset_rule.h decides). false: it is answered RL_OK as
 * it is, kept (the operator's) or unchanged, and writes nothing. */
bool rl__service_preset_goes(rl_service_put *put, const rl_limit_def *held, const char *held_origin);

/* Whether put, answered RL_OK, wrote nothing (a preset's kept or unchanged). */
bool rl__service_put_skipped(const rl_service_put *put);

/* out->preset: the preset origin names ("preset:<name>"), or, with origin
 * NULL (shared mode, no origins kept), the preset whose definition out->def
 * is exactly; "" for the operator's. */
void rl__service_limit_source(rl_service_limit *out, const char *origin);

#endif
