/* test_regular_file.c — the one way a named file is opened and read
 * (core/regular_file.h): a regular file whole, within its bound; a missing
 * one told apart; a FIFO, a directory or a device refused at once with a
 * sentence that says what it is. */
#include <errno.h>
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

#include "core/regular_file.h"

typedef struct fixture {
    char dir[64];
    char path[96];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    strcpy(f->dir, "/tmp/rl_regular_file_XXXXXX");
    if (mkdtemp(f->dir) == NULL) return -1;
    snprintf(f->path, sizeof f->path, "%s/file", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void write_text(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    assert_int_equal(fclose(file), 0);
}

static void test_reads_a_regular_file(void **state) {
    fixture *f = *state;
    write_text(f->path, "twelve bytes");
    char *data = NULL, err[256] = "";
    size_t len = 0;
    bool missing = true;
    assert_int_equal(rl__read_whole_file(f->path, 12, &data, &len, &missing, err, sizeof err), RL_OK);
    assert_false(missing);
    assert_int_equal(len, 12);
    assert_string_equal(data, "twelve bytes"); /* a NUL after the bytes */
    free(data);
    /* One byte over the bound: refused, saying the bound. */
    assert_int_equal(rl__read_whole_file(f->path, 11, &data, &len, &missing, err, sizeof err), RL_IO_ERROR);
    assert_null(data);
    assert_non_null(strstr(err, "/file: larger than 11 bytes"));
    /* Empty is a file too. */
    write_text(f->path, "");
    assert_int_equal(rl__read_whole_file(f->path, 0, &data, &len, NULL, err, sizeof err), RL_OK);
    assert_int_equal(len, 0);
    free(data);
}

static void test_missing(void **state) {
    fixture *f = *state;
    char *data = NULL, err[256] = "";
    size_t len = 0;
    bool missing = false;
    assert_int_equal(rl__read_whole_file(f->path, SIZE_MAX, &data, &len, &missing, err, sizeof err), RL_OK);
    assert_true(missing);
    assert_null(data);
    /* Not asked to tell it apart: an error. */
    assert_int_equal(rl__read_whole_file(f->path, SIZE_MAX, &data, &len, NULL, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, "/file: cannot open: No such file or directory"));
}

/* Each refused at once: a FIFO without a writer would hold open(2) forever
 * without O_NONBLOCK, and a read of it after. */
static void test_refuses_what_is_not_a_regular_file(void **state) {
    fixture *f = *state;
    assert_int_equal(mkfifo(f->path, 0600), 0);
    char *data = NULL, err[256] = "";
    size_t len = 0;
    bool missing = false;
    assert_int_equal(rl__read_whole_file(f->path, SIZE_MAX, &data, &len, &missing, err, sizeof err), RL_IO_ERROR);
    assert_false(missing);
    assert_null(data);
    assert_non_null(strstr(err, "/file: is a FIFO, not a regular file: only a regular file is read"));
    struct stat st;
    assert_int_equal(rl__regular_file_open(f->path, &st, err, sizeof err), -1);
    assert_int_equal(errno, EINVAL);
    const char *others[][2] = {{"/tmp", "is a directory"}, {"/dev/null", "is a character device"}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        assert_int_equal(rl__read_whole_file(others[i][0], SIZE_MAX, &data, &len, NULL, err, sizeof err),
                         RL_IO_ERROR);
        if (strstr(err, others[i][1]) == NULL) fail_msg("%s: %s", others[i][0], err);
    }
}

static void test_open_gives_the_descriptor_and_its_stat(void **state) {
    fixture *f = *state;
    write_text(f->path, "abc");
    struct stat st;
    char err[256] = "";
    int fd = rl__regular_file_open(f->path, &st, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(st.st_size, 3);
    char bytes[4] = "";
    assert_int_equal(read(fd, bytes, sizeof bytes), 3);
    assert_memory_equal(bytes, "abc", 3);
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_a_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_what_is_not_a_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_gives_the_descriptor_and_its_stat, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
