/* test_request_head.c — counting a header's lines in a request's raw head,
 * as h2o left it in the connection's input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/http/request_head.h"

static long hosts_in(const char *bytes, const char *method) {
    return rl_request_head_field_count(bytes, strlen(bytes), method, strlen(method), "host", 4);
}

static void test_counts_each_line(void **state) {
    (void)state;
    assert_int_equal(hosts_in("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", "GET"), 1);
    assert_int_equal(hosts_in("GET / HTTP/1.1\r\nHost: evil.example\r\nAccept: */*\r\nhost: localhost\r\n\r\n", "GET"),
                     2);
    assert_int_equal(hosts_in("POST /v1/reserve HTTP/1.1\r\nHOST:a\r\nHoSt: b\r\nhost:\r\n\r\n{\"host\":1}", "POST"), 3);
    assert_int_equal(hosts_in("GET / HTTP/1.0\r\nAccept: */*\r\n\r\n", "GET"), 0);
    /* bare \n ends lines too; one empty line may come first */
    assert_int_equal(hosts_in("\r\nGET / HTTP/1.1\nHost: a\nHost: b\n\n", "GET"), 2);
    /* neither another name that starts the same, nor a folded line, nor the body */
    assert_int_equal(hosts_in("GET / HTTP/1.1\r\nHostile: 1\r\nX-Host: 2\r\nA: b\r\n Host: c\r\n\r\nHost: d\r\n", "GET"),
                     0);
}

/* Bytes that are not this request's head tell nothing: -1. */
static void test_unknown_when_not_this_head(void **state) {
    (void)state;
    assert_int_equal(hosts_in("POST / HTTP/1.1\r\nHost: a\r\n\r\n", "GET"), -1);
    assert_int_equal(hosts_in("GETS / HTTP/1.1\r\nHost: a\r\n\r\n", "GET"), -1);
    assert_int_equal(hosts_in("GET / HTTP/1.1\r\nHost: a\r\n", "GET"), -1); /* no end */
    assert_int_equal(hosts_in("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET"), -1);
    assert_int_equal(hosts_in("", "GET"), -1);
    assert_int_equal(hosts_in("GET", "GET"), -1);
    /* the length is the bound, not a NUL */
    const char head[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(rl_request_head_field_count(head, sizeof head - 3, "GET", 3, "host", 4), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_each_line),
        cmocka_unit_test(test_unknown_when_not_this_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
