/* journal_record.c — the journal's records as bytes and back (see
 * journal_record.h). */
#include "backend/memory/journal_record.h"

#include <stdio.h>
#include <string.h>

#include "core/lease_rules.h"

/* ---- writing ---- */

typedef struct writer {
    unsigned char *at;
} writer;

static void put_u8(writer *w, uint8_t v) { *w->at++ = v; }
static void put_u16(writer *w, uint16_t v) {
    put_u8(w, (uint8_t)v);
    put_u8(w, (uint8_t)(v >> 8));
}
static void put_u64(writer *w, uint64_t v) {
    for (int i = 0; i < 8; i++) put_u8(w, (uint8_t)(v >> (8 * i)));
}
static void put_str(writer *w, const char *s) {
    size_t len = strlen(s);
    put_u16(w, (uint16_t)len);
    memcpy(w->at, s, len);
    w->at += len;
}

static void put_entry(writer *w, const rl__jrec_entry *e) {
    put_str(w, e->key);
    put_u8(w, (uint8_t)e->kind);
    put_u8(w, e->live);
    put_u64(w, e->amount);
    put_u64(w, e->expires_at_unix_ms);
    put_u64(w, e->period_start_unix_ms);
}

static void put_lease(writer *w, const rl__jrec_lease *l) {
    put_u64(w, l->id_hi);
    put_u64(w, l->id_lo);
    put_u64(w, l->at_unix_ms);
    put_u64(w, l->forget_at_unix_ms);
    put_u64(w, l->fingerprint);
    put_u8(w, (uint8_t)(l->allowed | (l->completed << 1)));
    put_u8(w, (uint8_t)l->status);
    put_str(w, l->status_key);
    put_u64(w, l->retry_after_ms);
    put_u64(w, l->denied_available);
    put_u64(w, l->denied_capacity);
    put_u64(w, l->denied_period_end_unix_ms);
    put_str(w, l->job_id);
    put_u16(w, l->entry_count);
    for (uint16_t i = 0; i < l->entry_count; i++) put_entry(w, &l->entries[i]);
}

static void put_define(writer *w, const rl__jrec_define *d) {
    put_u64(w, d->at_unix_ms);
    put_str(w, d->def.key);
    put_u8(w, (uint8_t)d->def.kind);
    put_u64(w, d->def.capacity);
    put_u64(w, d->def.window_seconds);
    put_u64(w, d->def.timeout_seconds);
    put_str(w, d->def.unit);
    put_str(w, d->def.description);
    put_u8(w, (uint8_t)d->def.overage);
    put_u8(w, (uint8_t)d->def.period);
    put_str(w, d->def.timezone);
}

size_t rl__jrec_encode(const rl__jrec *record, unsigned char *out) {
    writer w = {out};
    put_u8(&w, (uint8_t)record->type);
    put_u8(&w, RL__JOURNAL_FORMAT);
    switch (record->type) {
    case RL__JREC_DEFINE:
    case RL__JREC_TEMPLATE: put_define(&w, &record->define); break;
    case RL__JREC_LEASE: put_lease(&w, &record->lease); break;
    case RL__JREC_COMPLETE: {
        const rl__jrec_complete *c = &record->complete;
        put_u64(&w, c->id_hi);
        put_u64(&w, c->id_lo);
        put_u64(&w, c->at_unix_ms);
        put_u64(&w, c->audit_seq_after);
        put_u16(&w, c->actual_count);
        for (uint16_t i = 0; i < c->actual_count; i++) {
            put_str(&w, c->keys[i]);
            put_u64(&w, c->amounts[i]);
        }
        break;
    }
    case RL__JREC_EXPIRE: {
        const rl__jrec_expire *e = &record->expire;
        put_u64(&w, e->id_hi);
        put_u64(&w, e->id_lo);
        put_u64(&w, e->at_unix_ms);
        put_u16(&w, e->entry_index);
        put_u64(&w, e->audit_seq);
        break;
    }
    case RL__JREC_LIMIT: {
        const rl__jrec_limit *l = &record->limit;
        put_str(&w, l->key);
        put_u64(&w, l->capacity_enforced);
        put_u64(&w, l->pending_decrease_to);
        put_u64(&w, l->debt_total);
        put_u64(&w, l->overage_denied_total);
        put_u64(&w, l->committed);
        put_u64(&w, l->period_start_unix_ms);
        put_u64(&w, l->period_end_unix_ms);
        break;
    }
    case RL__JREC_CURSOR:
    case RL__JREC_AUDIT_LINK:
        put_u64(&w, record->cursor.audit_seq);
        put_u64(&w, record->cursor.audit_at_unix_ms);
        if (record->type == RL__JREC_CURSOR) break;
        put_u64(&w, record->cursor.log_id_hi);
        put_u64(&w, record->cursor.log_id_lo);
        break;
    case RL__JREC_DELETE:
    case RL__JREC_UNTEMPLATE:
        put_u64(&w, record->deleted.at_unix_ms);
        put_str(&w, record->deleted.key);
        break;
    }
    return (size_t)(w.at - out);
}

/* ---- reading: every read checks its bounds; the first failure sticks ---- */

typedef struct reader {
    const unsigned char *at, *end;
    const char *failed; /* what was wrong, or NULL */
} reader;

static bool fail(reader *r, const char *what) {
    if (r->failed == NULL) r->failed = what;
    r->at = r->end;
    return false;
}

static uint8_t get_u8(reader *r, const char *what) {
    if (r->at >= r->end) return (uint8_t)fail(r, what);
    return *r->at++;
}
static uint16_t get_u16(reader *r, const char *what) {
    uint16_t lo = get_u8(r, what);
    return (uint16_t)(lo | (uint16_t)get_u8(r, what) << 8);
}
static uint64_t get_u64(reader *r, const char *what) {
    if (r->end - r->at < 8) return fail(r, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)r->at[i] << (8 * i);
    r->at += 8;
    return v;
}
/* A string of at most max bytes, without NUL, into out (max + 1 bytes). */
static size_t get_str(reader *r, char *out, size_t max, const char *what) {
    out[0] = '\0';
    uint16_t len = get_u16(r, what);
    if (r->failed != NULL) return 0;
    if (len > max || (size_t)(r->end - r->at) < len || memchr(r->at, '\0', len) != NULL) return fail(r, what);
    memcpy(out, r->at, len);
    out[len] = '\0';
    r->at += len;
    return len;
}
static void get_key(reader *r, char *out, bool may_be_empty, const char *what) {
    size_t len = get_str(r, out, RL_KEY_MAX_LEN, what);
    if (r->failed == NULL && !(may_be_empty && len == 0) && !rl__lease_key_ok(out, len)) fail(r, what);
}
static uint64_t get_amount(reader *r, uint64_t min, const char *what) {
    uint64_t v = get_u64(r, what);
    if (r->failed == NULL && !rl__lease_amount_ok(v, min)) fail(r, what);
    return v;
}
static rl_kind get_kind(reader *r) {
    uint8_t v = get_u8(r, "kind");
    if (v > RL_KIND_BUDGET) fail(r, "kind");
    return (rl_kind)v;
}

static void get_entry(reader *r, rl__jrec_entry *e) {
    get_key(r, e->key, false, "entry key");
    e->kind = get_kind(r);
    uint8_t live = get_u8(r, "entry live");
    if (live > 1) fail(r, "entry live");
    e->live = live == 1;
    e->amount = get_amount(r, 0, "entry amount");
    e->expires_at_unix_ms = get_u64(r, "entry expiry");
    e->period_start_unix_ms = get_u64(r, "entry period");
}

static void get_lease(reader *r, rl__jrec_lease *l) {
    l->id_hi = get_u64(r, "lease id");
    l->id_lo = get_u64(r, "lease id");
    l->at_unix_ms = get_u64(r, "lease time");
    l->forget_at_unix_ms = get_u64(r, "lease forget time");
    l->fingerprint = get_u64(r, "lease fingerprint");
    uint8_t flags = get_u8(r, "lease flags");
    if (flags > 3 || flags == 2) fail(r, "lease flags"); /* completed only if allowed */
    l->allowed = (flags & 1) != 0;
    l->completed = (flags & 2) != 0;
    uint8_t status = get_u8(r, "lease status");
    if (status > RL_LIMIT_IN_USE) fail(r, "lease status");
    l->status = (rl_status)status;
    get_key(r, l->status_key, true, "lease status key");
    l->retry_after_ms = get_u64(r, "lease retry");
    l->denied_available = get_u64(r, "lease denial");
    l->denied_capacity = get_u64(r, "lease denial");
    l->denied_period_end_unix_ms = get_u64(r, "lease denial");
    size_t job_len = get_str(r, l->job_id, RL_JOB_ID_MAX_LEN, "lease job id");
    if (r->failed == NULL && !rl__job_id_ok(l->job_id, job_len)) fail(r, "lease job id");
    l->entry_count = get_u16(r, "lease entries");
    /* An admitted lease may hold nothing: its requirements were all
     * optional and undefined (types.h); a denied one never holds anything. */
    if (l->entry_count > RL_MAX_REQUIREMENTS || (!l->allowed && l->entry_count != 0)) fail(r, "lease entries");
    for (uint16_t i = 0; i < l->entry_count && r->failed == NULL; i++) get_entry(r, &l->entries[i]);
}

static void get_define(reader *r, rl__jrec_define *d) {
    memset(&d->def, 0, sizeof d->def);
    d->at_unix_ms = get_u64(r, "define time");
    get_key(r, d->def.key, false, "define key");
    d->def.kind = get_kind(r);
    d->def.capacity = get_u64(r, "define capacity");
    uint64_t window = get_u64(r, "define window"), timeout = get_u64(r, "define timeout");
    if (window > UINT32_MAX || timeout > UINT32_MAX) fail(r, "define window or timeout");
    d->def.window_seconds = (uint32_t)window;
    d->def.timeout_seconds = (uint32_t)timeout;
    get_str(r, d->def.unit, RL_UNIT_MAX_LEN, "define unit");
    get_str(r, d->def.description, RL_DESCRIPTION_MAX_LEN, "define description");
    uint8_t overage = get_u8(r, "define overage"), period = get_u8(r, "define period");
    if (overage > RL_OVERAGE_DENY || period > RL_PERIOD_MONTH) fail(r, "define overage or period");
    d->def.overage = (rl_overage)overage;
    d->def.period = (rl_period)period;
    get_str(r, d->def.timezone, RL_TIMEZONE_MAX_LEN, "define timezone");
}

bool rl__jrec_decode(const unsigned char *data, size_t len, rl__jrec *out, char *why, size_t why_size) {
    reader r = {data, data + len, NULL};
    uint8_t type = get_u8(&r, "type");
    uint8_t format = get_u8(&r, "format");
    if (r.failed == NULL && format != RL__JOURNAL_FORMAT) fail(&r, "format version");
    out->type = (rl__jrec_type)type;
    switch (r.failed == NULL ? type : 0) {
    case RL__JREC_DEFINE:
    case RL__JREC_TEMPLATE: get_define(&r, &out->define); break;
    case RL__JREC_LEASE: get_lease(&r, &out->lease); break;
    case RL__JREC_COMPLETE: {
        rl__jrec_complete *c = &out->complete;
        c->id_hi = get_u64(&r, "complete id");
        c->id_lo = get_u64(&r, "complete id");
        c->at_unix_ms = get_u64(&r, "complete time");
        c->audit_seq_after = get_u64(&r, "complete audit sequence");
        c->actual_count = get_u16(&r, "complete actuals");
        if (c->actual_count > RL_MAX_REQUIREMENTS) fail(&r, "complete actuals");
        for (uint16_t i = 0; i < c->actual_count && r.failed == NULL; i++) {
            get_key(&r, c->keys[i], false, "complete key");
            c->amounts[i] = get_amount(&r, RL__ACTUAL_AMOUNT_MIN, "complete amount");
        }
        break;
    }
    case RL__JREC_EXPIRE: {
        rl__jrec_expire *e = &out->expire;
        e->id_hi = get_u64(&r, "expire id");
        e->id_lo = get_u64(&r, "expire id");
        e->at_unix_ms = get_u64(&r, "expire time");
        e->entry_index = get_u16(&r, "expire entry");
        if (e->entry_index >= RL_MAX_REQUIREMENTS) fail(&r, "expire entry");
        e->audit_seq = get_u64(&r, "expire audit sequence");
        break;
    }
    case RL__JREC_LIMIT: {
        rl__jrec_limit *l = &out->limit;
        get_key(&r, l->key, false, "limit key");
        l->capacity_enforced = get_amount(&r, 1, "limit capacity");
        l->pending_decrease_to = get_u64(&r, "limit decrease");
        l->debt_total = get_u64(&r, "limit debt");
        l->overage_denied_total = get_u64(&r, "limit overage");
        l->committed = get_u64(&r, "limit committed");
        l->period_start_unix_ms = get_u64(&r, "limit period");
        l->period_end_unix_ms = get_u64(&r, "limit period");
        break;
    }
    case RL__JREC_CURSOR:
    case RL__JREC_AUDIT_LINK:
        out->cursor.audit_seq = get_u64(&r, "cursor sequence");
        out->cursor.audit_at_unix_ms = get_u64(&r, "cursor time");
        out->cursor.log_id_hi = type == RL__JREC_AUDIT_LINK ? get_u64(&r, "audit log id") : 0;
        out->cursor.log_id_lo = type == RL__JREC_AUDIT_LINK ? get_u64(&r, "audit log id") : 0;
        break;
    case RL__JREC_DELETE:
    case RL__JREC_UNTEMPLATE:
        out->deleted.at_unix_ms = get_u64(&r, "delete time");
        get_key(&r, out->deleted.key, false, "delete key");
        break;
    default:
        fail(&r, "type");
    }
    if (r.failed == NULL && r.at != r.end) fail(&r, "length (bytes after the record)");
    if (r.failed != NULL) {
        if (why_size > 0) snprintf(why, why_size, "a journal record with a bad %s", r.failed);
        return false;
    }
    return true;
}
