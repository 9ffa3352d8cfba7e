/* test_percent_decode.c — the key of GET /v1/admin/limits/{key}. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/api/percent_decode.h"

static void test_percent_decode(void **state) {
    (void)state;
    char out[16];
    assert_int_equal(rl_percent_decode("a%3Ab%2fc", 9, out, sizeof out), 5);
    assert_string_equal(out, "a:b/c");
    assert_int_equal(rl_percent_decode("", 0, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(rl_percent_decode("+x", 2, out, sizeof out), 2); /* '+' is not a space in paths */
    assert_string_equal(out, "+x");
    assert_int_equal(rl_percent_decode("%", 1, out, sizeof out), -1);
    assert_int_equal(rl_percent_decode("%4", 2, out, sizeof out), -1);
    assert_int_equal(rl_percent_decode("%zz", 3, out, sizeof out), -1);
    assert_int_equal(rl_percent_decode("0123456789abcdef", 16, out, sizeof out), -1); /* no room */
    assert_int_equal(rl_percent_decode("0123456789abcde", 15, out, sizeof out), 15);
    assert_int_equal(rl_percent_decode("x", 1, out, 0), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percent_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
