/* test_journal.c — the memory backend's usage survives a restart: a
 * backend reopened on its journal has every rolling window, budget,
 * concurrency hold and remembered lease it had (on a manual clock whose
 * monotonic time starts again elsewhere, as after a reboot); what fell due
 * while it was closed is applied; a torn tail is cut and damage refused
 * without touching the file; compaction keeps the state; the audit log has
 * one entry per key a Complete charged and per budget refund, also across
 * restarts and when it got ahead of the journal by the group a crash
 * leaves; it is kept whole without a journal, beside a new, moved, older
 * or other log's journal, and when a damaged length stops start-up; a
 * deleted limit stays deleted. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>

#include "core/audit_log.h"
#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/memory.h"
#include "support/civil_time.h"
#include "support/file_bytes.h"
#include "support/lease_ids.h"

#define HOUR_MS 3600000u

typedef struct fixture {
    char dir[64];
    char journal[128];
    char audit[128];
    rl_manual_clock clock;
    rl_backend *backend;
    rl_journal_fsync fsync;
    bool no_journal; /* the audit log alone */
    uint64_t compact_bytes;
    uint32_t lease_memory_ms;
} fixture;

static rl_status open_backend(fixture *f, char *err, size_t err_size) {
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.journal_path = f->no_journal ? NULL : f->journal;
    options.journal_fsync = f->fsync;
    options.journal_compact_bytes = f->compact_bytes;
    options.lease_memory_ms = f->lease_memory_ms;
    options.audit_dir = f->audit;
    return rl_memory_backend_open(&options, &f->backend, err, err_size);
}

static void open_ok(fixture *f) {
    char err[512];
    rl_status status = open_backend(f, err, sizeof err);
    if (status != RL_OK) fail_msg("open: %s", err);
}

/* Closed, as a clean stop closes it. */
static void stop(fixture *f) {
    rl_backend_destroy(f->backend);
    f->backend = NULL;
}

/* A restart: closed, then opened on a clock whose monotonic time starts
 * again (a new process, maybe a new boot), after down_ms of wall time. */
static void restart(fixture *f, uint64_t down_ms) {
    stop(f);
    uint64_t unix_ms = f->clock.base.unix_ms(&f->clock.base) + down_ms;
    rl_manual_clock_init(&f->clock, 5000, unix_ms);
    open_ok(f);
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    snprintf(f.dir, sizeof f.dir, "/tmp/rl_journal_XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    snprintf(f.journal, sizeof f.journal, "%s/journal", f.dir);
    snprintf(f.audit, sizeof f.audit, "%s/audit", f.dir);
    rl_manual_clock_init(&f.clock, 7000000, rl_test_utc_ms(2026, 11, 25, 9, 0));
    f.fsync = RL_JOURNAL_FSYNC_ALWAYS;
    f.lease_memory_ms = RL_MEMORY_DEFAULT_LEASE_MEMORY_MS;
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    char command[160];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    if (system(command) != 0) return -1;
    return 0;
}

static void define(fixture *f, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds) {
    rl_limit_def def = {.kind = kind, .capacity = capacity};
    snprintf(def.key, sizeof def.key, "%s", key);
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    if (kind == RL_KIND_BUDGET) {
        def.period = RL_PERIOD_MONTH;
        snprintf(def.timezone, sizeof def.timezone, "UTC");
    }
    char err[200];
    if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rl_backend_apply_definition(f->backend, &def, NULL), RL_OK);
}

static rl_reserve_result reserve(fixture *f, uint64_t lease, const char *job_id, const rl_requirement *reqs,
                                 size_t count) {
    char id[27];
    rl_reserve_request request = {rl_test_lease_id(lease, id), job_id, reqs, count, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

static void complete(fixture *f, uint64_t lease, const rl_actual *actuals, size_t count) {
    char id[27];
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, actuals, count};
    assert_int_equal(rl_backend_complete(f->backend, &request), RL_OK);
}

static rl_limit_usage usage(fixture *f, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &u), RL_OK);
    return u;
}

static void assert_same_usage(const rl_limit_usage *a, const rl_limit_usage *b) {
    assert_int_equal(a->capacity, b->capacity);
    assert_int_equal(a->used, b->used);
    assert_int_equal(a->available, b->available);
    assert_int_equal(a->active, b->active);
    assert_int_equal(a->committed, b->committed);
    assert_int_equal(a->reserved, b->reserved);
    assert_int_equal(a->period_start_unix_ms, b->period_start_unix_ms);
    assert_int_equal(a->debt_total, b->debt_total);
}

/* Every audit entry of key (paging by next_since_unix_ms), the first max
 * of them into entries. */
static size_t audit_of(fixture *f, const char *key, rl_audit_entry *entries, size_t max) {
    static rl_audit_entry page_entries[RL_AUDIT_QUERY_MAX];
    rl_manual_clock_advance(&f->clock, 1); /* entries are listed once their millisecond is over */
    rl_audit_query query = {key, 0, RL_AUDIT_QUERY_MAX};
    size_t total = 0;
    for (;;) {
        rl_audit_page page = {page_entries, 0, 0};
        assert_int_equal(rl_backend_audit_query(f->backend, &query, &page), RL_OK);
        if (page.count == 0) return total;
        for (size_t i = 0; i < page.count; i++, total++)
            if (total < max) entries[total] = page_entries[i];
        assert_true(page.next_since_unix_ms > query.since_unix_ms);
        query.since_unix_ms = page.next_since_unix_ms;
    }
}

/* Every kind of state comes back as it was, and retries get their first
 * outcome. */
static void test_state_survives_restart(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    define(f, "conc", RL_KIND_CONCURRENCY, 2, 300);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    rl_requirement both[] = {{"tpm", 400, false}, {"conc", 1, false}, {"spend", 1000, false}};
    assert_true(reserve(f, 1, "job-1", both, 3).allowed);
    rl_reserve_result second = reserve(f, 2, NULL, both, 3);
    assert_true(second.allowed);
    rl_requirement too_much[] = {{"tpm", 900, false}};
    rl_reserve_result denied = reserve(f, 3, NULL, too_much, 1);
    assert_false(denied.allowed);
    rl_actual actuals[] = {{"tpm", 100}, {"spend", 250}};
    complete(f, 1, actuals, 2);

    rl_limit_usage tpm = usage(f, "tpm"), conc = usage(f, "conc"), spend = usage(f, "spend");
    assert_int_equal(tpm.used, 500);
    assert_int_equal(spend.committed, 250);
    assert_int_equal(spend.reserved, 1000);
    restart(f, 1000);
    rl_limit_usage tpm2 = usage(f, "tpm"), conc2 = usage(f, "conc"), spend2 = usage(f, "spend");
    assert_same_usage(&tpm, &tpm2);
    assert_same_usage(&conc, &conc2);
    assert_same_usage(&spend, &spend2);

    /* Idempotent across the restart: the admitted lease keeps its time,
     * the denied one stays denied, nothing is reserved twice. */
    rl_reserve_result again = reserve(f, 2, NULL, both, 3);
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, second.reserved_at_unix_ms);
    rl_reserve_result denied_again = reserve(f, 3, NULL, too_much, 1);
    assert_false(denied_again.allowed);
    assert_string_equal(denied_again.denied_by.key, "tpm");
    assert_int_equal(usage(f, "tpm").used, 500);

    /* A Complete after the restart still finds its lease. */
    rl_actual rest[] = {{"tpm", 0}, {"spend", 10}};
    complete(f, 2, rest, 2);
    assert_int_equal(usage(f, "tpm").used, 100);
    assert_int_equal(usage(f, "conc").used, 0);
    assert_int_equal(usage(f, "spend").committed, 260);
    assert_int_equal(usage(f, "spend").reserved, 0);
}

/* What fell due while the backend was closed is applied at start: a
 * window is over, a budget reservation is refunded (and audited once). */
static void test_expiry_while_down(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    rl_requirement reqs[] = {{"tpm", 400, false}, {"spend", 700, false}};
    assert_true(reserve(f, 1, "refund-me", reqs, 2).allowed);
    restart(f, 30 * 1000);
    assert_int_equal(usage(f, "tpm").used, 400);
    assert_int_equal(usage(f, "spend").reserved, 700);
    restart(f, HOUR_MS);
    assert_int_equal(usage(f, "tpm").used, 0);
    assert_int_equal(usage(f, "spend").reserved, 0);
    assert_int_equal(usage(f, "spend").committed, 0);
    rl_audit_entry entries[8];
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
    assert_true(entries[0].expired);
    assert_int_equal(entries[0].reserved, 700);
    assert_int_equal(entries[0].actual, 0);
    assert_string_equal(entries[0].job_id, "refund-me");
    /* Once: another restart does not refund (or audit) it again. */
    restart(f, 1000);
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
}

/* The audit log: one entry per rolling or budget key a Complete charged,
 * none for a concurrency hold; kept across a restart. */
static void test_audit_of_completes(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    define(f, "conc", RL_KIND_CONCURRENCY, 2, 300);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    rl_requirement reqs[] = {{"tpm", 400, false}, {"conc", 1, false}, {"spend", 1000, false}};
    assert_true(reserve(f, 1, "job-a", reqs, 3).allowed);
    rl_manual_clock_advance(&f->clock, 5);
    rl_actual actuals[] = {{"spend", 321}};
    complete(f, 1, actuals, 1);
    complete(f, 1, actuals, 1); /* idempotent: no second entry */
    rl_audit_entry entries[8];
    char id[27];
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
    assert_string_equal(entries[0].lease_id, rl_test_lease_id(1, id));
    assert_string_equal(entries[0].job_id, "job-a");
    assert_int_equal(entries[0].reserved, 1000);
    assert_int_equal(entries[0].actual, 321);
    assert_int_equal(entries[0].period_start_unix_ms, rl_test_utc_ms(2026, 11, 1, 0, 0));
    assert_false(entries[0].expired);
    assert_int_equal(audit_of(f, "tpm", entries, 8), 1);
    assert_int_equal(entries[0].reserved, 400);
    assert_int_equal(entries[0].actual, 400); /* not named: it keeps its reservation */
    assert_int_equal(entries[0].period_start_unix_ms, 0);
    assert_int_equal(audit_of(f, "conc", entries, 8), 0);
    restart(f, 1000);
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
    assert_int_equal(entries[0].actual, 321);
}

/* The audit log got ahead of the journal (a crash between the two
 * writes): what the journal does not have is dropped from it. */
static void test_audit_ahead_of_journal_is_dropped(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    rl_requirement reqs[] = {{"spend", 100, false}};
    assert_true(reserve(f, 1, NULL, reqs, 1).allowed);
    rl_actual actuals[] = {{"spend", 50}};
    complete(f, 1, actuals, 1);
    stop(f);
    /* An entry the journal never heard of, as a crash would leave it. */
    rl__audit_log *log;
    char err[256];
    uint64_t now = f->clock.base.unix_ms(&f->clock.base);
    assert_int_equal(rl__audit_log_open(f->audit, 62, now, &log, err, sizeof err), RL_OK);
    rl_audit_entry ghost = {.at_unix_ms = now, .key = "spend", .reserved = 9, .actual = 9};
    rl_test_lease_id(77, ghost.lease_id);
    assert_int_equal(rl__audit_log_append(log, rl__audit_log_last_seq(log) + 1, &ghost, true), RL_OK);
    assert_int_equal(rl__audit_log_flush(log, true, err, sizeof err), RL_OK);
    rl__audit_log_close(log);
    restart(f, 10);
    rl_audit_entry entries[8];
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
    assert_int_equal(entries[0].actual, 50);
}

/* n leases of 100 on the budget "spend" (ids from first on), each
 * completed with 40: one audit entry each. */
static void spend_leases(fixture *f, uint64_t first, uint64_t n) {
    rl_requirement reqs[] = {{"spend", 100, false}};
    rl_actual actuals[] = {{"spend", 40}};
    for (uint64_t id = first; id < first + n; id++) {
        assert_true(reserve(f, id, "job", reqs, 1).allowed);
        complete(f, id, actuals, 1);
        rl_manual_clock_advance(&f->clock, 1);
    }
}

static void expect_audit_count(fixture *f, size_t expected) {
    static rl_audit_entry entries[64];
    assert_int_equal(audit_of(f, "spend", entries, 64), expected);
}

/* What start-up said of the audit log beside the journal (/metrics). */
static void expect_mismatch(fixture *f, uint64_t mismatch, uint64_t unmatched) {
    rl_backend_stats stats;
    memset(&stats, 0, sizeof stats);
    rl_backend_stats_get(f->backend, &stats);
    assert_int_equal(stats.audit, 1);
    assert_int_equal(stats.audit_journal_mismatch, mismatch);
    assert_int_equal(stats.audit_entries_unmatched, unmatched);
}

/* Without a journal the audit log is the only record of spend: every
 * start keeps it whole and numbers on after its last entry, whatever
 * happened to usage. */
static void test_audit_kept_without_journal(void **state) {
    fixture *f = *state;
    f->no_journal = true;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 1, 10);
    expect_audit_count(f, 10);
    restart(f, 10);
    expect_audit_count(f, 10);
    expect_mismatch(f, 1, 10);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600); /* no journal: the definition went too */
    spend_leases(f, 11, 5);
    restart(f, 10);
    expect_audit_count(f, 15);
    restart(f, 10);
    expect_audit_count(f, 15);
    expect_mismatch(f, 1, 15);
}

/* A journal moved away (as a damaged one's message advises) or new: the
 * log is kept whole and the new journal goes on after it; once linked,
 * the two agree again. */
static void test_audit_kept_when_the_journal_is_moved_away(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 1, 5);
    expect_mismatch(f, 0, 0);
    stop(f);
    char moved[160];
    snprintf(moved, sizeof moved, "%s.moved", f->journal);
    assert_int_equal(rename(f->journal, moved), 0);
    restart(f, 10);
    expect_audit_count(f, 5);
    expect_mismatch(f, 1, 5);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 6, 3);
    expect_audit_count(f, 8);
    restart(f, 10);
    expect_audit_count(f, 8);
    expect_mismatch(f, 0, 0);
    assert_int_equal(usage(f, "spend").committed, 3 * 40);
}

/* An older copy of the journal (restored from a backup) is behind the log
 * by more than the one group a crash leaves: nothing is dropped. */
static void test_audit_kept_beside_an_older_journal(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 1, 2);
    stop(f);
    size_t old_len;
    unsigned char *old = rl_test_file_bytes(f->journal, &old_len);
    restart(f, 10);
    spend_leases(f, 3, 3);
    stop(f);
    rl_test_file_write(f->journal, old, old_len, "wb");
    free(old);
    restart(f, 10);
    expect_audit_count(f, 5);
    expect_mismatch(f, 1, 3);
    assert_int_equal(usage(f, "spend").committed, 2 * 40); /* the journal's */
    spend_leases(f, 6, 1);
    restart(f, 10);
    expect_audit_count(f, 6);
    expect_mismatch(f, 0, 0);
}

/* A journal of another audit log: this log's entries are kept, the other
 * log is not touched. */
static void test_audit_kept_beside_another_logs_journal(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 1, 3);
    stop(f);
    char first_audit[128];
    snprintf(first_audit, sizeof first_audit, "%s", f->audit);
    /* A second log, with a journal of its own. */
    snprintf(f->audit, sizeof f->audit, "%s/audit-b", f->dir);
    snprintf(f->journal, sizeof f->journal, "%s/journal-b", f->dir);
    restart(f, 10);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 11, 2);
    stop(f);
    /* The first journal beside the second log. */
    snprintf(f->journal, sizeof f->journal, "%s/journal", f->dir);
    restart(f, 10);
    expect_audit_count(f, 2);
    expect_mismatch(f, 1, 2);
    stop(f);
    snprintf(f->audit, sizeof f->audit, "%s", first_audit);
    snprintf(f->journal, sizeof f->journal, "%s/journal-b", f->dir); /* now linked to audit-b: same story */
    restart(f, 10);
    expect_audit_count(f, 3);
    expect_mismatch(f, 1, 3);
}

/* One length of a 300-lease journal damaged (a bit of the first record's
 * length): start-up is refused, nothing cut, nothing deleted, the journal
 * and every audit file left byte for byte. */
static void test_a_damaged_length_stops_start_up(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 600);
    spend_leases(f, 1, 300);
    stop(f);
    size_t len;
    unsigned char *bytes = rl_test_file_bytes(f->journal, &len);
    bytes[10] ^= 1;
    rl_test_file_write(f->journal, bytes, len, "wb");
    char part[200];
    snprintf(part, sizeof part, "%s/2026-11-25.audit", f->audit);
    size_t audit_len;
    unsigned char *audit = rl_test_file_bytes(part, &audit_len);
    char err[512];
    assert_int_equal(open_backend(f, err, sizeof err), RL_IO_ERROR);
    assert_null(f->backend);
    if (strstr(err, f->journal) == NULL || strstr(err, "damaged at offset 8") == NULL) fail_msg("%s", err);
    rl_test_file_equals(f->journal, bytes, len);
    rl_test_file_equals(part, audit, audit_len);
    bytes[10] ^= 1; /* repaired: everything is there */
    rl_test_file_write(f->journal, bytes, len, "wb");
    open_ok(f);
    assert_int_equal(usage(f, "spend").committed, 300 * 40);
    free(bytes);
    free(audit);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A crash while appending leaves a torn last record: cut, the rest kept. */
static void test_torn_tail_is_cut(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl_requirement one[] = {{"tpm", 100, false}};
    assert_true(reserve(f, 1, NULL, one, 1).allowed);
    long kept = file_size(f->journal);
    assert_true(reserve(f, 2, NULL, one, 1).allowed);
    stop(f);
    assert_int_equal(truncate(f->journal, file_size(f->journal) - 3), 0);
    restart(f, 10);
    assert_int_equal(usage(f, "tpm").used, 100);
    assert_int_equal(file_size(f->journal), kept);
}

/* Damage before the tail: start-up fails naming the file and the offset,
 * and the file is left exactly as it was. */
static void test_damage_is_refused(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl_requirement one[] = {{"tpm", 100, false}};
    for (uint64_t i = 1; i <= 3; i++) assert_true(reserve(f, i, NULL, one, 1).allowed);
    stop(f);
    long size = file_size(f->journal);
    int fd = open(f->journal, O_RDWR);
    assert_true(fd >= 0);
    unsigned char byte;
    assert_int_equal(pread(fd, &byte, 1, 40), 1);
    byte ^= 0x5a;
    assert_int_equal(pwrite(fd, &byte, 1, 40), 1);
    close(fd);
    char err[512];
    assert_int_equal(open_backend(f, err, sizeof err), RL_IO_ERROR);
    assert_null(f->backend);
    assert_non_null(strstr(err, f->journal));
    assert_non_null(strstr(err, "offset"));
    assert_int_equal(file_size(f->journal), size);
}

static rl_backend_stats stats_of(fixture *f) {
    rl_backend_stats stats;
    memset(&stats, 0, sizeof stats);
    rl_backend_stats_get(f->backend, &stats);
    return stats;
}
static uint64_t syncs_made(fixture *f) { return stats_of(f).journal_syncs; }
static uint64_t written_bytes(fixture *f) { return stats_of(f).journal_bytes; }

/* Compaction: with leases coming and going, the file stays bounded by the
 * live state, and the state is the same after a restart. The flusher may
 * compact in the middle of a round, while that round's leases are live,
 * and the new file also holds what came while the snapshot was written
 * (what comes in one tick of the flusher, at least); the next compaction
 * waits for twice that. So the bound does not grow with the run: over 6,000
 * leases the file never holds more than a quarter of all that was written
 * (without compaction: all of it). */
static void test_compaction_keeps_state(void **state) {
    fixture *f = *state;
    f->compact_bytes = 4096;
    f->lease_memory_ms = 0;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000000, 1);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 1);
    rl_requirement reqs[] = {{"tpm", 10, false}, {"spend", 10, false}};
    long largest = 0;
    for (uint64_t i = 1; i <= 6000; i++) {
        assert_true(reserve(f, i, "job", reqs, 2).allowed);
        if (i % 2 == 0) {
            rl_actual actuals[] = {{"tpm", 3}, {"spend", 4}};
            complete(f, i, actuals, 2);
        }
        if (i % 20 == 0) {
            rl_manual_clock_advance(&f->clock, 2000); /* what came before is over */
            rl_backend_sweep(f->backend);
            long size = file_size(f->journal);
            if (size > largest) largest = size;
        }
    }
    uint64_t written = written_bytes(f); /* about 1.3 MB */
    fprintf(stderr, "the journal reached at most %ld bytes; %llu were written\n", largest, (unsigned long long)written);
    if ((uint64_t)largest * 4 > written) fail_msg("the journal reached %ld bytes of %llu written", largest, (unsigned long long)written);
    rl_limit_usage tpm = usage(f, "tpm"), spend = usage(f, "spend");
    assert_int_equal(spend.committed, 3000 * 4);
    restart(f, 10);
    rl_limit_usage tpm2 = usage(f, "tpm"), spend2 = usage(f, "spend");
    assert_same_usage(&tpm, &tpm2);
    assert_same_usage(&spend, &spend2);
    static rl_audit_entry entries[6000];
    assert_int_equal(audit_of(f, "spend", entries, 6000), 6000); /* 3,000 charged, 3,000 refunded */
}

/* everysec and off journal too (written before the answer, synced later
 * or never): a clean restart has everything. */
static void test_other_fsync_modes(void **state) {
    fixture *f = *state;
    for (int mode = RL_JOURNAL_FSYNC_EVERYSEC; mode <= RL_JOURNAL_FSYNC_OFF; mode++) {
        f->fsync = (rl_journal_fsync)mode;
        char key[16];
        snprintf(key, sizeof key, "tpm%d", mode);
        if (f->backend == NULL) open_ok(f);
        define(f, key, RL_KIND_ROLLING, 1000, 60);
        rl_requirement one[] = {{key, 123, false}};
        assert_true(reserve(f, 100 + (uint64_t)mode, NULL, one, 1).allowed);
        restart(f, 10);
        assert_int_equal(usage(f, key).used, 123);
    }
}

/* everysec and off: a definition's change is synced before its answer (the
 * once-a-second sync may come between, so at least one sync each), and
 * everysec's own sync comes without any answer asking for it. */
static void test_definitions_are_synced_in_every_mode(void **state) {
    fixture *f = *state;
    for (int mode = RL_JOURNAL_FSYNC_EVERYSEC; mode <= RL_JOURNAL_FSYNC_OFF; mode++) {
        f->fsync = (rl_journal_fsync)mode;
        if (f->backend != NULL) stop(f);
        open_ok(f);
        uint64_t before = syncs_made(f);
        define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
        assert_true(syncs_made(f) >= before + 1);
        before = syncs_made(f);
        assert_int_equal(rl_backend_delete_definition(f->backend, "tpm"), RL_OK);
        assert_true(syncs_made(f) >= before + 1);
    }
    f->fsync = RL_JOURNAL_FSYNC_EVERYSEC;
    stop(f);
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    rl_requirement one[] = {{"tpm", 100, false}};
    assert_true(reserve(f, 1, NULL, one, 1).allowed);
    uint64_t before = syncs_made(f);
    for (int waited_ms = 0; syncs_made(f) == before && waited_ms < 20000; waited_ms += 10)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    assert_true(syncs_made(f) > before);
}

/* A journal that is nearly all live (leases remembered for their lease
 * memory) is not rewritten: a compaction would copy the same leases and
 * drop nothing. Everything written is still in the file after the flusher
 * had many ticks to compact it. */
static void test_live_journal_is_not_compacted(void **state) {
    fixture *f = *state;
    f->compact_bytes = 4096;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000000, 60);
    rl_requirement reqs[] = {{"tpm", 10, false}};
    for (uint64_t i = 1; i <= 2000; i++) {
        assert_true(reserve(f, i, "job", reqs, 1).allowed);
        if (i % 500 == 0) nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL); /* three ticks */
    }
    nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
    long size = file_size(f->journal);
    uint64_t written = written_bytes(f);
    if (size < 0 || (uint64_t)size < written)
        fail_msg("the journal holds %ld bytes of the %llu written: it was compacted", size, (unsigned long long)written);
    assert_true(written > 20 * 4096);
    restart(f, 10);
    assert_int_equal(usage(f, "tpm").used, 20000);
}

static void expect_unknown(fixture *f, const char *key) {
    rl_limit_usage u;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &u), RL_UNKNOWN_LIMIT_KEY);
}

/* A delete is journaled: replayed after a kill -9 (the journal as it stood
 * when the delete was answered) or through a compaction's snapshot, neither
 * the limit nor what it held comes back. A lease that held it keeps its
 * other keys and its retries their first outcome (a denial it gave keeps
 * its denied_by); its Complete charges and audits nothing on it; the key
 * defined again starts empty. */
static void test_a_delete_survives_restart(void **state) {
    fixture *f = *state;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    define(f, "conc", RL_KIND_CONCURRENCY, 2, 300);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    define(f, "keep", RL_KIND_ROLLING, 100000, 60);
    rl_requirement all[] = {{"tpm", 400, false}, {"conc", 1, false}, {"spend", 1000, false}, {"keep", 100, false}};
    rl_reserve_result first = reserve(f, 1, "job-1", all, 4);
    assert_true(first.allowed);
    rl_requirement too_much[] = {{"spend", 4500, false}};
    assert_false(reserve(f, 2, NULL, too_much, 1).allowed);
    assert_int_equal(rl_backend_delete_definition(f->backend, "tpm"), RL_OK);
    assert_int_equal(rl_backend_delete_definition(f->backend, "conc"), RL_OK);
    assert_int_equal(rl_backend_delete_definition(f->backend, "spend"), RL_OK);

    /* kill -9 now: the journal as it is, nothing written at close */
    size_t len;
    unsigned char *journal = rl_test_file_bytes(f->journal, &len);
    stop(f);
    rl_test_file_write(f->journal, journal, len, "wb");
    free(journal);
    uint64_t unix_ms = f->clock.base.unix_ms(&f->clock.base) + 1000;
    rl_manual_clock_init(&f->clock, 5000, unix_ms);
    open_ok(f);
    expect_unknown(f, "tpm");
    expect_unknown(f, "conc");
    expect_unknown(f, "spend");
    assert_int_equal(usage(f, "keep").used, 100);
    rl_requirement one[] = {{"tpm", 1, false}};
    assert_int_equal(reserve(f, 3, NULL, one, 1).status, RL_UNKNOWN_LIMIT_KEY);
    rl_reserve_result again = reserve(f, 1, "job-1", all, 4);
    assert_true(again.allowed);
    assert_int_equal(again.reserved_at_unix_ms, first.reserved_at_unix_ms);

    /* the key defined again starts empty; the old lease's Complete charges
     * only its other keys */
    define(f, "tpm", RL_KIND_ROLLING, 1000, 60);
    assert_int_equal(usage(f, "tpm").used, 0);
    rl_requirement full[] = {{"tpm", 1000, false}};
    assert_true(reserve(f, 4, NULL, full, 1).allowed);
    rl_actual actuals[] = {{"tpm", 10}, {"spend", 10}, {"keep", 50}};
    complete(f, 1, actuals, 3);
    assert_int_equal(usage(f, "tpm").used, 1000);
    assert_int_equal(usage(f, "keep").used, 50);
    rl_audit_entry entries[8];
    assert_int_equal(audit_of(f, "spend", entries, 8), 0);
    assert_int_equal(audit_of(f, "tpm", entries, 8), 0);
    assert_int_equal(audit_of(f, "keep", entries, 8), 1);

    /* a compaction's snapshot has no deleted limit, and the leases that
     * held one hold nothing of it. A compaction waits for half the file to
     * be garbage: a key defined and deleted again and again makes it. */
    stop(f);
    f->compact_bytes = 4096;
    open_ok(f);
    rl_requirement small[] = {{"keep", 1, false}};
    for (uint64_t i = 100; i < 130; i++) assert_true(reserve(f, i, "job", small, 1).allowed);
    bool compacted = false;
    for (int round = 0; round < 20 && !compacted; round++) {
        long before = file_size(f->journal);
        for (int i = 0; i < 20; i++) {
            define(f, "churn", RL_KIND_ROLLING, 10, 60);
            assert_int_equal(rl_backend_delete_definition(f->backend, "churn"), RL_OK);
        }
        /* the flusher compacts on its own tick */
        compacted = rl_test_file_shrinks_below(f->journal, before, 300);
    }
    assert_true(compacted);
    restart(f, 10);
    expect_unknown(f, "conc");
    expect_unknown(f, "spend");
    expect_unknown(f, "churn");
    assert_int_equal(usage(f, "tpm").used, 1000);
    assert_int_equal(usage(f, "keep").used, 50 + 30);
    rl_reserve_result denied = reserve(f, 2, NULL, too_much, 1);
    assert_false(denied.allowed);
    assert_string_equal(denied.denied_by.key, "spend"); /* its limit gone, its first outcome kept */
    assert_int_equal(denied.denied_by.requested, 4500);
    define(f, "spend", RL_KIND_BUDGET, 5000, 600);
    assert_int_equal(usage(f, "spend").used, 0);
    assert_int_equal(usage(f, "spend").committed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_state_survives_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_while_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_of_completes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_ahead_of_journal_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_kept_without_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_kept_when_the_journal_is_moved_away, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_kept_beside_an_older_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_kept_beside_another_logs_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_damaged_length_stops_start_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_keeps_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_journal_is_not_compacted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_fsync_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_definitions_are_synced_in_every_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_delete_survives_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
