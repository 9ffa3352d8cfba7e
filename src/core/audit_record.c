/* audit_record.c — see audit_record.h. */
#include "core/audit_record.h"

#include <string.h>

#include "ratelimiter/keys.h"
#include "ratelimiter/ulid.h"

enum {
    AT_VERSION = 0,
    AT_FLAGS = 1,
    AT_JOB_ID_LEN = 2,
    AT_KEY_LEN = 3,
    AT_SEQ = 5,
    AT_AT = 13,
    AT_RESERVED = 21,
    AT_ACTUAL = 29,
    AT_PERIOD_START = 37,
    AT_LEASE_ID = 45,
    FLAG_EXPIRED = 1,
    FLAG_OPENS_GROUP = 2,
};

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static bool refuse(const char **why, const char *phrase) {
    if (why != NULL) *why = phrase;
    return false;
}

/* One lease, one text: the upper case the writer writes. */
static bool lease_id_ok(const char *text) {
    if (!rl_ulid_is_valid(text, RL_ULID_LEN)) return false;
    for (size_t i = 0; i < RL_ULID_LEN; i++)
        if (text[i] >= 'a' && text[i] <= 'z') return false;
    return true;
}

bool rl__audit_record_decode(const unsigned char *record, size_t len, rl__audit_view *out, const char **why) {
    if (len < RL__AUDIT_RECORD_FIXED_BYTES) return refuse(why, "shorter than an audit entry");
    if (record[AT_VERSION] != RL__AUDIT_RECORD_VERSION) return refuse(why, "an audit entry of an unknown version");
    if ((record[AT_FLAGS] & ~(FLAG_EXPIRED | FLAG_OPENS_GROUP)) != 0) return refuse(why, "unknown flags");
    size_t job_id_len = record[AT_JOB_ID_LEN];
    size_t key_len = (size_t)record[AT_KEY_LEN] | (size_t)record[AT_KEY_LEN + 1] << 8;
    if (job_id_len > RL_JOB_ID_MAX_LEN) return refuse(why, "a job_id longer than allowed");
    if (len != RL__AUDIT_RECORD_FIXED_BYTES + key_len + job_id_len)
        return refuse(why, "a length that is not its fields' length");
    out->record = record;
    out->record_len = len;
    out->seq = le64(record + AT_SEQ);
    out->at_unix_ms = le64(record + AT_AT);
    out->reserved = le64(record + AT_RESERVED);
    out->actual = le64(record + AT_ACTUAL);
    out->period_start_unix_ms = le64(record + AT_PERIOD_START);
    out->expired = (record[AT_FLAGS] & FLAG_EXPIRED) != 0;
    out->opens_group = (record[AT_FLAGS] & FLAG_OPENS_GROUP) != 0;
    out->lease_id = (const char *)record + AT_LEASE_ID;
    out->key = (const char *)record + RL__AUDIT_RECORD_FIXED_BYTES;
    out->key_len = key_len;
    out->job_id = out->key + key_len;
    out->job_id_len = job_id_len;
    if (out->seq == 0) return refuse(why, "sequence number 0");
    if (out->at_unix_ms >= RL__AUDIT_INSTANT_END_MS || out->period_start_unix_ms >= RL__AUDIT_INSTANT_END_MS)
        return refuse(why, "an instant past the year 9999");
    if (out->reserved > RL_AMOUNT_MAX || out->actual > RL_AMOUNT_MAX) return refuse(why, "an amount above 2^53");
    if (out->expired && out->actual != 0) return refuse(why, "an expired entry with an actual");
    if (!lease_id_ok(out->lease_id)) return refuse(why, "a lease_id that is not an upper-case ULID");
    if (!rl_key_is_valid(out->key, key_len)) return refuse(why, "a key that breaks the key rule");
    if (memchr(out->job_id, '\0', job_id_len) != NULL) return refuse(why, "a NUL inside job_id");
    return true;
}

size_t rl__audit_record_encode(unsigned char *out, uint64_t seq, const rl_audit_entry *entry, const char **why) {
    size_t key_len = strnlen(entry->key, sizeof entry->key);
    size_t job_id_len = strnlen(entry->job_id, sizeof entry->job_id);
    if (key_len > RL_KEY_MAX_LEN || job_id_len > RL_JOB_ID_MAX_LEN) {
        refuse(why, "a key or job_id without its NUL");
        return 0;
    }
    out[AT_VERSION] = RL__AUDIT_RECORD_VERSION;
    out[AT_FLAGS] = entry->expired ? FLAG_EXPIRED : 0;
    out[AT_JOB_ID_LEN] = (unsigned char)job_id_len;
    out[AT_KEY_LEN] = (unsigned char)key_len;
    out[AT_KEY_LEN + 1] = (unsigned char)(key_len >> 8);
    put_le64(out + AT_SEQ, seq);
    put_le64(out + AT_AT, entry->at_unix_ms);
    put_le64(out + AT_RESERVED, entry->reserved);
    put_le64(out + AT_ACTUAL, entry->actual);
    put_le64(out + AT_PERIOD_START, entry->period_start_unix_ms);
    for (size_t i = 0; i < RL_ULID_LEN; i++) {
        char c = entry->lease_id[i];
        out[AT_LEASE_ID + i] = (unsigned char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    }
    memcpy(out + RL__AUDIT_RECORD_FIXED_BYTES, entry->key, key_len);
    memcpy(out + RL__AUDIT_RECORD_FIXED_BYTES + key_len, entry->job_id, job_id_len);
    size_t len = RL__AUDIT_RECORD_FIXED_BYTES + key_len + job_id_len;
    /* One set of rules: what the decoder would refuse is never written. */
    rl__audit_view view;
    return rl__audit_record_decode(out, len, &view, why) ? len : 0;
}

void rl__audit_view_to_entry(const rl__audit_view *view, rl_audit_entry *out) {
    out->at_unix_ms = view->at_unix_ms;
    memcpy(out->lease_id, view->lease_id, RL_ULID_LEN);
    out->lease_id[RL_ULID_LEN] = '\0';
    memcpy(out->job_id, view->job_id, view->job_id_len);
    out->job_id[view->job_id_len] = '\0';
    memcpy(out->key, view->key, view->key_len);
    out->key[view->key_len] = '\0';
    out->reserved = view->reserved;
    out->actual = view->actual;
    out->period_start_unix_ms = view->period_start_unix_ms;
    out->expired = view->expired;
}

bool rl__audit_view_has_key(const rl__audit_view *view, const char *key, size_t key_len) {
    return view->key_len == key_len && memcmp(view->key, key, key_len) == 0;
}

void rl__audit_record_open_group(unsigned char *record) { record[AT_FLAGS] |= FLAG_OPENS_GROUP; }
