/* support/daemon.h — run the built ratelimiterd for a test.
 *
 * Each daemon gets its own mkdtemp directory holding its registry file and
 * its captured stderr, and by default (beside the registry) its journal and
 * audit directory: daemons of different tests never share them. start() runs RL_DAEMON_PATH with --listen 127.0.0.1:0
 * and learns the port from the "listening on" line (with a deadline); stop()
 * sends SIGTERM and returns the exit status, which must be 0 for a clean
 * stop. Not thread-safe: drive a daemon from one thread (its clients may
 * live on others).
 */
#ifndef RL_TEST_DAEMON_H
#define RL_TEST_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "http_client.h"

#define RL_TEST_START_DEADLINE_MS 20000 /* sanitizer builds start slowly */
#define RL_TEST_STOP_DEADLINE_MS 20000

typedef struct rl_test_daemon {
    char dir[256];
    char registry_path[300];
    char stderr_path[300];
    char config_path[300];
    pid_t pid;     /* 0 when not running */
    uint16_t port; /* valid while running */
    rl_test_client client; /* keep-alive client of this daemon (main thread) */
} rl_test_daemon;

/* Makes the temp directory; no file is written yet. Aborts the test on failure. */
/* CLOCK_MONOTONIC in ms, and a sleep: the deadlines of the tests. */
long rl_test_now_ms(void);
void rl_test_sleep_ms(long ms);

void rl_test_daemon_init(rl_test_daemon *daemon);

/* Writes the registry file (limits.json) with exactly these bytes, and
 * removes its log (limits.json.log): these bytes are the whole registry. */
void rl_test_daemon_write_registry(rl_test_daemon *daemon, const char *json);

/* Writes config.yaml with these bytes; pass "-c", daemon->config_path to use it. */
void rl_test_daemon_write_config(rl_test_daemon *daemon, const char *yaml);

/* Starts the daemon on its registry, with extra arguments (NULL-terminated
 * list, or NULL). Returns true once it listens (client ready), false if it
 * exited or did not listen in time (it is then killed). */
bool rl_test_daemon_start(rl_test_daemon *daemon, const char *const *extra_args);

/* SIGTERM, then waits. Returns the exit status (0..255), 128+signal if it
 * died of a signal, or -1 if it had to be killed after the deadline. */
int rl_test_daemon_stop(rl_test_daemon *daemon);

/* The same with another signal (SIGINT). */
int rl_test_daemon_stop_with(rl_test_daemon *daemon, int signal_number);

/* Runs the daemon expecting it to exit by itself within timeout_ms (a start-up
 * failure). Returns its exit status as stop() does; its stderr goes to
 * stderr_out (NUL-terminated, truncated to size). */
int rl_test_daemon_run_to_exit(rl_test_daemon *daemon, const char *const *extra_args,
                               int timeout_ms, char *stderr_out, size_t size);

/* Starts the daemon and returns at once, without waiting for it to listen:
 * a test of its start-up, which then signals it (rl_test_daemon_stop_with)
 * or waits for it to exit (rl_test_daemon_wait_exit). With terminal not
 * NULL the daemon runs in a session of its own whose controlling terminal
 * is a new pseudo-terminal: *terminal is its other side (the test reads
 * there what the daemon wrote to /dev/tty, and closes it). */
void rl_test_daemon_launch(rl_test_daemon *daemon, const char *const *extra_args, int *terminal);

/* Waits up to timeout_ms for a launched daemon to exit by itself: its exit
 * status as stop() returns it, or -1 if it had to be killed. */
int rl_test_daemon_wait_exit(rl_test_daemon *daemon, int timeout_ms);

/* Whether the process pid is the exec'd daemon and blocks signal_number in
 * its main thread (/proc/<pid>/status): it has reached its start-up's
 * signal mask. */
bool rl_test_process_blocks_signal(pid_t pid, int signal_number);

/* Reads the daemon's stderr so far into out (NUL-terminated, truncated). */
void rl_test_daemon_read_stderr(const rl_test_daemon *daemon, char *out, size_t size);

/* Kills the daemon if it still runs and removes the directory with
 * everything in it. */
void rl_test_daemon_cleanup(rl_test_daemon *daemon);

/* One request over the daemon's own client; see rl_test_client_request. */
long rl_test_daemon_http(rl_test_daemon *daemon, const char *method, const char *path,
                         const char *body, rl_test_response *out);

#endif
