/* test_limit_table.c — the memory backend's key -> limit table: it grows
 * as limits come and shrinks back once most have left, every limit left
 * found at its key through both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/memory/limit.h"

static rl_mem_limit *add(rl_mem_limit_table *table, unsigned i) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "tenant:t%u:tpm", i);
    def.kind = RL_KIND_ROLLING;
    def.capacity = 100;
    def.window_seconds = 60;
    return rl__mem_limit_table_add(table, &def);
}

static rl_mem_limit *find(const rl_mem_limit_table *table, unsigned i) {
    char key[64];
    snprintf(key, sizeof key, "tenant:t%u:tpm", i);
    return rl__mem_limit_table_find(table, key);
}

static void shrinks_back_once_most_limits_have_left(void **state) {
    (void)state;
    rl_mem_limit_table table = {.observer = NULL};
    assert_true(rl__mem_limit_table_init(&table));
    size_t empty_buckets = table.bucket_count;
    enum { N = 100000, KEPT = 100 };
    for (unsigned i = 0; i < N; i++) assert_non_null(add(&table, i));
    assert_true(table.bucket_count >= N);
    /* Megabytes of buckets: pages of their own (pages.h), not the allocator's. */
    assert_int_equal((uintptr_t)table.buckets % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    uint64_t resizes = table.resizes;
    /* Most leave: not yet shrunk (only the owner's call does it, off any walk). */
    for (unsigned i = KEPT; i < N; i++) rl__mem_limit_table_remove(&table, find(&table, i));
    assert_int_equal(table.count, KEPT);
    assert_true(table.bucket_count >= N);
    rl__mem_limit_table_shrink(&table);
    assert_int_equal(table.bucket_count, 256); /* two for each limit, a power of two */
    assert_int_equal(table.resizes, resizes + 1);
    for (unsigned i = 0; i < N; i++) {
        rl_mem_limit *limit = find(&table, i);
        if (i < KEPT) {
            assert_non_null(limit);
            assert_string_equal(limit->def.key, limit->key_text);
        } else {
            assert_null(limit);
        }
    }
    /* Already fitting: left as it is. */
    rl__mem_limit_table_shrink(&table);
    assert_int_equal(table.resizes, resizes + 1);
    /* All gone: back to the buckets of an empty table, and it grows again. */
    for (unsigned i = 0; i < KEPT; i++) rl__mem_limit_table_remove(&table, find(&table, i));
    rl__mem_limit_table_shrink(&table);
    assert_int_equal(table.bucket_count, empty_buckets);
    for (unsigned i = 0; i < 1000; i++) assert_non_null(add(&table, N + i));
    for (unsigned i = 0; i < 1000; i++) assert_non_null(find(&table, N + i));
    rl__mem_limit_table_free(&table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shrinks_back_once_most_limits_have_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
