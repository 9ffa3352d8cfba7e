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

rl_status rl__atomic_file_rename(const char *tmp_path, const char *path, bool *replaced, char *err,
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
        if (fsync(dir_fd) != 0 && errno != EINVAL && errno != ENOTSUP)
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

/* See atomic_file.h. Reads the whole file into *data, malloc'd, with a NUL after its *len
 * bytes (the scanner's sentinel, json_scan.h). ENOENT is reported through
 * *missing, not as an error. */
rl_status rl__read_whole_file(const char *path, char **data, size_t *len, bool *missing, char *err,
                           size_t err_size) {
    *data = NULL;
    *len = 0;
    *missing = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = true;
            return RL_OK;
        }
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot stat: %s", path, strerror(saved));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(RL_IO_ERROR, err, err_size, "%s: is %s, not a regular file", path,
                    S_ISDIR(st.st_mode) ? "a directory" : "something else");
    }
    /* Room for the file, a byte to see its end without growing, and the NUL. */
    size_t cap = (size_t)st.st_size + 2, used = 0;
    char *buffer = malloc(cap);
    if (buffer == NULL) {
        close(fd);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    }
    for (;;) {
        if (used + 1 == cap) { /* the file grew since fstat */
            char *bigger = realloc(buffer, cap * 2);
            if (bigger == NULL) {
                free(buffer);
                close(fd);
                return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
            }
            buffer = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buffer + used, cap - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int saved = errno;
            free(buffer);
            close(fd);
            return fail(RL_IO_ERROR, err, err_size, "%s: cannot read: %s", path, strerror(saved));
        }
        if (n == 0) break;
        used += (size_t)n;
    }
    close(fd);
    buffer[used] = '\0';
    *data = buffer;
    *len = used;
    return RL_OK;
}
