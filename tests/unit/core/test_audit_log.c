/* test_audit_log.c — the memory backend's audit log on a real file system:
 * entries read back; paging by next_since across days, within one
 * millisecond and past the scan's bound, losing nothing; a key's entries
 * only; a day per file and parts of a full day; a late entry; retention
 * deleting whole old days only; a torn tail of the newest file cut; damage
 * refused with the file and the offset, the file untouched; drop_after;
 * last_seq after reopening; a query on another thread while appends,
 * flushes and retention go on. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/file_bytes.h"

#include "core/audit_log.h"
#include "core/audit_part.h"
#include "core/audit_query.h"
#include "core/record_file.h"

#define DAY RL__AUDIT_DAY_MS
#define BASE (UINT64_C(20782) * DAY) /* 2026-11-25T00:00:00Z */

typedef struct fixture {
    char root[64];
    char dir[96]; /* the log's, missing until opened */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->root, sizeof f->root, "/tmp/rl_test_audit_log_XXXXXX");
    assert_non_null(mkdtemp(f->root));
    snprintf(f->dir, sizeof f->dir, "%s/data/audit", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", f->root);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------------- */

static rl__audit_log *open_log(const fixture *f, uint32_t retention_days, uint64_t now_ms) {
    rl__audit_log *log = NULL;
    char err[512];
    if (rl__audit_log_open(f->dir, retention_days, now_ms, &log, err, sizeof err) != RL_OK) fail_msg("%s", err);
    return log;
}

/* Entry number n: its actual is n, which the tests read back to know it. */
static rl_audit_entry entry(uint64_t at_ms, const char *key, uint64_t n) {
    rl_audit_entry e;
    memset(&e, 0, sizeof e);
    e.at_unix_ms = at_ms;
    snprintf(e.lease_id, sizeof e.lease_id, "01JD%022llu", (unsigned long long)n);
    snprintf(e.job_id, sizeof e.job_id, "job-%llu", (unsigned long long)n);
    snprintf(e.key, sizeof e.key, "%s", key);
    e.reserved = n + 100;
    e.actual = n;
    e.period_start_unix_ms = at_ms - at_ms % DAY;
    return e;
}

/* Appends entry n of key at at_ms with seq n. */
static void add(rl__audit_log *log, uint64_t n, uint64_t at_ms, const char *key) {
    rl_audit_entry e = entry(at_ms, key, n);
    assert_int_equal(rl__audit_log_append(log, n, &e, false), RL_OK);
}

/* Entries first..last of key, entry n at at_ms + n. */
static void add_run(rl__audit_log *log, uint64_t first, uint64_t last, uint64_t at_ms, const char *key) {
    for (uint64_t n = first; n <= last; n++) add(log, n, at_ms + n, key);
}

static void flush(rl__audit_log *log) {
    char err[512];
    if (rl__audit_log_flush(log, true, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

/* A closed log of K's entries 1..first_day_last on 2026-11-25, the next ones
 * to last on 2026-11-26. */
static void write_two_days(const fixture *f, uint64_t first_day_last, uint64_t last) {
    rl__audit_log *log = open_log(f, 62, BASE);
    add_run(log, 1, first_day_last, BASE, "K");
    add_run(log, first_day_last + 1, last, BASE + DAY, "K");
    flush(log);
    rl__audit_log_close(log);
}

typedef struct page {
    rl_audit_entry entries[RL_AUDIT_QUERY_MAX];
    size_t count;
    uint64_t next;
} page;

static void query(rl__audit_log *log, const char *key, uint64_t since, uint32_t limit, page *out) {
    rl_audit_query q = {key, since, limit};
    rl_audit_page p = {out->entries, 0, 0};
    char err[512];
    if (rl__audit_log_query(log, &q, &p, err, sizeof err) != RL_OK) fail_msg("%s", err);
    out->count = p.count;
    out->next = p.next_since_unix_ms;
}

/* Pages through key's entries from since with limit, as a client would,
 * until a page says "nothing newer"; the entries' numbers into ns. */
static size_t page_through(rl__audit_log *log, const char *key, uint64_t since, uint32_t limit, uint64_t *ns,
                           size_t max) {
    static page p;
    size_t n = 0;
    for (;;) {
        query(log, key, since, limit, &p);
        assert_true(p.next >= since);
        for (size_t i = 0; i < p.count; i++) {
            assert_true(p.entries[i].at_unix_ms >= since);
            assert_true(p.entries[i].at_unix_ms < p.next);
            assert_string_equal(p.entries[i].key, key);
            assert_true(n < max);
            ns[n++] = p.entries[i].actual;
        }
        if (p.count == 0 && p.next == since) return n;
        since = p.next;
    }
}

static bool file_exists(const fixture *f, const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return access(path, F_OK) == 0;
}

static char *path_of(const fixture *f, const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    return path;
}

/* ---- tests ------------------------------------------------------------------------ */

static void entries_read_back(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 0);
    add(log, 1, BASE + 1, "tenant:acme:spend");
    add(log, 2, BASE + 2, "tenant:acme:spend");
    rl_audit_entry expired = entry(BASE + 2, "tenant:acme:spend", 3);
    expired.expired = true;
    expired.actual = 0;
    expired.job_id[0] = '\0';
    assert_int_equal(rl__audit_log_append(log, 3, &expired, false), RL_OK);
    add(log, 4, BASE + 3, "tenant:other:spend");
    assert_int_equal(rl__audit_log_last_seq(log), 4);

    static page p;
    query(log, "tenant:acme:spend", 0, 10, &p); /* nothing flushed yet */
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next, 0);
    flush(log);
    assert_true(file_exists(f, "2026-11-25.audit"));
    query(log, "tenant:acme:spend", 0, 10, &p);
    assert_int_equal(p.count, 3);
    assert_int_equal(p.next, BASE + 3);
    rl_audit_entry first = entry(BASE + 1, "tenant:acme:spend", 1);
    assert_int_equal(p.entries[0].at_unix_ms, first.at_unix_ms);
    assert_string_equal(p.entries[0].lease_id, first.lease_id);
    assert_string_equal(p.entries[0].job_id, "job-1");
    assert_int_equal(p.entries[0].reserved, 101);
    assert_int_equal(p.entries[0].actual, 1);
    assert_int_equal(p.entries[0].period_start_unix_ms, BASE);
    assert_false(p.entries[0].expired);
    assert_true(p.entries[2].expired);
    assert_int_equal(p.entries[2].actual, 0);
    assert_string_equal(p.entries[2].job_id, "");

    /* nothing newer: ask again later */
    query(log, "tenant:acme:spend", BASE + 3, 10, &p);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next, BASE + 3);
    /* the newest millisecond may still grow: it waits for the next page,
     * unless it is all the page has */
    add(log, 5, BASE + 7, "tenant:acme:spend");
    add(log, 6, BASE + 9, "tenant:acme:spend");
    flush(log);
    query(log, "tenant:acme:spend", BASE + 3, 10, &p);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.entries[0].actual, 5);
    assert_int_equal(p.next, BASE + 8);
    query(log, "tenant:acme:spend", BASE + 8, 10, &p);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.entries[0].actual, 6);
    assert_int_equal(p.next, BASE + 10);
    rl__audit_log_close(log);

    log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 6);
    uint64_t ns[8];
    assert_int_equal(page_through(log, "tenant:acme:spend", 0, 1000, ns, 8), 5);
    rl__audit_log_close(log);
}

static void appends_that_break_a_rule_change_nothing(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    add(log, 5, BASE, "k");
    rl_audit_entry e = entry(BASE, "k", 5);
    assert_int_equal(rl__audit_log_append(log, 5, &e, false), RL_INVALID_REQUEST); /* seq not above the last */
    assert_int_equal(rl__audit_log_append(log, 4, &e, false), RL_INVALID_REQUEST);
    e = entry(BASE, "a key with spaces", 6);
    assert_int_equal(rl__audit_log_append(log, 6, &e, false), RL_INVALID_REQUEST);
    e = entry(BASE, "k", 6);
    e.expired = true;
    assert_int_equal(rl__audit_log_append(log, 6, &e, false), RL_INVALID_REQUEST);
    assert_int_equal(rl__audit_log_last_seq(log), 5);
    flush(log);
    rl__audit_log_close(log);
    log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 5);

    /* bad queries and retention */
    static page p;
    rl_audit_query q = {"a b", 0, 10};
    rl_audit_page out = {p.entries, 7, 7};
    char err[256];
    assert_int_equal(rl__audit_log_query(log, &q, &out, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "key must be"));
    assert_int_equal(out.count, 0);
    q = (rl_audit_query){"k", 0, 0};
    assert_int_equal(rl__audit_log_query(log, &q, &out, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "limit must be 1..1000"));
    q.limit = RL_AUDIT_QUERY_MAX + 1;
    assert_int_equal(rl__audit_log_query(log, &q, &out, err, sizeof err), RL_INVALID_REQUEST);
    rl__audit_log_close(log);
    rl__audit_log *none = NULL;
    assert_int_equal(rl__audit_log_open(f->dir, 0, BASE, &none, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "retention_days must be 1..3660"));
    assert_int_equal(rl__audit_log_open(f->dir, RL_AUDIT_MAX_RETENTION_DAYS + 1, BASE, &none, err, sizeof err),
                     RL_INVALID_REQUEST);
    assert_null(none);
}

/* Three days of two keys' entries, several to a millisecond: paged by
 * next_since with every limit, each key's entries come whole, in order,
 * once. */
static void paging_across_days_loses_nothing(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    uint64_t expected[256], expected_at[256];
    size_t count = 0;
    uint64_t n = 0;
    for (uint64_t day = 0; day < 3; day++) {
        for (uint64_t ms = 0; ms < 20; ms++) {
            uint64_t at = BASE + day * DAY + (ms < 10 ? ms : DAY - 20 + ms); /* both ends of the day */
            size_t many = 1 + (ms % 3);                                       /* 1..3 of K a millisecond */
            for (size_t i = 0; i < many; i++) {
                add(log, ++n, at, "K");
                expected_at[count] = at;
                expected[count++] = n;
                if (ms % 2 == 0) add(log, ++n, at, "other");
            }
        }
        flush(log);
    }
    assert_true(file_exists(f, "2026-11-25.audit"));
    assert_true(file_exists(f, "2026-11-26.audit"));
    assert_true(file_exists(f, "2026-11-27.audit"));
    uint64_t got[256];
    for (uint32_t limit = 3; limit <= 1000; limit = limit < 10 ? limit + 1 : limit * 10) {
        size_t got_count = page_through(log, "K", 0, limit, got, 256);
        assert_int_equal(got_count, count);
        assert_memory_equal(got, expected, count * sizeof *got);
    }
    /* from inside the second day */
    size_t got_count = page_through(log, "K", BASE + DAY + 5, 4, got, 256);
    size_t skip = 0;
    while (expected_at[skip] < BASE + DAY + 5) skip++;
    assert_int_equal(got_count, count - skip);
    assert_memory_equal(got, expected + skip, got_count * sizeof *got);
    static page p;
    query(log, "other", BASE + DAY, 1000, &p);
    for (size_t i = 0; i < p.count; i++) assert_true(p.entries[i].at_unix_ms >= BASE + DAY);
    assert_int_equal(p.entries[0].at_unix_ms, BASE + DAY);
    rl__audit_log_close(log);
}

static void a_page_never_ends_inside_a_millisecond(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    const uint64_t x = BASE + 500;
    add(log, 1, x - 1, "K");
    add(log, 2, x, "K");
    add(log, 3, x, "K");
    add(log, 4, x, "K");
    add(log, 5, x + 1, "K");
    add(log, 6, x + 2, "other");
    flush(log);
    static page p;
    query(log, "K", 0, 3, &p); /* full, and the next of K is of x too: x waits */
    assert_int_equal(p.count, 1);
    assert_int_equal(p.entries[0].actual, 1);
    assert_int_equal(p.next, x);
    query(log, "K", x, 3, &p); /* full, and x + 1 comes after: x is whole */
    assert_int_equal(p.count, 3);
    assert_int_equal(p.entries[2].actual, 4);
    assert_int_equal(p.next, x + 1);
    query(log, "K", x + 1, 3, &p);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.next, x + 2);
    /* a millisecond with more than limit entries: all the page has is
     * returned, and the rest of it is in no page */
    query(log, "K", x, 2, &p);
    assert_int_equal(p.count, 2);
    assert_int_equal(p.next, x + 1);
    rl__audit_log_close(log);
}

/* One entry of K in a day of some 20 MiB of other entries: the day goes on
 * in a second part; a query starts at the part where since is; a scan
 * stops at its bound and next_since takes the next query on from there. */
static void a_full_day_goes_on_in_parts_and_scans_are_bounded(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    uint64_t n = 0;
    const uint64_t entries = 230000; /* about 90 bytes a record */
    for (; n < entries; n++) {
        add(log, n + 1, BASE + n, n % 10000 == 0 ? "K" : "filler");
        if (n % 50000 == 0) flush(log);
    }
    flush(log);
    assert_true(file_exists(f, "2026-11-25.audit"));
    assert_true(file_exists(f, "2026-11-25.1.audit"));
    assert_false(file_exists(f, "2026-11-25.2.audit"));
    struct stat st;
    assert_int_equal(stat(path_of(f, "2026-11-25.audit"), &st), 0);
    assert_true((uint64_t)st.st_size >= RL__AUDIT_PART_MAX_BYTES);
    assert_true((uint64_t)st.st_size < RL__AUDIT_PART_MAX_BYTES + 512);

    uint64_t got[64];
    size_t count = page_through(log, "K", 0, 1000, got, 64);
    assert_int_equal(count, entries / 10000);
    for (size_t i = 0; i < count; i++) assert_int_equal(got[i], i * 10000 + 1);
    count = page_through(log, "K", BASE + 200000, 1000, got, 64); /* in the second part */
    assert_int_equal(count, 3);
    assert_int_equal(got[0], 200001);
    rl__audit_log_close(log);

    /* The bound: only a key with no entries makes a scan look at 64 MiB. */
    log = open_log(f, 62, BASE);
    for (uint64_t day = 1; day <= 4; day++) { /* some 87 MB */
        for (uint64_t i = 0; i < entries; i++) add(log, ++n, BASE + day * DAY + i, "filler");
        flush(log);
    }
    static page p;
    query(log, "K", BASE + DAY, 1000, &p);
    assert_int_equal(p.count, 0);
    assert_true(p.next > BASE + 3 * DAY); /* the scan went on past since's part, and stopped */
    assert_true(p.next < BASE + 4 * DAY + entries);
    uint64_t since = p.next;
    query(log, "K", since, 1000, &p);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.next, since); /* the end: ask again later */
    add(log, ++n, BASE + 4 * DAY + entries, "K");
    add(log, ++n, BASE + 4 * DAY + entries + 1, "filler");
    flush(log);
    count = page_through(log, "K", BASE + DAY, 1000, got, 64);
    assert_int_equal(count, 1);
    assert_int_equal(got[0], n - 1);
    rl__audit_log_close(log);
}

static void a_late_entry_goes_to_the_newer_file(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    add(log, 1, BASE + DAY + 10, "K");
    add(log, 2, BASE + 10, "K"); /* the day before: late */
    add(log, 3, BASE + DAY + 20, "other");
    flush(log);
    assert_true(file_exists(f, "2026-11-26.audit"));
    assert_false(file_exists(f, "2026-11-25.audit"));
    static page p;
    query(log, "K", BASE, 10, &p); /* found, in the order appended */
    assert_int_equal(p.count, 2);
    assert_int_equal(p.entries[0].actual, 1);
    assert_int_equal(p.entries[1].actual, 2);
    query(log, "K", BASE + 11, 10, &p);
    assert_int_equal(p.count, 1);
    assert_int_equal(p.entries[0].actual, 1);
    rl__audit_log_close(log);
}

/* Whether fd is the file at name in the log's directory. */
static bool is_file(const fixture *f, int fd, const char *name) {
    struct stat by_fd, by_path;
    return fstat(fd, &by_fd) == 0 && stat(path_of(f, name), &by_path) == 0 && by_fd.st_ino == by_path.st_ino &&
           by_fd.st_dev == by_path.st_dev;
}

/* A flush without sync that ends a day's part keeps a descriptor of it, so
 * that the sync made later outside the writer's lock covers that part too,
 * not only the one being written. */
static void parts_written_without_sync_are_handed_over_for_the_sync(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    char err[512];
    add(log, 1, BASE + 10, "K");
    assert_int_equal(rl__audit_log_flush(log, false, err, sizeof err), RL_OK);
    add(log, 2, BASE + DAY + 10, "K"); /* the next day: the first day's part ends */
    assert_int_equal(rl__audit_log_flush(log, false, err, sizeof err), RL_OK);
    int fds[RL__AUDIT_LOG_SYNC_HANDLES_MAX];
    size_t count = rl__audit_log_sync_handles(log, fds, RL__AUDIT_LOG_SYNC_HANDLES_MAX);
    assert_int_equal(count, 2);
    assert_true(is_file(f, fds[0], "2026-11-25.audit"));
    assert_true(is_file(f, fds[1], "2026-11-26.audit"));
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(fdatasync(fds[i]), 0);
        close(fds[i]);
    }
    count = rl__audit_log_sync_handles(log, fds, RL__AUDIT_LOG_SYNC_HANDLES_MAX); /* handed over once */
    assert_int_equal(count, 1);
    assert_true(is_file(f, fds[0], "2026-11-26.audit"));
    close(fds[0]);
    add(log, 3, BASE + 2 * DAY + 10, "K");
    flush(log); /* synced: nothing kept */
    count = rl__audit_log_sync_handles(log, fds, RL__AUDIT_LOG_SYNC_HANDLES_MAX);
    assert_int_equal(count, 1);
    assert_true(is_file(f, fds[0], "2026-11-27.audit"));
    close(fds[0]);
    rl__audit_log_close(log);
}

static void retention_deletes_whole_old_days_only(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 2, BASE);
    for (uint64_t day = 0; day < 5; day++) add(log, day + 1, BASE + day * DAY + 1000, "K");
    flush(log);
    /* now: day 4 at noon; days that ended 2 days ago or before are day 0 and 1 */
    rl__audit_log_expire(log, BASE + 4 * DAY + DAY / 2);
    assert_false(file_exists(f, "2026-11-25.audit"));
    assert_false(file_exists(f, "2026-11-26.audit"));
    assert_true(file_exists(f, "2026-11-27.audit"));
    assert_true(file_exists(f, "2026-11-29.audit"));
    uint64_t got[8];
    assert_int_equal(page_through(log, "K", 0, 10, got, 8), 3);
    assert_int_equal(got[0], 3);
    /* exactly at the end of day 2 plus 2 days, day 2 goes */
    rl__audit_log_expire(log, BASE + 5 * DAY);
    assert_false(file_exists(f, "2026-11-27.audit"));
    assert_true(file_exists(f, "2026-11-28.audit"));
    /* far later: the file being written, which holds the last entries, stays */
    rl__audit_log_expire(log, BASE + 400 * DAY);
    assert_false(file_exists(f, "2026-11-28.audit"));
    assert_true(file_exists(f, "2026-11-29.audit"));
    rl__audit_log_close(log);
    /* and opening applies retention too, keeping the last sequence number */
    log = open_log(f, 2, BASE + 400 * DAY);
    assert_true(file_exists(f, "2026-11-29.audit"));
    assert_int_equal(rl__audit_log_last_seq(log), 5);
    add(log, 6, BASE + 400 * DAY, "K");
    flush(log);
    rl__audit_log_expire(log, BASE + 400 * DAY + 1);
    assert_false(file_exists(f, "2026-11-29.audit"));
    rl__audit_log_close(log);
}

static void a_torn_tail_of_the_newest_file_is_cut(void **state) {
    fixture *f = *state;
    write_two_days(f, 3, 5);
    rl__audit_log *log;
    const char *newest = path_of(f, "2026-11-26.audit");
    size_t whole_len;
    unsigned char *whole = rl_test_file_bytes(newest, &whole_len);
    /* the crash came while the next record was being written */
    unsigned char torn[RL__RECORD_FRAME_BYTES + RL__AUDIT_RECORD_MAX_BYTES];
    rl_audit_entry e = entry(BASE + DAY + 6, "K", 6);
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = rl__audit_record_encode(record, 6, &e, NULL);
    size_t framed = rl__record_frame(torn, record, len);
    rl_test_file_write(newest, torn, framed - 10, "ab");

    log = open_log(f, 62, BASE + DAY);
    assert_int_equal(rl__audit_log_last_seq(log), 5);
    size_t cut_len;
    unsigned char *cut = rl_test_file_bytes(newest, &cut_len);
    assert_int_equal(cut_len, whole_len);
    assert_memory_equal(cut, whole, whole_len);
    add(log, 6, BASE + DAY + 6, "K");
    add(log, 7, BASE + DAY + 7, "other");
    flush(log);
    rl__audit_log_close(log);
    log = open_log(f, 62, BASE + DAY);
    uint64_t got[8];
    assert_int_equal(page_through(log, "K", 0, 10, got, 8), 6);
    assert_int_equal(got[5], 6);
    rl__audit_log_close(log);
    free(whole);
    free(cut);
}

static void damage_is_refused_with_the_file_and_offset(void **state) {
    fixture *f = *state;
    write_two_days(f, 3, 6);
    rl__audit_log *log;
    /* the newest file: its second record, with one after it */
    char newest[256];
    snprintf(newest, sizeof newest, "%s", path_of(f, "2026-11-26.audit"));
    size_t len;
    unsigned char *data = rl_test_file_bytes(newest, &len);
    size_t record = (len - RL__RECORD_FILE_HEADER_BYTES) / 3;
    size_t second = RL__RECORD_FILE_HEADER_BYTES + record;
    data[second + RL__RECORD_FRAME_BYTES + 30] ^= 0x40;
    rl_test_file_write(newest, data, len, "wb");
    rl__audit_log *none = NULL;
    char err[512];
    assert_int_equal(rl__audit_log_open(f->dir, 62, BASE, &none, err, sizeof err), RL_IO_ERROR);
    assert_null(none);
    char expected[400];
    snprintf(expected, sizeof expected, "%s: damaged at offset %zu", newest, second);
    if (strstr(err, expected) == NULL) fail_msg("%s", err);
    size_t after_len;
    unsigned char *after = rl_test_file_bytes(newest, &after_len);
    assert_int_equal(after_len, len);
    assert_memory_equal(after, data, len); /* left as it was */
    free(after);

    /* a record whose checksum holds but which breaks the entry's rules */
    data[second + RL__RECORD_FRAME_BYTES + 30] ^= 0x40;
    unsigned char *bad = data + second + RL__RECORD_FRAME_BYTES;
    unsigned char payload[RL__AUDIT_RECORD_MAX_BYTES];
    memcpy(payload, bad, record - RL__RECORD_FRAME_BYTES);
    payload[0] = 9; /* version */
    rl__record_frame(data + second, payload, record - RL__RECORD_FRAME_BYTES);
    rl_test_file_write(newest, data, len, "wb");
    assert_int_equal(rl__audit_log_open(f->dir, 62, BASE, &none, err, sizeof err), RL_IO_ERROR);
    if (strstr(err, expected) == NULL || strstr(err, "unknown version") == NULL) fail_msg("%s", err);
    payload[0] = RL__AUDIT_RECORD_VERSION;
    rl__record_frame(data + second, payload, record - RL__RECORD_FRAME_BYTES);
    rl_test_file_write(newest, data, len, "wb");

    /* an older file is read by queries only: they refuse it the same way */
    char older[256];
    snprintf(older, sizeof older, "%s", path_of(f, "2026-11-25.audit"));
    free(data);
    data = rl_test_file_bytes(older, &len);
    data[len - 3] ^= 1; /* the last record: a torn tail to a reader... */
    rl_test_file_write(older, data, len, "wb");
    log = open_log(f, 62, BASE);
    uint64_t got[8];
    assert_int_equal(page_through(log, "K", 0, 10, got, 8), 5);
    data[len - 3] ^= 1;
    data[second + 3] ^= 1; /* ...the second, damage */
    rl_test_file_write(older, data, len, "wb");
    static page p;
    rl_audit_query q = {"K", BASE, 10};
    rl_audit_page out = {p.entries, 0, 0};
    assert_int_equal(rl__audit_log_query(log, &q, &out, err, sizeof err), RL_IO_ERROR);
    snprintf(expected, sizeof expected, "%s: damaged at offset %zu", older, second);
    if (strstr(err, expected) == NULL) fail_msg("%s", err);
    assert_int_equal(out.count, 0);
    q.since_unix_ms = BASE + DAY; /* the days after it still answer (the newest millisecond waits) */
    assert_int_equal(rl__audit_log_query(log, &q, &out, err, sizeof err), RL_OK);
    assert_int_equal(out.count, 2);
    rl__audit_log_close(log);
    free(data);
}

/* Any one byte of the newest file changed, anywhere before its last
 * record: the opening is refused and the file left as it was; only a
 * change in the last record may pass as its torn tail, which is cut. */
static void every_byte_of_the_newest_file_changed_in_turn(void **state) {
    fixture *f = *state;
    write_two_days(f, 3, 6);
    char newest[256];
    snprintf(newest, sizeof newest, "%s", path_of(f, "2026-11-26.audit"));
    size_t len;
    unsigned char *good = rl_test_file_bytes(newest, &len);
    size_t record = (len - RL__RECORD_FILE_HEADER_BYTES) / 3;
    size_t last = len - record;
    unsigned char *damaged = malloc(len);
    const unsigned char flips[] = {0x01, 0x80, 0xff};
    for (size_t at = 0; at < len; at++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            memcpy(damaged, good, len);
            damaged[at] ^= flips[k];
            rl_test_file_write(newest, damaged, len, "wb");
            rl__audit_log *log = NULL;
            char err[512] = "";
            rl_status status = rl__audit_log_open(f->dir, 62, BASE, &log, err, sizeof err);
            if (status == RL_OK) {
                if (at < last) fail_msg("byte %zu ^ 0x%02x opened", at, flips[k]);
                assert_int_equal(rl__audit_log_last_seq(log), 5);
                rl__audit_log_close(log);
                continue;
            }
            assert_int_equal(status, RL_IO_ERROR);
            if (strstr(err, newest) == NULL) fail_msg("byte %zu: %s", at, err);
            rl_test_file_equals(newest, damaged, len);
        }
    }
    free(damaged);
    free(good);
}

static void drop_after_removes_what_the_journal_does_not_have(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    add_run(log, 1, 6, BASE, "K");
    add_run(log, 7, 10, BASE + DAY, "K");
    flush(log);
    add(log, 11, BASE + 2 * DAY, "K"); /* buffered */
    char err[512];
    assert_int_equal(rl__audit_log_drop_after(log, 12, err, sizeof err), RL_OK); /* nothing above */
    assert_int_equal(rl__audit_log_last_seq(log), 11);
    if (rl__audit_log_drop_after(log, 4, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_int_equal(rl__audit_log_last_seq(log), 4);
    assert_false(file_exists(f, "2026-11-27.audit"));
    assert_false(file_exists(f, "2026-11-26.audit"));
    assert_true(file_exists(f, "2026-11-25.audit"));
    assert_false(file_exists(f, "2026-11-25.audit.tmp"));
    uint64_t got[16];
    assert_int_equal(page_through(log, "K", 0, 100, got, 16), 4);
    assert_int_equal(got[3], 4);
    add(log, 5, BASE + DAY + 5, "K");
    add(log, 6, BASE + DAY + 6, "other");
    flush(log);
    rl__audit_log_close(log);

    log = open_log(f, 62, BASE + DAY);
    assert_int_equal(rl__audit_log_last_seq(log), 6);
    assert_int_equal(page_through(log, "K", 0, 100, got, 16), 5);
    if (rl__audit_log_drop_after(log, 0, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_int_equal(rl__audit_log_last_seq(log), 0);
    assert_false(file_exists(f, "2026-11-25.audit"));
    assert_int_equal(page_through(log, "K", 0, 100, got, 16), 0);
    add(log, 1, BASE + DAY, "K");
    flush(log);
    assert_int_equal(page_through(log, "K", 0, 100, got, 16), 1);
    rl__audit_log_close(log);
}

static void last_seq_survives_reopening(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 62, BASE);
    for (uint64_t i = 1; i <= 3; i++) add(log, i * 10, BASE + i, "K");
    char err[256];
    assert_int_equal(rl__audit_log_flush(log, false, err, sizeof err), RL_OK);
    rl__audit_log_close(log);
    log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 30);
    rl__audit_log_close(log);
    /* a newer file that holds no entry yet (made, then the crash): the
     * sequence number comes from the one before, and appending goes on in it */
    rl_test_file_write(path_of(f, "2026-11-26.audit"), RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES, "wb");
    log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 30);
    add(log, 31, BASE + DAY + 1, "K");
    flush(log);
    assert_false(file_exists(f, "2026-11-26.1.audit"));
    rl__audit_log_close(log);
    log = open_log(f, 62, BASE);
    assert_int_equal(rl__audit_log_last_seq(log), 31);
    rl__audit_log_close(log);
}

/* ---- a query on another thread ---------------------------------------------------- */

#define WRITTEN 20000u

typedef struct reader {
    rl__audit_log *log;
    uint64_t got[WRITTEN];
    size_t count;
    int done; /* the writer's last flush is over */
    pthread_mutex_t lock;
    char err[512];
    bool failed;
} reader;

static bool writer_done(reader *r) {
    pthread_mutex_lock(&r->lock);
    bool done = r->done != 0;
    pthread_mutex_unlock(&r->lock);
    return done;
}

/* Pages K's entries with next_since while the writer goes on, then once
 * more after it has finished. */
static void *read_along(void *context) {
    reader *r = context;
    static rl_audit_entry entries[100];
    uint64_t since = 0;
    bool last_round = false;
    for (;;) {
        if (!last_round && writer_done(r)) last_round = true;
        rl_audit_query q = {"K", since, 100};
        rl_audit_page answer = {entries, 0, 0};
        if (rl__audit_log_query(r->log, &q, &answer, r->err, sizeof r->err) != RL_OK) {
            r->failed = true;
            return NULL;
        }
        for (size_t i = 0; i < answer.count && r->count < WRITTEN; i++) r->got[r->count++] = entries[i].actual;
        if (answer.count == 0 && answer.next_since_unix_ms == since && last_round) return NULL;
        since = answer.next_since_unix_ms;
    }
}

static void a_query_runs_beside_the_writer(void **state) {
    fixture *f = *state;
    rl__audit_log *log = open_log(f, 3, BASE);
    static reader r;
    memset(&r, 0, sizeof r);
    r.log = log;
    pthread_mutex_init(&r.lock, NULL);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, read_along, &r), 0);
    /* one K entry a millisecond, among others; days change, retention runs */
    uint64_t seq = 0, at = BASE, first_after_day_3 = 0;
    for (uint64_t i = 1; i <= WRITTEN; i++) {
        at += i % 1000 == 0 ? DAY / 4 : 1;
        if (first_after_day_3 == 0 && at >= BASE + 3 * DAY) first_after_day_3 = i;
        add(log, ++seq, at, "filler");
        rl_audit_entry e = entry(at, "K", i);
        assert_int_equal(rl__audit_log_append(log, ++seq, &e, false), RL_OK);
        if (i % 7 == 0) add(log, ++seq, at, "filler");
        if (i % 50 == 0) flush(log);
        if (i % 2000 == 0) rl__audit_log_expire(log, BASE); /* nothing old yet */
    }
    flush(log);
    pthread_mutex_lock(&r.lock);
    r.done = 1;
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(pthread_join(thread, NULL), 0);
    if (r.failed) fail_msg("%s", r.err);
    assert_int_equal(r.count, WRITTEN);
    for (size_t i = 0; i < r.count; i++) assert_int_equal(r.got[i], i + 1);

    /* retention beside a reader, deleting days 0..2: the reader may find
     * some of them or none, in order, and all the days after */
    r.count = 0;
    r.done = 0;
    assert_int_equal(pthread_create(&thread, NULL, read_along, &r), 0);
    rl__audit_log_expire(log, BASE + 6 * DAY);
    pthread_mutex_lock(&r.lock);
    r.done = 1;
    pthread_mutex_unlock(&r.lock);
    assert_int_equal(pthread_join(thread, NULL), 0);
    if (r.failed) fail_msg("%s", r.err);
    for (size_t i = 1; i < r.count; i++) assert_true(r.got[i] > r.got[i - 1]);
    size_t kept = WRITTEN - first_after_day_3 + 1;
    assert_true(r.count >= kept);
    for (size_t i = 0; i < kept; i++) assert_int_equal(r.got[r.count - kept + i], first_after_day_3 + i);
    assert_false(file_exists(f, "2026-11-27.audit"));
    assert_true(file_exists(f, "2026-11-28.audit"));
    pthread_mutex_destroy(&r.lock);
    rl__audit_log_close(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(entries_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(appends_that_break_a_rule_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(paging_across_days_loses_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_page_never_ends_inside_a_millisecond, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_day_goes_on_in_parts_and_scans_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(a_late_entry_goes_to_the_newer_file, setup, teardown),
        cmocka_unit_test_setup_teardown(parts_written_without_sync_are_handed_over_for_the_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_deletes_whole_old_days_only, setup, teardown),
        cmocka_unit_test_setup_teardown(a_torn_tail_of_the_newest_file_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(damage_is_refused_with_the_file_and_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(every_byte_of_the_newest_file_changed_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(drop_after_removes_what_the_journal_does_not_have, setup, teardown),
        cmocka_unit_test_setup_teardown(last_seq_survives_reopening, setup, teardown),
        cmocka_unit_test_setup_teardown(a_query_runs_beside_the_writer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
