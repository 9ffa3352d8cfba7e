/* test_record_file.c — a file of checksummed records on a real file system:
 * appended, flushed, read back; a torn tail cut (an unfinished record, zeros
 * after the last one, a last record with a bad checksum, a half-written
 * header); damage before the tail refused with the offset, the file left
 * untouched, for every byte of a small file changed in turn; a rewrite that keeps what is buffered; CRC-32C's check value. */
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

#include "support/file_bytes.h"

#include "core/crc32c.h"
#include "core/record_file.h"

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_records_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/data/journal", f->dir); /* data/ does not exist yet */
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char command[256];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

/* What a reading saw: the records, joined by '|'. */
typedef struct seen {
    char text[4096];
    size_t count;
} seen;

static bool collect(const unsigned char *record, size_t len, uint64_t offset, void *context) {
    (void)offset;
    seen *s = context;
    size_t used = strlen(s->text);
    snprintf(s->text + used, sizeof s->text - used, "%s%.*s", s->count > 0 ? "|" : "", (int)len, (const char *)record);
    s->count++;
    return true;
}

static rl__record_file *open_file(const char *path, seen *s) {
    memset(s, 0, sizeof *s);
    rl__record_file *file = NULL;
    char err[512];
    if (rl__record_file_open(path, collect, s, &file, err, sizeof err) != RL_OK) fail_msg("%s", err);
    return file;
}

static void append_all(rl__record_file *file, const char *const *records, size_t n, bool sync) {
    for (size_t i = 0; i < n; i++)
        assert_int_equal(rl__record_file_append(file, records[i], strlen(records[i])), RL_OK);
    char err[512];
    if (rl__record_file_flush(file, sync, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

static const char *const three[] = {"reserve A", "complete A", "reserve B"};

/* A closed file holding the three records above. */
static void write_three(const char *path) {
    seen s;
    rl__record_file *file = open_file(path, &s);
    append_all(file, three, 3, true);
    rl__record_file_close(file);
}

static void crc32c_check_value(void **state) {
    (void)state;
    assert_int_equal(rl__crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rl__crc32c(rl__crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}

static void appended_records_read_back_in_order(void **state) {
    fixture *f = *state;
    seen s;
    rl__record_file *file = open_file(f->path, &s);
    assert_int_equal(s.count, 0);
    assert_int_equal(rl_test_file_size(f->path), RL__RECORD_FILE_HEADER_BYTES); /* made with its header, durably */
    append_all(file, three, 3, true);
    assert_int_equal(rl__record_file_pending_bytes(file), 0);
    assert_int_equal(rl__record_file_size(file), (uint64_t)rl_test_file_size(f->path));
    rl__record_file_close(file);
    file = open_file(f->path, &s);
    assert_string_equal(s.text, "reserve A|complete A|reserve B");
    /* appending goes on after what was read */
    const char *more[] = {"expire B"};
    append_all(file, more, 1, false);
    rl__record_file_close(file);
    file = open_file(f->path, &s);
    assert_int_equal(s.count, 4);
    rl__record_file_close(file);
    /* a record outside 1..max is refused and changes nothing */
    file = open_file(f->path, &s);
    assert_int_equal(rl__record_file_append(file, "", 0), RL_INVALID_REQUEST);
    assert_int_equal(rl__record_file_pending_bytes(file), 0);
    rl__record_file_close(file);
}

/* Every way a crash can leave the end of the file: cut at the last whole
 * record, and appending goes on from there. */
static void a_torn_tail_is_cut(void **state) {
    fixture *f = *state;
    seen s;
    rl__record_file *file = NULL;
    write_three(f->path);
    size_t len;
    unsigned char *whole = rl_test_file_bytes(f->path, &len);
    size_t third = len - (RL__RECORD_FRAME_BYTES + strlen(three[2]));
    /* every cut inside the last record */
    for (size_t cut = third + 1; cut < len; cut++) {
        rl_test_file_write(f->path, whole, cut, "wb");
        file = open_file(f->path, &s);
        assert_string_equal(s.text, "reserve A|complete A");
        assert_int_equal(rl_test_file_size(f->path), (off_t)third);
        rl__record_file_close(file);
    }
    /* zeros after the last record (a file system's tail) */
    rl_test_file_write(f->path, whole, len, "wb");
    unsigned char zeros[100] = {0};
    rl_test_file_write(f->path, zeros, sizeof zeros, "ab");
    file = open_file(f->path, &s);
    assert_int_equal(s.count, 3);
    assert_int_equal(rl_test_file_size(f->path), (off_t)len);
    rl__record_file_close(file);
    /* a last record whose checksum fails */
    whole[len - 1] ^= 0x40;
    rl_test_file_write(f->path, whole, len, "wb");
    file = open_file(f->path, &s);
    assert_int_equal(s.count, 2);
    append_all(file, three + 2, 1, true);
    rl__record_file_close(file);
    file = open_file(f->path, &s);
    assert_string_equal(s.text, "reserve A|complete A|reserve B");
    rl__record_file_close(file);
    /* a header cut short: an empty file again */
    rl_test_file_write(f->path, RL__RECORD_FILE_HEADER, 3, "wb");
    file = open_file(f->path, &s);
    assert_int_equal(s.count, 0);
    assert_int_equal(rl_test_file_size(f->path), RL__RECORD_FILE_HEADER_BYTES);
    rl__record_file_close(file);
    free(whole);
}

/* Damage before the tail is not a crash's doing: refused, with the file and
 * the offset, and the file left byte for byte as it was. */
static void damage_is_refused_and_left_alone(void **state) {
    fixture *f = *state;
    write_three(f->path);
    size_t len;
    unsigned char *whole = rl_test_file_bytes(f->path, &len);
    const size_t second = RL__RECORD_FILE_HEADER_BYTES + RL__RECORD_FRAME_BYTES + strlen(three[0]);
    struct {
        size_t at;
        unsigned char flip;
        const char *why;
    } damages[] = {
        {second + RL__RECORD_FRAME_BYTES + 2, 0x01, "checksum does not match, with more after it"}, /* a payload byte */
        {second + 4, 0x80, "checksum does not match, with more after it"},                          /* the checksum */
        {second + 3, 0x7f, "length out of range"},                                                  /* the length */
        {1, 0x20, "header is wrong"},                                                                 /* the header */
    };
    for (size_t i = 0; i < sizeof damages / sizeof damages[0]; i++) {
        unsigned char *bad = malloc(len);
        memcpy(bad, whole, len);
        bad[damages[i].at] ^= damages[i].flip;
        rl_test_file_write(f->path, bad, len, "wb");
        rl__record_file *none = NULL;
        char err[512] = "";
        assert_int_equal(rl__record_file_open(f->path, NULL, NULL, &none, err, sizeof err), RL_IO_ERROR);
        assert_null(none);
        assert_non_null(strstr(err, f->path));
        assert_non_null(strstr(err, damages[i].why));
        char offset[64];
        snprintf(offset, sizeof offset, "offset %zu", damages[i].at == 1 ? (size_t)0 : second);
        if (strstr(err, offset) == NULL) fail_msg("%s: no \"%s\"", err, offset);
        rl_test_file_equals(f->path, bad, len);
        free(bad);
    }
    free(whole);
}

/* Any one byte changed anywhere before the last record, whatever the
 * change (a length, a checksum, a payload byte, the header), is damage:
 * the opening is refused and the file left byte for byte; a cut only ever
 * takes the last record. CRC-32C over the length and the payload sees
 * every change of up to 32 bits in a row, so no change passes unseen. */
static void every_byte_changed_in_turn(void **state) {
    fixture *f = *state;
    const char *const five[] = {"reserve A", "complete A", "reserve B with a longer payload", "expire B", "reserve C"};
    seen s;
    rl__record_file *file = open_file(f->path, &s);
    append_all(file, five, 5, true);
    rl__record_file_close(file);
    size_t len;
    unsigned char *whole = rl_test_file_bytes(f->path, &len);
    const size_t last = len - (RL__RECORD_FRAME_BYTES + strlen(five[4]));
    const unsigned char flips[] = {0x01, 0x80, 0xff};
    unsigned char *bad = malloc(len);
    for (size_t at = 0; at < len; at++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            memcpy(bad, whole, len);
            bad[at] ^= flips[k];
            rl_test_file_write(f->path, bad, len, "wb");
            memset(&s, 0, sizeof s);
            rl__record_file *opened = NULL;
            char err[512] = "";
            rl_status status = rl__record_file_open(f->path, collect, &s, &opened, err, sizeof err);
            if (status == RL_OK) {
                /* Only a change in the last record may pass as its torn tail. */
                if (at < last) fail_msg("byte %zu ^ 0x%02x opened as \"%s\"", at, flips[k], s.text);
                assert_string_equal(s.text, "reserve A|complete A|reserve B with a longer payload|expire B");
                assert_int_equal(rl_test_file_size(f->path), (off_t)last);
                rl__record_file_close(opened);
                continue;
            }
            assert_int_equal(status, RL_IO_ERROR);
            assert_non_null(strstr(err, "damaged at offset"));
            rl_test_file_equals(f->path, bad, len);
        }
    }
    free(bad);
    free(whole);
}

/* The first record's length damaged into one that runs past the end (a
 * journal's data[10] ^= 1 after its header): not a torn tail, since whole
 * records follow; nothing is cut. */
static void a_length_past_the_end_with_records_after_is_damage(void **state) {
    fixture *f = *state;
    write_three(f->path);
    size_t len;
    unsigned char *bad = rl_test_file_bytes(f->path, &len);
    bad[RL__RECORD_FILE_HEADER_BYTES + 2] ^= 1; /* 9 becomes 65,545: past the end */
    rl_test_file_write(f->path, bad, len, "wb");
    rl__record_file *none = NULL;
    char err[512] = "";
    assert_int_equal(rl__record_file_open(f->path, NULL, NULL, &none, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, "damaged at offset 8 (a record whose length runs past the end of the file"));
    rl_test_file_equals(f->path, bad, len);
    free(bad);
}

/* A reader that does not understand a record stops the opening there. */
static bool refuse_complete(const unsigned char *record, size_t len, uint64_t offset, void *context) {
    (void)offset;
    (void)context;
    return !(len >= 8 && memcmp(record, "complete", 8) == 0);
}

static void a_record_the_reader_refuses_is_damage(void **state) {
    fixture *f = *state;
    rl__record_file *file = NULL;
    write_three(f->path);
    char err[512] = "";
    assert_int_equal(rl__record_file_open(f->path, refuse_complete, NULL, &file, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, "cannot read"));
}

static bool snapshot_source(rl__record_sink *sink, void *context) {
    (void)context;
    return rl__record_sink_add(sink, "snapshot 1", 10) && rl__record_sink_add(sink, "snapshot 2", 10);
}

static void a_rewrite_replaces_and_keeps_the_buffered(void **state) {
    fixture *f = *state;
    seen s;
    rl__record_file *file = open_file(f->path, &s);
    for (int i = 0; i < 100; i++) append_all(file, three, 3, false);
    assert_int_equal(rl__record_file_append(file, "after snapshot", 14), RL_OK); /* buffered, not written */
    char err[512];
    if (rl__record_file_rewrite(file, snapshot_source, NULL, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_int_equal(rl__record_file_pending_bytes(file), 0);
    append_all(file, three + 1, 1, true); /* appends go to the new file */
    assert_int_equal(rl__record_file_size(file), (uint64_t)rl_test_file_size(f->path));
    rl__record_file_close(file);
    file = open_file(f->path, &s);
    assert_string_equal(s.text, "snapshot 1|snapshot 2|after snapshot|complete A");
    rl__record_file_close(file);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", f->path);
    assert_int_equal(access(tmp, F_OK), -1); /* nothing left behind */
}

/* A compaction's way: a sink starts a new file beside the journal (records
 * larger than its chunk among them, so that it writes several times), a
 * second sink appends to it, and adopt puts it in the journal's place with
 * the buffered records after it, handing back the old file's descriptor. */
static void a_file_written_by_sinks_is_adopted(void **state) {
    fixture *f = *state;
    seen s;
    rl__record_file *file = open_file(f->path, &s);
    for (int i = 0; i < 10; i++) append_all(file, three, 3, false);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", f->path);
    rl__record_sink *sink = rl__record_sink_open(tmp, true);
    assert_non_null(sink);
    static char big[100 * 1024];
    memset(big, 'x', sizeof big);
    assert_true(rl__record_sink_add(sink, "snapshot 1", 10));
    assert_true(rl__record_sink_add(sink, big, sizeof big));
    assert_true(rl__record_sink_close(sink));
    sink = rl__record_sink_open(tmp, false);
    assert_non_null(sink);
    assert_true(rl__record_sink_add(sink, "since the fork", 14));
    assert_true(rl__record_sink_close(sink));
    assert_int_equal(rl__record_file_append(file, "meanwhile", 9), RL_OK); /* buffered, not written */
    struct stat old;
    assert_int_equal(stat(f->path, &old), 0);
    int replaced_fd = -1;
    char err[512];
    if (rl__record_file_adopt(file, tmp, false, &replaced_fd, err, sizeof err) != RL_OK) fail_msg("%s", err);
    struct stat held;
    assert_true(replaced_fd >= 0);
    assert_int_equal(fstat(replaced_fd, &held), 0);
    assert_int_equal(held.st_ino, old.st_ino); /* the old file, still open until the caller closes it */
    assert_int_equal(held.st_nlink, 0);
    close(replaced_fd);
    append_all(file, three + 1, 1, true);
    assert_int_equal(rl__record_file_size(file), (uint64_t)rl_test_file_size(f->path));
    rl__record_file_close(file);
    file = open_file(f->path, &s);
    assert_int_equal(s.count, 5);
    assert_int_equal(strncmp(s.text, "snapshot 1|xxx", 14), 0);
    rl__record_file_close(file);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_null(rl__record_sink_open("/nonexistent-dir/journal.tmp", true));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32c_check_value),
        cmocka_unit_test_setup_teardown(appended_records_read_back_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(a_torn_tail_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(damage_is_refused_and_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(every_byte_changed_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(a_length_past_the_end_with_records_after_is_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(a_record_the_reader_refuses_is_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rewrite_replaces_and_keeps_the_buffered, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_written_by_sinks_is_adopted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
