/* daemon.c — fork/exec the built daemon, find its port, stop it. */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RL_DAEMON_PATH
#error "RL_DAEMON_PATH must name the built ratelimiterd (CMake defines it)"
#endif

#define LISTENING_PREFIX "ratelimiterd listening on "

static void die(const char *what) {
    fprintf(stderr, "test support: %s: %s\n", what, strerror(errno));
    abort();
}

static void write_file(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    if (file == NULL) die(path);
    fputs(text, file);
    if (fclose(file) != 0) die(path);
}

long rl_test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rl_test_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void rl_test_daemon_init(rl_test_daemon *daemon) {
    static bool curl_ready = false;
    if (!curl_ready) {
        rl_test_http_global_init();
        curl_ready = true;
    }
    memset(daemon, 0, sizeof *daemon);
    snprintf(daemon->dir, sizeof daemon->dir, "/tmp/rl_integration_XXXXXX");
    if (mkdtemp(daemon->dir) == NULL) die("mkdtemp");
    snprintf(daemon->registry_path, sizeof daemon->registry_path, "%s/limits.json", daemon->dir);
    snprintf(daemon->stderr_path, sizeof daemon->stderr_path, "%s/stderr.txt", daemon->dir);
    snprintf(daemon->config_path, sizeof daemon->config_path, "%s/config.yaml", daemon->dir);
}

void rl_test_daemon_write_registry(rl_test_daemon *daemon, const char *json) {
    write_file(daemon->registry_path, json);
    /* These bytes are the whole registry: no log of an earlier run over them. */
    char log[sizeof daemon->registry_path + 4];
    snprintf(log, sizeof log, "%s.log", daemon->registry_path);
    unlink(log);
}

void rl_test_daemon_write_config(rl_test_daemon *daemon, const char *yaml) {
    write_file(daemon->config_path, yaml);
}

void rl_test_daemon_read_stderr(const rl_test_daemon *daemon, char *out, size_t size) {
    out[0] = '\0';
    FILE *file = fopen(daemon->stderr_path, "r");
    if (file == NULL) return;
    size_t n = fread(out, 1, size - 1, file);
    out[n] = '\0';
    fclose(file);
}

/* In the child: a session of its own, whose controlling terminal is the
 * pseudo-terminal whose name is slave_name (opened without O_NOCTTY by a
 * session leader), on stdin as if started from it. */
static void take_terminal(const char *slave_name) {
    if (setsid() < 0) _exit(126);
    int tty = open(slave_name, O_RDWR);
    if (tty < 0 || dup2(tty, STDIN_FILENO) < 0) _exit(126);
    if (tty != STDIN_FILENO) close(tty);
}

/* Forks and execs the daemon with stderr (and stdout) into stderr.txt. A
 * file, not a pipe: a daemon that logs a lot can never block on it. With
 * terminal not NULL, see rl_test_daemon_launch. */
static pid_t spawn_on(rl_test_daemon *daemon, const char *const *extra_args, int *terminal) {
    const char *argv[64];
    size_t argc = 0;
    argv[argc++] = RL_DAEMON_PATH;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    argv[argc++] = "--registry";
    argv[argc++] = daemon->registry_path;
    argv[argc++] = "--threads";
    argv[argc++] = "2";
    for (size_t i = 0; extra_args != NULL && extra_args[i] != NULL && argc < 62; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;

    int out = open(daemon->stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) die(daemon->stderr_path);
    char slave_name[128] = "";
    if (terminal != NULL) {
        *terminal = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (*terminal < 0 || grantpt(*terminal) != 0 || unlockpt(*terminal) != 0 ||
            ptsname_r(*terminal, slave_name, sizeof slave_name) != 0)
            die("a pseudo-terminal");
    }
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        if (terminal != NULL) take_terminal(slave_name);
        dup2(out, STDERR_FILENO);
        dup2(out, STDOUT_FILENO);
        execv(RL_DAEMON_PATH, (char *const *)argv);
        _exit(127);
    }
    close(out);
    return pid;
}

static pid_t spawn(rl_test_daemon *daemon, const char *const *extra_args) {
    return spawn_on(daemon, extra_args, NULL);
}

static int exit_code(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return -1;
}

/* Waits for pid up to deadline_ms; returns its exit code or -2 on timeout. */
static int wait_for(pid_t pid, long deadline_ms) {
    long until = rl_test_now_ms() + deadline_ms;
    for (;;) {
        int status;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return exit_code(status);
        if (done < 0 && errno != EINTR) return -1;
        if (rl_test_now_ms() >= until) return -2;
        rl_test_sleep_ms(5);
    }
}

static void kill_and_reap(pid_t pid) {
    kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

bool rl_test_daemon_start(rl_test_daemon *daemon, const char *const *extra_args) {
    daemon->pid = spawn(daemon, extra_args);
    long until = rl_test_now_ms() + RL_TEST_START_DEADLINE_MS;
    char text[8192];
    while (rl_test_now_ms() < until) {
        rl_test_daemon_read_stderr(daemon, text, sizeof text);
        const char *line = strstr(text, LISTENING_PREFIX);
        if (line != NULL && strchr(line, '\n') != NULL) {
            /* "<address>:<port> (...)": the port after the address's last colon */
            const char *address = line + strlen(LISTENING_PREFIX), *colon = NULL;
            for (const char *c = address; *c != ' ' && *c != '\n'; c++)
                if (*c == ':') colon = c;
            long port = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
            if (port <= 0 || port > 65535) break;
            daemon->port = (uint16_t)port;
            if (!rl_test_client_init(&daemon->client, daemon->port)) break;
            return true;
        }
        int status;
        if (waitpid(daemon->pid, &status, WNOHANG) == daemon->pid) {
            fprintf(stderr, "test support: the daemon exited (%d) before listening:\n%s\n",
                    exit_code(status), text);
            daemon->pid = 0;
            return false;
        }
        rl_test_sleep_ms(5);
    }
    fprintf(stderr, "test support: the daemon did not listen in time:\n%s\n", text);
    kill_and_reap(daemon->pid);
    daemon->pid = 0;
    return false;
}

int rl_test_daemon_stop(rl_test_daemon *daemon) { return rl_test_daemon_stop_with(daemon, SIGTERM); }

int rl_test_daemon_stop_with(rl_test_daemon *daemon, int signal_number) {
    rl_test_client_cleanup(&daemon->client);
    if (daemon->pid == 0) return -1;
    kill(daemon->pid, signal_number);
    int code = wait_for(daemon->pid, RL_TEST_STOP_DEADLINE_MS);
    if (code == -2) {
        kill_and_reap(daemon->pid);
        code = -1;
    }
    daemon->pid = 0;
    if (code != 0) {
        char text[8192];
        rl_test_daemon_read_stderr(daemon, text, sizeof text);
        fprintf(stderr, "test support: the daemon stopped with %d:\n%s\n", code, text);
    }
    return code;
}

int rl_test_daemon_run_to_exit(rl_test_daemon *daemon, const char *const *extra_args,
                               int timeout_ms, char *stderr_out, size_t size) {
    pid_t pid = spawn(daemon, extra_args);
    int code = wait_for(pid, timeout_ms);
    if (code == -2) {
        kill_and_reap(pid);
        code = -1;
    }
    rl_test_daemon_read_stderr(daemon, stderr_out, size);
    return code;
}

void rl_test_daemon_launch(rl_test_daemon *daemon, const char *const *extra_args, int *terminal) {
    daemon->pid = spawn_on(daemon, extra_args, terminal);
}

int rl_test_daemon_wait_exit(rl_test_daemon *daemon, int timeout_ms) {
    if (daemon->pid == 0) return -1;
    int code = wait_for(daemon->pid, timeout_ms);
    if (code == -2) {
        kill_and_reap(daemon->pid);
        code = -1;
    }
    daemon->pid = 0;
    return code;
}

/* Between fork and exec the child is still the test binary, with the mask
 * it had at the fork: under ThreadSanitizer, whose fork blocks every signal
 * until the child resumes, a signal sent then is let through before the
 * daemon's main runs. So the mask counts only once the daemon is exec'd. */
static bool process_is_daemon(pid_t pid) {
    char path[64], name[64] = "";
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return false;
    bool read = fgets(name, sizeof name, file) != NULL;
    fclose(file);
    return read && strcmp(name, "ratelimiterd\n") == 0;
}

bool rl_test_process_blocks_signal(pid_t pid, int signal_number) {
    if (!process_is_daemon(pid)) return false;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return false;
    unsigned long long blocked = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, file) != NULL)
        found = sscanf(line, "SigBlk: %llx", &blocked) == 1;
    fclose(file);
    return found && (blocked >> (signal_number - 1) & 1u) != 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (type == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

void rl_test_daemon_cleanup(rl_test_daemon *daemon) {
    rl_test_client_cleanup(&daemon->client);
    if (daemon->pid != 0) {
        /* A daemon that died on its own before a failed test's clean-up
         * (a crash, a sanitizer's report) says why here, or nowhere. */
        int status;
        if (waitpid(daemon->pid, &status, WNOHANG) == daemon->pid) {
            char text[8192];
            rl_test_daemon_read_stderr(daemon, text, sizeof text);
            fprintf(stderr, "test support: the daemon had exited (status 0x%x):\n%s\n",
                    (unsigned)status, text);
        } else {
            kill_and_reap(daemon->pid);
        }
        daemon->pid = 0;
    }
    /* Everything the daemon and the test left there: the registry, its
     * journal and audit directory beside it, captured output. */
    nftw(daemon->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

long rl_test_daemon_http(rl_test_daemon *daemon, const char *method, const char *path,
                         const char *body, rl_test_response *out) {
    return rl_test_client_request(&daemon->client, method, path, body, out);
}
