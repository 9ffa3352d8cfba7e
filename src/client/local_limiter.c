/* local_limiter.c — the Limiter on the memory backend, in this process
 * (spec §11.3 "single-binary mode"): limits come from a limits.json file
 * read once through the registry's loader; no daemon, no network. The
 * backend keeps a journal and an audit log when the options ask for them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/call_check.h"
#include "client/last_error.h"
#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "core/template_pattern.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/registry.h"

typedef struct local_limiter {
    rl_limiter base;
    rl_backend *backend;
} local_limiter;

static rl_backend *backend_of(rl_limiter *limiter) { return ((local_limiter *)limiter)->backend; }

/* Checks every request first: the backend is given only valid ones, and a
 * bad one changes nothing (the whole call is refused, as over HTTP). */
static rl_status local_reserve_batch(rl_limiter *limiter, const rl_reserve_request *requests, size_t count,
                                     rl_reserve_result *results) {
    rl_status checked = rl__check_reserve_call(requests, count, results);
    if (checked != RL_OK) return checked;
    rl_backend_reserve_batch(backend_of(limiter), requests, count, results);
    /* As over HTTP: a lone reserve the backend could not decide is a failed
     * call (503); in a batch it is that lease's result. */
    if (count == 1 && (results[0].status == RL_BACKEND_ERROR || results[0].status == RL_NO_MEMORY))
        return rl__last_error_set(RL_BACKEND_ERROR, "the memory backend could not decide: %s",
                                  rl_status_name(results[0].status));
    for (size_t i = 0; i < count; i++)
        if (results[i].status == RL_NO_MEMORY) results[i].status = RL_BACKEND_ERROR;
    return RL_OK;
}

static rl_status local_complete_batch(rl_limiter *limiter, const rl_complete_request *requests, size_t count,
                                      rl_status *statuses) {
    rl_status checked = rl__check_complete_call(requests, count, statuses);
    if (checked != RL_OK) return checked;
    rl_backend_complete_batch(backend_of(limiter), requests, count, statuses);
    return RL_OK;
}

/* Straight to the backend, as the daemon's endpoint does: the same page. */
static rl_status local_audit(rl_limiter *limiter, const rl_audit_query *query, rl_audit_page *page) {
    rl_status checked = rl__check_audit_call(query, page);
    if (checked != RL_OK) return checked;
    rl_status status = rl_backend_audit_query(backend_of(limiter), query, page);
    if (status == RL_OK) return RL_OK;
    page->count = 0;
    return rl__last_error_set(RL_BACKEND_ERROR, "the memory backend could not read its audit log: %s",
                              rl_status_name(status));
}

static void local_destroy(rl_limiter *limiter) {
    rl_backend_destroy(backend_of(limiter));
    free(limiter);
}

static const rl_limiter_ops local_ops = {
    .abi_version = RL_LIMITER_ABI_VERSION,
    .name = "local",
    .reserve_batch = local_reserve_batch,
    .complete_batch = local_complete_batch,
    .destroy = local_destroy,
    .audit = local_audit,
};

rl_status rl_limiter_local_define(rl_limiter *limiter, const rl_limit_def *def, rl_limit_status *out_status) {
    char err[RL_LIMITER_ERR_SIZE];
    rl__last_error_clear();
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST, "not a local limiter: define limits on the daemon (PUT /v1/admin/limits)");
    if (def == NULL || !rl_limit_def_validate(def, err, sizeof err))
        return rl__last_error_set(RL_INVALID_REQUEST, "%s", def == NULL ? "no definition" : err);
    rl_status status = rl_backend_apply_definition(backend_of(limiter), def, out_status);
    return status == RL_OK ? RL_OK : rl__last_error_set(status, "the memory backend refused \"%s\"", def->key);
}

rl_status rl_limiter_local_delete(rl_limiter *limiter, const char *key) {
    rl__last_error_clear();
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST, "not a local limiter: delete limits on the daemon (DELETE /v1/admin/limits/{key})");
    if (key == NULL || !rl_key_is_valid(key, strnlen(key, RL_KEY_MAX_LEN + 1)))
        return rl__last_error_set(RL_INVALID_REQUEST, "key must be 1..%d printable ASCII characters without spaces",
                                  RL_KEY_MAX_LEN);
    rl_status status = rl_backend_delete_definition(backend_of(limiter), key);
    if (status == RL_OK) return RL_OK;
    if (status == RL_UNKNOWN_LIMIT_KEY) return rl__last_error_set(status, "no limit has the key \"%s\"", key);
    return rl__last_error_set(status, "the memory backend could not delete \"%s\"", key);
}

rl_status rl_limiter_local_define_template(rl_limiter *limiter, const rl_limit_def *def) {
    char err[RL_LIMITER_ERR_SIZE];
    rl__last_error_clear();
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST, "not a local limiter: define templates on the daemon (PUT /v1/admin/templates)");
    rl__template_pattern pattern;
    if (def == NULL || !rl__template_pattern_parse(def->key, strnlen(def->key, sizeof def->key), &pattern, err, sizeof err) ||
        !rl_limit_def_validate(def, err, sizeof err))
        return rl__last_error_set(RL_INVALID_REQUEST, "%s", def == NULL ? "no template" : err);
    rl_status status = rl_backend_put_template(backend_of(limiter), def);
    if (status == RL_LIMIT_IN_USE)
        return rl__last_error_set(status, "a limit made from template \"%s\" holds reservations of another kind",
                                  def->key);
    return status == RL_OK ? RL_OK : rl__last_error_set(status, "the memory backend refused template \"%s\"", def->key);
}

rl_status rl_limiter_local_delete_template(rl_limiter *limiter, const char *pattern) {
    rl__last_error_clear();
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST, "not a local limiter: delete templates on the daemon (DELETE /v1/admin/templates/{pattern})");
    if (pattern == NULL || !rl_key_is_valid(pattern, strnlen(pattern, RL_KEY_MAX_LEN + 1)))
        return rl__last_error_set(RL_INVALID_REQUEST, "pattern must be 1..%d printable ASCII characters without spaces",
                                  RL_KEY_MAX_LEN);
    rl_status status = rl_backend_delete_template(backend_of(limiter), pattern);
    if (status == RL_OK) return RL_OK;
    if (status == RL_UNKNOWN_LIMIT_KEY) return rl__last_error_set(status, "no template has the pattern \"%s\"", pattern);
    return rl__last_error_set(status, "the memory backend could not delete template \"%s\"", pattern);
}

/* Gives the backend every definition and template of the file. */
static rl_status load_limits(const char *path, rl_backend *backend, char *err) {
    rl_registry *registry = NULL;
    rl_status status = rl_registry_open(path, 0, &registry, err, RL_LIMITER_ERR_SIZE);
    if (status != RL_OK) return status;
    rl_limit_def *defs = NULL;
    size_t count = 0;
    status = rl_registry_list(registry, &defs, &count);
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        status = rl_backend_apply_definition(backend, &defs[i], NULL);
        if (status != RL_OK) rl__error_text(err, RL_LIMITER_ERR_SIZE,
                                            "%s: cannot apply limit \"%s\"", path, defs[i].key);
    }
    free(defs);
    defs = NULL;
    count = 0;
    if (status == RL_OK) status = rl_registry_list_templates(registry, &defs, &count);
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        status = rl_backend_put_template(backend, &defs[i]);
        if (status != RL_OK) rl__error_text(err, RL_LIMITER_ERR_SIZE,
                                            "%s: cannot apply template \"%s\"", path, defs[i].key);
    }
    free(defs);
    rl_registry_close(registry);
    return status;
}

rl_status rl_limiter_local_open(const char *limits_path, const rl_memory_options *options, rl_limiter **out,
                                char err[RL_LIMITER_ERR_SIZE]) {
    *out = NULL;
    err[0] = '\0';
    /* The registry starts empty when its file is missing; a limiter
     * configured from a file that is not there is a mistake. */
    if (limits_path == NULL || access(limits_path, R_OK) != 0) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE,
                       "%s: cannot read the limits file", limits_path ? limits_path : "(null)");
        return RL_IO_ERROR;
    }
    local_limiter *limiter = calloc(1, sizeof *limiter);
    if (limiter == NULL) return RL_NO_MEMORY;
    limiter->base.ops = &local_ops;
    /* open, not create: options may ask for a journal and an audit log. */
    rl_status status = rl_memory_backend_open(options, &limiter->backend, err, RL_LIMITER_ERR_SIZE);
    if (status == RL_OK) status = load_limits(limits_path, limiter->backend, err);
    if (status != RL_OK) {
        if (err[0] == '\0') rl__error_text(err, RL_LIMITER_ERR_SIZE, "cannot create the memory backend");
        local_destroy(&limiter->base);
        return status;
    }
    *out = &limiter->base;
    return RL_OK;
}
