/* encode.c — the response shapes of api.md for reserve and complete.
 *
 * Hand-written appends in a fixed field order: this runs for every request,
 * and cJSON_Print would build and free a tree for a few dozen bytes.
 */
#include <string.h>

#include "wire/buf_escape.h"
#include "wire/wire.h"

#define LIT(buf, text) rl__buf_append((buf), (text), sizeof(text) - 1)

/* Statuses whose wire string is followed by ":<key>" (docs/api.md, Errors). */
static bool names_a_key(rl_status status) {
    return status == RL_UNKNOWN_LIMIT_KEY || status == RL_LIMIT_DECREASING ||
           status == RL_EXCEEDS_CAPACITY;
}

void rl__wire_encode_error_string(rl_buf *buf, rl_status status, const char *status_key) {
    const char *wire = rl_status_wire(status);
    if (!names_a_key(status) || status_key == NULL) {
        rl__buf_append_json_string(buf, wire, strlen(wire));
        return;
    }
    /* "<wire>:<key>" as one JSON string; keys may hold '"' and '\\'. */
    rl__buf_append(buf, "\"", 1);
    rl__buf_append_str(buf, wire);
    rl__buf_append(buf, ":", 1);
    rl__buf_append_json_escaped(buf, status_key, strnlen(status_key, RL_KEY_MAX_LEN));
    rl__buf_append(buf, "\"", 1);
}

void rl__wire_encode_denied_by(rl_buf *buf, const char *key, const rl_denial *d) {
    LIT(buf, "\"denied_by\":{\"key\":");
    rl__buf_append_json_string(buf, key, strlen(key));
    LIT(buf, ",\"reason\":\"");
    rl__buf_append_str(buf, rl_denial_reason_name(d->reason));
    LIT(buf, "\",\"requested\":");
    rl__buf_append_u64(buf, d->requested);
    LIT(buf, ",\"available\":");
    rl__buf_append_u64(buf, d->available);
    LIT(buf, ",\"capacity\":");
    rl__buf_append_u64(buf, d->capacity);
    if (d->period_end_unix_ms != 0) {
        LIT(buf, ",\"period_end_unix_ms\":");
        rl__buf_append_u64(buf, d->period_end_unix_ms);
    }
    LIT(buf, "}");
}

void rl__wire_encode_reserve_result(rl_buf *buf, const rl_reserve_result *result, bool dry_run) {
    if (result->allowed) {
        LIT(buf, "{\"allowed\":true,\"retry_after_ms\":");
    } else {
        LIT(buf, "{\"allowed\":false,\"retry_after_ms\":");
    }
    rl__buf_append_u64(buf, result->retry_after_ms);
    LIT(buf, ",\"reserved_at_unix_ms\":");
    /* api.md: reserved_at_unix_ms is 0 on a denial, whatever the backend left there. */
    rl__buf_append_u64(buf, result->allowed ? result->reserved_at_unix_ms : 0);
    LIT(buf, ",\"error\":");
    rl__wire_encode_error_string(buf, result->status, result->status_key);
    if (result->status == RL_LEASE_ID_CONFLICT) LIT(buf, ",\"detail\":\"" RL_WIRE_LEASE_ID_CONFLICT_DETAIL "\"");
    /* An undefined key: what to do about it (a single reserve's 404, a batch item). */
    if (result->status == RL_UNKNOWN_LIMIT_KEY && result->status_key != NULL) {
        LIT(buf, ",\"detail\":\"no limit has the key ");
        rl__buf_append_json_escaped(buf, result->status_key, strnlen(result->status_key, RL_KEY_MAX_LEN));
        LIT(buf, ": define it (PUT /v1/admin/limits, or a template that matches it) and retry; "
                 "nothing was reserved\"");
    }
    const rl_denial *d = &result->denied_by;
    if (!result->allowed && d->key != NULL) {
        LIT(buf, ",");
        rl__wire_encode_denied_by(buf, d->key, d);
    }
    /* Last, so that the rest is exactly a reserve's answer; a client that
     * asked for a dry run reads it to know that the daemon did not reserve
     * (one before dry runs ignores the member, and reserves). */
    if (dry_run) LIT(buf, ",\"dry_run\":true");
    LIT(buf, "}");
}

void rl__wire_encode_complete_result(rl_buf *buf, rl_status status) {
    if (status == RL_OK) {
        LIT(buf, "{\"ok\":true,\"error\":\"\"}");
        return;
    }
    LIT(buf, "{\"ok\":false,\"error\":");
    rl__wire_encode_error_string(buf, status, NULL);
    LIT(buf, "}");
}
