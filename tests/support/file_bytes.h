/* support/file_bytes.h — a file's bytes read and written whole, for tests
 * that damage, tear or compare files on disk (record files, the audit
 * log). Header-only; include it after <cmocka.h>, whose assertions it uses.
 */
#ifndef RL_TEST_FILE_BYTES_H
#define RL_TEST_FILE_BYTES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static inline off_t rl_test_file_size(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

/* The file's bytes, malloc'd (the caller frees them), *len of them. */
static inline unsigned char *rl_test_file_bytes(const char *path, size_t *len) {
    *len = (size_t)rl_test_file_size(path);
    unsigned char *data = malloc(*len + 1);
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    assert_int_equal(fread(data, 1, *len, in), *len);
    fclose(in);
    return data;
}

/* Writes data to path with fopen's mode ("wb" replaces, "ab" appends). */
static inline void rl_test_file_write(const char *path, const void *data, size_t len, const char *mode) {
    FILE *out = fopen(path, mode);
    assert_non_null(out);
    assert_int_equal(fwrite(data, 1, len, out), len);
    fclose(out);
}

/* Waits until the file at path is smaller than bound bytes (a journal a
 * background thread compacts on its own tick), for at most timeout_ms: a
 * bound for a slow machine, not a measurement. True once it is. */
static inline bool rl_test_file_shrinks_below(const char *path, long bound, long timeout_ms) {
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (long waited_ms = 0;; waited_ms += 10) {
        struct stat st;
        if (stat(path, &st) == 0 && (long)st.st_size < bound) return true;
        if (waited_ms >= timeout_ms) return false;
        nanosleep(&pause, NULL);
    }
}

/* Asserts that path holds exactly data[0..len): a file left as it was. */
static inline void rl_test_file_equals(const char *path, const void *data, size_t len) {
    size_t now_len;
    unsigned char *now = rl_test_file_bytes(path, &now_len);
    assert_int_equal(now_len, len);
    assert_memory_equal(now, data, len);
    free(now);
}

#endif
