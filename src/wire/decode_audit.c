/* decode_audit.c — the daemon's answer to GET /v1/admin/audit, read by the
 * http limiter (wire.h: rl__wire_decode_audit_answer).
 *
 * The audit log is the billing truth, so an answer that is not exactly a
 * page of the asked key is refused rather than half-believed: a missing or
 * repeated field, an entry of another key, entries out of time order or
 * before since_unix_ms, more than asked for. The client treats a refusal
 * as a transport failure and asks again (a GET changes nothing). Unknown
 * members are skipped: a newer daemon may add fields.
 */
#include <stddef.h>
#include <string.h>

#include "core/lease_rules.h"
#include "wire/decode_common.h"
#include "wire/wire.h"

/* The fields of an entry, as bits of what was seen. */
enum {
    F_AT = 1u << 0,
    F_LEASE = 1u << 1,
    F_JOB = 1u << 2,
    F_KEY = 1u << 3,
    F_RESERVED = 1u << 4,
    F_ACTUAL = 1u << 5,
    F_PERIOD = 1u << 6,
    F_EXPIRED = 1u << 7,
    F_ALL = (1u << 8) - 1,
};

/* A string that ok() accepts, copied into out (out_size bytes, which holds
 * any string ok() accepts). */
static bool read_text(rl__json_scan *s, bool (*ok)(const char *, size_t), char *out, size_t out_size) {
    const char *at = s->cur;
    char *text;
    size_t len;
    if (!rl__scan_string(s, &text, &len)) return false;
    if (!ok(text, len) || len >= out_size) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
    memcpy(out, text, len + 1);
    return true;
}

/* Which field name is, and where its value goes; 0 for an unknown one. */
static unsigned read_field(rl__json_scan *s, const char *name, rl_audit_entry *e, bool *ok) {
    static const struct {
        const char *name;
        unsigned bit;
        size_t offset;
    } numbers[] = {
        {"at_unix_ms", F_AT, offsetof(rl_audit_entry, at_unix_ms)},
        {"reserved", F_RESERVED, offsetof(rl_audit_entry, reserved)},
        {"actual", F_ACTUAL, offsetof(rl_audit_entry, actual)},
        {"period_start_unix_ms", F_PERIOD, offsetof(rl_audit_entry, period_start_unix_ms)},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        if (strcmp(name, numbers[i].name) != 0) continue;
        *ok = rl__read_u64(s, (uint64_t *)((char *)e + numbers[i].offset));
        return numbers[i].bit;
    }
    if (strcmp(name, "lease_id") == 0) {
        *ok = read_text(s, rl__lease_id_ok, e->lease_id, sizeof e->lease_id);
        return F_LEASE;
    }
    if (strcmp(name, "job_id") == 0) {
        *ok = read_text(s, rl__job_id_ok, e->job_id, sizeof e->job_id);
        return F_JOB;
    }
    if (strcmp(name, "key") == 0) {
        *ok = read_text(s, rl__lease_key_ok, e->key, sizeof e->key);
        return F_KEY;
    }
    if (strcmp(name, "expired") == 0) {
        *ok = rl__read_bool(s, &e->expired);
        return F_EXPIRED;
    }
    *ok = rl__scan_skip(s);
    return 0;
}

/* One entry object: every field once. */
static bool read_entry(rl__json_scan *s, rl_audit_entry *e) {
    const char *at = s->cur;
    memset(e, 0, sizeof *e);
    if (!rl__scan_object_open(s)) return false;
    unsigned seen = 0;
    char *name;
    size_t name_len;
    int more = -1;
    bool ok = true;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        unsigned bit = read_field(s, name, e, &ok);
        if (ok && (seen & bit) != 0) return rl__scan_fail(s, RL__JSON_SYNTAX, at); /* a field twice */
        seen |= bit;
    }
    if (!ok || more != 0) return false;
    if (seen != F_ALL) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
    /* api.md: lease ids come back in upper case (the ULID is the same). */
    for (char *c = e->lease_id; *c != '\0'; c++)
        if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    return true;
}

/* An entry of the page asked for, after the one before it (NULL: first). */
static bool entry_belongs(const rl_audit_entry *e, const rl_audit_entry *before, const rl_audit_query *query) {
    if (strcmp(e->key, query->key) != 0 || e->at_unix_ms < query->since_unix_ms) return false;
    if (before != NULL && e->at_unix_ms < before->at_unix_ms) return false;
    return !e->expired || e->actual == 0;
}

static bool read_entries(rl__json_scan *s, const rl_audit_query *query, rl_audit_page *page) {
    if (!rl__scan_array_open(s)) return false;
    int element;
    while ((element = rl__scan_element(s, page->count)) > 0) {
        const char *at = s->cur;
        if (page->count == query->limit) return rl__scan_fail(s, RL__JSON_SYNTAX, at); /* more than asked */
        rl_audit_entry *e = &page->entries[page->count];
        if (!read_entry(s, e)) return false;
        if (!entry_belongs(e, page->count > 0 ? e - 1 : NULL, query)) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
        page->count++;
    }
    return element == 0;
}

static bool read_page(rl__json_scan *s, const rl_audit_query *query, rl_audit_page *page) {
    if (!rl__scan_object_open(s)) return false;
    bool have_entries = false, have_next = false, ok = true;
    char *name;
    size_t name_len;
    int more = -1;
    for (size_t i = 0; ok && (more = rl__scan_member(s, i, &name, &name_len)) > 0; i++) {
        const char *at = s->cur;
        if (strcmp(name, "entries") == 0) {
            if (have_entries) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
            have_entries = true;
            ok = read_entries(s, query, page);
        } else if (strcmp(name, "next_since_unix_ms") == 0) {
            if (have_next) return rl__scan_fail(s, RL__JSON_SYNTAX, at);
            have_next = true;
            ok = rl__read_u64(s, &page->next_since_unix_ms) &&
                 (page->next_since_unix_ms >= query->since_unix_ms || rl__scan_fail(s, RL__JSON_SYNTAX, at));
        } else {
            ok = rl__scan_skip(s);
        }
    }
    return ok && more == 0 && have_entries && have_next;
}

rl_status rl__wire_decode_audit_answer(char *body, size_t len, const rl_audit_query *query,
                                       rl_audit_page *page) {
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    rl__json_scan s;
    rl__scan_init(&s, body, len);
    if (read_page(&s, query, page) && rl__scan_end(&s)) return RL_OK;
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    return RL_INVALID_REQUEST;
}
