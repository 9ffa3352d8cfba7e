/* test_local_limiter.c — opening the in-process limiter from a limits file;
 * its behaviour is the conformance suite's (tests/integration). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "support/lease_ids.h"

static char dir[] = "/tmp/rl_local_limiter_XXXXXX";

static const char *write_file(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void opens_a_limits_file_and_enforces_it(void **state) {
    (void)state;
    const char *path = write_file("limits.json",
                                  "[{\"key\":\"p:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60},"
                                  " {\"key\":\"p:conc\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":30}]");
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter;
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    assert_string_equal(limiter->ops->name, "local");
    char id[27];
    rl_requirement reqs[] = {{"p:rpm", 1}, {"p:conc", 1}};
    rl_reserve_request first = {rl_test_lease_id(1, id), NULL, reqs, 2};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &first, &result), RL_OK);
    assert_true(result.allowed);
    char id2[27];
    rl_reserve_request second = {rl_test_lease_id(2, id2), NULL, reqs, 2};
    assert_int_equal(rl_limiter_reserve(limiter, &second, &result), RL_OK);
    assert_false(result.allowed); /* the one concurrency slot is held */
    rl_complete_request done = {id, NULL, NULL, 0};
    assert_int_equal(rl_limiter_complete(limiter, &done), RL_OK);
    char id3[27];
    rl_reserve_request third = {rl_test_lease_id(3, id3), NULL, reqs, 2};
    assert_int_equal(rl_limiter_reserve(limiter, &third, &result), RL_OK);
    assert_true(result.allowed);
    /* a bad request is refused whole, and changes nothing */
    rl_reserve_request bad = {"nope", NULL, reqs, 2};
    assert_int_equal(rl_limiter_reserve(limiter, &bad, &result), RL_INVALID_REQUEST);
    rl_limiter_destroy(limiter);
}

static void refuses_a_missing_or_corrupt_file(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter = (rl_limiter *)1;
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.json", dir);
    assert_int_not_equal(rl_limiter_local_open(missing, NULL, &limiter, err), RL_OK);
    assert_null(limiter);
    assert_non_null(strstr(err, "none.json"));
    const char *corrupt = write_file("corrupt.json", "[{\"key\":");
    assert_int_not_equal(rl_limiter_local_open(corrupt, NULL, &limiter, err), RL_OK);
    assert_null(limiter);
    assert_non_null(strstr(err, "corrupt.json"));
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    return system(command);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_a_limits_file_and_enforces_it),
        cmocka_unit_test(refuses_a_missing_or_corrupt_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
