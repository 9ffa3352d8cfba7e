/* atomic_file.c — see atomic_file.h. */
#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error_text.h"

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

char *rl__directory_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int rl__make_directories(const char *dir) {
    char *copy = strdup(dir);
    if (copy == NULL) return -1;
    int rc = 0;
    for (char *p = copy + 1; *p != '\0' && rc == 0; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) rc = -1;
        *p = '/';
    }
    if (rc == 0 && mkdir(copy, 0755) != 0 && errno != EEXIST) rc = -1;
    int saved = errno;
    free(copy);
    errno = saved;
    return rc;
}

int rl__write_all(int fd, const void *data, size_t len) {
    const char *at = data;
    while (len > 0) {
        ssize_t n = write(fd, at, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes and syncs tmp_path; on failure removes it. */
static rl_status write_tmp(const char *tmp_path, const char *dir, rl__atomic_write_fn write, void *context,
                           char *err, size_t err_size) {
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) { /* the first file of a fresh data directory */
        if (rl__make_directories(dir) != 0)
            return fail(RL_IO_ERROR, err, err_size, "%s: cannot create directory: %s", dir, strerror(errno));
        fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot create: %s", tmp_path, strerror(errno));
    const char *step = "write";
    errno = 0;
    int rc = write(fd, context) ? 0 : -1;
    if (rc == 0) {
        step = "fsync";
        rc = fsync(fd);
    }
    int saved = errno != 0 ? errno : EIO;
    if (close(fd) != 0 && rc == 0) {
        step = "close";
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        unlink(tmp_path);
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot %s: %s", tmp_path, step, strerror(saved));
    }
    return RL_OK;
}

static rl_status rename_over(const char *tmp_path, const char *path, bool sync_dir, bool *replaced, char *err,
                             size_t err_size);

rl_status rl__atomic_file_rename(const char *tmp_path, const char *path, bool *replaced, char *err,
                                 size_t err_size) {
    return rename_over(tmp_path, path, true, replaced, err, err_size);
}

rl_status rl__atomic_file_rename_unsynced(const char *tmp_path, const char *path, bool *replaced, char *err,
                                          size_t err_size) {
    return rename_over(tmp_path, path, false, replaced, err, err_size);
}

static rl_status rename_over(const char *tmp_path, const char *path, bool sync_dir, bool *replaced, char *err,
                             size_t err_size) {
    *replaced = false;
    char *dir = rl__directory_of(path);
    if (dir == NULL) {
        unlink(tmp_path);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    }
    rl_status status = RL_OK;
    /* Opened before the rename so that, past the rename, only the fsync of
     * the directory itself can still fail. */
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        unlink(tmp_path);
        status = fail(RL_IO_ERROR, err, err_size, "%s: cannot open directory: %s", dir, strerror(errno));
    } else if (rename(tmp_path, path) != 0) {
        int saved = errno;
        unlink(tmp_path);
        status = fail(RL_IO_ERROR, err, err_size, "%s: cannot rename %s over it: %s", path, tmp_path,
                      strerror(saved));
    } else {
        *replaced = true;
        /* Some file systems cannot sync a directory (EINVAL): nothing more to do there. */
        if (sync_dir && fsync(dir_fd) != 0 && errno != EINVAL && errno != ENOTSUP)
            status = fail(RL_IO_ERROR, err, err_size,
                          "%s: written, but fsync of %s failed (%s): the change may not survive a crash", path,
                          dir, strerror(errno));
    }
    if (dir_fd >= 0) close(dir_fd);
    free(dir);
    return status;
}

rl_status rl__atomic_file_replace(const char *path, rl__atomic_write_fn write, void *context, bool *replaced,
                                  char *err, size_t err_size) {
    *replaced = false;
    char *tmp_path = NULL;
    char *dir = rl__directory_of(path);
    rl_status status = RL_OK;
    if (dir == NULL || asprintf(&tmp_path, "%s.tmp", path) < 0) {
        tmp_path = NULL;
        status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
        goto done;
    }
    status = write_tmp(tmp_path, dir, write, context, err, err_size);
    if (status != RL_OK) goto done;
    status = rl__atomic_file_rename(tmp_path, path, replaced, err, err_size);
done:
    free(tmp_path);
    free(dir);
    return status;
}

