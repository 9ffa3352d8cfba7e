/* test_tokens.c — bearer tokens on the built daemon over real HTTP: which
 * path needs which token (401 without one, 403 with one it does not take,
 * the limit left as it was), /healthz and preflights open, the files read
 * again on SIGHUP (a bad one keeping the old tokens, a FIFO refused at
 * once), a bad file stopping start-up (a FIFO too, at once), and the
 * clients: rlctl's --token, --token-file and RLCTL_TOKEN, the library's
 * bearer_token.
 *
 * One daemon serves the group (admin and data tokens, metrics.require_token).
 */
#include <ctype.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "support/daemon.h"
#include "support/rlctl_run.h"
#include "support/ulid_gen.h"

#define ADMIN_TOKEN "admin-5d41402abc4b2a76b9719d911017c592"
#define OTHER_ADMIN_TOKEN "admin-7d793037a0760186574b0282f2f435e7"
#define DATA_TOKEN "data-9e107d9d372bb6826bd81d3542a419d6"
#define LIMIT_PUT "{\"key\":\"auth:rpm\",\"kind\":\"rolling\",\"capacity\":%d,\"window_seconds\":60}"

static rl_test_daemon daemon_;
static char admin_path[320], data_path[320], url[64];
static rl_test_rlctl_output ran;

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void write_config(rl_test_daemon *daemon, const char *admin, const char *data) {
    char yaml[1200];
    snprintf(yaml, sizeof yaml,
             "server:\n  allowed_origins: [\"https://console.example.com\"]\n"
             "admin:\n  tokens_file: %s\ndata:\n  tokens_file: %s\nmetrics:\n  require_token: true\n",
             admin, data);
    rl_test_daemon_write_config(daemon, yaml);
}

static int setup(void **state) {
    (void)state;
    rl_test_http_global_init();
    rl_test_daemon_init(&daemon_);
    snprintf(admin_path, sizeof admin_path, "%s/admin.tokens", daemon_.dir);
    snprintf(data_path, sizeof data_path, "%s/data.tokens", daemon_.dir);
    write_text(admin_path, "# operators\n" ADMIN_TOKEN "\n");
    write_text(data_path, DATA_TOKEN "\n");
    write_config(&daemon_, admin_path, data_path);
    rl_test_daemon_write_registry(&daemon_, "[{\"key\":\"auth:rpm\",\"kind\":\"rolling\",\"capacity\":100,"
                                            "\"window_seconds\":60}]");
    const char *args[] = {"-c", daemon_.config_path, NULL};
    if (!rl_test_daemon_start(&daemon_, args)) return -1;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)daemon_.port);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int code = rl_test_daemon_stop(&daemon_);
    rl_test_daemon_cleanup(&daemon_);
    return code == 0 ? 0 : -1;
}

/* One request to daemon with this token (NULL: none); the status, the body
 * in *body when body is not NULL (free it). */
static long call_on(rl_test_daemon *daemon, const char *token, const char *method, const char *path,
                    const char *json, char **body) {
    daemon->client.bearer_token = token;
    rl_test_response r;
    long status = rl_test_daemon_http(daemon, method, path, json, &r);
    daemon->client.bearer_token = NULL;
    if (body != NULL) *body = r.body;
    else rl_test_response_free(&r);
    return status;
}

static long call(const char *token, const char *method, const char *path, const char *json, char **body) {
    return call_on(&daemon_, token, method, path, json, body);
}

static void expect_refused(const char *token, const char *method, const char *path, const char *json,
                           long status, const char *error, const char *detail) {
    char *body = NULL;
    assert_int_equal(call(token, method, path, json, &body), status);
    char expected[64];
    snprintf(expected, sizeof expected, "{\"error\":\"%s\",\"detail\":\"", error);
    if (strncmp(body, expected, strlen(expected)) != 0 || strstr(body, detail) == NULL)
        fail_msg("%s %s: %s", method, path, body);
    assert_null(strstr(body, ADMIN_TOKEN)); /* never quoted back */
    free(body);
}

static long capacity_now(void) {
    char *body = NULL;
    assert_int_equal(call(ADMIN_TOKEN, "GET", "/v1/admin/limits/auth:rpm", NULL, &body), 200);
    const char *at = strstr(body, "\"capacity\":");
    assert_non_null(at);
    long capacity = strtol(at + 11, NULL, 10);
    free(body);
    return capacity;
}

static void test_admin_api(void **state) {
    (void)state;
    expect_refused(NULL, "GET", "/v1/admin/limits", NULL, 401, "unauthorized", "admin.tokens_file");
    expect_refused("Bearer", "GET", "/v1/admin/limits", NULL, 403, "forbidden", "not one of admin.tokens_file's");
    expect_refused(DATA_TOKEN, "GET", "/v1/admin/limits", NULL, 403, "forbidden", "admin.tokens_file");
    expect_refused(ADMIN_TOKEN "x", "GET", "/v1/admin/audit?key=auth:rpm", NULL, 403, "forbidden", "admin");
    /* A path no route takes, or a method a route does not, is no way round. */
    expect_refused(NULL, "GET", "/v1/admin/nothing-here", NULL, 401, "unauthorized", "admin");
    expect_refused(NULL, "POST", "/v1/admin/limits", "{}", 401, "unauthorized", "admin");
    assert_int_equal(call(ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    assert_int_equal(call(ADMIN_TOKEN, "GET", "/v1/admin/templates", NULL, NULL), 200);

    /* Nobody without the admin token changes a limit. */
    char put[200];
    snprintf(put, sizeof put, LIMIT_PUT, 5);
    expect_refused(NULL, "PUT", "/v1/admin/limits", put, 401, "unauthorized", "admin");
    expect_refused(DATA_TOKEN, "PUT", "/v1/admin/limits", put, 403, "forbidden", "admin");
    expect_refused(DATA_TOKEN, "DELETE", "/v1/admin/limits/auth:rpm", NULL, 403, "forbidden", "admin");
    assert_int_equal(capacity_now(), 100);
    snprintf(put, sizeof put, LIMIT_PUT, 200);
    assert_int_equal(call(ADMIN_TOKEN, "PUT", "/v1/admin/limits", put, NULL), 200);
    assert_int_equal(capacity_now(), 200);
}

static void test_data_api(void **state) {
    (void)state;
    char lease[27], body[300];
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"auth:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(lease));
    expect_refused(NULL, "POST", "/v1/reserve", body, 401, "unauthorized", "data.tokens_file");
    expect_refused("wrong-token-0000000000", "POST", "/v1/reserve", body, 403, "forbidden", "data.tokens_file");
    expect_refused(NULL, "POST", "/v1/reserve/batch", "{\"requests\":[]}", 401, "unauthorized", "data");
    assert_int_equal(call(DATA_TOKEN, "POST", "/v1/reserve", body, NULL), 200);
    char complete[200];
    snprintf(complete, sizeof complete, "{\"lease_id\":\"%s\",\"actuals\":[]}", lease);
    expect_refused(NULL, "POST", "/v1/complete", complete, 401, "unauthorized", "data");
    assert_int_equal(call(DATA_TOKEN, "POST", "/v1/complete", complete, NULL), 200);
    /* An admin token does what a data token does. */
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"auth:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(lease));
    assert_int_equal(call(ADMIN_TOKEN, "POST", "/v1/reserve", body, NULL), 200);
}

static void test_open_paths(void **state) {
    (void)state;
    assert_int_equal(call(NULL, "GET", "/healthz", NULL, NULL), 200);
    assert_int_equal(call("not-a-token-at-all-000", "GET", "/healthz", NULL, NULL), 200);
    /* /metrics needs a token of either file (metrics.require_token). */
    expect_refused(NULL, "GET", "/metrics", NULL, 401, "unauthorized", "metrics.require_token");
    expect_refused("wrong-token-0000000000", "GET", "/metrics", NULL, 403, "forbidden", "data.tokens_file");
    long status = call(DATA_TOKEN, "GET", "/metrics", NULL, NULL);
    assert_true(status != 401 && status != 403);

    /* The 401 says how to authenticate; a browser's preflight needs no
     * token and is told that Authorization may be sent. */
    char answer[4096];
    const char get[] = "GET /v1/admin/limits HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, get, sizeof get - 1, 5000, answer, sizeof answer) > 0);
    for (char *c = answer; *c != '\0'; c++) *c = (char)tolower((unsigned char)*c);
    assert_non_null(strstr(answer, "http/1.1 401 unauthorized\r\n"));
    assert_non_null(strstr(answer, "\r\nwww-authenticate: bearer realm=\"ratelimiterd\"\r\n"));
    const char preflight[] = "OPTIONS /v1/admin/limits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Origin: https://console.example.com\r\nAccess-Control-Request-Method: PUT\r\n"
                             "Access-Control-Request-Headers: authorization, content-type\r\n"
                             "Connection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, preflight, sizeof preflight - 1, 5000, answer, sizeof answer) > 0);
    for (char *c = answer; *c != '\0'; c++) *c = (char)tolower((unsigned char)*c);
    assert_non_null(strstr(answer, "http/1.1 204"));
    assert_non_null(strstr(answer, "access-control-allow-headers: content-type, authorization"));
}

/* Waits until daemon's stderr holds text (count times, at least). */
static void wait_for_stderr_of(const rl_test_daemon *daemon, const char *text, int count) {
    char err[16384];
    long until = rl_test_now_ms() + 10000;
    for (;;) {
        rl_test_daemon_read_stderr(daemon, err, sizeof err);
        int seen = 0;
        for (const char *at = strstr(err, text); at != NULL; at = strstr(at + 1, text)) seen++;
        if (seen >= count) return;
        if (rl_test_now_ms() > until) fail_msg("\"%s\" not said %d times: %s", text, count, err);
        rl_test_sleep_ms(10);
    }
}

static void wait_for_stderr(const char *text, int count) { wait_for_stderr_of(&daemon_, text, count); }

static void test_sighup_reload(void **state) {
    (void)state;
    /* Rotated: the new token works, the old one no longer does. */
    write_text(admin_path, OTHER_ADMIN_TOKEN "\n");
    kill(daemon_.pid, SIGHUP);
    wait_for_stderr("admin.tokens_file reloaded: 1 tokens", 1);
    assert_int_equal(call(OTHER_ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    expect_refused(ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, 403, "forbidden", "admin");
    /* A file gone bad keeps the tokens it had, and says why. */
    write_text(admin_path, OTHER_ADMIN_TOKEN "\nthis line is not a token\n");
    kill(daemon_.pid, SIGHUP);
    wait_for_stderr("admin.tokens_file not reloaded, its previous tokens stay: ", 1);
    wait_for_stderr("admin.tokens:2: a token holds only", 1);
    assert_int_equal(call(OTHER_ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    /* Both back, and the daemon still serves (SIGHUP did not stop it). */
    write_text(admin_path, ADMIN_TOKEN "\n" OTHER_ADMIN_TOKEN "\n");
    kill(daemon_.pid, SIGHUP);
    wait_for_stderr("admin.tokens_file reloaded: 2 tokens", 1);
    assert_int_equal(call(ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    assert_int_equal(call(OTHER_ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
}

static int rlctl(const char *const *env, const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = "--url";
    argv[n++] = url;
    for (int i = 0; args[i] != NULL && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return rl_test_rlctl_run(daemon_.dir, argv, env, &ran);
}
#define RLCTL(...) rlctl(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RLCTL_ENV(env, ...) rlctl(env, (const char *const[]){__VA_ARGS__, NULL})

static void test_rlctl(void **state) {
    (void)state;
    assert_int_equal(RLCTL("list"), 3);
    assert_non_null(strstr(ran.err, "HTTP 401 unauthorized: the admin API needs an admin token"));
    assert_int_equal(RLCTL("--token", DATA_TOKEN, "list"), 3);
    assert_non_null(strstr(ran.err, "HTTP 403 forbidden"));
    assert_int_equal(RLCTL("--token", ADMIN_TOKEN, "list"), 0);
    assert_non_null(strstr(ran.out, "auth:rpm"));
    assert_int_equal(RLCTL("--token-file", admin_path, "get", "auth:rpm"), 0);
    const char *env_token[] = {"RLCTL_TOKEN=" ADMIN_TOKEN, NULL};
    assert_int_equal(RLCTL_ENV(env_token, "list"), 0);
    char env_file[400];
    snprintf(env_file, sizeof env_file, "RLCTL_TOKEN_FILE=%s", admin_path);
    const char *env_token_file[] = {env_file, NULL};
    assert_int_equal(RLCTL_ENV(env_token_file, "list"), 0);
    /* A flag wins over the environment. */
    assert_int_equal(RLCTL_ENV(env_token, "--token", DATA_TOKEN, "list"), 3);

    /* reserve and complete go through the library with the data token. */
    assert_int_equal(RLCTL("reserve", "auth:rpm=1"), 3);
    assert_non_null(strstr(ran.err, "HTTP 401 unauthorized"));
    assert_int_equal(RLCTL("--token-file", data_path, "reserve", "auth:rpm=1"), 0);
    assert_int_equal(RLCTL("--token", "wrong-token-0000000000", "reserve", "auth:rpm=1"), 3);
    assert_non_null(strstr(ran.err, "HTTP 403 forbidden"));

    /* Usage errors: both forms, a file without a token, a token with a space. */
    assert_int_equal(RLCTL("--token", ADMIN_TOKEN, "--token-file", admin_path, "list"), 2);
    char empty[320];
    snprintf(empty, sizeof empty, "%s/empty.tokens", daemon_.dir);
    write_text(empty, "# none yet\n");
    assert_int_equal(RLCTL("--token-file", empty, "list"), 2);
    assert_non_null(strstr(ran.err, "holds no token"));
    assert_int_equal(RLCTL("--token", "two words", "list"), 2);
}

static void test_http_limiter(void **state) {
    (void)state;
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    assert_null(options.bearer_token);
    assert_null(options.ca_file);
    options.base_url = url;
    options.deadline_ms = 3000;
    rl_limiter *limiter = NULL;
    char err[RL_LIMITER_ERR_SIZE];
    rl_requirement requirement = {"auth:rpm", 1, false};
    char lease[27];
    rl_reserve_request request = {.lease_id = rl_test_ulid_new(lease), .requirements = &requirement,
                                  .requirement_count = 1};
    rl_reserve_result result;
    /* Without a token: refused at once, not retried until the deadline. */
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_OK);
    long started = rl_test_now_ms();
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_INVALID_REQUEST);
    assert_true(rl_test_now_ms() - started < 2000);
    assert_non_null(strstr(rl_limiter_last_error(), "HTTP 401 unauthorized"));
    rl_limiter_destroy(limiter);

    options.bearer_token = DATA_TOKEN;
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_OK);
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_true(result.allowed);
    /* The audit is the admin API's: the data token is not enough. */
    rl_audit_entry entries[4];
    rl_audit_query query = {.key = "auth:rpm", .limit = 4};
    rl_audit_page page = {.entries = entries};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "HTTP 403 forbidden"));
    rl_limiter_destroy(limiter);

    /* A token that would break the header is refused at open. */
    options.bearer_token = "abc\r\nX-Injected: 1";
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "bearer_token"));
}

/* A bad tokens file stops start-up with its name and line. One that is a
 * FIFO (or a directory) stops it at once with a sentence that says so:
 * opening a FIFO would wait for a writer, with the stop signals blocked. */
static void test_bad_file_at_start(void **state) {
    (void)state;
    rl_test_daemon other;
    rl_test_daemon_init(&other);
    char good[320], bad[320], fifo[320];
    snprintf(good, sizeof good, "%s/good.tokens", other.dir);
    snprintf(bad, sizeof bad, "%s/bad.tokens", other.dir);
    snprintf(fifo, sizeof fifo, "%s/admin.fifo", other.dir);
    write_text(good, ADMIN_TOKEN "\n");
    write_text(bad, DATA_TOKEN "\n\n" DATA_TOKEN "\n");
    write_config(&other, good, bad);
    const char *args[] = {"-c", other.config_path, NULL};
    char err[4096];
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "bad.tokens:3: the same token as line 1") == NULL) fail_msg("%s", err);
    write_config(&other, "/nonexistent/admin.tokens", good);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "/nonexistent/admin.tokens: cannot open") == NULL) fail_msg("%s", err);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    write_config(&other, fifo, good);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "admin.fifo: is a FIFO, not a regular file") == NULL) fail_msg("%s", err);
    write_config(&other, good, other.dir);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, ": is a directory, not a regular file") == NULL) fail_msg("%s", err);
    rl_test_daemon_cleanup(&other);
}

/* SIGHUP with a tokens file replaced by a FIFO: the reload says why the old
 * tokens stay, at once; the same SIGHUP still reopens the access log, and a
 * later one with a regular file again reloads it. */
static void test_sighup_with_a_fifo(void **state) {
    (void)state;
    rl_test_daemon other;
    rl_test_daemon_init(&other);
    char admin[320], access_log[320], rotated[330], yaml[1400], text[8192];
    snprintf(admin, sizeof admin, "%s/admin.tokens", other.dir);
    snprintf(access_log, sizeof access_log, "%s/access.log", other.dir);
    snprintf(rotated, sizeof rotated, "%s.1", access_log);
    write_text(admin, ADMIN_TOKEN "\n");
    snprintf(yaml, sizeof yaml, "admin:\n  tokens_file: %s\nlog:\n  access: text\n  access_path: \"%s\"\n", admin,
             access_log);
    rl_test_daemon_write_config(&other, yaml);
    const char *args[] = {"-c", other.config_path, NULL};
    assert_true(rl_test_daemon_start(&other, args));
    assert_int_equal(call_on(&other, ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);

    assert_int_equal(rename(access_log, rotated), 0); /* logrotate, then SIGHUP */
    assert_int_equal(unlink(admin), 0);
    assert_int_equal(mkfifo(admin, 0600), 0);
    assert_int_equal(kill(other.pid, SIGHUP), 0);
    wait_for_stderr_of(&other, "admin.tokens_file not reloaded, its previous tokens stay: ", 1);
    wait_for_stderr_of(&other, "admin.tokens: is a FIFO, not a regular file", 1);
    wait_for_stderr_of(&other, "access log: reopened ", 1);
    assert_int_equal(call_on(&other, ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    long until = rl_test_now_ms() + 10000; /* the writer takes lines every few ms */
    for (text[0] = '\0'; strstr(text, " admin_limits 200 ") == NULL; rl_test_sleep_ms(10)) {
        FILE *f = fopen(access_log, "r");
        size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
        text[n] = '\0';
        if (f != NULL) fclose(f);
        if (rl_test_now_ms() > until) fail_msg("no line in the reopened %s: \"%s\"", access_log, text);
    }

    assert_int_equal(unlink(admin), 0);
    write_text(admin, OTHER_ADMIN_TOKEN "\n");
    assert_int_equal(kill(other.pid, SIGHUP), 0);
    wait_for_stderr_of(&other, "admin.tokens_file reloaded: 1 tokens", 1);
    assert_int_equal(call_on(&other, OTHER_ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 200);
    assert_int_equal(call_on(&other, ADMIN_TOKEN, "GET", "/v1/admin/limits", NULL, NULL), 403);
    assert_int_equal(rl_test_daemon_stop(&other), 0);
    rl_test_daemon_cleanup(&other);
}

/* On every interface: with both files set there is nothing to warn about;
 * with the admin file alone, the warning names the data file. */
static void test_every_interface(void **state) {
    (void)state;
    rl_test_daemon wide;
    rl_test_daemon_init(&wide);
    char admin[320], data[320], text[8192];
    snprintf(admin, sizeof admin, "%s/admin.tokens", wide.dir);
    snprintf(data, sizeof data, "%s/data.tokens", wide.dir);
    write_text(admin, ADMIN_TOKEN "\n");
    write_text(data, DATA_TOKEN "\n");
    write_config(&wide, admin, data);
    const char *args[] = {"-c", wide.config_path, "--listen", "0.0.0.0:0", NULL};
    assert_true(rl_test_daemon_start(&wide, args));
    rl_test_daemon_read_stderr(&wide, text, sizeof text);
    if (strstr(text, "warning") != NULL) fail_msg("%s", text);
    assert_int_equal(rl_test_daemon_stop(&wide), 0);
    rl_test_daemon_write_config(&wide, "admin:\n  tokens_file: ");
    FILE *f = fopen(wide.config_path, "a");
    assert_non_null(f);
    fprintf(f, "%s\n", admin);
    fclose(f);
    assert_true(rl_test_daemon_start(&wide, args));
    rl_test_daemon_read_stderr(&wide, text, sizeof text);
    if (strstr(text, "no authentication (data.tokens_file is not set): anyone who reaches it can reserve") == NULL)
        fail_msg("%s", text);
    assert_int_equal(rl_test_daemon_stop(&wide), 0);
    rl_test_daemon_cleanup(&wide);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_api),     cmocka_unit_test(test_data_api),
        cmocka_unit_test(test_open_paths),    cmocka_unit_test(test_rlctl),
        cmocka_unit_test(test_http_limiter),  cmocka_unit_test(test_sighup_reload),
        cmocka_unit_test(test_bad_file_at_start), cmocka_unit_test(test_every_interface),
        cmocka_unit_test(test_sighup_with_a_fifo),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
