/* test_journal.c — the memory backend's usage survives a restart: a
 * backend reopened on its journal has every rolling window, budget,
 * concurrency hold and remembered lease it had (on a manual clock whose
 * monotonic time starts again elsewhere, as after a reboot); what fell due
 * while it was closed is applied; a torn tail is cut and damage refused
 * without touching the file; compaction keeps the state; the audit log has
 * one entry per key a Complete charged and per budget refund, also across
 * restarts and when it got ahead of the journal; a deleted limit stays
 * deleted. */
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
    uint64_t compact_bytes;
    uint32_t lease_memory_ms;
} fixture;

static rl_status open_backend(fixture *f, char *err, size_t err_size) {
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.journal_path = f->journal;
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

/* A restart: closed, then opened on a clock whose monotonic time starts
 * again (a new process, maybe a new boot), after down_ms of wall time. */
static void restart(fixture *f, uint64_t down_ms) {
    rl_backend_destroy(f->backend);
    f->backend = NULL;
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
    rl_backend_destroy(f->backend);
    f->backend = NULL;
    /* An entry the journal never heard of, as a crash would leave it. */
    rl__audit_log *log;
    char err[256];
    uint64_t now = f->clock.base.unix_ms(&f->clock.base);
    assert_int_equal(rl__audit_log_open(f->audit, 62, now, &log, err, sizeof err), RL_OK);
    rl_audit_entry ghost = {.at_unix_ms = now, .key = "spend", .reserved = 9, .actual = 9};
    rl_test_lease_id(77, ghost.lease_id);
    assert_int_equal(rl__audit_log_append(log, rl__audit_log_last_seq(log) + 1, &ghost), RL_OK);
    assert_int_equal(rl__audit_log_flush(log, true, err, sizeof err), RL_OK);
    rl__audit_log_close(log);
    restart(f, 10);
    rl_audit_entry entries[8];
    assert_int_equal(audit_of(f, "spend", entries, 8), 1);
    assert_int_equal(entries[0].actual, 50);
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
    rl_backend_destroy(f->backend);
    f->backend = NULL;
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
    rl_backend_destroy(f->backend);
    f->backend = NULL;
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

/* Compaction: with leases coming and going, the file stays bounded by the
 * live state, and the state is the same after a restart. */
static void test_compaction_keeps_state(void **state) {
    fixture *f = *state;
    f->compact_bytes = 4096;
    f->lease_memory_ms = 0;
    open_ok(f);
    define(f, "tpm", RL_KIND_ROLLING, 1000000, 1);
    define(f, "spend", RL_KIND_BUDGET, 1000000, 1);
    rl_requirement reqs[] = {{"tpm", 10, false}, {"spend", 10, false}};
    long largest = 0;
    for (uint64_t i = 1; i <= 1000; i++) {
        assert_true(reserve(f, i, "job", reqs, 2).allowed);
        if (i % 2 == 0) {
            rl_actual actuals[] = {{"tpm", 3}, {"spend", 4}};
            complete(f, i, actuals, 2);
        }
        if (i % 100 == 0) {
            rl_manual_clock_advance(&f->clock, 2000); /* what came before is over */
            rl_backend_sweep(f->backend);
            usleep(300 * 1000); /* the flusher compacts on its own tick */
            long size = file_size(f->journal);
            if (size > largest) largest = size;
        }
    }
    assert_true(largest < 64 * 1024); /* every record written: ~150 KiB */
    rl_limit_usage tpm = usage(f, "tpm"), spend = usage(f, "spend");
    assert_int_equal(spend.committed, 500 * 4);
    restart(f, 10);
    rl_limit_usage tpm2 = usage(f, "tpm"), spend2 = usage(f, "spend");
    assert_same_usage(&tpm, &tpm2);
    assert_same_usage(&spend, &spend2);
    rl_audit_entry entries[1000];
    assert_int_equal(audit_of(f, "spend", entries, 1000), 1000); /* 500 charged, 500 refunded */
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
    rl_backend_destroy(f->backend);
    f->backend = NULL;
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
     * held one hold nothing of it */
    rl_backend_destroy(f->backend);
    f->backend = NULL;
    f->compact_bytes = 4096;
    open_ok(f);
    rl_requirement small[] = {{"keep", 1, false}};
    bool compacted = false;
    for (uint64_t i = 100; i < 400; i++) {
        assert_true(reserve(f, i, "job", small, 1).allowed);
        if (i % 100 == 99) {
            long before = file_size(f->journal);
            usleep(300 * 1000); /* the flusher compacts on its own tick */
            compacted |= file_size(f->journal) < before;
        }
    }
    assert_true(compacted);
    restart(f, 10);
    expect_unknown(f, "conc");
    expect_unknown(f, "spend");
    assert_int_equal(usage(f, "tpm").used, 1000);
    assert_int_equal(usage(f, "keep").used, 50 + 300);
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
        cmocka_unit_test_setup_teardown(test_torn_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_keeps_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_fsync_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_delete_survives_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
