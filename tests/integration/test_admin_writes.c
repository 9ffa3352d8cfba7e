/* test_admin_writes.c — admin puts are written off the event loops, many in
 * one file write, answered once durable, and drained on shutdown
 * (server/admin_writer.h), against the real daemon and the real file system.
 *
 * The writer is held inside its file write by a FIFO standing where the
 * registry writes the temporary file of its log (limits.json.log.tmp) when
 * its first change makes the log (each test starts a daemon on a
 * limits.json without one): open() for writing waits for a reader, so the
 * write goes on only when the test opens the FIFO and reads it. (A FIFO
 * cannot be fsynced: that write then fails, its put is answered 500
 * backend_error, the FIFO is removed, and the next write is an ordinary
 * one.) Nothing here waits on time to decide: a loop blocked by a put would
 * leave the reserve unanswered for as long as the FIFO is closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cmocka.h>

#include "support/daemon.h"
#include "support/registry_text.h"
#include "support/ulid_gen.h"

static rl_test_daemon daemon_;
static char tmp_path[320];

static int setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_, "[{\"key\":\"g:rpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":60}]\n");
    snprintf(tmp_path, sizeof tmp_path, "%s.log.tmp", daemon_.registry_path);
    /* One event loop: a put done on it would hold up every other request. */
    const char *args[] = {"--threads", "1", NULL};
    return rl_test_daemon_start(&daemon_, args) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    unlink(tmp_path);
    rl_test_daemon_cleanup(&daemon_);
    return 0;
}

/* A connection with a request sent and its answer not read yet. */
static int send_only(const char *request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(daemon_.port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    size_t len = strlen(request);
    assert_int_equal(write(fd, request, len), (ssize_t)len);
    return fd;
}

/* Reads the whole answer (the request said Connection: close). */
static void read_answer(int fd, char *out, size_t size) {
    size_t at = 0;
    ssize_t n;
    while (at + 1 < size && (n = read(fd, out + at, size - 1 - at)) > 0) at += (size_t)n;
    out[at] = '\0';
    close(fd);
}

static int send_put(const char *key, uint64_t capacity) {
    char body[256], request[512];
    int len = snprintf(body, sizeof body, "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%llu,\"window_seconds\":60}",
                       key, (unsigned long long)capacity);
    snprintf(request, sizeof request,
             "PUT /v1/admin/limits HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
             len, body);
    return send_only(request);
}

/* Holds the writer: a FIFO where the registry writes its temporary file. */
static void hold_writes(void) {
    unlink(tmp_path);
    assert_int_equal(mkfifo(tmp_path, 0644), 0);
}

/* Returns once a thread of the daemon waits in open() for a reader of the
 * FIFO (its wchan, as the kernel names the wait), i.e. the writer is held
 * inside the write of the put sent before. */
static void wait_until_held(void) {
    long deadline = rl_test_now_ms() + 10000;
    while (rl_test_now_ms() < deadline) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)daemon_.pid);
        DIR *tasks = opendir(path);
        assert_non_null(tasks);
        struct dirent *task;
        bool held = false;
        while (!held && (task = readdir(tasks)) != NULL) {
            char wchan_path[512], wchan[64] = "";
            snprintf(wchan_path, sizeof wchan_path, "%s/%s/wchan", path, task->d_name);
            FILE *f = fopen(wchan_path, "r");
            if (f == NULL) continue;
            size_t n = fread(wchan, 1, sizeof wchan - 1, f);
            wchan[n] = '\0';
            fclose(f);
            held = strstr(wchan, "wait_for_partner") != NULL || strstr(wchan, "fifo_open") != NULL;
        }
        closedir(tasks);
        if (held) return;
        rl_test_sleep_ms(5);
    }
    fail_msg("no thread of the daemon came to wait on the FIFO");
}

/* Lets the held write go on: reads what it wrote until it closes. */
static void release_writes(void) {
    int fd = open(tmp_path, O_RDONLY); /* waits for the writer to be there */
    assert_true(fd >= 0);
    char sink[65536];
    while (read(fd, sink, sizeof sink) > 0) {
    }
    close(fd);
}

static void expect_answer(int fd, const char *status_line, const char *fragment) {
    char answer[4096];
    read_answer(fd, answer, sizeof answer);
    if (strncmp(answer, status_line, strlen(status_line)) != 0 || strstr(answer, fragment) == NULL)
        fail_msg("wanted %s ... %s, got:\n%s", status_line, fragment, answer);
}

/* What the registry holds (limits.json and its log). */
static char *registry_text(void) {
    static char text[1 << 16];
    char err[512] = "";
    char *now = rl_test_registry_text(daemon_.registry_path, err, sizeof err);
    if (now == NULL) fail_msg("the registry: %s", err);
    snprintf(text, sizeof text, "%s", now);
    free(now);
    return text;
}

static void reserve_is_answered(void) {
    char body[256], request[512], answer[4096], lease[27];
    int len = snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"g:rpm\",\"amount\":1}]}",
                       rl_test_ulid_new(lease));
    int n = snprintf(request, sizeof request,
                     "POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     len, body);
    /* The writer stays held until release_writes: 5 s is only how long a
     * broken daemon is waited for before the test says so. */
    rl_test_raw_exchange(daemon_.port, request, (size_t)n, 5000, answer, sizeof answer);
    if (strncmp(answer, "HTTP/1.1 200", 12) != 0 || strstr(answer, "\"allowed\":true") == NULL)
        fail_msg("a reserve while a put is being written: \"%s\"", answer);
}

/* While a put is inside its file write, the (only) loop serves reserves. */
static void test_a_put_being_written_does_not_hold_the_loop(void **state) {
    (void)state;
    hold_writes();
    int put = send_put("w:held", 10);
    wait_until_held();
    for (int i = 0; i < 3; i++) reserve_is_answered();
    release_writes();
    expect_answer(put, "HTTP/1.1 500 ", "\"error\":\"backend_error\""); /* the FIFO could not be fsynced */
    /* nothing of it stayed: not in the file, not defined */
    if (strstr(registry_text(), "w:held") != NULL) fail_msg("%s", registry_text());
    rl_test_response r;
    rl_test_daemon_http(&daemon_, "GET", "/v1/admin/limits/w:held", NULL, &r);
    assert_int_equal(r.status, 404);
    rl_test_response_free(&r);
    /* and the next put is an ordinary one */
    expect_answer(send_put("w:after", 10), "HTTP/1.1 200 ", "{\"ok\":true,\"status\":\"active\"}");
    assert_non_null(strstr(registry_text(), "\"key\":\"w:after\""));
}

/* Puts that wait while one is written go out in one file write: counted as
 * writes to limits.json.log (appends), seen by inotify. */
static void test_waiting_puts_share_one_write(void **state) {
    (void)state;
    enum { PUTS = 20 };
    int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(watch >= 0);
    char dir[300];
    snprintf(dir, sizeof dir, "%s", daemon_.registry_path);
    *strrchr(dir, '/') = '\0';
    assert_true(inotify_add_watch(watch, dir, IN_MODIFY) >= 0);
    hold_writes();
    int first = send_put("w:first", 5);
    wait_until_held();
    int fds[PUTS];
    char keys[PUTS][32];
    for (int i = 0; i < PUTS; i++) {
        snprintf(keys[i], sizeof keys[i], "w:group:%02d", i);
        fds[i] = send_put(keys[i], 100 + (uint64_t)i);
    }
    reserve_is_answered(); /* the loop has read every put by now: one loop, in order */
    release_writes();
    expect_answer(first, "HTTP/1.1 500 ", "backend_error");
    for (int i = 0; i < PUTS; i++) expect_answer(fds[i], "HTTP/1.1 200 ", "{\"ok\":true,\"status\":\"active\"}");
    int writes = 0;
    char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(watch, events, sizeof events)) > 0) {
        for (char *at = events; at < events + n;) {
            const struct inotify_event *event = (const struct inotify_event *)at;
            if (event->len > 0 && strcmp(event->name, "limits.json.log") == 0) writes++;
            at += sizeof *event + event->len;
        }
    }
    close(watch);
    if (writes < 1 || writes >= PUTS) fail_msg("%d puts took %d file writes", PUTS, writes);
    print_message("%d puts waiting behind a write: %d file write(s)\n", PUTS, writes);
    const char *text = registry_text();
    for (int i = 0; i < PUTS; i++) {
        char entry[96];
        snprintf(entry, sizeof entry, "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%d,", keys[i], 100 + i);
        if (strstr(text, entry) == NULL) fail_msg("%s not in %s", entry, text);
    }
}

/* A stop while puts wait: each is written and answered before the exit,
 * and every one answered 200 is there after a restart. */
static void test_stop_drains_waiting_puts(void **state) {
    (void)state;
    enum { PUTS = 5 };
    hold_writes();
    int first = send_put("w:stop:first", 5);
    wait_until_held();
    int fds[PUTS];
    char keys[PUTS][32];
    for (int i = 0; i < PUTS; i++) {
        snprintf(keys[i], sizeof keys[i], "w:stop:%d", i);
        fds[i] = send_put(keys[i], 7);
    }
    reserve_is_answered();
    assert_int_equal(kill(daemon_.pid, SIGTERM), 0);
    release_writes();
    expect_answer(first, "HTTP/1.1 500 ", "backend_error");
    for (int i = 0; i < PUTS; i++) expect_answer(fds[i], "HTTP/1.1 200 ", "\"ok\":true");
    assert_int_equal(rl_test_daemon_stop(&daemon_), 0);
    const char *args[] = {"--threads", "1", NULL};
    assert_true(rl_test_daemon_start(&daemon_, args));
    for (int i = 0; i < PUTS; i++) {
        char path[256];
        snprintf(path, sizeof path, "/v1/admin/limits/%s", keys[i]);
        rl_test_response r;
        rl_test_daemon_http(&daemon_, "GET", path, NULL, &r);
        if (r.status != 200) fail_msg("%s after the restart: %ld", keys[i], r.status);
        rl_test_response_free(&r);
    }
}

int main(void) {
    rl_test_http_global_init();
    signal(SIGPIPE, SIG_IGN);
    /* A daemon each: the FIFO holds the write that makes the log. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_put_being_written_does_not_hold_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_puts_share_one_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_drains_waiting_puts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
