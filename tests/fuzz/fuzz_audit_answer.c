/* fuzz_audit_answer.c — any body a daemon (or whatever answers in its
 * place) may send back to GET /v1/admin/audit, into the http limiter's
 * decoder (wire.h: rl__wire_decode_audit_answer).
 *
 * Input: the body, decoded for two queries (key "t:spend" since 0, at most
 * 4 entries; the same key since 1764058800000, at most 1). Checked: a
 * refusal leaves an empty page at since; a page taken is what was asked
 * (at most limit entries, of the key, in time order from since, expired
 * ones with actual 0, strings NUL-terminated: a ULID lease id in upper
 * case, a job id api.md allows) and survives the daemon's own encoder:
 * encoding what was read and reading it again gives the same page.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/lease_rules.h"
#include "fuzz.h"
#include "wire/wire.h"

static bool same_entry(const rl_audit_entry *a, const rl_audit_entry *b) {
    return a->at_unix_ms == b->at_unix_ms && strcmp(a->lease_id, b->lease_id) == 0 &&
           strcmp(a->job_id, b->job_id) == 0 && strcmp(a->key, b->key) == 0 && a->reserved == b->reserved &&
           a->actual == b->actual && a->period_start_unix_ms == b->period_start_unix_ms && a->expired == b->expired;
}

static void check_page(const rl_audit_query *query, const rl_audit_page *page) {
    FUZZ_CHECK(page->count <= query->limit);
    FUZZ_CHECK(page->next_since_unix_ms >= query->since_unix_ms);
    for (size_t i = 0; i < page->count; i++) {
        const rl_audit_entry *e = &page->entries[i];
        FUZZ_CHECK(memchr(e->lease_id, '\0', sizeof e->lease_id) != NULL);
        FUZZ_CHECK(memchr(e->job_id, '\0', sizeof e->job_id) != NULL);
        FUZZ_CHECK(memchr(e->key, '\0', sizeof e->key) != NULL);
        FUZZ_CHECK(rl__lease_id_ok(e->lease_id, strlen(e->lease_id)));
        for (const char *c = e->lease_id; *c != '\0'; c++) FUZZ_CHECK(!(*c >= 'a' && *c <= 'z'));
        FUZZ_CHECK(rl__job_id_ok(e->job_id, strlen(e->job_id)));
        FUZZ_CHECK(strcmp(e->key, query->key) == 0);
        FUZZ_CHECK(e->at_unix_ms >= query->since_unix_ms);
        if (i > 0) FUZZ_CHECK(e->at_unix_ms >= e[-1].at_unix_ms);
        if (e->expired) FUZZ_CHECK(e->actual == 0);
    }
    /* What was read, encoded by the daemon's encoder, reads back the same. */
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_audit_page(&buf, page);
    FUZZ_CHECK(!buf.failed);
    rl_audit_entry again_entries[4];
    rl_audit_page again = {again_entries, 0, 0};
    FUZZ_CHECK(rl__wire_decode_audit_answer(buf.data, buf.len, query, &again) == RL_OK);
    FUZZ_CHECK(again.count == page->count && again.next_since_unix_ms == page->next_since_unix_ms);
    for (size_t i = 0; i < page->count; i++) FUZZ_CHECK(same_entry(&again.entries[i], &page->entries[i]));
    rl__buf_free(&buf);
}

static void decode_for(const uint8_t *data, size_t size, const rl_audit_query *query) {
    char *body = malloc(size + 1); /* writable, NUL after the end, as the limiter's buffer is */
    if (body == NULL) abort();
    memcpy(body, data, size);
    body[size] = '\0';
    rl_audit_entry entries[4];
    rl_audit_page page = {entries, 0, 0};
    if (rl__wire_decode_audit_answer(body, size, query, &page) == RL_OK)
        check_page(query, &page);
    else
        FUZZ_CHECK(page.count == 0 && page.next_since_unix_ms == query->since_unix_ms);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const rl_audit_query from_start = {"t:spend", 0, 4}, later = {"t:spend", 1764058800000u, 1};
    decode_for(data, size, &from_start);
    decode_for(data, size, &later);
    return 0;
}
