/* audit_query.c — see audit_query.h. */
#include "core/audit_query.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error_text.h"
#include "ratelimiter/keys.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

rl_status rl__audit_query_check(const rl_audit_query *query, const rl_audit_page *page, char *err, size_t err_size) {
    if (query->key == NULL || !rl_key_is_valid(query->key, strnlen(query->key, RL_KEY_MAX_LEN + 1)))
        return fail(RL_INVALID_REQUEST, err, err_size, "key must be 1..%d printable ASCII characters without spaces",
                    RL_KEY_MAX_LEN);
    if (query->limit < 1 || query->limit > RL_AUDIT_QUERY_MAX)
        return fail(RL_INVALID_REQUEST, err, err_size, "limit must be 1..%u", RL_AUDIT_QUERY_MAX);
    if (page->entries == NULL) return fail(RL_INVALID_REQUEST, err, err_size, "the page has no room for entries");
    return RL_OK;
}

typedef enum stop {
    GOING,
    FULL,  /* the page is full */
    BOUND, /* RL__AUDIT_QUERY_SCAN_MAX_BYTES looked at */
    HORIZON, /* an entry at or after before_unix_ms: not listed yet */
} stop;

typedef struct scan {
    const rl_audit_query *query;
    uint64_t before_unix_ms;
    size_t key_len;
    rl_audit_page *page;
    uint64_t scanned_bytes;
    bool any_scanned;
    uint64_t last_at;  /* of the last record looked at */
    bool later_seen;   /* a record of a millisecond after the page's last entry was met */
    stop stopped;
} scan;

static bool look_at(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)offset;
    scan *s = context;
    rl_audit_page *page = s->page;
    size_t n = page->count;
    if (view->at_unix_ms >= s->before_unix_ms) { /* everything after is too (time order) */
        s->later_seen = true;
        s->stopped = HORIZON;
        return false;
    }
    if (n > 0 && view->at_unix_ms > page->entries[n - 1].at_unix_ms) {
        s->later_seen = true; /* the page's last millisecond is whole */
        if (n == s->query->limit) {
            s->stopped = FULL;
            return false;
        }
    }
    /* The bound takes effect between milliseconds: all of last_at was looked at. */
    if (s->any_scanned && view->at_unix_ms != s->last_at && s->scanned_bytes >= RL__AUDIT_QUERY_SCAN_MAX_BYTES) {
        s->stopped = BOUND;
        return false;
    }
    s->scanned_bytes += frame_bytes;
    s->any_scanned = true;
    s->last_at = view->at_unix_ms;
    if (view->at_unix_ms < s->query->since_unix_ms || !rl__audit_view_has_key(view, s->query->key, s->key_len))
        return true;
    if (n == s->query->limit) { /* one more of the page's last millisecond */
        s->stopped = FULL;
        return false;
    }
    rl__audit_view_to_entry(view, &page->entries[n]);
    page->count = n + 1;
    s->later_seen = false;
    return true;
}

/* Where the scan starts: the last part of since's day (parts[first..end))
 * whose first entry is before since, else the day's first part. A part
 * whose start cannot be read counts as before since: reading it says why. */
static size_t start_part(const char *dir, const rl__audit_part *parts, size_t first, size_t end, uint64_t since) {
    size_t start = first, lo = first + 1, hi = end;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        char *path = rl__audit_part_path(dir, parts[mid].day, parts[mid].index);
        uint64_t at = 0;
        bool before = path == NULL || !rl__audit_part_first_at(path, parts[mid].size, &at) || at < since;
        free(path);
        if (before) {
            start = mid;
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return start;
}

/* The page's ending, as audit_query.h says. */
static void finish(const scan *s, rl_audit_page *page) {
    uint64_t since = s->query->since_unix_ms;
    if (page->count == 0) {
        page->next_since_unix_ms = since;
        if (s->stopped == BOUND && s->last_at + 1 > since) page->next_since_unix_ms = s->last_at + 1;
        return;
    }
    /* With a horizon, what was flushed holds every entry before it: the
     * end of the data ends no millisecond early. */
    bool whole = s->later_seen || (s->stopped == GOING && s->before_unix_ms != UINT64_MAX);
    if (!whole) { /* the last millisecond may go on: leave it to the next page */
        size_t keep = page->count;
        uint64_t last = page->entries[keep - 1].at_unix_ms;
        while (keep > 0 && page->entries[keep - 1].at_unix_ms == last) keep--;
        if (keep > 0) page->count = keep;
    }
    page->next_since_unix_ms = page->entries[page->count - 1].at_unix_ms + 1;
}

rl_status rl__audit_query_run(const char *dir, const rl__audit_part *parts, size_t count, const rl_audit_query *query,
                              uint64_t before_unix_ms, rl_audit_page *page, char *err, size_t err_size) {
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    int64_t day = rl__audit_day_of(query->since_unix_ms);
    size_t first = 0;
    while (first < count && parts[first].day < day) first++;
    size_t end = first;
    while (end < count && parts[end].day == day) end++;
    scan s = {.query = query, .before_unix_ms = before_unix_ms, .key_len = strlen(query->key), .page = page, .stopped = GOING};
    for (size_t i = start_part(dir, parts, first, end, query->since_unix_ms); i < count && s.stopped == GOING; i++) {
        char *path = rl__audit_part_path(dir, parts[i].day, parts[i].index);
        if (path == NULL) {
            page->count = 0;
            return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", dir);
        }
        bool missing;
        rl_status status = rl__audit_part_read(path, parts[i].size, look_at, &s, &missing, err, err_size);
        free(path);
        if (status != RL_OK) {
            page->count = 0;
            page->next_since_unix_ms = query->since_unix_ms;
            return status;
        }
    }
    finish(&s, page);
    return RL_OK;
}
