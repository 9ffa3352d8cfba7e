/* encode_audit.c — the audit log on the wire (wire.h): the daemon's page of
 * entries, and the client's path that asks for one.
 *
 * Hand-written appends in api.md's field order, like encode.c. The entries
 * come from a backend (trusted), but their fixed-size strings are bounded
 * with strnlen all the same: a damaged entry must not run the encoder past
 * its array.
 */
#include <string.h>

#include "wire/wire.h"

#define LIT(buf, text) rl__buf_append((buf), (text), sizeof(text) - 1)

static void append_field_string(rl_buf *buf, const char *text, size_t size) {
    rl__buf_append_json_string(buf, text, strnlen(text, size - 1));
}

static void encode_entry(rl_buf *buf, const rl_audit_entry *e) {
    LIT(buf, "{\"at_unix_ms\":");
    rl__buf_append_u64(buf, e->at_unix_ms);
    LIT(buf, ",\"lease_id\":");
    append_field_string(buf, e->lease_id, sizeof e->lease_id);
    LIT(buf, ",\"job_id\":");
    append_field_string(buf, e->job_id, sizeof e->job_id);
    LIT(buf, ",\"key\":");
    append_field_string(buf, e->key, sizeof e->key);
    LIT(buf, ",\"reserved\":");
    rl__buf_append_u64(buf, e->reserved);
    LIT(buf, ",\"actual\":");
    rl__buf_append_u64(buf, e->actual);
    LIT(buf, ",\"period_start_unix_ms\":");
    rl__buf_append_u64(buf, e->period_start_unix_ms);
    if (e->expired)
        LIT(buf, ",\"expired\":true}");
    else
        LIT(buf, ",\"expired\":false}");
}

void rl__wire_encode_audit_page(rl_buf *buf, const rl_audit_page *page) {
    LIT(buf, "{\"entries\":[");
    for (size_t i = 0; i < page->count; i++) {
        if (i > 0) LIT(buf, ",");
        encode_entry(buf, &page->entries[i]);
    }
    LIT(buf, "],\"next_since_unix_ms\":");
    rl__buf_append_u64(buf, page->next_since_unix_ms);
    LIT(buf, "}");
}

void rl__wire_encode_audit_path(rl_buf *buf, const rl_audit_query *query) {
    char key[3 * RL_KEY_MAX_LEN + 1]; /* every byte escaped */
    size_t key_len = rl__wire_percent_encode(query->key, key, sizeof key);
    LIT(buf, "/v1/admin/audit?key=");
    rl__buf_append(buf, key, key_len);
    LIT(buf, "&since_unix_ms=");
    rl__buf_append_u64(buf, query->since_unix_ms);
    LIT(buf, "&limit=");
    rl__buf_append_u64(buf, query->limit);
}
