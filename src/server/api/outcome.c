/* outcome.c — what an answered request was (outcome.h), read off its call. */
#include <string.h>

#include "server/api/endpoints.h"
#include "server/api/outcome.h"

static const char *const endpoint_names[] = {
#define RL_API_ENDPOINT_TEXT(name, text) text,
    RL_API_ENDPOINT_MAP(RL_API_ENDPOINT_TEXT)
#undef RL_API_ENDPOINT_TEXT
};

static const char *const result_names[] = {
#define RL_API_RESULT_TEXT(name, text) text,
    RL_API_RESULT_MAP(RL_API_RESULT_TEXT)
#undef RL_API_RESULT_TEXT
};

const char *rl_api_endpoint_name(rl_api_endpoint endpoint) {
    return (unsigned)endpoint < RL_API_ENDPOINT_COUNT ? endpoint_names[endpoint] : "unrouted";
}

const char *rl_api_result_name(rl_api_result result) {
    return (unsigned)result < RL_API_RESULT_COUNT ? result_names[result] : "backend_error";
}

static rl_api_result reserve_result_of(const rl_reserve_result *r) {
    if (r->allowed) return RL_API_RESULT_ALLOWED;
    switch (r->status) {
    case RL_OK:
        return r->denied_by.reason == RL_DENIAL_DECREASING         ? RL_API_RESULT_DENIED_DECREASING
               : r->denied_by.reason == RL_DENIAL_EXCEEDS_CAPACITY ? RL_API_RESULT_DENIED_EXCEEDS_CAPACITY
                                                                    : RL_API_RESULT_DENIED_CAPACITY;
    case RL_LIMIT_DECREASING: return RL_API_RESULT_DENIED_DECREASING;
    case RL_EXCEEDS_CAPACITY: return RL_API_RESULT_DENIED_EXCEEDS_CAPACITY;
    case RL_UNKNOWN_LIMIT_KEY: return RL_API_RESULT_UNKNOWN_KEY;
    case RL_LEASE_ID_CONFLICT: return RL_API_RESULT_LEASE_ID_CONFLICT;
    case RL_INVALID_REQUEST: return RL_API_RESULT_INVALID;
    default: return RL_API_RESULT_BACKEND_ERROR;
    }
}

static rl_api_result complete_result_of(rl_status status) {
    switch (status) {
    case RL_OK: return RL_API_RESULT_COMPLETED;
    case RL_INVALID_REQUEST: return RL_API_RESULT_INVALID;
    case RL_UNKNOWN_LIMIT_KEY: return RL_API_RESULT_UNKNOWN_KEY;
    default: return RL_API_RESULT_BACKEND_ERROR;
    }
}

static bool is_denial(rl_api_result result) {
    return result == RL_API_RESULT_DENIED_CAPACITY || result == RL_API_RESULT_DENIED_DECREASING ||
           result == RL_API_RESULT_DENIED_EXCEEDS_CAPACITY;
}

static void count(rl_api_outcome *out, rl_api_result result) {
    if (out->items == 0) out->first_result = result;
    out->items++;
    out->results[result]++;
}

/* A denied reserve item: the first one names the limit. */
static void note_denial(rl_api_outcome *out, const rl_reserve_request *request, const rl_reserve_result *r) {
    if (out->denied_by_key[0] != '\0') return;
    const char *key = r->denied_by.key != NULL ? r->denied_by.key : r->status_key;
    if (key == NULL) return;
    size_t len = strnlen(key, RL_KEY_MAX_LEN);
    memcpy(out->denied_by_key, key, len);
    out->denied_by_key[len] = '\0';
    out->denied_by = r->denied_by;
    out->denied_by.key = NULL;
    out->first_denied_lease_id = request->lease_id;
    out->first_denied_job_id = request->job_id;
    out->first_denied_retry_after_ms = r->retry_after_ms;
}

/* Reserve items: valid ones in the order of their results. */
static void read_reserves(const rl_lease_call *lease, rl_api_outcome *out) {
    const rl_reserve_request *items = lease->msg.reserves.requests;
    for (size_t i = 0, valid = 0; i < lease->count; i++) {
        const rl_reserve_request *request = &items[i];
        if (i == 0) {
            out->lease_id = request->lease_id;
            out->job_id = request->job_id;
        }
        if (lease->item_status[i] != RL_OK) {
            count(out, RL_API_RESULT_INVALID);
            continue;
        }
        const rl_reserve_result *r = &lease->results.reserves[valid];
        const rl_reserve_request *decided = &lease->requests.reserves[valid++];
        if (decided->dry_run) out->dry_run = true;
        rl_api_result result = reserve_result_of(r);
        count(out, result);
        if (is_denial(result)) note_denial(out, decided, r);
    }
}

static void read_completes(const rl_lease_call *lease, rl_api_outcome *out) {
    const rl_complete_request *items = lease->msg.completes.requests;
    for (size_t i = 0, valid = 0; i < lease->count; i++) {
        if (i == 0) {
            out->lease_id = items[i].lease_id;
            out->job_id = items[i].job_id;
        }
        count(out, lease->item_status[i] != RL_OK ? RL_API_RESULT_INVALID
                                                   : complete_result_of(lease->results.completes[valid++]));
    }
}

void rl_api_outcome_of(const rl_api_call *call, const rl_http_request *req, const rl_http_response *res,
                       rl_api_outcome *out) {
    memset(out, 0, sizeof *out);
    out->http_status = res->body == NULL || res->body->failed ? 503 : res->status;
    const rl_api_route *route = call != NULL ? call->route : NULL;
    if (route == NULL && req != NULL) {
        const char *allow;
        route = rl__api_route_of(req, &allow);
    }
    out->endpoint = route != NULL ? route->endpoint : RL_API_UNROUTED;
    if (call == NULL || call->route == NULL || route->lease == NULL) return;
    const rl_lease_call *lease = &call->lease;
    if (!lease->decoded || !lease->finished) {
        /* refused before the backend decided: one invalid (or unserved) item */
        count(out, out->http_status == 503 ? RL_API_RESULT_BACKEND_ERROR : RL_API_RESULT_INVALID);
        return;
    }
    if (route->endpoint == RL_API_RESERVE || route->endpoint == RL_API_RESERVE_BATCH) read_reserves(lease, out);
    else read_completes(lease, out);
}
