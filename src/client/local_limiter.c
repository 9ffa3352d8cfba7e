/* local_limiter.c — the Limiter on the memory backend, in this process
 * (single-binary mode: no daemon): limits come from a limits.json file
 * read once through the registry's loader; no daemon, no network. The
 * backend keeps a journal and an audit log when the options ask for them.
 * Limits change at run time by define, delete and apply_preset, serialised
 * by an admin mutex so that a preset never takes a key the operator is
 * defining; the hot path does not take it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/call_check.h"
#include "client/last_error.h"
#include "client/preset_marks.h"
#include "core/error_text.h"
#include "core/preset_rule.h"
#include "ratelimiter/keys.h"
#include "core/template_pattern.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/registry.h"

typedef struct local_limiter {
    rl_limiter base;
    rl_backend *backend;
    pthread_mutex_t admin_mutex; /* define, delete and apply_preset, and marks */
    rl__preset_marks marks;      /* the keys a preset made */
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
    local_limiter *local = (local_limiter *)limiter;
    rl_backend_destroy(local->backend);
    rl__preset_marks_free(&local->marks);
    pthread_mutex_destroy(&local->admin_mutex);
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
    local_limiter *local = (local_limiter *)limiter;
    pthread_mutex_lock(&local->admin_mutex);
    rl_status status = rl_backend_apply_definition(local->backend, def, out_status);
    if (status == RL_OK) rl__preset_marks_forget(&local->marks, def->key); /* the operator's now */
    pthread_mutex_unlock(&local->admin_mutex);
    return status == RL_OK ? RL_OK : rl__last_error_set(status, "the memory backend refused \"%s\"", def->key);
}

rl_status rl_limiter_local_delete(rl_limiter *limiter, const char *key) {
    rl__last_error_clear();
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST, "not a local limiter: delete limits on the daemon (DELETE /v1/admin/limits/{key})");
    if (key == NULL || !rl_key_is_valid(key, strnlen(key, RL_KEY_MAX_LEN + 1)))
        return rl__last_error_set(RL_INVALID_REQUEST, "key must be 1..%d printable ASCII characters without spaces",
                                  RL_KEY_MAX_LEN);
    local_limiter *local = (local_limiter *)limiter;
    pthread_mutex_lock(&local->admin_mutex);
    rl_status status = rl_backend_delete_definition(local->backend, key);
    if (status == RL_OK) rl__preset_marks_forget(&local->marks, key);
    pthread_mutex_unlock(&local->admin_mutex);
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

rl_status rl_limiter_local_apply_preset(rl_limiter *limiter, const char *name, rl_preset_result *results,
                                        size_t *count) {
    rl__last_error_clear();
    if (count != NULL) *count = 0;
    if (limiter == NULL || limiter->ops != &local_ops)
        return rl__last_error_set(RL_INVALID_REQUEST,
                                  "not a local limiter: apply presets on the daemon (PUT /v1/admin/presets/{name}/apply)");
    const rl_preset *preset = rl_preset_find(name);
    if (preset == NULL)
        return rl__last_error_set(RL_INVALID_REQUEST, "no preset named \"%.*s\" (rl_preset_at lists them)",
                                  RL_PRESET_NAME_MAX_LEN, name != NULL ? name : "");
    local_limiter *local = (local_limiter *)limiter;
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl__preset_origin(preset, origin);
    rl_status first_failure = RL_OK;
    size_t n = rl_preset_limit_count(preset);
    pthread_mutex_lock(&local->admin_mutex);
    for (size_t i = 0; i < n && i < RL_PRESET_MAX_LIMITS; i++) {
        rl_preset_result result = {.status = RL_OK, .limit_status = RL_LIMIT_STATUS_ACTIVE};
        rl_limit_def def;
        rl_preset_limit(preset, i, &def);
        memcpy(result.key, def.key, sizeof result.key);
        const rl__preset_mark *mark = rl__preset_marks_find(&local->marks, def.key);
        rl_limit_usage usage;
        if (mark != NULL) {
            result.outcome = rl__preset_outcome(&mark->def, mark->origin, &def, origin);
        } else {
            /* Held but not marked: the operator's, whatever it says. */
            bool held = rl_backend_limit_usage(local->backend, def.key, &usage) == RL_OK;
            result.outcome = rl__preset_outcome(held ? &def : NULL, "", &def, origin);
        }
        if (result.outcome == RL_PRESET_DEFINED || result.outcome == RL_PRESET_UPDATED) {
            result.status = rl_backend_apply_definition(local->backend, &def, &result.limit_status);
            if (result.status == RL_OK && !rl__preset_marks_set(&local->marks, &def, origin))
                result.status = RL_NO_MEMORY; /* applied, but it would read as the operator's */
            if (result.status != RL_OK) {
                result.outcome = RL_PRESET_REFUSED;
                if (first_failure == RL_OK) {
                    first_failure = result.status;
                    rl__last_error_set(result.status, "the memory backend could not apply \"%s\" of preset %s",
                                       def.key, preset->name);
                }
            }
        }
        if (results != NULL) results[i] = result;
    }
    pthread_mutex_unlock(&local->admin_mutex);
    if (count != NULL) *count = n;
    return first_failure;
}

/* Gives the backend every definition and template of the file, and marks the preset
 * ones: a limit the file's registry says a preset made, and one the journal
 * brought back (journal_defs: the backend's before the file was applied)
 * that the file does not hold and that is exactly what a preset makes. An
 * earlier run defined the latter at run time, and no origin was kept for
 * it, so its definition says who made it, as in a daemon's shared mode
 * (core/preset_rule.h). */
static rl_status load_limits(const char *path, local_limiter *limiter, const rl_limit_def *journal_defs,
                             size_t journal_count, char *err) {
    rl_registry *registry = NULL;
    rl_status status = rl_registry_open(path, 0, &registry, err, RL_LIMITER_ERR_SIZE);
    if (status != RL_OK) return status;
    rl_limit_def *defs = NULL;
    size_t count = 0;
    status = rl_registry_list(registry, &defs, &count);
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        status = rl_backend_apply_definition(limiter->backend, &defs[i], NULL);
        if (status != RL_OK) rl__error_text(err, RL_LIMITER_ERR_SIZE,
                                            "%s: cannot apply limit \"%s\"", path, defs[i].key);
        rl_limit_def def;
        char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
        if (status == RL_OK && rl_registry_get_origin(registry, defs[i].key, &def, origin) &&
            rl__preset_of_origin(origin) != NULL && !rl__preset_marks_set(&limiter->marks, &def, origin))
            status = RL_NO_MEMORY;
    }
    for (size_t i = 0; i < journal_count && status == RL_OK; i++) {
        rl_limit_def in_file;
        const rl_preset *preset = rl__preset_that_made(&journal_defs[i]);
        if (preset == NULL || rl_registry_get(registry, journal_defs[i].key, &in_file)) continue;
        char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
        rl__preset_origin(preset, origin);
        if (!rl__preset_marks_set(&limiter->marks, &journal_defs[i], origin)) status = RL_NO_MEMORY;
    }
    free(defs);
    defs = NULL;
    count = 0;
    if (status == RL_OK) status = rl_registry_list_templates(registry, &defs, &count);
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        status = rl_backend_put_template(limiter->backend, &defs[i]);
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
    if (pthread_mutex_init(&limiter->admin_mutex, NULL) != 0) {
        free(limiter);
        return RL_NO_MEMORY;
    }
    limiter->base.ops = &local_ops;
    /* open, not create: options may ask for a journal and an audit log. */
    rl_status status = rl_memory_backend_open(options, &limiter->backend, err, RL_LIMITER_ERR_SIZE);
    rl_limit_def *journal_defs = NULL;
    size_t journal_count = 0;
    if (status == RL_OK && options != NULL && options->journal_path != NULL)
        status = rl_memory_backend_definitions(limiter->backend, &journal_defs, &journal_count);
    if (status == RL_OK) status = load_limits(limits_path, limiter, journal_defs, journal_count, err);
    free(journal_defs);
    if (status != RL_OK) {
        if (err[0] == '\0') rl__error_text(err, RL_LIMITER_ERR_SIZE, "cannot create the memory backend");
        local_destroy(&limiter->base);
        return status;
    }
    *out = &limiter->base;
    return RL_OK;
}
