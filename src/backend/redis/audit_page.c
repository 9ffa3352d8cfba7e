/* audit_page.c — see audit_page.h. */
#include "backend/redis/audit_page.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backend/redis/redis_decimal.h"
#include "core/lease_rules.h"

/* An XRANGE entry's shape, [id, [field, value, ...]], and its id's ms
 * (the id is "ms-seq"). */
static bool read_id(const redisReply *entry, uint64_t *ms) {
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2) return false;
    const redisReply *id = entry->element[0], *fields = entry->element[1];
    if (id->type != REDIS_REPLY_STRING || fields->type != REDIS_REPLY_ARRAY || fields->elements % 2 != 0) return false;
    const char *dash = memchr(id->str, '-', id->len);
    uint64_t seq;
    return dash != NULL && rl__redis_decimal(id->str, (size_t)(dash - id->str), UINT64_MAX, ms) &&
           rl__redis_decimal(dash + 1, id->len - (size_t)(dash - id->str) - 1, UINT64_MAX, &seq);
}

/* One field of an entry into out; false if it is not what audit.lua writes.
 * *seen gets its bit. Fields of other names are skipped (a later build's). */
static bool read_field(const redisReply *name, const redisReply *value, rl_audit_entry *out, unsigned *seen) {
    if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) return false;
    if (name->len != 1) return true;
    const char *v = value->str;
    size_t len = value->len;
    switch (name->str[0]) {
    case 'l':
        if (!rl__lease_id_ok(v, len) || memchr(v, '\0', len) != NULL) return false;
        for (size_t i = 0; i < len; i++) out->lease_id[i] = (char)toupper((unsigned char)v[i]);
        out->lease_id[len] = '\0';
        *seen |= 1u;
        return true;
    case 'j':
        if (!rl__job_id_ok(v, len) || memchr(v, '\0', len) != NULL) return false;
        memcpy(out->job_id, v, len);
        out->job_id[len] = '\0';
        *seen |= 2u;
        return true;
    case 'r': *seen |= 4u; return rl__redis_decimal(v, len, RL_AMOUNT_MAX, &out->reserved);
    case 'a': *seen |= 8u; return rl__redis_decimal(v, len, RL_AMOUNT_MAX, &out->actual);
    case 'p': *seen |= 16u; return rl__redis_decimal(v, len, UINT64_MAX, &out->period_start_unix_ms);
    case 'x':
        if (len != 1 || (v[0] != '0' && v[0] != '1')) return false;
        out->expired = v[0] == '1';
        *seen |= 32u;
        return true;
    default: return true;
    }
}

/* One XRANGE entry into out. */
static bool read_entry(const redisReply *entry, const char *key, rl_audit_entry *out) {
    if (!read_id(entry, &out->at_unix_ms)) return false;
    const redisReply *fields = entry->element[1];
    unsigned seen = 0;
    for (size_t i = 0; i < fields->elements; i += 2)
        if (!read_field(fields->element[i], fields->element[i + 1], out, &seen)) return false;
    snprintf(out->key, sizeof out->key, "%s", key);
    return seen == 63u;
}

bool rl__redis_audit_page_read(const redisReply *reply, const char *key, uint64_t since_unix_ms, uint32_t limit,
                               rl_audit_page *page) {
    page->count = 0;
    page->next_since_unix_ms = since_unix_ms;
    if (reply->type != REDIS_REPLY_ARRAY) return false;
    size_t n = reply->elements < limit ? reply->elements : limit;
    uint64_t last_ms = since_unix_ms;
    for (size_t i = 0; i < n; i++) {
        if (!read_entry(reply->element[i], key, &page->entries[i]) || page->entries[i].at_unix_ms < last_ms)
            return false;
        last_ms = page->entries[i].at_unix_ms;
    }
    /* The entry after the page, if any: in the page's last millisecond? */
    uint64_t after_ms = 0;
    bool more = reply->elements > limit;
    if (more && (!read_id(reply->element[limit], &after_ms) || after_ms < last_ms)) return false;
    size_t count = n;
    if (more && n > 0 && after_ms == last_ms) {
        while (count > 0 && page->entries[count - 1].at_unix_ms == last_ms) count--;
        if (count == 0) { /* one millisecond fills the page: its first entries (the rest are in no page) */
            page->count = n;
            page->next_since_unix_ms = last_ms + 1;
            return true;
        }
    }
    page->count = count;
    if (count > 0) page->next_since_unix_ms = page->entries[count - 1].at_unix_ms + 1;
    return true;
}
