/* support/file_bytes.h — a file's bytes read and written whole, for tests
 * that damage, tear or compare files on disk (record files, the audit
 * log). Header-only; include it after <cmocka.h>, whose assertions it uses.
 */
#ifndef RL_TEST_FILE_BYTES_H
#define RL_TEST_FILE_BYTES_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

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

#endif
