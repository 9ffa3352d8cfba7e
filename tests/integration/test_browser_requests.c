/* test_browser_requests.c — what a web page in the operator's browser can no
 * longer make the daemon do (server/request_guard.h), against the real
 * daemon, with requests written byte for byte as a browser would send them:
 *   - a text/plain POST from another site (no CORS preflight needed) is
 *     refused with 403, and nothing is reserved;
 *   - a DNS-rebound name in Host is refused on a loopback listener, for
 *     reserves and admin PUTs alike;
 *   - two Host lines (even with the loopback last) or two Origins: 400;
 *   - an origin listed in server.allowed_origins gets its preflight and its
 *     CORS headers;
 *   - clients that are not browsers (no Origin) work as before;
 *   - on every interface without tokens files, a warning that there is no authentication;
 *   - no h2c: an Upgrade to it is ignored, so HTTP/2's body limit cannot
 *     answer differently from HTTP/1.1's 413;
 *   - the errors libh2o writes itself before any handler (docs/operations.md: plain
 *     text) are pinned, so that a change in them is seen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/daemon.h"
#include "support/ulid_gen.h"

#define ALLOWED "https://console.example.com"

static rl_test_daemon daemon_;
static char answer[1 << 16];

/* Sends one request on a new connection (Connection: close) and keeps the
 * whole answer in `answer`. headers: extra header lines, each ending in \r\n. */
static void send_raw(rl_test_daemon *d, const char *method, const char *path, const char *host,
                     const char *headers, const char *body) {
    static char request[1 << 16];
    size_t body_len = body != NULL ? strlen(body) : 0;
    int n = snprintf(request, sizeof request, "%s %s HTTP/1.1\r\n%s%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     method, path, host != NULL ? "Host: " : "", host != NULL ? host : "", host != NULL ? "\r\n" : "",
                     headers != NULL ? headers : "", body_len, body != NULL ? body : "");
    assert_true(n > 0 && (size_t)n < sizeof request);
    if (rl_test_raw_exchange(d->port, request, (size_t)n, 5000, answer, sizeof answer) <= 0)
        fail_msg("%s %s: no answer", method, path);
}

static bool starts_with(const char *text, const char *prefix) { return strncmp(text, prefix, strlen(prefix)) == 0; }

static void expect_status(const char *status_line) {
    if (!starts_with(answer, status_line)) fail_msg("wanted \"%s\", got:\n%.600s", status_line, answer);
}

static void expect_in_answer(const char *part) {
    if (strstr(answer, part) == NULL) fail_msg("\"%s\" not in:\n%.600s", part, answer);
}

static void expect_not_in_answer(const char *part) {
    if (strstr(answer, part) != NULL) fail_msg("\"%s\" in:\n%.600s", part, answer);
}

static const char *local_host(void) {
    static char host[32];
    snprintf(host, sizeof host, "127.0.0.1:%u", (unsigned)daemon_.port);
    return host;
}

static const char *reserve_body(const char *key, uint64_t amount) {
    static char body[512];
    char lease[27];
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}",
             rl_test_ulid_new(lease), key, (unsigned long long)amount);
    return body;
}

/* The limit's used amount, asked as curl would (no Origin). */
static long used_of(const char *key) {
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    send_raw(&daemon_, "GET", path, local_host(), NULL, NULL);
    expect_status("HTTP/1.1 200 ");
    const char *at = strstr(answer, "\"used\":");
    assert_non_null(at);
    return strtol(at + 7, NULL, 10);
}

static int setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_, "[{\"key\":\"g:rpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}]\n");
    rl_test_daemon_write_config(&daemon_, "server:\n  allowed_origins: [\"" ALLOWED "\", \"http://localhost:3000\"]\n");
    const char *args[] = {"-c", daemon_.config_path, "--listen", "127.0.0.1:0", NULL};
    return rl_test_daemon_start(&daemon_, args) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    rl_test_daemon_cleanup(&daemon_);
    return 0;
}

/* The attack of the issue: a page on another site POSTs text/plain. */
static void test_a_foreign_page_cannot_reserve(void **state) {
    (void)state;
    long before = used_of("g:rpm");
    send_raw(&daemon_, "POST", "/v1/reserve", local_host(), "Origin: http://evil.example\r\nContent-Type: text/plain\r\n",
             reserve_body("g:rpm", 5));
    expect_status("HTTP/1.1 403 ");
    expect_in_answer("content-type: application/json");
    expect_in_answer("{\"error\":\"invalid_request\",\"detail\":\"Origin \\\"http://evil.example\\\" is not in "
                     "server.allowed_origins");
    expect_not_in_answer("Access-Control-Allow-Origin");
    assert_int_equal(used_of("g:rpm"), before);
    /* Nor can it define limits, nor read them; a preflight gets nothing. */
    send_raw(&daemon_, "PUT", "/v1/admin/limits", local_host(), "Origin: http://evil.example\r\n",
             "{\"key\":\"evil\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}");
    expect_status("HTTP/1.1 403 ");
    send_raw(&daemon_, "GET", "/v1/admin/limits/evil", local_host(), NULL, NULL);
    expect_status("HTTP/1.1 404 ");
    send_raw(&daemon_, "GET", "/v1/admin/limits", local_host(), "Origin: http://evil.example\r\n", NULL);
    expect_status("HTTP/1.1 403 ");
    send_raw(&daemon_, "OPTIONS", "/v1/reserve", local_host(),
             "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n", NULL);
    expect_status("HTTP/1.1 403 ");
    /* A sandboxed page or a file:// one sends "null"; case and port count. */
    const char *others[] = {"null", "https://console.example.com:8443", "http://console.example.com",
                            "https://console.example.com.evil.example"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char header[128];
        snprintf(header, sizeof header, "Origin: %s\r\n", others[i]);
        send_raw(&daemon_, "POST", "/v1/reserve", local_host(), header, reserve_body("g:rpm", 1));
        expect_status("HTTP/1.1 403 ");
    }
    assert_int_equal(used_of("g:rpm"), before);
}

/* DNS rebinding: evil.example resolves to 127.0.0.1; the browser sends no
 * Origin on a simple same-"origin" request, but Host names evil.example. */
static void test_a_rebound_name_is_refused_on_loopback(void **state) {
    (void)state;
    long before = used_of("g:rpm");
    char host[64];
    snprintf(host, sizeof host, "evil.example:%u", (unsigned)daemon_.port);
    send_raw(&daemon_, "POST", "/v1/reserve", host, "Content-Type: text/plain\r\n", reserve_body("g:rpm", 5));
    expect_status("HTTP/1.1 403 ");
    expect_in_answer("{\"error\":\"invalid_request\",\"detail\":\"Host \\\"evil.example:");
    send_raw(&daemon_, "PUT", "/v1/admin/limits", host, NULL,
             "{\"key\":\"rebound\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}");
    expect_status("HTTP/1.1 403 ");
    send_raw(&daemon_, "GET", "/v1/admin/limits/rebound", local_host(), NULL, NULL);
    expect_status("HTTP/1.1 404 ");
    const char *refused[] = {"evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1",
                             "[::2]", "localhost:80:80"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        send_raw(&daemon_, "GET", "/healthz", refused[i], NULL, NULL);
        expect_status("HTTP/1.1 403 ");
    }
    assert_int_equal(used_of("g:rpm"), before);
    /* The loopback's own names pass, as does a request with no Host at all. */
    char ok[4][64];
    snprintf(ok[0], sizeof ok[0], "localhost:%u", (unsigned)daemon_.port);
    snprintf(ok[1], sizeof ok[1], "127.0.0.1:%u", (unsigned)daemon_.port);
    snprintf(ok[2], sizeof ok[2], "[::1]:%u", (unsigned)daemon_.port);
    snprintf(ok[3], sizeof ok[3], "api.localhost");
    for (int i = 0; i < 4; i++) {
        send_raw(&daemon_, "POST", "/v1/reserve", ok[i], NULL, reserve_body("g:rpm", 1));
        expect_status("HTTP/1.1 200 ");
        expect_in_answer("\"allowed\":true");
    }
    const char http10[] = "GET /healthz HTTP/1.0\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, http10, sizeof http10 - 1, 5000, answer, sizeof answer) > 0);
    expect_status("HTTP/1.1 200 ");
    assert_int_equal(used_of("g:rpm"), before + 4);
}

/* Two Host lines are malformed (RFC 9112: 400), whichever comes last: a
 * rebinding page's request with the loopback last is refused like any
 * other. So are two Origin headers, even both allowed. Nothing reserved. */
static void test_a_repeated_host_or_origin_is_malformed(void **state) {
    (void)state;
    long before = used_of("g:rpm");
    char second_host[96];
    snprintf(second_host, sizeof second_host, "Host: %s\r\nContent-Type: text/plain\r\n", local_host());
    send_raw(&daemon_, "POST", "/v1/reserve", "evil.example", second_host, reserve_body("g:rpm", 5));
    expect_status("HTTP/1.1 400 ");
    expect_in_answer("{\"error\":\"invalid_request\",\"detail\":\"the request has 2 Host headers and may have one");
    send_raw(&daemon_, "POST", "/v1/reserve", local_host(), second_host, reserve_body("g:rpm", 5));
    expect_status("HTTP/1.1 400 ");
    send_raw(&daemon_, "POST", "/v1/reserve", local_host(),
             "Origin: http://localhost:3000\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\n",
             reserve_body("g:rpm", 5));
    expect_status("HTTP/1.1 400 ");
    expect_in_answer("\"detail\":\"the request has 2 Origin headers and may have one");
    expect_not_in_answer("Access-Control-Allow-Origin");
    send_raw(&daemon_, "OPTIONS", "/v1/reserve", local_host(),
             "Origin: " ALLOWED "\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n", NULL);
    expect_status("HTTP/1.1 400 ");
    assert_int_equal(used_of("g:rpm"), before);
}

static void test_an_allowed_origin_gets_cors(void **state) {
    (void)state;
    send_raw(&daemon_, "OPTIONS", "/v1/reserve", local_host(),
             "Origin: " ALLOWED "\r\nAccess-Control-Request-Method: POST\r\n"
             "Access-Control-Request-Headers: content-type\r\n",
             NULL);
    expect_status("HTTP/1.1 204 ");
    expect_in_answer("access-control-allow-origin: " ALLOWED "\r\n");
    expect_in_answer("access-control-allow-methods: GET, POST, PUT, DELETE\r\n");
    expect_in_answer("access-control-allow-headers: content-type, authorization\r\n");
    expect_in_answer("vary: Origin\r\n");
    long before = used_of("g:rpm");
    send_raw(&daemon_, "POST", "/v1/reserve", local_host(),
             "Origin: HTTPS://Console.Example.com\r\nContent-Type: application/json\r\n", reserve_body("g:rpm", 2));
    expect_status("HTTP/1.1 200 ");
    expect_in_answer("access-control-allow-origin: HTTPS://Console.Example.com\r\n");
    expect_in_answer("\"allowed\":true");
    assert_int_equal(used_of("g:rpm"), before + 2);
    /* its errors carry the headers too, so that the page can read them */
    send_raw(&daemon_, "GET", "/v1/admin/limits/nope", local_host(), "Origin: http://localhost:3000\r\n", NULL);
    expect_status("HTTP/1.1 404 ");
    expect_in_answer("access-control-allow-origin: http://localhost:3000\r\n");
}

/* curl, the client library and rlctl send no Origin: nothing changes. */
static void test_clients_without_origin_work(void **state) {
    (void)state;
    rl_test_response r;
    rl_test_daemon_http(&daemon_, "POST", "/v1/reserve", reserve_body("g:rpm", 1), &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"allowed\":true"));
    rl_test_response_free(&r);
}

/* h2c is off: an Upgrade to it is ignored (before: 101 Switching
 * Protocols, and then a 2 MB body got RST_STREAM instead of 413). */
static void test_no_h2c(void **state) {
    (void)state;
    send_raw(&daemon_, "GET", "/healthz", local_host(),
             "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
             NULL);
    expect_status("HTTP/1.1 200 ");
    expect_in_answer("{\"ok\":true");
    /* the HTTP/2 preface gets libh2o's plain 400 (docs/operations.md: Errors) */
    const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, preface, sizeof preface - 1, 5000, answer, sizeof answer) > 0);
    expect_status("HTTP/1.1 400 Bad Request\r\n");
    /* and a body above max_body_bytes asking for h2c is a 413 with JSON */
    size_t big = 2 * 1024 * 1024;
    char *request = malloc(big + 512);
    assert_non_null(request);
    int n = snprintf(request, 512,
                     "POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                     "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Length: %zu\r\n\r\n",
                     big);
    memset(request + n, ' ', big);
    assert_true(rl_test_raw_exchange(daemon_.port, request, (size_t)n + big, 5000, answer, sizeof answer) > 0);
    free(request);
    expect_status("HTTP/1.1 413 ");
    expect_in_answer("{\"error\":\"invalid_request\"");
}

/* What libh2o answers by itself, before any handler can (docs/operations.md: these
 * stay plain text): a request line or header that does not parse, more
 * than 100 headers, a request head over 417,792 bytes. */
static void test_libh2o_plain_text_errors_are_as_documented(void **state) {
    (void)state;
    const char *plain = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                        "Content-Length: 11\r\n\r\nBad Request";
    const char bad_line[] = "GET /healthz HTTP/1.1 extra\r\nHost: localhost\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, bad_line, sizeof bad_line - 1, 5000, answer, sizeof answer) > 0);
    if (strcmp(answer, plain) != 0) fail_msg("%s", answer);
    static char many[8192];
    int at = sprintf(many, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n");
    for (int i = 0; i < 101; i++) at += sprintf(many + at, "X-H%d: v\r\n", i);
    strcpy(many + at, "\r\n");
    assert_true(rl_test_raw_exchange(daemon_.port, many, strlen(many), 5000, answer, sizeof answer) > 0);
    if (strcmp(answer, plain) != 0) fail_msg("%s", answer);
}

/* Listening on every interface: the warning, no Host check (the names are
 * the operator's), the Origin check still. */
static void test_every_interface_warns(void **state) {
    (void)state;
    rl_test_daemon wide;
    rl_test_daemon_init(&wide);
    rl_test_daemon_write_registry(&wide, "[]\n");
    const char *args[] = {"--listen", "0.0.0.0:0", NULL};
    if (!rl_test_daemon_start(&wide, args)) fail_msg("the daemon did not start on 0.0.0.0");
    char text[8192];
    rl_test_daemon_read_stderr(&wide, text, sizeof text);
    if (strstr(text, "ratelimiterd listening on 0.0.0.0:") == NULL ||
        strstr(text, "ratelimiterd: warning: 0.0.0.0:") == NULL || strstr(text, "no authentication") == NULL)
        fail_msg("%s", text);
    send_raw(&wide, "GET", "/healthz", "ratelimiter.internal:8080", NULL, NULL);
    expect_status("HTTP/1.1 200 ");
    send_raw(&wide, "GET", "/healthz", "ratelimiter.internal:8080", "Origin: http://evil.example\r\n", NULL);
    expect_status("HTTP/1.1 403 ");
    assert_int_equal(rl_test_daemon_stop(&wide), 0);
    rl_test_daemon_cleanup(&wide);
    /* and on loopback, none */
    rl_test_daemon_read_stderr(&daemon_, text, sizeof text);
    if (strstr(text, "warning") != NULL) fail_msg("%s", text);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_foreign_page_cannot_reserve),
        cmocka_unit_test(test_a_rebound_name_is_refused_on_loopback),
        cmocka_unit_test(test_a_repeated_host_or_origin_is_malformed),
        cmocka_unit_test(test_an_allowed_origin_gets_cors),
        cmocka_unit_test(test_clients_without_origin_work),
        cmocka_unit_test(test_no_h2c),
        cmocka_unit_test(test_libh2o_plain_text_errors_are_as_documented),
        cmocka_unit_test(test_every_interface_warns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
