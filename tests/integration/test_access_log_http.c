/* test_access_log_http.c — the daemon's access log over real HTTP: one JSON line
 * per answered request with what it was (a job_id with quotes, backslashes
 * and non-ASCII read back exactly), text lines, SIGHUP reopening the file
 * after logrotate renamed it (and stopping nothing), a file that cannot be
 * opened stopping start-up, and a sink nobody reads (a FIFO) making lines
 * drop and be counted while every request is still answered, the operator
 * told on stderr while it lasts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/daemon.h"
#include "support/ulid_gen.h"

static const char *const registry =
    "[{\"key\":\"tenant:acme:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60,\"unit\":\"requests\"}]";

/* Each test's daemon: made before it, and killed and removed after it even
 * when it fails. */
static rl_test_daemon daemon_;

static int make_daemon(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    return 0;
}

static int remove_daemon(void **state) {
    (void)state;
    rl_test_daemon_cleanup(&daemon_);
    return 0;
}

static long call(const char *method, const char *path, const char *body) {
    rl_test_response r;
    long status = rl_test_daemon_http(&daemon_, method, path, body, &r);
    if (status == 0) fail_msg("%s %s failed: %s", method, path, r.error);
    rl_test_response_free(&r);
    return status;
}

static void start_with_config(const char *format, const char *path, const char *threads) {
    char yaml[512];
    snprintf(yaml, sizeof yaml, "log:\n  access: %s\n  access_path: \"%s\"\n", format, path);
    rl_test_daemon_write_config(&daemon_, yaml);
    rl_test_daemon_write_registry(&daemon_, registry);
    const char *args[] = {"-c", daemon_.config_path, "--threads", threads, NULL};
    assert_true(rl_test_daemon_start(&daemon_, args));
}

static size_t count_lines(const char *text) {
    size_t lines = 0;
    for (; *text != '\0'; text++) lines += *text == '\n';
    return lines;
}

/* The file's text once it holds at least `lines` lines (the writer takes
 * them every few milliseconds), malloc'd; fails after a deadline. */
static char *wait_for_lines(const char *path, size_t lines) {
    long deadline = rl_test_now_ms() + 10000;
    for (;;) {
        FILE *f = fopen(path, "rb");
        char *text = calloc(1, 1 << 20);
        assert_non_null(text);
        if (f != NULL) {
            size_t n = fread(text, 1, (1 << 20) - 1, f);
            text[n] = '\0';
            fclose(f);
        }
        if (count_lines(text) >= lines) return text;
        free(text);
        if (rl_test_now_ms() > deadline) fail_msg("%s did not get %zu lines in time", path, lines);
        rl_test_sleep_ms(10);
    }
}

/* Waits until the daemon's stderr holds text; fails after timeout_ms. */
static void wait_for_stderr(const char *text, long timeout_ms) {
    static char err[16384];
    long deadline = rl_test_now_ms() + timeout_ms;
    for (;;) {
        rl_test_daemon_read_stderr(&daemon_, err, sizeof err);
        if (strstr(err, text) != NULL) return;
        if (rl_test_now_ms() > deadline) fail_msg("\"%s\" not on stderr in time: %s", text, err);
        rl_test_sleep_ms(20);
    }
}

/* The JSON line whose `field` is `value`; fails if none or two. */
static cJSON *line_with(cJSON *const *lines, size_t count, const char *field, const char *value) {
    cJSON *found = NULL;
    for (size_t i = 0; i < count; i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(lines[i], field);
        if (!cJSON_IsString(item) || strcmp(item->valuestring, value) != 0) continue;
        if (found != NULL) fail_msg("two lines with %s %s", field, value);
        found = lines[i];
    }
    if (found == NULL) fail_msg("no line with %s %s", field, value);
    return found;
}

static void expect_fields(const cJSON *line, const char *endpoint, int status, const char *decision,
                          const char *denied_by, int items, int denied) {
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(line, "endpoint")->valuestring, endpoint);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(line, "status")->valuedouble, status);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(line, "decision");
    if (decision == NULL) assert_true(cJSON_IsNull(d));
    else assert_string_equal(d->valuestring, decision);
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(line, "denied_by");
    if (denied_by == NULL) assert_true(cJSON_IsNull(by));
    else assert_string_equal(by->valuestring, denied_by);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(line, "items")->valuedouble, items);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(line, "denied")->valuedouble, denied);
    const cJSON *latency = cJSON_GetObjectItemCaseSensitive(line, "latency_us");
    assert_true(cJSON_IsNumber(latency) && latency->valuedouble >= 0);
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(line, "time");
    assert_true(cJSON_IsString(time) && strlen(time->valuestring) == 24 && time->valuestring[23] == 'Z');
}

static void test_json_lines(void **state) {
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/access.log", daemon_.dir);
    start_with_config("json", path, "2");

    char a[27], b[27], c[27], e[27], body[1024];
    rl_test_ulid_new(a);
    rl_test_ulid_new(b);
    rl_test_ulid_new(c);
    rl_test_ulid_new(e);
    /* job_id is free text: quotes, a backslash, a slash, non-ASCII */
    const char *job_wire = "say \\\"hi\\\" \\\\ to caf\\u00e9 / \xe6\x97\xa5";
    const char *job_read = "say \"hi\" \\ to caf\xc3\xa9 / \xe6\x97\xa5";
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]}", a,
             job_wire);
    assert_int_equal(call("POST", "/v1/reserve", body), 200);
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"denied\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":2}]}",
             b);
    assert_int_equal(call("POST", "/v1/reserve", body), 200); /* 1 + 2 > 2: denied */
    snprintf(body, sizeof body,
             "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"x\",\"requirements\":[]}]}",
             c, e);
    assert_int_equal(call("POST", "/v1/reserve/batch", body), 200);
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"job_id\":\"done\",\"actuals\":[]}", a);
    assert_int_equal(call("POST", "/v1/complete", body), 200);
    assert_int_equal(call("POST", "/v1/reserve", "{\"lease_id\":"), 400);
    assert_int_equal(call("POST", "/v1/reserve",
                          "{\"lease_id\":\"01JH0000000000000000000009\",\"requirements\":[{\"key\":\"no:such\",\"amount\":1}]}"),
                     404);
    assert_int_equal(call("GET", "/healthz", NULL), 200);
    assert_int_equal(call("GET", "/no/such/path", NULL), 404);
    assert_int_equal(call("GET", "/v1/admin/limits", NULL), 200);

    char *text = wait_for_lines(path, 9);
    cJSON *lines[16];
    size_t count = 0;
    for (char *line = text, *end; *line != '\0'; line = end + 1) {
        end = strchr(line, '\n');
        *end = '\0';
        assert_true(count < 16);
        lines[count] = cJSON_Parse(line);
        if (lines[count] == NULL) fail_msg("not JSON: %s", line);
        count++;
    }
    assert_int_equal(count, 9);

    cJSON *line = line_with(lines, count, "job_id", job_read);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(line, "lease_id")->valuestring, a);
    expect_fields(line, "reserve", 200, "allowed", NULL, 1, 0);
    line = line_with(lines, count, "job_id", "denied");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(line, "lease_id")->valuestring, b);
    expect_fields(line, "reserve", 200, "denied_capacity", "tenant:acme:rpm", 1, 1);
    line = line_with(lines, count, "endpoint", "reserve_batch");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(line, "lease_id")->valuestring, c);
    expect_fields(line, "reserve_batch", 200, "allowed", "tenant:acme:rpm", 3, 1); /* c fits, e does not, x invalid */
    line = line_with(lines, count, "endpoint", "complete");
    expect_fields(line, "complete", 200, "completed", NULL, 1, 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(line, "job_id")->valuestring, "done");
    line = line_with(lines, count, "lease_id", "01JH0000000000000000000009");
    expect_fields(line, "reserve", 404, "unknown_key", NULL, 1, 0);
    line = line_with(lines, count, "endpoint", "healthz");
    expect_fields(line, "healthz", 200, NULL, NULL, 0, 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(line, "lease_id")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(line, "job_id")));
    expect_fields(line_with(lines, count, "endpoint", "unrouted"), "unrouted", 404, NULL, NULL, 0, 0);
    expect_fields(line_with(lines, count, "endpoint", "admin_limits"), "admin_limits", 200, NULL, NULL, 0, 0);
    /* the body that did not decode: one invalid item, no ids */
    size_t invalid = 0;
    for (size_t i = 0; i < count; i++) {
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(lines[i], "status");
        if (status->valuedouble != 400) continue;
        expect_fields(lines[i], "reserve", 400, "invalid", NULL, 1, 0);
        invalid++;
    }
    assert_int_equal(invalid, 1);
    for (size_t i = 0; i < count; i++) cJSON_Delete(lines[i]);
    free(text);

    assert_int_equal(rl_test_daemon_stop(&daemon_), 0);
    char err[8192];
    rl_test_daemon_read_stderr(&daemon_, err, sizeof err);
    if (strstr(err, "access log: 9 lines written to ") == NULL || strstr(err, ", 0 dropped") == NULL)
        fail_msg("stderr: %s", err);
}

/* Text lines; logrotate renames the file and sends SIGHUP: the lines after
 * go to a new file at the path. */
static void test_text_lines_and_reopen_on_sighup(void **state) {
    (void)state;
    char path[400], rotated[420];
    snprintf(path, sizeof path, "%s/access.log", daemon_.dir);
    snprintf(rotated, sizeof rotated, "%s.1", path);
    start_with_config("text", path, "2");
    char id[27], body[512];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"two words\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(id));
    assert_int_equal(call("POST", "/v1/reserve", body), 200);
    char *text = wait_for_lines(path, 1);
    char wanted[256];
    snprintf(wanted, sizeof wanted,
             " reserve 200 lease_id=%s job_id=\"two words\" decision=allowed denied_by=- items=1 denied=0 latency_us=", id);
    if (strstr(text, wanted) == NULL) fail_msg("%s not in %s", wanted, text);
    free(text);
    /* A job_id the API takes may hold NEL and the line and paragraph
     * separators, which end a line for some readers: written escaped. */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"a\\u0085b\\u2028c\\u2029d\","
             "\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(id));
    assert_int_equal(call("POST", "/v1/reserve", body), 200);
    text = wait_for_lines(path, 2);
    snprintf(wanted, sizeof wanted, " lease_id=%s job_id=\"a\\xc2\\x85b\\xe2\\x80\\xa8c\\xe2\\x80\\xa9d\" ", id);
    if (strstr(text, wanted) == NULL || strstr(text, "\xc2\x85") != NULL || strstr(text, "\xe2\x80\xa8") != NULL)
        fail_msg("%s not in %s", wanted, text);
    free(text);

    assert_int_equal(rename(path, rotated), 0);
    assert_int_equal(kill(daemon_.pid, SIGHUP), 0);
    wait_for_stderr("access log: reopened ", 10000);
    assert_int_equal(call("GET", "/healthz", NULL), 200);
    text = wait_for_lines(path, 1);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, " healthz 200 lease_id=- job_id=- decision=- denied_by=- items=0 denied=0 latency_us="));
    free(text);
    text = wait_for_lines(rotated, 2);
    assert_int_equal(count_lines(text), 2);
    free(text);
    assert_int_equal(rl_test_daemon_stop(&daemon_), 0);
}

/* Off (the default), nothing is written and SIGHUP stops nothing; a file
 * that cannot be opened stops start-up, named. */
static void test_off_and_bad_path(void **state) {
    (void)state;
    rl_test_daemon_write_registry(&daemon_, registry);
    assert_true(rl_test_daemon_start(&daemon_, NULL));
    assert_int_equal(kill(daemon_.pid, SIGHUP), 0);
    rl_test_sleep_ms(100);
    assert_int_equal(call("GET", "/healthz", NULL), 200);
    assert_int_equal(rl_test_daemon_stop(&daemon_), 0);
    char err[8192];
    rl_test_daemon_read_stderr(&daemon_, err, sizeof err);
    assert_null(strstr(err, "access log"));

    char path[400];
    snprintf(path, sizeof path, "%s/no/such/dir/access.log", daemon_.dir);
    char yaml[600];
    snprintf(yaml, sizeof yaml, "log:\n  access: json\n  access_path: \"%s\"\n", path);
    rl_test_daemon_write_config(&daemon_, yaml);
    const char *args[] = {"-c", daemon_.config_path, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&daemon_, args, 20000, err, sizeof err), 1);
    assert_non_null(strstr(err, "cannot start: access log \""));
    assert_non_null(strstr(err, path));
}

/* ---- a sink nobody reads ---------------------------------------------------------- */

#define FLOOD_REQUESTS 40000

typedef struct drain {
    int fd;
    size_t lines;
    atomic_bool saw_marker;
    char tail[64]; /* the last bytes read, to find the marker across reads */
} drain;

static void *drain_fifo(void *arg) {
    drain *dr = arg;
    static char buf[65536 + 64];
    for (;;) {
        struct pollfd p = {dr->fd, POLLIN, 0};
        if (poll(&p, 1, 30000) <= 0) break;
        size_t kept = strlen(dr->tail);
        memcpy(buf, dr->tail, kept);
        ssize_t n = read(dr->fd, buf + kept, 65536);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        for (ssize_t i = 0; i < n; i++) dr->lines += buf[kept + (size_t)i] == '\n';
        buf[kept + (size_t)n] = '\0';
        if (memmem(buf, kept + (size_t)n, "job_id=marker", 13) != NULL) atomic_store(&dr->saw_marker, true);
        size_t total = kept + (size_t)n, keep = total < 32 ? total : 32;
        memcpy(dr->tail, buf + total - keep, keep);
        dr->tail[keep] = '\0';
    }
    return NULL;
}

static void test_stalled_sink_drops_and_counts(void **state) {
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/access.fifo", daemon_.dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* a reader that reads nothing (yet): the pipe fills and the daemon's
     * writer stays in its write, as on a disk that stopped answering */
    int reader = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(reader >= 0);
    start_with_config("text", path, "1");

    /* Every request is answered while the sink takes nothing: a loop that
     * waited for it would leave curl to time out here. */
    for (int i = 0; i < FLOOD_REQUESTS; i++) assert_int_equal(call("GET", "/healthz", NULL), 200);

    /* The operator is told, within RL_ACCESS_LOG_REPORT_MS (10 s), while the
     * sink still takes nothing. */
    wait_for_stderr(" lines dropped in the last 10 s, ", 30000);
    char err[16384];
    rl_test_daemon_read_stderr(&daemon_, err, sizeof err);
    if (strstr(err, "was too slow)") == NULL) fail_msg("the report does not say why: %s", err);

    /* The sink comes back: the lines after it get through. */
    drain dr = {.fd = reader};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, drain_fifo, &dr), 0);
    char id[27], body[512];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"marker\",\"requirements\":[{\"key\":\"tenant:acme:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(id));
    long deadline = rl_test_now_ms() + 20000;
    unsigned long long markers = 0;
    while (!atomic_load(&dr.saw_marker) && rl_test_now_ms() < deadline) {
        assert_int_equal(call("POST", "/v1/reserve", body), 200); /* the same lease id: answered again */
        markers++;
        rl_test_sleep_ms(50);
    }
    assert_true(atomic_load(&dr.saw_marker));
    assert_int_equal(rl_test_daemon_stop(&daemon_), 0);
    pthread_join(thread, NULL);
    close(reader);

    /* Every answered request was written or counted as dropped. */
    rl_test_daemon_read_stderr(&daemon_, err, sizeof err);
    const char *totals = strstr(err, "access log: ");
    while (totals != NULL && strstr(totals + 1, "access log: ") != NULL) totals = strstr(totals + 1, "access log: ");
    unsigned long long written = 0, dropped = 0;
    char sink[400];
    if (totals == NULL || sscanf(totals, "access log: %llu lines written to %399s %llu dropped", &written, sink, &dropped) != 3)
        fail_msg("no totals in: %s", err);
    fprintf(stderr, "%llu lines written, %llu dropped, %zu read from the FIFO\n", written, dropped, dr.lines);
    assert_true(dropped > 0);
    assert_int_equal(written, dr.lines);
    assert_int_equal(written + dropped, FLOOD_REQUESTS + markers);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_lines, make_daemon, remove_daemon),
        cmocka_unit_test_setup_teardown(test_text_lines_and_reopen_on_sighup, make_daemon, remove_daemon),
        cmocka_unit_test_setup_teardown(test_off_and_bad_path, make_daemon, remove_daemon),
        cmocka_unit_test_setup_teardown(test_stalled_sink_drops_and_counts, make_daemon, remove_daemon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
