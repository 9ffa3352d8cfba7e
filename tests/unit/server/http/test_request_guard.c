/* test_request_guard.c — the Host and Origin rules, case by case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/http/request_guard.h"

static const char *const origins[] = {"https://console.example.com", "http://localhost:3000"};
static const rl_request_guard loopback = {true, origins, 2};
static const rl_request_guard wide = {false, origins, 2};
static const rl_request_guard closed = {true, NULL, 0}; /* the default: no origin allowed */

/* A request with host_count Host lines (the last one host) and
 * origin_count Origin headers (the first one origin). */
static rl_guard_decision check_counted(const rl_request_guard *guard, const char *method, const char *host,
                                       size_t host_count, const char *origin, size_t origin_count) {
    rl_guard_decision d;
    memset(&d, 0xab, sizeof d);
    rl_guard_request request = {
        .method = method,
        .method_len = strlen(method),
        .host = host,
        .host_len = host != NULL ? strlen(host) : 0,
        .host_count = host_count,
        .origin = origin,
        .origin_len = origin != NULL ? strlen(origin) : 0,
        .origin_count = origin_count,
    };
    rl_request_guard_check(guard, &request, &d);
    return d;
}

static rl_guard_decision check(const rl_request_guard *guard, const char *method, const char *host,
                               const char *origin) {
    return check_counted(guard, method, host, host != NULL, origin, origin != NULL);
}

static bool loopback_host(const char *host) { return rl_request_guard_host_is_loopback(host, strlen(host)); }

static void test_loopback_hosts(void **state) {
    (void)state;
    const char *yes[] = {"localhost", "LOCALHOST:8080", "localhost.", "api.localhost", "a.b-c.localhost:1",
                         "127.0.0.1", "127.0.0.1:8080", "127.255.0.9:1", "[::1]", "[::1]:8080",
                         "[0:0:0:0:0:0:0:1]:80"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!loopback_host(yes[i])) fail_msg("%s refused", yes[i]);
    const char *no[] = {"", "evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.evil.example",
                        "evillocalhost", ".localhost", "a..localhost", "10.0.0.1", "128.0.0.1", "0.0.0.0",
                        "127.1", "[::2]", "::1", "[::1", "[::1]x", "localhost:", "localhost:123456",
                        "localhost:80:80", "localhost:8o", "[::ffff:127.0.0.1]", "localhost\r"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (loopback_host(no[i])) fail_msg("\"%s\" taken for loopback", no[i]);
}

static void test_host_rule_only_on_loopback(void **state) {
    (void)state;
    rl_guard_decision d = check(&loopback, "POST", "evil.example:8080", NULL);
    assert_int_equal(d.verdict, RL_GUARD_REFUSE);
    assert_non_null(strstr(d.detail, "Host \"evil.example:8080\" is not a loopback name or address"));
    assert_int_equal(check(&loopback, "POST", "localhost:8080", NULL).verdict, RL_GUARD_PASS);
    assert_int_equal(check(&loopback, "POST", NULL, NULL).verdict, RL_GUARD_PASS); /* HTTP/1.0: no Host */
    assert_int_equal(check(&wide, "POST", "ratelimiter.internal:8080", NULL).verdict, RL_GUARD_PASS);
    /* the Host rule first: a rebound name with an allowed origin is still refused */
    assert_int_equal(check(&loopback, "POST", "evil.example", "https://console.example.com").verdict, RL_GUARD_REFUSE);
}

static void test_origins(void **state) {
    (void)state;
    rl_guard_decision d = check(&loopback, "POST", "localhost", "http://evil.example");
    assert_int_equal(d.verdict, RL_GUARD_REFUSE);
    assert_false(d.cors);
    assert_string_equal(d.detail, "Origin \"http://evil.example\" is not in server.allowed_origins: a request "
                                  "from a web page is refused unless the page's origin is listed there");
    const char *refused[] = {"null", "", "https://console.example.com/", "https://console.example.com:443",
                             "http://console.example.com", "https://console.example.co",
                             "https://console.example.com.evil.example", "http://localhost:30000"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (check(&wide, "GET", "x", refused[i]).verdict != RL_GUARD_REFUSE) fail_msg("%s passed", refused[i]);
    /* scheme and host are case-insensitive */
    d = check(&wide, "POST", "x", "HTTPS://Console.Example.COM");
    assert_int_equal(d.verdict, RL_GUARD_PASS);
    assert_true(d.cors);
    d = check(&loopback, "OPTIONS", "localhost", "http://localhost:3000");
    assert_int_equal(d.verdict, RL_GUARD_PREFLIGHT);
    assert_true(d.cors);
    /* nothing is allowed by default; no Origin is not a browser */
    assert_int_equal(check(&closed, "POST", "localhost", "http://localhost:3000").verdict, RL_GUARD_REFUSE);
    d = check(&closed, "OPTIONS", "localhost", NULL);
    assert_int_equal(d.verdict, RL_GUARD_PASS);
    assert_false(d.cors);
}

/* The console's PUT: its Origin is the Host it was loaded from. Passed on a
 * loopback Host (no rebound name can be one), without CORS; on another Host
 * it must be listed like any origin. */
static void test_own_origin_on_loopback(void **state) {
    (void)state;
    const char *own[][2] = {{"127.0.0.1:8080", "http://127.0.0.1:8080"}, {"localhost:9", "HTTPS://LocalHost:9"},
                            {"[::1]:8080", "http://[::1]:8080"}, {"localhost", "http://localhost"}};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        rl_guard_decision d = check(&closed, "PUT", own[i][0], own[i][1]);
        if (d.verdict != RL_GUARD_PASS || d.cors) fail_msg("%s from %s: %s", own[i][1], own[i][0], d.detail);
        d = check(&wide, "PUT", own[i][0], own[i][1]);
        if (d.verdict != RL_GUARD_PASS) fail_msg("%s from %s on a wide listener: %s", own[i][1], own[i][0], d.detail);
    }
    const char *other[][2] = {{"127.0.0.1:8080", "http://127.0.0.1:8081"}, {"127.0.0.1:8080", "http://localhost:8080"},
                              {"localhost:8080", "http://localhost:8080/"}, {"localhost:8080", "ftp://localhost:8080"},
                              {"localhost:8080", "localhost:8080"}, {"127.0.0.1:8080", "http://127.0.0.1"}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (check(&closed, "PUT", other[i][0], other[i][1]).verdict != RL_GUARD_REFUSE)
            fail_msg("%s from %s passed", other[i][1], other[i][0]);
    /* a name that is not loopback is not vouched for by being the Host */
    assert_int_equal(check(&wide, "PUT", "ratelimiter.internal:8080", "http://ratelimiter.internal:8080").verdict,
                     RL_GUARD_REFUSE);
    assert_int_equal(check(&closed, "PUT", NULL, "http://localhost").verdict, RL_GUARD_REFUSE);
}

/* Two Host lines are malformed whichever comes last (h2o keeps the last,
 * which a rebinding page can make loopback), and so are two Origins, even
 * if both are allowed: 400, before any other rule. */
static void test_repeated_headers(void **state) {
    (void)state;
    rl_guard_decision d = check_counted(&loopback, "POST", "localhost", 2, NULL, 0);
    assert_int_equal(d.verdict, RL_GUARD_MALFORMED);
    assert_string_equal(d.detail, "the request has 2 Host headers and may have one: which of them to go by would "
                                  "be a guess");
    assert_int_equal(check_counted(&wide, "GET", "evil.example", 3, NULL, 0).verdict, RL_GUARD_MALFORMED);
    d = check_counted(&wide, "POST", "x", 1, "https://console.example.com", 2);
    assert_int_equal(d.verdict, RL_GUARD_MALFORMED);
    assert_false(d.cors);
    assert_non_null(strstr(d.detail, "2 Origin headers"));
    assert_int_equal(check_counted(&loopback, "OPTIONS", "localhost", 1, "http://localhost:3000", 2).verdict,
                     RL_GUARD_MALFORMED);
    /* one of each, or none, is judged as before */
    assert_int_equal(check_counted(&wide, "POST", "x", 1, "https://console.example.com", 1).verdict, RL_GUARD_PASS);
    assert_int_equal(check_counted(&loopback, "GET", NULL, 0, NULL, 0).verdict, RL_GUARD_PASS);
}

/* A header may hold any byte: the detail shows printable ASCII only, cut. */
static void test_details_are_printable(void **state) {
    (void)state;
    char origin[600];
    memset(origin, 'a', sizeof origin);
    memcpy(origin, "http://\x01\xff\"\\", 11);
    rl_guard_decision d;
    rl_guard_request request = {"GET", 3, "localhost", 9, 1, origin, sizeof origin, 1};
    rl_request_guard_check(&loopback, &request, &d);
    assert_int_equal(d.verdict, RL_GUARD_REFUSE);
    assert_non_null(strstr(d.detail, "Origin \"http://???\\aaa"));
    assert_non_null(strstr(d.detail, "aaa...\" is not in"));
    for (const char *c = d.detail; *c != '\0'; c++) assert_true(*c >= ' ' && *c <= '~');
}

static void test_origin_check(void **state) {
    (void)state;
    char err[256];
    const char *good[] = {"https://console.example.com", "http://localhost:3000", "http://127.0.0.1:8080",
                          "http://[::1]:8081", "HTTPS://A.EXAMPLE"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!rl_request_guard_origin_check(good[i], err, sizeof err)) fail_msg("%s: %s", good[i], err);
    const char *bad[] = {"", "*", "null", "console.example.com", "ftp://a.example", "https://", "https://a.example/",
                         "https://a.example/app", "https://a.example:", "https://a.example:1234567",
                         "https://user@a.example", "http://[::1", "http://[zz]:1", "https://a.example?x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (rl_request_guard_origin_check(bad[i], err, sizeof err)) fail_msg("\"%s\" accepted", bad[i]);
    char long_origin[RL_ORIGIN_MAX_LEN + 2];
    memset(long_origin, 'a', sizeof long_origin);
    memcpy(long_origin, "https://", 8);
    long_origin[sizeof long_origin - 1] = '\0';
    assert_false(rl_request_guard_origin_check(long_origin, err, sizeof err));
    assert_non_null(strstr(err, "at most 253 bytes"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_hosts),
        cmocka_unit_test(test_host_rule_only_on_loopback),
        cmocka_unit_test(test_origins),
        cmocka_unit_test(test_own_origin_on_loopback),
        cmocka_unit_test(test_repeated_headers),
        cmocka_unit_test(test_details_are_printable),
        cmocka_unit_test(test_origin_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
