/* test_listen_addr.c — "HOST:PORT" parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/http/listen_addr.h"

static void expect_ok(const char *text, const char *host, uint16_t port) {
    rl_listen_addr addr;
    char err[200] = "";
    if (!rl_listen_addr_parse(text, &addr, err, sizeof err)) fail_msg("%s: %s", text, err);
    assert_string_equal(addr.host, host);
    assert_int_equal(addr.port, port);
}

static void expect_bad(const char *text) {
    rl_listen_addr addr;
    char err[200] = "";
    if (rl_listen_addr_parse(text, &addr, err, sizeof err)) fail_msg("accepted \"%s\"", text);
    assert_non_null(strstr(err, "listen address"));
}

static void test_accepted_forms(void **state) {
    (void)state;
    expect_ok("127.0.0.1:8080", "127.0.0.1", 8080);
    expect_ok(":8080", "", 8080);
    expect_ok("localhost:1", "localhost", 1);
    expect_ok("127.0.0.1:0", "127.0.0.1", 0);
    expect_ok("[::1]:65535", "::1", 65535);
    expect_ok("0.0.0.0:80", "0.0.0.0", 80);
}

static void test_refused_forms(void **state) {
    (void)state;
    expect_bad("");
    expect_bad("8080");
    expect_bad("127.0.0.1");
    expect_bad("127.0.0.1:");
    expect_bad("127.0.0.1:65536");
    expect_bad("127.0.0.1:-1");
    expect_bad("127.0.0.1:+80");
    expect_bad("127.0.0.1:80 ");
    expect_bad("127.0.0.1:0x50");
    expect_bad("::1:8080");
    expect_bad("[::1]8080");
    expect_bad("[]:8080");
    expect_bad("host name:80");
    expect_bad("host/x:80");
    rl_listen_addr addr;
    char err[200];
    assert_false(rl_listen_addr_parse(NULL, &addr, err, sizeof err));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted_forms),
        cmocka_unit_test(test_refused_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
