/* support/browser.h — a real browser for the tests: Debian's headless
 * Chromium, driven over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: JSON messages, each ended by a NUL, written to
 * its fd 3 and read from its fd 4), with no download of anything.
 *
 * open() starts it on a page and attaches to that page; eval() runs a
 * JavaScript expression in the page (a promise is waited for) and gives
 * its value; wait() polls an expression until it is true. Everything has a
 * deadline; close() asks the browser to quit, then kills its process group.
 * Not thread-safe: one thread drives a browser.
 */
#ifndef RL_TEST_BROWSER_H
#define RL_TEST_BROWSER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RL_TEST_CHROMIUM_PATH "/usr/bin/chromium"
#define RL_TEST_BROWSER_CALL_DEADLINE_MS 30000

typedef struct rl_test_browser {
    pid_t pid;        /* 0 when not running */
    int to_browser;   /* its fd 3 */
    int from_browser; /* its fd 4 */
    char session_id[128];
    int next_id;
    char *pending; /* bytes read past the last message */
    size_t pending_len, pending_cap;
    char log_path[512]; /* its stderr */
} rl_test_browser;

/* Starts Chromium with a new profile in dir (created by the caller; its
 * stderr goes to dir/chromium.log) on url, and attaches to the page. False
 * with err when Chromium is missing, does not start or shows no page in
 * time (then nothing runs). */
bool rl_test_browser_open(rl_test_browser *browser, const char *dir, const char *url, char *err, size_t err_size);

/* The same with more command-line flags for Chromium (a NULL-terminated
 * list, at most RL_TEST_BROWSER_MAX_EXTRA_FLAGS), such as
 * --ignore-certificate-errors for a daemon whose certificate a test made. */
#define RL_TEST_BROWSER_MAX_EXTRA_FLAGS 8
bool rl_test_browser_open_with(rl_test_browser *browser, const char *dir, const char *url,
                               const char *const *extra_flags, char *err, size_t err_size);

/* The value of expression in the page as a malloc'd string (a string as it
 * is, anything else as JSON), or NULL if it threw or no answer came within
 * RL_TEST_BROWSER_CALL_DEADLINE_MS; why in err. A promise is awaited. */
char *rl_test_browser_eval(rl_test_browser *browser, const char *expression, char *err, size_t err_size);

/* Evaluates condition every 100 ms until it is true (JavaScript truthiness)
 * or timeout_ms passes. */
bool rl_test_browser_wait(rl_test_browser *browser, const char *condition, long timeout_ms);

/* Quits the browser (Browser.close, then SIGKILL to its process group after
 * a few seconds). Idempotent. */
void rl_test_browser_close(rl_test_browser *browser);

#endif
