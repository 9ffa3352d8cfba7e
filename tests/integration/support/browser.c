/* browser.c — see browser.h. */
#include "browser.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daemon.h"

__attribute__((format(printf, 3, 4))) static bool fail(char *err, size_t err_size, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(err, err_size, format, args);
    va_end(args);
    return false;
}

static bool send_message(rl_test_browser *b, cJSON *message) {
    char *text = cJSON_PrintUnformatted(message);
    if (text == NULL) return false;
    size_t len = strlen(text) + 1; /* the NUL ends the message */
    bool ok = true;
    for (size_t off = 0; ok && off < len;) {
        ssize_t n = write(b->to_browser, text + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) off += (size_t)n;
    }
    free(text);
    return ok;
}

/* The next whole message (malloc'd, NUL-terminated), or NULL at the
 * deadline or when the browser has gone. */
static char *read_message(rl_test_browser *b, long deadline_ms) {
    for (;;) {
        char *end = b->pending_len > 0 ? memchr(b->pending, '\0', b->pending_len) : NULL;
        if (end != NULL) {
            size_t len = (size_t)(end - b->pending);
            char *message = malloc(len + 1);
            if (message == NULL) return NULL;
            memcpy(message, b->pending, len + 1);
            memmove(b->pending, end + 1, b->pending_len - len - 1);
            b->pending_len -= len + 1;
            return message;
        }
        long left = deadline_ms - rl_test_now_ms();
        if (left <= 0) return NULL;
        struct pollfd pfd = {b->from_browser, POLLIN, 0};
        int ready = poll(&pfd, 1, (int)(left < 1000 ? left : 1000));
        if (ready < 0 && errno != EINTR) return NULL;
        if (ready <= 0) continue;
        if (b->pending_cap - b->pending_len < 65536) {
            size_t cap = b->pending_cap * 2 + 65536;
            char *grown = realloc(b->pending, cap);
            if (grown == NULL) return NULL;
            b->pending = grown;
            b->pending_cap = cap;
        }
        ssize_t n = read(b->from_browser, b->pending + b->pending_len, b->pending_cap - b->pending_len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return NULL; /* the browser closed its end */
        b->pending_len += (size_t)n;
    }
}

/* Sends method with params (taken; NULL for none), on the page's session if
 * there is one, and returns the answer's "result" (the caller deletes the
 * returned root: *root), skipping events. NULL with err on an error answer
 * or at the deadline. */
static cJSON *call(rl_test_browser *b, const char *method, cJSON *params, cJSON **root, char *err, size_t err_size) {
    *root = NULL;
    int id = ++b->next_id;
    cJSON *message = cJSON_CreateObject();
    cJSON_AddNumberToObject(message, "id", id);
    if (b->session_id[0] != '\0') cJSON_AddStringToObject(message, "sessionId", b->session_id);
    cJSON_AddStringToObject(message, "method", method);
    if (params != NULL) cJSON_AddItemToObject(message, "params", params);
    bool sent = send_message(b, message);
    cJSON_Delete(message);
    if (!sent) {
        fail(err, err_size, "%s: cannot write to the browser", method);
        return NULL;
    }
    long deadline = rl_test_now_ms() + RL_TEST_BROWSER_CALL_DEADLINE_MS;
    for (;;) {
        char *text = read_message(b, deadline);
        if (text == NULL) {
            fail(err, err_size, "%s: no answer from the browser (see %s)", method, b->log_path);
            return NULL;
        }
        cJSON *answer = cJSON_Parse(text);
        free(text);
        const cJSON *answer_id = cJSON_GetObjectItemCaseSensitive(answer, "id");
        if (!cJSON_IsNumber(answer_id) || answer_id->valueint != id) { /* an event, or another call's */
            cJSON_Delete(answer);
            continue;
        }
        cJSON *result = cJSON_GetObjectItemCaseSensitive(answer, "result");
        if (result == NULL) {
            char *shown = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(answer, "error"));
            fail(err, err_size, "%s: %s", method, shown != NULL ? shown : "an answer without a result");
            free(shown);
            cJSON_Delete(answer);
            return NULL;
        }
        *root = answer;
        return result;
    }
}

/* The page Chromium opened on: its target id, asked until it shows. */
static bool find_page(rl_test_browser *b, char *target_id, size_t size, char *err, size_t err_size) {
    long deadline = rl_test_now_ms() + RL_TEST_BROWSER_CALL_DEADLINE_MS;
    while (rl_test_now_ms() < deadline) {
        cJSON *root;
        cJSON *result = call(b, "Target.getTargets", NULL, &root, err, err_size);
        if (result == NULL) return false;
        const cJSON *target;
        cJSON_ArrayForEach(target, cJSON_GetObjectItemCaseSensitive(result, "targetInfos")) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(target, "type");
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(target, "targetId");
            if (cJSON_IsString(type) && strcmp(type->valuestring, "page") == 0 && cJSON_IsString(id)) {
                snprintf(target_id, size, "%s", id->valuestring);
                cJSON_Delete(root);
                return true;
            }
        }
        cJSON_Delete(root);
        rl_test_sleep_ms(100);
    }
    return fail(err, err_size, "the browser showed no page (see %s)", b->log_path);
}

bool rl_test_browser_open(rl_test_browser *b, const char *dir, const char *url, char *err, size_t err_size) {
    return rl_test_browser_open_with(b, dir, url, NULL, err, err_size);
}

bool rl_test_browser_open_with(rl_test_browser *b, const char *dir, const char *url, const char *const *extra_flags,
                               char *err, size_t err_size) {
    memset(b, 0, sizeof *b);
    b->to_browser = b->from_browser = -1;
    struct stat st;
    if (stat(RL_TEST_CHROMIUM_PATH, &st) != 0)
        return fail(err, err_size, RL_TEST_CHROMIUM_PATH " is missing: install Debian's chromium (make deps-test does)");
    char user_data[600];
    snprintf(user_data, sizeof user_data, "--user-data-dir=%s/chromium-profile", dir);
    snprintf(b->log_path, sizeof b->log_path, "%s/chromium.log", dir);
    /* The flags this machine's closed network needs (no background
     * connections, no component updates); --no-sandbox as the tests may run
     * as root. The caller's after them, then the page. */
    const char *argv[32] = {"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--disable-dev-shm-usage", "--remote-debugging-pipe",
                            "--window-size=1400,1200", user_data};
    size_t argc = 0;
    while (argv[argc] != NULL) argc++;
    for (size_t i = 0; extra_flags != NULL && extra_flags[i] != NULL; i++) {
        if (i == RL_TEST_BROWSER_MAX_EXTRA_FLAGS)
            return fail(err, err_size, "more than %d extra flags for Chromium", RL_TEST_BROWSER_MAX_EXTRA_FLAGS);
        argv[argc++] = extra_flags[i];
    }
    argv[argc++] = url;
    argv[argc] = NULL;
    int to[2], from[2];
    if (pipe(to) != 0) return fail(err, err_size, "pipe: %s", strerror(errno));
    if (pipe(from) != 0) {
        close(to[0]);
        close(to[1]);
        return fail(err, err_size, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: close() ends every process it starts */
        int log = open(b->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open("/dev/null", O_RDWR);
        if (log < 0 || null < 0) _exit(126);
        /* fd 3 and 4 are the protocol's; the copies first, as the pipes'
         * own descriptors may be 3 or 4. */
        int in = fcntl(to[0], F_DUPFD, 10), out = fcntl(from[1], F_DUPFD, 10);
        if (in < 0 || out < 0 || dup2(in, 3) < 0 || dup2(out, 4) < 0) _exit(126);
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        for (int fd = 5; fd < 1024; fd++) close(fd);
        execv(RL_TEST_CHROMIUM_PATH, (char *const *)argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    if (pid < 0) {
        close(to[1]);
        close(from[0]);
        return fail(err, err_size, "fork: %s", strerror(errno));
    }
    b->pid = pid;
    b->to_browser = to[1];
    b->from_browser = from[0];
    char target_id[128];
    if (!find_page(b, target_id, sizeof target_id, err, err_size)) {
        rl_test_browser_close(b);
        return false;
    }
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "targetId", target_id);
    cJSON_AddBoolToObject(params, "flatten", true);
    cJSON *root;
    cJSON *result = call(b, "Target.attachToTarget", params, &root, err, err_size);
    const cJSON *session = cJSON_GetObjectItemCaseSensitive(result, "sessionId");
    if (!cJSON_IsString(session)) {
        cJSON_Delete(root);
        rl_test_browser_close(b);
        return result == NULL ? false : fail(err, err_size, "Target.attachToTarget gave no session");
    }
    snprintf(b->session_id, sizeof b->session_id, "%s", session->valuestring);
    cJSON_Delete(root);
    return true;
}

char *rl_test_browser_eval(rl_test_browser *b, const char *expression, char *err, size_t err_size) {
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "expression", expression);
    cJSON_AddBoolToObject(params, "awaitPromise", true);
    cJSON_AddBoolToObject(params, "returnByValue", true);
    cJSON *root;
    cJSON *result = call(b, "Runtime.evaluate", params, &root, err, err_size);
    if (result == NULL) return NULL;
    char *value = NULL;
    const cJSON *thrown = cJSON_GetObjectItemCaseSensitive(result, "exceptionDetails");
    if (thrown != NULL) {
        char *shown = cJSON_PrintUnformatted(thrown);
        fail(err, err_size, "%.900s threw: %.2000s", expression, shown != NULL ? shown : "?");
        free(shown);
    } else {
        const cJSON *got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result, "result"), "value");
        value = cJSON_IsString(got) ? strdup(got->valuestring) : got != NULL ? cJSON_PrintUnformatted(got) : strdup("undefined");
    }
    cJSON_Delete(root);
    return value;
}

bool rl_test_browser_wait(rl_test_browser *b, const char *condition, long timeout_ms) {
    char expression[4096], err[256];
    snprintf(expression, sizeof expression, "(() => { try { return !!(%s); } catch (e) { return false; } })()", condition);
    long deadline = rl_test_now_ms() + timeout_ms;
    do {
        char *value = rl_test_browser_eval(b, expression, err, sizeof err);
        bool yes = value != NULL && strcmp(value, "true") == 0;
        free(value);
        if (yes) return true;
        rl_test_sleep_ms(100);
    } while (rl_test_now_ms() < deadline);
    return false;
}

void rl_test_browser_close(rl_test_browser *b) {
    if (b->pid > 0) {
        b->session_id[0] = '\0';
        cJSON *message = cJSON_CreateObject();
        cJSON_AddNumberToObject(message, "id", ++b->next_id);
        cJSON_AddStringToObject(message, "method", "Browser.close");
        send_message(b, message);
        cJSON_Delete(message);
        long deadline = rl_test_now_ms() + 5000;
        int status;
        while (waitpid(b->pid, &status, WNOHANG) == 0 && rl_test_now_ms() < deadline) rl_test_sleep_ms(50);
        kill(-b->pid, SIGKILL); /* whatever is left of it, its helpers included */
        kill(b->pid, SIGKILL);
        waitpid(b->pid, &status, 0);
        b->pid = 0;
    }
    if (b->to_browser >= 0) close(b->to_browser);
    if (b->from_browser >= 0) close(b->from_browser);
    b->to_browser = b->from_browser = -1;
    free(b->pending);
    b->pending = NULL;
    b->pending_len = b->pending_cap = 0;
}
