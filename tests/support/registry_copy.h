/* support/registry_copy.h — a registry's files (limits.json and its log)
 * read through a copy, for tests that look at what a running registry, a
 * service or a daemon wrote while it still holds them: a second opening of
 * the files themselves is refused (one process, one opening on a data
 * file). Header-only.
 */
#ifndef RL_TEST_REGISTRY_COPY_H
#define RL_TEST_REGISTRY_COPY_H

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ratelimiter/registry.h"

typedef struct rl_test_registry_copy {
    char dir[64];
    rl_registry *registry; /* open on the copy until rl_test_registry_copy_close */
} rl_test_registry_copy;

/* Copies from to to; false if from is missing. */
static inline bool rl_test_copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb");
    if (in == NULL) return false;
    FILE *out = fopen(to, "wb");
    if (out == NULL) {
        fclose(in);
        return false;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) fwrite(chunk, 1, n, out);
    fclose(in);
    fclose(out);
    return true;
}

static inline int rl_test_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Opens a copy of the registry at path (neither of its files there: an
 * empty registry, and *found false if found is not NULL); false (err says
 * why) when the copy does not open. */
static inline bool rl_test_registry_copy_open(rl_test_registry_copy *copy, const char *path, bool *found, char *err,
                                              size_t err_size) {
    copy->registry = NULL;
    snprintf(copy->dir, sizeof copy->dir, "/tmp/rl_test_registry_XXXXXX");
    if (mkdtemp(copy->dir) == NULL) {
        snprintf(err, err_size, "mkdtemp failed");
        return false;
    }
    char to[96], to_log[100], from_log[4200];
    snprintf(to, sizeof to, "%s/limits.json", copy->dir);
    snprintf(to_log, sizeof to_log, "%s.log", to);
    snprintf(from_log, sizeof from_log, "%s.log", path);
    bool any = rl_test_copy_file(path, to);
    any = rl_test_copy_file(from_log, to_log) || any;
    if (found != NULL) *found = any;
    return rl_registry_open(to, 0, &copy->registry, err, err_size) == RL_OK;
}

/* Closes the copy and removes it. */
static inline void rl_test_registry_copy_close(rl_test_registry_copy *copy) {
    rl_registry_close(copy->registry);
    copy->registry = NULL;
    nftw(copy->dir, rl_test_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
