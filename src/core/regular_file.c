/* regular_file.c — see regular_file.h. */
#include "core/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error_text.h"

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

static const char *kind_of(mode_t mode) {
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

int rl__regular_file_open(const char *path, struct stat *st, char *err, size_t err_size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        rl__error_text(err, err_size, "%s: cannot open: %s", path, strerror(saved));
        errno = saved;
        return -1;
    }
    if (fstat(fd, st) != 0) {
        int saved = errno;
        close(fd);
        rl__error_text(err, err_size, "%s: cannot stat: %s", path, strerror(saved));
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        rl__error_text(err, err_size,
                       "%s: is %s, not a regular file: only a regular file is read (a FIFO or a device could keep "
                       "the reader waiting forever)",
                       path, kind_of(st->st_mode));
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* A bigger buffer for the bytes read so far; the old one is zeroed before
 * it is freed. NULL when out of memory (buffer is then left as it was). */
static char *grow(char *buffer, size_t used, size_t cap) {
    char *bigger = malloc(cap);
    if (bigger == NULL) return NULL;
    memcpy(bigger, buffer, used);
    explicit_bzero(buffer, used);
    free(buffer);
    return bigger;
}

rl_status rl__read_whole_file(const char *path, size_t max_bytes, char **data, size_t *len, bool *missing,
                              char *err, size_t err_size) {
    *data = NULL;
    *len = 0;
    if (missing != NULL) *missing = false;
    struct stat st;
    int fd = rl__regular_file_open(path, &st, err, err_size);
    if (fd < 0 && errno == ENOENT && missing != NULL) {
        *missing = true;
        return RL_OK;
    }
    if (fd < 0) return RL_IO_ERROR;
    /* Room for the file, a byte to see its end without growing, and the NUL;
     * never more than a byte past max_bytes, which is enough to refuse. */
    size_t cap_max = max_bytes > SIZE_MAX - 2 ? SIZE_MAX : max_bytes + 2;
    size_t size = (size_t)st.st_size;
    size_t cap = size < cap_max - 2 ? size + 2 : cap_max, used = 0;
    char *buffer = malloc(cap);
    rl_status status = RL_OK;
    if (buffer == NULL) status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    while (status == RL_OK) {
        if (used + 1 == cap) { /* the file grew since fstat, or is at the bound */
            if (used > max_bytes) break;
            size_t bigger_cap = cap <= cap_max / 2 ? cap * 2 : cap_max;
            char *bigger = grow(buffer, used, bigger_cap);
            if (bigger == NULL) {
                status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
                break;
            }
            buffer = bigger;
            cap = bigger_cap;
        }
        ssize_t n = read(fd, buffer + used, cap - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) status = fail(RL_IO_ERROR, err, err_size, "%s: cannot read: %s", path, strerror(errno));
        if (n <= 0) break;
        used += (size_t)n;
    }
    close(fd);
    if (status == RL_OK && used > max_bytes)
        status = fail(RL_IO_ERROR, err, err_size, "%s: larger than %zu bytes", path, max_bytes);
    if (status != RL_OK) {
        if (buffer != NULL) explicit_bzero(buffer, used);
        free(buffer);
        return status;
    }
    buffer[used] = '\0';
    *data = buffer;
    *len = used;
    return RL_OK;
}
