/* test_backend_table.c — backends by name, and the ABI a backend speaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/memory.h"
#include "server/backend_table.h"
#include "server/service.h"

static void test_names(void **state) {
    (void)state;
    assert_non_null(rl_backend_kind_find("memory"));
    assert_non_null(rl_backend_kind_find("redis"));
    assert_null(rl_backend_kind_find("tigerbeetle"));
    assert_null(rl_backend_kind_find(""));
    assert_null(rl_backend_kind_find(NULL));
    char err[256];
    rl_backend_kind_unknown("tigerbeetle", err, sizeof err);
    assert_string_equal(err, "backend \"tigerbeetle\" is not available in this build (use \"memory\" or \"redis\")");
}

static void test_a_backend_is_created_by_its_kind(void **state) {
    (void)state;
    rl_service_options options;
    memset(&options, 0, sizeof options);
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    rl_backend *backend = NULL;
    char err[256] = "";
    assert_int_equal(rl_backend_kind_find("memory")->create(&options, &backend, err, sizeof err), RL_OK);
    assert_string_equal(backend->ops->name, "memory");
    assert_int_equal(rl_backend_abi_check(backend, err, sizeof err), RL_OK);
    rl_backend_destroy(backend);
}

/* A vtable of another ABI is refused before anything calls through it. */
static void test_another_abi_is_refused(void **state) {
    (void)state;
    rl_memory_options memory;
    rl_memory_options_default(&memory);
    memory.sweep_interval_ms = 0;
    rl_backend *real = NULL;
    assert_int_equal(rl_memory_backend_create(&memory, &real), RL_OK);
    rl_backend_ops older = *real->ops;
    older.abi_version = RL_BACKEND_ABI_VERSION - 1;
    rl_backend other = {&older};
    char err[256] = "";
    assert_int_equal(rl_backend_abi_check(&other, err, sizeof err), RL_INVALID_REQUEST);
    char want[128];
    snprintf(want, sizeof want, "the memory backend was built for backend ABI %d, this build speaks %d",
             RL_BACKEND_ABI_VERSION - 1, RL_BACKEND_ABI_VERSION);
    assert_string_equal(err, want);
    rl_backend_destroy(real);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_a_backend_is_created_by_its_kind),
        cmocka_unit_test(test_another_abi_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
