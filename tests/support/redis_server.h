/* support/redis_server.h — a private redis-server for one test: started on
 * a free loopback port in its own temporary directory, with persistence off,
 * stopped (and restarted on the same port, for fault tests) on demand.
 * Header-only.
 *
 *     rl_test_redis redis;
 *     switch (rl_test_redis_start(&redis)) {
 *     case RL_TEST_REDIS_STARTED: break;               // redis.port answers PING
 *     case RL_TEST_REDIS_SKIPPED: skip();              // no redis-server on PATH
 *     case RL_TEST_REDIS_FAILED: fail();               // why is on stderr
 *     }
 *     ...
 *     rl_test_redis_cleanup(&redis);                   // stops it, removes the dir
 *
 * rl_test_redis_start_persistent() starts it with --appendonly yes
 * --appendfsync always instead, so that what it acknowledged survives a
 * SIGKILL (rl_test_redis_kill) and is reloaded by rl_test_redis_restart.
 *
 * The server runs in the foreground (--daemonize no) as a child of the test,
 * with stdout/stderr in DIR/redis.log (a file, never a pipe that could fill);
 * on Linux it gets SIGKILL if the test process dies first, so a crashed test
 * leaves no server behind. RL_TEST_REDIS_SERVER overrides the executable.
 * Not thread-safe: one thread starts and stops a given server.
 */
#ifndef RL_TEST_REDIS_SERVER_H
#define RL_TEST_REDIS_SERVER_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define RL_TEST_REDIS_START_DEADLINE_MS 5000
#define RL_TEST_REDIS_STOP_DEADLINE_MS 5000
#define RL_TEST_REDIS_START_ATTEMPTS 3 /* a free port can be taken between finding and binding it */

typedef enum rl_test_redis_result {
    RL_TEST_REDIS_STARTED = 0,
    RL_TEST_REDIS_SKIPPED, /* no redis-server on PATH: the caller skip()s */
    RL_TEST_REDIS_FAILED,  /* it is there but did not come up: stderr says why */
} rl_test_redis_result;

typedef struct rl_test_redis {
    pid_t pid;               /* 0 while stopped */
    uint16_t port;           /* kept across stop/restart */
    char executable[512];
    char dir[64];            /* "" until started */
    char log_path[96];
    bool persistent;         /* AOF on, fsync on every write (start_persistent) */
} rl_test_redis;

static inline long rl_test_redis_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void rl_test_redis_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Finds redis-server: $RL_TEST_REDIS_SERVER, else the first on $PATH. */
static inline bool rl_test_redis_find_executable(char *out, size_t size) {
    const char *forced = getenv("RL_TEST_REDIS_SERVER");
    if (forced != NULL && forced[0] != '\0') {
        snprintf(out, size, "%s", forced);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path != '\0') {
        const char *end = strchr(path, ':');
        size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
        if (len > 0 && len + sizeof "/redis-server" <= size) {
            snprintf(out, size, "%.*s/redis-server", (int)len, path);
            if (access(out, X_OK) == 0) return true;
        }
        if (end == NULL) break;
        path = end + 1;
    }
    out[0] = '\0';
    return false;
}

/* A loopback port nothing listens on right now (the kernel's choice). */
static inline uint16_t rl_test_redis_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* One PING on a fresh connection: true when the answer is +PONG (not, say,
 * -LOADING) from the server whose process id is pid (0: any server), so that
 * a server some other test started on a port we thought free is not taken
 * for ours. Each step is bounded by timeout_ms. */
/* A connection to 127.0.0.1:port that has sent request (request_len
 * bytes), each step bounded by timeout_ms; -1 if that failed. */
static inline int rl_test_redis_send(uint16_t port, const char *request, size_t request_len, long timeout_ms) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        send(fd, request, request_len, MSG_NOSIGNAL) != (ssize_t)request_len) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline bool rl_test_redis_ping_once(uint16_t port, pid_t pid, long timeout_ms) {
    bool ours = false;
    static const char request[] = "PING\r\nINFO server\r\n";
    int fd = rl_test_redis_send(port, request, sizeof request - 1, timeout_ms);
    if (fd >= 0) {
        char reply[8192];
        size_t got = 0;
        const char *id = NULL;
        while (got < sizeof reply - 1) {
            ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, 0);
            if (n <= 0) break;
            got += (size_t)n;
            reply[got] = '\0';
            if (strncmp(reply, "+PONG", got < 5 ? got : 5) != 0) break; /* -LOADING, -ERR... */
            id = strstr(reply, "process_id:");
            if (id != NULL && strchr(id, '\n') != NULL) break;
            id = NULL;
        }
        reply[got] = '\0';
        if (strncmp(reply, "+PONG", 5) == 0 && id != NULL)
            ours = pid == 0 || strtol(id + strlen("process_id:"), NULL, 10) == (long)pid;
        close(fd);
    }
    return ours;
}

/* Sends one inline command ("CONFIG SET maxmemory 0": words separated by
 * spaces, no quoting) on a fresh connection and copies its raw reply into
 * out (NUL-terminated, truncated to out_size): "+OK", "-ERR ...", or a bulk
 * string with its "$<len>" header. A PING after it marks where the reply
 * ends. False if the server cannot be reached in 2 s. */
static inline bool rl_test_redis_command(const rl_test_redis *redis, const char *command, char *out,
                                         size_t out_size) {
    out[0] = '\0';
    char request[1024];
    int len = snprintf(request, sizeof request, "%s\r\nPING\r\n", command);
    if (len <= 0 || (size_t)len >= sizeof request) return false;
    int fd = rl_test_redis_send(redis->port, request, (size_t)len, 2000);
    if (fd < 0) return false;
    bool ok = false;
    char reply[65536];
    size_t got = 0;
    while (!ok && got < sizeof reply - 1) {
        ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, 0);
        if (n <= 0) break;
        got += (size_t)n;
        reply[got] = '\0';
        ok = got >= 7 && strcmp(reply + got - 7, "+PONG\r\n") == 0;
    }
    close(fd);
    if (ok) {
        size_t n = got - 7 < out_size - 1 ? got - 7 : out_size - 1;
        memcpy(out, reply, n);
        out[n] = '\0';
    }
    return ok;
}

/* True once the server on port answers PING, false after deadline_ms. */
static inline bool rl_test_redis_wait_ready(rl_test_redis *redis, long deadline_ms) {
    long until = rl_test_redis_now_ms() + deadline_ms;
    for (;;) {
        if (rl_test_redis_ping_once(redis->port, redis->pid, 500)) return true;
        if (redis->pid != 0 && waitpid(redis->pid, NULL, WNOHANG) != 0) { /* it died (port taken?): reaped */
            redis->pid = 0;
            return false;
        }
        if (rl_test_redis_now_ms() >= until) return false;
        rl_test_redis_sleep_ms(10);
    }
}

static inline void rl_test_redis_print_log(const rl_test_redis *redis, const char *why) {
    fprintf(stderr, "test support: redis-server on port %u: %s; its log (%s):\n", (unsigned)redis->port, why,
            redis->log_path);
    FILE *file = fopen(redis->log_path, "r");
    if (file == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, file) != NULL) fprintf(stderr, "  %s", line);
    fclose(file);
}

/* SIGKILL and reap, for a server that would not stop or came up wrong, or
 * to crash it in a fault test (rl_test_redis_restart brings it back). */
static inline void rl_test_redis_kill(rl_test_redis *redis) {
    if (redis->pid == 0) return;
    kill(redis->pid, SIGKILL);
    while (waitpid(redis->pid, NULL, 0) < 0 && errno == EINTR) {
    }
    redis->pid = 0;
}

/* Forks and execs redis-server on redis->port; true once it answers PING. */
static inline bool rl_test_redis_spawn(rl_test_redis *redis) {
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)redis->port);
    const char *argv[] = {redis->executable, "--port", port, "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", redis->dir, "--daemonize", "no", NULL, NULL,
                          NULL};
    if (redis->persistent) { /* every acknowledged write is on disk before the reply */
        argv[8] = "yes";
        argv[13] = "--appendfsync";
        argv[14] = "always";
    }
    int log = open(redis->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) {
        fprintf(stderr, "test support: %s: %s\n", redis->log_path, strerror(errno));
        return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "test support: fork: %s\n", strerror(errno));
        close(log);
        return false;
    }
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        execv(redis->executable, (char *const *)argv);
        _exit(127);
    }
    close(log);
    redis->pid = pid;
    if (rl_test_redis_wait_ready(redis, RL_TEST_REDIS_START_DEADLINE_MS)) return true;
    rl_test_redis_print_log(redis, "did not answer PING");
    rl_test_redis_kill(redis);
    return false;
}

/* Removes path's files and its subdirectories' (redis 7 writes its AOF into
 * DIR/appendonlydir), depth levels down, then path itself. */
static inline void rl_test_redis_remove_tree(const char *path, int depth) {
    DIR *dir = opendir(path);
    if (dir != NULL) {
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            char child[512];
            snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
            struct stat st;
            if (depth > 0 && lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                rl_test_redis_remove_tree(child, depth - 1);
            else
                unlink(child);
        }
        closedir(dir);
    }
    rmdir(path);
}

/* Removes the server's directory and whatever it wrote there. */
static inline void rl_test_redis_remove_dir(rl_test_redis *redis) {
    if (redis->dir[0] == '\0') return;
    rl_test_redis_remove_tree(redis->dir, 2);
    redis->dir[0] = '\0';
}

/* Starts a fresh server on a free port in a new temporary directory, with
 * persistence off (persistent: AOF on, fsync always). */
static inline rl_test_redis_result rl_test_redis_start_with(rl_test_redis *redis, bool persistent) {
    memset(redis, 0, sizeof *redis);
    redis->persistent = persistent;
    if (!rl_test_redis_find_executable(redis->executable, sizeof redis->executable)) {
        fprintf(stderr, "test support: no redis-server on PATH: skipping the redis tests\n");
        return RL_TEST_REDIS_SKIPPED;
    }
    snprintf(redis->dir, sizeof redis->dir, "/tmp/rl_redis_XXXXXX");
    if (mkdtemp(redis->dir) == NULL) {
        fprintf(stderr, "test support: mkdtemp: %s\n", strerror(errno));
        redis->dir[0] = '\0';
        return RL_TEST_REDIS_FAILED;
    }
    snprintf(redis->log_path, sizeof redis->log_path, "%s/redis.log", redis->dir);
    for (int attempt = 0; attempt < RL_TEST_REDIS_START_ATTEMPTS; attempt++) {
        redis->port = rl_test_redis_free_port();
        if (redis->port != 0 && rl_test_redis_spawn(redis)) return RL_TEST_REDIS_STARTED;
    }
    rl_test_redis_remove_dir(redis);
    return RL_TEST_REDIS_FAILED;
}

static inline rl_test_redis_result rl_test_redis_start(rl_test_redis *redis) {
    return rl_test_redis_start_with(redis, false);
}

/* The same with --appendonly yes --appendfsync always in its directory: what
 * it acknowledged survives a SIGKILL and a restart reloads it. */
static inline rl_test_redis_result rl_test_redis_start_persistent(rl_test_redis *redis) {
    return rl_test_redis_start_with(redis, true);
}

/* SIGTERM, then SIGKILL if it has not exited within the deadline. Returns
 * true if it stopped by itself. The port and directory stay for a restart. */
static inline bool rl_test_redis_stop(rl_test_redis *redis) {
    if (redis->pid == 0) return true;
    kill(redis->pid, SIGTERM);
    long until = rl_test_redis_now_ms() + RL_TEST_REDIS_STOP_DEADLINE_MS;
    for (;;) {
        pid_t done = waitpid(redis->pid, NULL, WNOHANG);
        if (done == redis->pid || (done < 0 && errno != EINTR)) {
            redis->pid = 0;
            return true;
        }
        if (rl_test_redis_now_ms() >= until) break;
        rl_test_redis_sleep_ms(5);
    }
    rl_test_redis_print_log(redis, "ignored SIGTERM, killing it");
    rl_test_redis_kill(redis);
    return false;
}

/* Starts a stopped (or killed) server again on the same port and directory
 * (empty without persistence; a persistent one reloads its AOF), so that
 * clients reconnect to the address they know. */
static inline bool rl_test_redis_restart(rl_test_redis *redis) {
    if (redis->pid != 0) rl_test_redis_stop(redis);
    if (redis->dir[0] == '\0' || redis->port == 0) return false;
    /* the old listener's port may linger briefly; redis sets SO_REUSEADDR, so retry a little */
    for (int attempt = 0; attempt < RL_TEST_REDIS_START_ATTEMPTS; attempt++) {
        if (rl_test_redis_spawn(redis)) return true;
        rl_test_redis_sleep_ms(100);
    }
    return false;
}

/* Stops the server if it runs and removes its directory. Idempotent. */
static inline void rl_test_redis_cleanup(rl_test_redis *redis) {
    rl_test_redis_stop(redis);
    rl_test_redis_remove_dir(redis);
}

#endif
