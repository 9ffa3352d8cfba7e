/* decode_response.c — the daemon's reserve and complete answers, read by the
 * http limiter with the same strict scanner the server reads requests with.
 *
 * Strict about shape, because a body we cannot read fully is a transport
 * failure to the client (retried with the same lease ids), never a guess: a
 * result without "allowed", a batch with the wrong number of results, a
 * truncated body all fail. Unknown members are skipped (a newer daemon may
 * add fields, the 400 bodies carry "detail").
 */
#include <string.h>

#include "ratelimiter/keys.h"
#include "wire/decode_common.h"
#include "wire/wire.h"

/* Statuses whose wire string is "<name>:<key>" (docs/api.md, Errors). */
static const rl_status keyed_statuses[] = {RL_UNKNOWN_LIMIT_KEY, RL_LIMIT_DECREASING,
                                           RL_EXCEEDS_CAPACITY};

bool rl__wire_parse_error_string(const char *text, rl_status *status, const char **key) {
    *key = NULL;
    if (text[0] == '\0') {
        *status = RL_OK;
        return true;
    }
    if (strcmp(text, "invalid_request") == 0) {
        *status = RL_INVALID_REQUEST;
        return true;
    }
    if (strcmp(text, "backend_error") == 0) {
        *status = RL_BACKEND_ERROR;
        return true;
    }
    if (strcmp(text, "lease_id_conflict") == 0) {
        *status = RL_LEASE_ID_CONFLICT;
        return true;
    }
    for (size_t i = 0; i < sizeof keyed_statuses / sizeof keyed_statuses[0]; i++) {
        const char *name = rl_status_wire(keyed_statuses[i]);
        size_t name_len = strlen(name);
        if (strncmp(text, name, name_len) != 0) continue;
        const char *rest = text + name_len;
        if (*rest == '\0') { /* the single complete writes the name alone */
            *status = keyed_statuses[i];
            return true;
        }
        if (*rest != ':') continue;
        rest++;
        while (*rest == ' ') rest++; /* api.md's examples put a space there */
        /* A daemon only names keys (1..256 printable ASCII): anything else
         * is not its answer. */
        if (*rest != '\0' && !rl_key_is_valid(rest, strlen(rest))) return false;
        *status = keyed_statuses[i];
        *key = *rest != '\0' ? rest : NULL;
        return true;
    }
    return false;
}

static bool read_error(rl__json_scan *s, rl_status *status, const char **key) {
    const char *at = s->cur;
    char *text;
    size_t len;
    if (!rl__scan_string(s, &text, &len)) return false;
    if (!rl__wire_parse_error_string(text, status, key)) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
    return true;
}

/* {"key":..,"reason":..,"requested":..,"available":..,"capacity":..}, and a
 * budget's "period_end_unix_ms"; other members are skipped. */
static bool read_denial(rl__json_scan *s, rl_denial *out) {
    const char *at = s->cur;
    memset(out, 0, sizeof *out);
    if (!rl__scan_object_open(s)) return false;
    char *name, *text;
    size_t name_len, len;
    int more = -1;
    bool ok = true, have_key = false, have_reason = false;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        if (strcmp(name, "key") == 0) {
            ok = rl__scan_string(s, &text, &len);
            out->key = text;
            have_key = ok && rl_key_is_valid(text, len); /* a daemon only names keys */
        } else if (strcmp(name, "reason") == 0) {
            ok = rl__scan_string(s, &text, &len);
            have_reason = ok && rl_denial_reason_parse(text, &out->reason);
        } else if (strcmp(name, "requested") == 0) {
            ok = rl__read_u64(s, &out->requested);
        } else if (strcmp(name, "available") == 0) {
            ok = rl__read_u64(s, &out->available);
        } else if (strcmp(name, "capacity") == 0) {
            ok = rl__read_u64(s, &out->capacity);
        } else if (strcmp(name, "period_end_unix_ms") == 0) {
            ok = rl__read_u64(s, &out->period_end_unix_ms);
        } else {
            ok = rl__scan_skip(s);
        }
    }
    if (!ok || more != 0) return false;
    if (!have_key || !have_reason) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
    return true;
}

/* {"allowed":..,"retry_after_ms":..,"reserved_at_unix_ms":..,"error":..},
 * and since 0.2 "denied_by" on a denial (absent from older daemons: key
 * NULL), and "dry_run" on the answer to a dry run (daemons without dry
 * runs never send it). */
static bool read_reserve_result(rl__json_scan *s, rl_wire_reserve_answer *out) {
    memset(out, 0, sizeof *out);
    if (!rl__scan_object_open(s)) return false;
    bool have_allowed = false, have_error = false, ok = true;
    char *name;
    size_t name_len;
    int more = -1;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        if (strcmp(name, "allowed") == 0) {
            ok = rl__read_bool(s, &out->allowed);
            have_allowed = true;
        } else if (strcmp(name, "retry_after_ms") == 0) {
            ok = rl__read_u64(s, &out->retry_after_ms);
        } else if (strcmp(name, "reserved_at_unix_ms") == 0) {
            ok = rl__read_u64(s, &out->reserved_at_unix_ms);
        } else if (strcmp(name, "error") == 0) {
            ok = read_error(s, &out->status, &out->status_key);
            have_error = true;
        } else if (strcmp(name, "denied_by") == 0) {
            ok = read_denial(s, &out->denied_by);
        } else if (strcmp(name, "dry_run") == 0) {
            ok = rl__read_bool(s, &out->dry_run);
        } else {
            ok = rl__scan_skip(s);
        }
    }
    if (!ok || more != 0 || !have_allowed || !have_error) return false;
    if (!out->allowed) out->reserved_at_unix_ms = 0;
    if (out->allowed) memset(&out->denied_by, 0, sizeof out->denied_by);
    return true;
}

/* {"ok":..,"error":..}; "error" may be missing (an older daemon wrote {"ok":true}). */
static bool read_complete_result(rl__json_scan *s, rl_status *status) {
    if (!rl__scan_object_open(s)) return false;
    bool have_ok = false, ok_value = false, ok = true;
    rl_status error = RL_OK;
    const char *key;
    char *name;
    size_t name_len;
    int more = -1;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        if (strcmp(name, "ok") == 0) {
            ok = rl__read_bool(s, &ok_value);
            have_ok = true;
        } else if (strcmp(name, "error") == 0) {
            ok = read_error(s, &error, &key);
        } else {
            ok = rl__scan_skip(s);
        }
    }
    if (!ok || more != 0 || !have_ok) return false;
    /* ok:false without a reason is still a failure the caller must see. */
    *status = ok_value ? RL_OK : (error != RL_OK ? error : RL_BACKEND_ERROR);
    return true;
}

typedef bool (*read_item_fn)(rl__json_scan *s, void *items, size_t index);

static bool read_reserve_item(rl__json_scan *s, void *items, size_t index) {
    return read_reserve_result(s, (rl_wire_reserve_answer *)items + index);
}

static bool read_complete_item(rl__json_scan *s, void *items, size_t index) {
    return read_complete_result(s, (rl_status *)items + index);
}

/* {"results":[item,...]} with exactly count items. */
static bool read_results(rl__json_scan *s, read_item_fn read_item, void *items, size_t count) {
    if (!rl__scan_object_open(s)) return false;
    bool have_results = false, ok = true;
    char *name;
    size_t name_len;
    int more = -1;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        if (strcmp(name, "results") != 0 || have_results) {
            ok = rl__scan_skip(s);
            continue;
        }
        have_results = true;
        if (!rl__scan_array_open(s)) return false;
        size_t n = 0;
        int element = -1;
        while (ok && (element = rl__scan_element(s, n)) > 0) {
            if (n >= count) return false; /* more results than requests */
            ok = read_item(s, items, n);
            n++;
        }
        ok = ok && element == 0 && n == count;
    }
    return ok && more == 0 && have_results;
}

rl_status rl__wire_decode_reserve_answer(char *body, size_t len, rl_wire_reserve_answer *out) {
    rl__json_scan s;
    rl__scan_init(&s, body, len);
    if (read_reserve_result(&s, out) && rl__scan_end(&s)) return RL_OK;
    return RL_INVALID_REQUEST;
}

rl_status rl__wire_decode_reserve_batch_answer(char *body, size_t len, rl_wire_reserve_answer *out,
                                               size_t count) {
    rl__json_scan s;
    rl__scan_init(&s, body, len);
    if (read_results(&s, read_reserve_item, out, count) && rl__scan_end(&s)) return RL_OK;
    return RL_INVALID_REQUEST;
}

rl_status rl__wire_decode_complete_answer(char *body, size_t len, rl_status *status) {
    rl__json_scan s;
    rl__scan_init(&s, body, len);
    if (read_complete_result(&s, status) && rl__scan_end(&s)) return RL_OK;
    return RL_INVALID_REQUEST;
}

rl_status rl__wire_decode_complete_batch_answer(char *body, size_t len, rl_status *statuses,
                                                size_t count) {
    rl__json_scan s;
    rl__scan_init(&s, body, len);
    if (read_results(&s, read_complete_item, statuses, count) && rl__scan_end(&s)) return RL_OK;
    return RL_INVALID_REQUEST;
}
