/* registry_text.c — see registry_text.h. */
#include "registry_text.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ratelimiter/registry.h"
#include "wire/buf.h"
#include "wire/wire.h"

/* Copies from to to; false if from is missing. */
static bool copy_file(const char *from, const char *to) {
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

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

char *rl_test_registry_text(const char *path, char *err, unsigned long err_size) {
    char dir[] = "/tmp/rl_test_registry_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        snprintf(err, err_size, "mkdtemp failed");
        return NULL;
    }
    char copy[64], from_log[4200], copy_log[80];
    snprintf(copy, sizeof copy, "%s/limits.json", dir);
    snprintf(copy_log, sizeof copy_log, "%s.log", copy);
    snprintf(from_log, sizeof from_log, "%s.log", path);
    bool any = copy_file(path, copy);
    any = copy_file(from_log, copy_log) || any;
    char *text = NULL;
    rl_registry *registry = NULL;
    if (any && rl_registry_open(copy, 0, &registry, err, err_size) == RL_OK) {
        rl_limit_def *defs = NULL;
        size_t count = 0;
        if (rl_registry_list(registry, &defs, &count) == RL_OK) {
            rl_buf buf;
            rl__buf_init(&buf);
            rl__buf_append_str(&buf, "[\n");
            for (size_t i = 0; i < count; i++) {
                rl__buf_append_str(&buf, "  ");
                rl__wire_encode_limit_def(&buf, &defs[i]);
                rl__buf_append_str(&buf, i + 1 < count ? ",\n" : "\n");
            }
            rl__buf_append_str(&buf, "]\n");
            text = buf.failed ? NULL : strdup(buf.data);
            rl__buf_free(&buf);
        }
        free(defs);
        rl_registry_close(registry);
    }
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return text;
}
