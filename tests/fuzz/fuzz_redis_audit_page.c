/* fuzz_redis_audit_page.c — Redis's answer to a page of the audit log
 * (XRANGE of a limit's stream, lua/audit.lua) into
 * rl__redis_audit_page_read, through hiredis's own reader as the daemon
 * gets it.
 *
 * Input: a first line "LIMIT SINCE\n" (the query: LIMIT 1..RL_AUDIT_QUERY_MAX,
 * asked of Redis with COUNT LIMIT + 1), then the RESP answer. A refusal
 * leaves an empty page whose next page starts at SINCE. A page read holds
 * at most LIMIT entries, in time order from SINCE on, each with the
 * query's key, a ULID in upper case, a job id the wire allows, amounts the
 * API allows; it ends where the next page starts: after its last entry,
 * unless one millisecond fills it (then SINCE again). Written back as an
 * XRANGE answer, the page reads back the same.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>

#include "backend/redis/audit_page.h"
#include "core/lease_rules.h"
#include "fuzz.h"
#include "resp_reply.h"

#define KEY "tenant:usd"

/* A bulk string. */
static size_t put_bulk(char *out, size_t at, const char *text) {
    return at + (size_t)sprintf(out + at, "$%zu\r\n%s\r\n", strlen(text), text);
}

/* The page's entries as an XRANGE answer (out: room for them). */
static size_t encode(const rl_audit_page *page, char *out) {
    size_t at = (size_t)sprintf(out, "*%zu\r\n", page->count);
    for (size_t i = 0; i < page->count; i++) {
        const rl_audit_entry *e = &page->entries[i];
        char id[48], reserved[24], actual[24], period[24];
        snprintf(id, sizeof id, "%" PRIu64 "-%zu", e->at_unix_ms, i);
        snprintf(reserved, sizeof reserved, "%" PRIu64, e->reserved);
        snprintf(actual, sizeof actual, "%" PRIu64, e->actual);
        snprintf(period, sizeof period, "%" PRIu64, e->period_start_unix_ms);
        at += (size_t)sprintf(out + at, "*2\r\n");
        at = put_bulk(out, at, id);
        at += (size_t)sprintf(out + at, "*12\r\n");
        const char *fields[] = {"l", e->lease_id, "j", e->job_id, "r", reserved, "a", actual, "p", period,
                                "x", e->expired ? "1" : "0"};
        for (size_t f = 0; f < 12; f++) at = put_bulk(out, at, fields[f]);
    }
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *newline = memchr(data, '\n', size);
    if (newline == NULL || (size_t)(newline - (const char *)data) > 40) return 0;
    char head[48];
    memcpy(head, data, (size_t)(newline - (const char *)data));
    head[newline - (const char *)data] = '\0';
    unsigned limit;
    unsigned long long since;
    if (sscanf(head, "%u %llu", &limit, &since) != 2 || limit == 0 || limit > RL_AUDIT_QUERY_MAX) return 0;
    size_t offset = (size_t)(newline - (const char *)data) + 1;
    char *resp = fuzz_copy(data + offset, size - offset);
    redisReply *reply = read_reply(resp, size - offset);
    free(resp);
    if (reply == NULL) return 0;

    rl_audit_entry *entries = calloc(limit, sizeof *entries);
    if (entries == NULL) abort();
    rl_audit_page page = {entries, 12345, 0};
    bool read = rl__redis_audit_page_read(reply, KEY, since, limit, &page);
    freeReplyObject(reply);
    if (!read) {
        FUZZ_CHECK(page.count == 0 && page.next_since_unix_ms == since);
        free(entries);
        return 0;
    }
    FUZZ_CHECK(page.count <= limit);
    uint64_t last = since;
    for (size_t i = 0; i < page.count; i++) {
        const rl_audit_entry *e = &entries[i];
        FUZZ_CHECK(e->at_unix_ms >= last);
        last = e->at_unix_ms;
        FUZZ_CHECK(strcmp(e->key, KEY) == 0);
        FUZZ_CHECK_TEXT(e->lease_id);
        FUZZ_CHECK(rl__lease_id_ok(e->lease_id, strlen(e->lease_id)));
        for (const char *c = e->lease_id; *c != '\0'; c++) FUZZ_CHECK(!(*c >= 'a' && *c <= 'z'));
        FUZZ_CHECK_TEXT(e->job_id);
        FUZZ_CHECK(rl__job_id_ok(e->job_id, strlen(e->job_id)));
        FUZZ_CHECK(e->reserved <= RL_AMOUNT_MAX && e->actual <= RL_AMOUNT_MAX);
    }
    if (page.count == 0 || page.next_since_unix_ms == since) {
        FUZZ_CHECK(page.next_since_unix_ms == since);
        FUZZ_CHECK(page.count == 0 || (page.count == limit && entries[0].at_unix_ms == last));
    } else {
        FUZZ_CHECK(page.next_since_unix_ms == last + 1);
    }
    /* written back, it reads the same */
    if (page.count > 0) {
        char *again = malloc(page.count * 1024 + 32);
        if (again == NULL) abort();
        size_t len = encode(&page, again);
        redisReply *back = read_reply(again, len);
        FUZZ_CHECK(back != NULL);
        rl_audit_entry *copies = calloc(limit, sizeof *copies);
        if (copies == NULL) abort();
        rl_audit_page reread = {copies, 0, 0};
        FUZZ_CHECK(rl__redis_audit_page_read(back, KEY, since, limit, &reread));
        FUZZ_CHECK(reread.count == page.count);
        for (size_t i = 0; i < page.count; i++) {
            FUZZ_CHECK(copies[i].at_unix_ms == entries[i].at_unix_ms);
            FUZZ_CHECK(strcmp(copies[i].lease_id, entries[i].lease_id) == 0);
            FUZZ_CHECK(strcmp(copies[i].job_id, entries[i].job_id) == 0);
            FUZZ_CHECK(copies[i].reserved == entries[i].reserved && copies[i].actual == entries[i].actual);
            FUZZ_CHECK(copies[i].period_start_unix_ms == entries[i].period_start_unix_ms);
            FUZZ_CHECK(copies[i].expired == entries[i].expired);
        }
        freeReplyObject(back);
        free(copies);
        free(again);
    }
    free(entries);
    return 0;
}
