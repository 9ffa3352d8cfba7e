/* path_lock.c — see path_lock.h. */
#include "core/path_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error_text.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

struct rl__path_lock {
    int fd;
};

char *rl__path_lock_beside(const char *path) {
    char *lock_path = NULL;
    return asprintf(&lock_path, "%s.lock", path) < 0 ? NULL : lock_path;
}

/* The holder's PID as it wrote it, or 0 when the file holds none (the
 * holder is between its flock and its write). */
static long holder_pid(int fd) {
    char text[32] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return end != text && pid > 0 ? pid : 0;
}

static rl_status refuse_held(int fd, const char *lock_path, const char *data_path, char *err, size_t err_size) {
    long pid = holder_pid(fd);
    char holder[64];
    if (pid == getpid())
        snprintf(holder, sizeof holder, "this process (pid %ld) has it open already", pid);
    else if (pid > 0)
        snprintf(holder, sizeof holder, "pid %ld holds it", pid);
    else
        snprintf(holder, sizeof holder, "another process holds it");
    return fail(RL_IO_ERROR, err, err_size,
                "%s is in use: %s (lock %s); two writers would interleave their records, so this one stops: "
                "stop the other, or give this one files of its own",
                data_path, holder, lock_path);
}

rl_status rl__path_lock_acquire(const char *lock_path, const char *data_path, rl__path_lock **out, char *err,
                                size_t err_size) {
    *out = NULL;
    char *dir = rl__directory_of(lock_path);
    if (dir == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", lock_path);
    int made = rl__make_directories(dir);
    int saved = errno;
    free(dir);
    if (made != 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot create its directory: %s", lock_path, strerror(saved));
    int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot open: %s", lock_path, strerror(errno));
    int rc;
    do rc = flock(fd, LOCK_EX | LOCK_NB);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        rl_status status = errno == EWOULDBLOCK ? refuse_held(fd, lock_path, data_path, err, err_size)
                                                : fail(RL_IO_ERROR, err, err_size, "%s: cannot lock: %s", lock_path,
                                                       strerror(errno));
        close(fd);
        return status;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        saved = errno;
        close(fd);
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot write: %s", lock_path, strerror(saved));
    }
    rl__path_lock *lock = malloc(sizeof *lock);
    if (lock == NULL) {
        close(fd);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", lock_path);
    }
    lock->fd = fd;
    *out = lock;
    return RL_OK;
}

void rl__path_lock_release(rl__path_lock *lock) {
    if (lock == NULL) return;
    close(lock->fd); /* the last descriptor of its open file description: the lock goes with it */
    free(lock);
}
