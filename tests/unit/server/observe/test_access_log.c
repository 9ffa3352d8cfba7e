/* test_access_log.c — the access log's sink: every loop's lines reach the
 * file whole; a sink that takes nothing (a FIFO nobody reads) makes lines
 * drop and be counted while the loop goes on, and every line is either
 * written or counted; close does not hang on such a sink; reopen moves to a
 * new file at the path (logrotate); a path that cannot be opened is named. */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/observe/access_log.h"

static char dir[64];

static int make_dir(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rl_test_access_log.XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int remove_dir(void **state) {
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    return system(command) == 0 ? 0 : -1;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A single reserve allowed, its job id "<loop>-<n>". */
static void answer(rl_access_log *log, uint32_t loop, unsigned n) {
    char job_id[32];
    snprintf(job_id, sizeof job_id, "%u-%u", loop, n);
    rl_api_outcome o;
    memset(&o, 0, sizeof o);
    o.endpoint = RL_API_RESERVE;
    o.http_status = 200;
    o.items = 1;
    o.results[RL_API_RESULT_ALLOWED] = 1;
    o.first_result = RL_API_RESULT_ALLOWED;
    o.lease_id = "01JH0000000000000000000001";
    o.job_id = job_id;
    rl_access_log_answered(log, loop, &o, n);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    *len = fread(text, 1, (size_t)size, f);
    text[*len] = '\0';
    fclose(f);
    return text;
}

static size_t count_lines(const char *text, size_t len) {
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    return lines;
}

/* ---- every loop's lines, whole -------------------------------------------------- */

#define LOOPS 4u
#define LINES_PER_LOOP 3000u

typedef struct loop_arg {
    rl_access_log *log;
    uint32_t loop;
} loop_arg;

/* A loop at a pace its buffer holds many times over (2,000 lines a second). */
static void *paced_loop(void *arg) {
    loop_arg *a = arg;
    for (unsigned n = 0; n < LINES_PER_LOOP; n++) {
        answer(a->log, a->loop, n);
        if (n % 20u == 19u) sleep_ms(10);
    }
    return NULL;
}

static void test_every_loop_lines_whole(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/access.log", dir);
    rl_access_log_options options = {RL_ACCESS_LOG_JSON, path, LOOPS};
    rl_access_log *log = NULL;
    char err[256];
    if (!rl_access_log_open(&options, &log, err, sizeof err)) fail_msg("%s", err);
    pthread_t threads[LOOPS];
    loop_arg args[LOOPS];
    for (uint32_t i = 0; i < LOOPS; i++) {
        args[i] = (loop_arg){log, i};
        assert_int_equal(pthread_create(&threads[i], NULL, paced_loop, &args[i]), 0);
    }
    for (uint32_t i = 0; i < LOOPS; i++) pthread_join(threads[i], NULL);
    assert_int_equal(rl_access_log_dropped_lines(log), 0);
    rl_access_log_close(log);

    size_t len;
    char *text = read_file(path, &len);
    assert_non_null(text);
    assert_int_equal(count_lines(text, len), LOOPS * LINES_PER_LOOP);
    /* Each line one JSON object; each loop's lines in its order. */
    unsigned next[LOOPS] = {0};
    for (char *line = text, *end; *line != '\0'; line = end + 1) {
        end = strchr(line, '\n');
        *end = '\0';
        cJSON *json = cJSON_Parse(line);
        if (json == NULL) fail_msg("not JSON: %s", line);
        unsigned loop, n;
        assert_int_equal(sscanf(cJSON_GetObjectItemCaseSensitive(json, "job_id")->valuestring, "%u-%u", &loop, &n), 2);
        assert_true(loop < LOOPS);
        assert_int_equal(n, next[loop]);
        next[loop]++;
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(json, "decision")->valuestring, "allowed");
        cJSON_Delete(json);
    }
    free(text);
}

/* ---- a sink that takes nothing ---------------------------------------------------- */

#define FLOOD_LINES 50000u

typedef struct drain {
    int fd;
    size_t lines;
} drain;

/* Reads the FIFO until every writer has closed it. */
static void *drain_fifo(void *arg) {
    drain *d = arg;
    char buf[65536];
    for (;;) {
        struct pollfd p = {d->fd, POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0) break;
        ssize_t n = read(d->fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        d->lines += count_lines(buf, (size_t)n);
    }
    return NULL;
}

/* A FIFO with a reader that does not read: the writer's write blocks once
 * the pipe is full, as on a disk that stopped answering. */
static rl_access_log *open_on_stalled_fifo(char *path, size_t path_size, int *reader) {
    snprintf(path, path_size, "%s/stalled.fifo", dir);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    *reader = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(*reader >= 0);
    rl_access_log_options options = {RL_ACCESS_LOG_TEXT, path, 1};
    rl_access_log *log = NULL;
    char err[256];
    if (!rl_access_log_open(&options, &log, err, sizeof err)) fail_msg("%s", err);
    /* The loop answers on: what does not fit is dropped, not waited for
     * (a loop that waited would hang this test). */
    for (unsigned n = 0; n < FLOOD_LINES; n++) answer(log, 0, n);
    uint64_t dropped = rl_access_log_dropped_lines(log);
    /* the pipe and the two buffers hold some 15,000 lines at most */
    if (dropped < FLOOD_LINES / 2) fail_msg("only %llu of %u lines dropped", (unsigned long long)dropped, FLOOD_LINES);
    return log;
}

static void test_stalled_sink_drops_and_counts(void **state) {
    (void)state;
    char path[128];
    int reader;
    rl_access_log *log = open_on_stalled_fifo(path, sizeof path, &reader);
    /* The sink comes back: the writer goes on, and new lines get through. */
    drain d = {reader, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, drain_fifo, &d), 0);
    uint64_t dropped_in_flood = rl_access_log_dropped_lines(log);
    for (unsigned n = 0; n < 100; n++) {
        answer(log, 0, FLOOD_LINES + n);
        sleep_ms(1);
    }
    /* the last lines written, then the FIFO closed: the reader sees its end */
    rl_access_log_totals totals = rl_access_log_close(log);
    pthread_join(thread, NULL);
    close(reader);
    /* Every line is written or counted, none lost silently, and what was
     * written is what the reader got. */
    assert_int_equal(totals.written_lines + totals.dropped_lines, FLOOD_LINES + 100);
    assert_int_equal(d.lines, totals.written_lines);
    assert_true(totals.written_lines >= 100);
    (void)dropped_in_flood;
    assert_true(totals.dropped_lines >= dropped_in_flood);
}

/* Nobody ever reads: close gives the writer RL_ACCESS_LOG_CLOSE_WAIT_MS,
 * then counts what it could not write as dropped and returns. */
static void test_close_does_not_hang_on_a_stalled_sink(void **state) {
    (void)state;
    char path[128];
    int reader;
    rl_access_log *log = open_on_stalled_fifo(path, sizeof path, &reader);
    rl_access_log_totals totals = rl_access_log_close(log);
    assert_int_equal(totals.written_lines + totals.dropped_lines, FLOOD_LINES);
    /* the reader holds exactly what was counted written: the pipe's
     * capacity, and what the writer took before it stalled */
    drain d = {reader, 0};
    drain_fifo(&d);
    close(reader);
    assert_int_equal(d.lines, totals.written_lines);
    assert_true(totals.dropped_lines >= FLOOD_LINES / 2);
}

/* logrotate: the file renamed, then reopen: the next lines go to a new file
 * at the path. */
static void test_reopen(void **state) {
    (void)state;
    char path[128], rotated[140];
    snprintf(path, sizeof path, "%s/rotate.log", dir);
    snprintf(rotated, sizeof rotated, "%s.1", path);
    rl_access_log_options options = {RL_ACCESS_LOG_TEXT, path, 2};
    rl_access_log *log = NULL;
    char err[256];
    if (!rl_access_log_open(&options, &log, err, sizeof err)) fail_msg("%s", err);
    answer(log, 0, 1);
    answer(log, 1, 2);
    for (int i = 0; i < 500 && rl_access_log_written_lines(log) < 2; i++) sleep_ms(10);
    assert_int_equal(rl_access_log_written_lines(log), 2);
    assert_int_equal(rename(path, rotated), 0);
    rl_access_log_reopen(log);
    /* the writer makes the new file before it writes another line */
    for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) sleep_ms(10);
    assert_int_equal(access(path, F_OK), 0);
    answer(log, 1, 3);
    rl_access_log_reopen(NULL); /* no access log: nothing */
    rl_access_log_totals totals = rl_access_log_close(log);
    assert_int_equal(totals.written_lines, 3);
    assert_int_equal(totals.dropped_lines, 0);
    size_t len;
    char *old = read_file(rotated, &len);
    assert_int_equal(count_lines(old, len), 2);
    assert_non_null(strstr(old, "job_id=0-1 "));
    assert_non_null(strstr(old, "job_id=1-2 "));
    free(old);
    char *now = read_file(path, &len);
    assert_int_equal(count_lines(now, len), 1);
    assert_non_null(strstr(now, " reserve 200 lease_id=01JH0000000000000000000001 job_id=1-3 decision=allowed "));
    free(now);
}

/* A path that cannot be opened stops start-up, named. */
static void test_open_errors(void **state) {
    (void)state;
    char path[128], err[256];
    rl_access_log *log = (rl_access_log *)&log;
    snprintf(path, sizeof path, "%s/no/such/dir/access.log", dir);
    rl_access_log_options options = {RL_ACCESS_LOG_JSON, path, 1};
    assert_false(rl_access_log_open(&options, &log, err, sizeof err));
    assert_null(log);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "No such file or directory"));
    /* a FIFO nobody reads would stop the daemon at start: refused */
    snprintf(path, sizeof path, "%s/unread.fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_false(rl_access_log_open(&options, &log, err, sizeof err));
    assert_non_null(strstr(err, "a FIFO with no reader"));
    assert_int_equal(rl_access_log_close(NULL).written_lines, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_loop_lines_whole),
        cmocka_unit_test(test_stalled_sink_drops_and_counts),
        cmocka_unit_test(test_close_does_not_hang_on_a_stalled_sink),
        cmocka_unit_test(test_reopen),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
