/* test_audit_part.c — the audit log's file names (a UTC day and a part
 * number, read back exactly, other names passed over), a directory listed
 * in the log's order, and a part file read back: its first entry alone,
 * damage with the file and the offset, a missing file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/file_bytes.h"

#include "core/audit_part.h"
#include "core/record_file.h"

static void names_are_utc_days_and_parts(void **state) {
    (void)state;
    char name[RL__AUDIT_PART_NAME_SIZE];
    rl__audit_part_name(0, 0, name);
    assert_string_equal(name, "1970-01-01.audit");
    rl__audit_part_name(20782, 0, name);
    assert_string_equal(name, "2026-11-25.audit");
    rl__audit_part_name(21243, 3, name);
    assert_string_equal(name, "2028-02-29.3.audit");
    rl__audit_part_name(2932896, UINT32_MAX, name);
    assert_string_equal(name, "9999-12-31.4294967295.audit");
    assert_int_equal(rl__audit_day_of(UINT64_C(1795651199999)), 20782); /* 2026-11-25T23:59:59.999Z */
    assert_int_equal(rl__audit_day_of(UINT64_C(1795651200000)), 20783);
    assert_int_equal(rl__audit_day_of(RL__AUDIT_INSTANT_END_MS - 1), 2932896);

    rl__audit_part part;
    assert_true(rl__audit_part_parse("2026-11-25.audit", &part));
    assert_int_equal(part.day, 20782);
    assert_int_equal(part.index, 0);
    assert_true(part.size == RL__AUDIT_PART_SIZE_ALL);
    assert_true(rl__audit_part_parse("2028-02-29.3.audit", &part));
    assert_int_equal(part.day, 21243);
    assert_int_equal(part.index, 3);
    assert_true(rl__audit_part_parse("9999-12-31.4294967295.audit", &part));
    assert_int_equal(part.index, UINT32_MAX);

    const char *others[] = {"2026-02-30.audit",  "2027-02-29.audit",   "1969-12-31.audit",
                            "2026-11-25.0.audit", "2026-11-25.01.audit", "2026-11-25.audit.tmp",
                            "2026-11-25.audit~",  "2026-11-25.4294967296.audit", "2026-1-25.audit",
                            "2026-11-25.x.audit", "2026-11-25.1.audi",  "journal", ".", ""};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (rl__audit_part_parse(others[i], &part)) fail_msg("'%s' taken for a part", others[i]);
}

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_audit_part_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rl_test_file_write(path, data, len, "wb");
}

static void a_directory_lists_in_the_logs_order(void **state) {
    fixture *f = *state;
    const char *names[] = {"2026-11-25.10.audit", "2026-11-26.audit", "2026-11-25.audit", "2026-11-25.2.audit",
                           "2026-11-25.audit.tmp", "limits.json", "2025-01-01.audit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) write_file(f->dir, names[i], "x", 1);
    rl__audit_part *parts;
    size_t count;
    char err[256];
    assert_int_equal(rl__audit_parts_list(f->dir, &parts, &count, err, sizeof err), RL_OK);
    assert_int_equal(count, 5);
    const char *expected[] = {"2025-01-01.audit", "2026-11-25.audit", "2026-11-25.2.audit", "2026-11-25.10.audit",
                              "2026-11-26.audit"};
    for (size_t i = 0; i < count; i++) {
        char name[RL__AUDIT_PART_NAME_SIZE];
        rl__audit_part_name(parts[i].day, parts[i].index, name);
        assert_string_equal(name, expected[i]);
    }
    free(parts);
    assert_int_equal(rl__audit_parts_list("/nonexistent/rl_audit", &parts, &count, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, "/nonexistent/rl_audit"));
}

/* A part file of entries at 1000, 1001, ..., seq 1.., framed by record_file. */
static size_t part_bytes(unsigned char *out, size_t entries) {
    memcpy(out, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES);
    size_t len = RL__RECORD_FILE_HEADER_BYTES;
    for (size_t i = 0; i < entries; i++) {
        rl_audit_entry e;
        memset(&e, 0, sizeof e);
        e.at_unix_ms = 1000 + i;
        snprintf(e.lease_id, sizeof e.lease_id, "01JD%022zu", i);
        strcpy(e.key, "k");
        e.reserved = 5;
        unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
        size_t n = rl__audit_record_encode(record, i + 1, &e, NULL);
        assert_int_not_equal(n, 0);
        len += rl__record_frame(out + len, record, n);
    }
    return len;
}

typedef struct seen {
    uint64_t ats[16];
    uint64_t offsets[16];
    size_t count, stop_after;
} seen;

static bool note(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)frame_bytes;
    seen *s = context;
    s->ats[s->count] = view->at_unix_ms;
    s->offsets[s->count++] = offset;
    return s->count != s->stop_after;
}

static void a_part_reads_back(void **state) {
    fixture *f = *state;
    unsigned char data[4096];
    size_t len = part_bytes(data, 3);
    write_file(f->dir, "2026-11-25.audit", data, len);
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/2026-11-25.audit", f->dir);
    seen s = {.stop_after = 0};
    bool missing;
    assert_int_equal(rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, note, &s, &missing, err, sizeof err), RL_OK);
    assert_false(missing);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.ats[2], 1002);
    assert_int_equal(s.offsets[0], RL__RECORD_FILE_HEADER_BYTES);
    /* stopped by its reader: no error */
    s = (seen){.stop_after = 2};
    assert_int_equal(rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, note, &s, &missing, err, sizeof err), RL_OK);
    assert_int_equal(s.count, 2);
    /* only up to size: the part being written is read as far as it was written */
    s = (seen){.stop_after = 0};
    assert_int_equal(rl__audit_part_read(path, RL__RECORD_FILE_HEADER_BYTES + 1, note, &s, &missing, err, sizeof err), RL_OK);
    assert_int_equal(s.count, 0);
    uint64_t at = 0;
    assert_true(rl__audit_part_first_at(path, RL__AUDIT_PART_SIZE_ALL, &at));
    assert_int_equal(at, 1000);
    assert_false(rl__audit_part_first_at(path, RL__RECORD_FILE_HEADER_BYTES, &at));

    /* damage in the second of three records: the file and that offset */
    size_t second = RL__RECORD_FILE_HEADER_BYTES + (len - RL__RECORD_FILE_HEADER_BYTES) / 3;
    data[second + RL__RECORD_FRAME_BYTES + 20] ^= 1;
    write_file(f->dir, "2026-11-25.audit", data, len);
    s = (seen){.stop_after = 0};
    assert_int_equal(rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, note, &s, &missing, err, sizeof err),
                     RL_IO_ERROR);
    char expected[300];
    snprintf(expected, sizeof expected, "%s: damaged at offset %zu", path, second);
    if (strstr(err, expected) == NULL) fail_msg("%s", err);
    assert_true(rl__audit_part_first_at(path, RL__AUDIT_PART_SIZE_ALL, &at)); /* its first entry is whole */

    /* a record whose frame is whole but which is no audit entry */
    unsigned char odd[64];
    memcpy(odd, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES);
    size_t odd_len = RL__RECORD_FILE_HEADER_BYTES + rl__record_frame(odd + RL__RECORD_FILE_HEADER_BYTES, "hello", 5);
    write_file(f->dir, "2026-11-25.audit", odd, odd_len);
    assert_int_equal(rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, note, &s, &missing, err, sizeof err),
                     RL_IO_ERROR);
    assert_non_null(strstr(err, "damaged at offset 8 (an audit entry that cannot be read: shorter"));

    /* gone: retention deleted it */
    snprintf(path, sizeof path, "%s/2026-11-24.audit", f->dir);
    assert_int_equal(rl__audit_part_read(path, RL__AUDIT_PART_SIZE_ALL, note, &s, &missing, err, sizeof err), RL_OK);
    assert_true(missing);
    assert_false(rl__audit_part_first_at(path, RL__AUDIT_PART_SIZE_ALL, &at));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_are_utc_days_and_parts),
        cmocka_unit_test_setup_teardown(a_directory_lists_in_the_logs_order, setup, teardown),
        cmocka_unit_test_setup_teardown(a_part_reads_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
