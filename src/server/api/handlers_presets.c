/* handlers_presets.c — GET /v1/admin/presets and PUT
 * /v1/admin/presets/{name}/apply: the built-in provider presets
 * (ratelimiter/presets.h), and applying one.
 *
 * An apply is the preset's limits as puts of origin "preset:<name>"
 * (rl_service_preset_puts), handed to the admin writer as one change, so
 * that they are one registry write, in order with the PUTs and DELETEs
 * around them, and answered once durable. The rule that explicit limits
 * win is the service's (service.h), decided under its admin mutex.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/preset_rule.h"
#include "server/api/admin_change.h"
#include "server/api/endpoints.h"
#include "server/api/percent_decode.h"
#include "server/api/respond.h"
#include "wire/wire.h"

#define APPLY_SUFFIX "/apply"

static void append_member(rl_buf *buf, const char *name, const char *value) {
    rl__buf_append_str(buf, name);
    rl__buf_append_json_string(buf, value, strlen(value));
}

void rl__admin_presets_list(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                            rl_http_response *res) {
    (void)route;
    (void)req;
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"presets\":[");
    for (size_t p = 0; p < rl_preset_count(); p++) {
        const rl_preset *preset = rl_preset_at(p);
        if (p > 0) rl__buf_append(buf, ",", 1);
        append_member(buf, "{\"name\":", preset->name);
        append_member(buf, ",\"provider\":", preset->provider);
        append_member(buf, ",\"tier\":", preset->tier);
        append_member(buf, ",\"as_of\":", preset->as_of);
        append_member(buf, ",\"source\":", preset->source);
        append_member(buf, ",\"note\":", preset->note);
        rl__buf_append_str(buf, ",\"limits\":[");
        for (size_t i = 0; i < rl_preset_limit_count(preset); i++) {
            rl_limit_def def;
            rl_preset_limit(preset, i, &def);
            if (i > 0) rl__buf_append(buf, ",", 1);
            rl__wire_encode_limit_def(buf, &def);
        }
        rl__buf_append_str(buf, "]}");
    }
    rl__buf_append_str(buf, "]}");
    res->status = 200;
    res->body = buf;
}

/* The preset the path names: "<prefix><name>/apply", the name
 * percent-decoded as a key in a path is; NULL, with why in detail, for a
 * path of another shape or a name no preset has. */
static const rl_preset *preset_of_path(const rl_api_route *route, const rl_http_request *req, char *detail,
                                       size_t detail_size) {
    const char *rest = req->path + route->path_len;
    size_t rest_len = req->path_len - route->path_len, suffix_len = sizeof APPLY_SUFFIX - 1;
    if (rest_len <= suffix_len || memcmp(rest + rest_len - suffix_len, APPLY_SUFFIX, suffix_len) != 0) {
        snprintf(detail, detail_size, "a preset is applied with PUT /v1/admin/presets/{name}/apply");
        return NULL;
    }
    char name[RL_PRESET_NAME_MAX_LEN + 1];
    const rl_preset *preset = NULL;
    if (rl_percent_decode(rest, rest_len - suffix_len, name, sizeof name) >= 0) preset = rl_preset_find(name);
    else name[0] = '\0'; /* not a name any preset could have */
    if (preset == NULL) rl__preset_unknown(name, detail, detail_size);
    return preset;
}

bool rl__admin_preset_apply_start(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                                  rl_api_call *call, rl_http_response *res) {
    rl_admin_job *job = &call->admin_put;
    char detail[512];
    call->preset = preset_of_path(route, req, detail, sizeof detail);
    if (call->preset == NULL) {
        rl__admin_change_refused(ctx, res, 404, RL_INVALID_REQUEST, NULL, detail);
        return true;
    }
    /* Everything this call does is in its path: a body asks for something
     * this daemon does not do (an option of a later version, say), and is
     * refused rather than ignored. */
    if (req->body_len > 0) {
        rl__admin_change_refused(ctx, res, 400, RL_INVALID_REQUEST, NULL,
                             "PUT /v1/admin/presets/{name}/apply takes no body");
        return true;
    }
    job->puts = calloc(RL_PRESET_MAX_LIMITS, sizeof *job->puts);
    if (job->puts == NULL) {
        rl__admin_change_refused(ctx, res, 503, RL_BACKEND_ERROR, NULL, NULL);
        return true;
    }
    job->count = rl_service_preset_puts(&call->preset, 1, job->puts);
    if (job->count == 0) { /* "local": nothing to define, nothing to wait for */
        route->finish(ctx, call, res);
        return true;
    }
    return rl__admin_change_submit(ctx, route, call, res);
}

/* A put the service could not do for a reason that is not this key's own
 * (the store or the registry file failed): the whole apply failed. */
static bool failed_whole(const rl_service_put *put) {
    return put->status != RL_OK && put->status != RL_INVALID_REQUEST && put->status != RL_LIMIT_IN_USE;
}

void rl__admin_preset_apply_finish(rl_handler_ctx *ctx, rl_api_call *call, rl_http_response *res) {
    const rl_admin_job *job = &call->admin_put;
    for (size_t i = 0; i < job->count; i++) {
        if (!failed_whole(&job->puts[i])) continue;
        char what[64 + RL_PRESET_NAME_MAX_LEN];
        snprintf(what, sizeof what, "PUT /v1/admin/presets/%s/apply of", call->preset->name);
        rl__admin_change_failed(ctx, res, what, &job->puts[i]);
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    append_member(buf, "{\"ok\":true,\"preset\":", call->preset->name);
    rl__buf_append_str(buf, ",\"limits\":[");
    for (size_t i = 0; i < job->count; i++) {
        const rl_service_put *put = &job->puts[i];
        rl_preset_outcome outcome = put->status == RL_OK ? put->outcome : RL_PRESET_REFUSED;
        if (i > 0) rl__buf_append(buf, ",", 1);
        append_member(buf, "{\"key\":", put->def.key);
        append_member(buf, ",\"result\":", rl_preset_outcome_name(outcome));
        if (outcome == RL_PRESET_DEFINED || outcome == RL_PRESET_UPDATED) {
            append_member(buf, ",\"status\":", rl_limit_status_name(put->limit_status));
        } else if (outcome == RL_PRESET_REFUSED) {
            rl__buf_append_str(buf, ",\"error\":");
            rl_respond_append_error_string(buf, put->status, NULL);
            rl_respond_append_detail(buf, put->err);
        }
        rl__buf_append_str(buf, "}");
    }
    rl__buf_append_str(buf, "]}");
    res->status = 200;
    res->body = buf;
}

void rl__admin_preset_apply_end(rl_api_call *call) {
    free(call->admin_put.puts);
    call->admin_put.puts = NULL;
    call->admin_put.count = 0;
    call->preset = NULL;
}
