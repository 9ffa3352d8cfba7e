/* test_lease_table.c — remembered leases: lookups through the open-addressing
 * index stay right while leases come and go in due order (backward-shift
 * deletion), with growth, shrinking and recycling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/memory/lease.h"

static void finds_exactly_the_remembered_leases(void **state) {
    (void)state;
    rl_mem_lease_table table;
    assert_true(rl__mem_lease_table_init(&table));
    enum { N = 50000 };
    /* ids that collide on purpose: the same low half, or lows close together */
    for (uint64_t i = 0; i < N; i++) {
        uint64_t hi = i % 7, lo = (i / 7) * 1024;
        rl_mem_lease *lease = rl__mem_lease_add(&table, hi, lo, (uint16_t)(i % 3), 1000 + i, 0);
        assert_non_null(lease);
    }
    assert_int_equal(table.count, N);
    for (uint64_t i = 0; i < N; i++) {
        rl_mem_lease *lease = rl__mem_lease_find(&table, i % 7, (i / 7) * 1024);
        assert_non_null(lease);
        assert_int_equal(lease->entry_count, i % 3);
    }
    assert_null(rl__mem_lease_find(&table, 8, 0));
    /* forget the first 40000 in due order; the others must all still be found */
    assert_int_equal(rl__mem_lease_forget_due(&table, 1000 + 39999, 0), 40000);
    assert_int_equal(table.count, N - 40000);
    for (uint64_t i = 0; i < N; i++) {
        rl_mem_lease *lease = rl__mem_lease_find(&table, i % 7, (i / 7) * 1024);
        if (i < 40000) assert_null(lease);
        else assert_non_null(lease);
    }
    /* add again: recycled memory, found again */
    for (uint64_t i = 0; i < 1000; i++) assert_non_null(rl__mem_lease_add(&table, 99, i, 0, 5000000 + i, 0));
    for (uint64_t i = 0; i < 1000; i++) assert_non_null(rl__mem_lease_find(&table, 99, i));
    assert_int_equal(rl__mem_lease_forget_due(&table, UINT64_MAX, 3), 3);
    rl__mem_lease_table_free(&table);
}

static void make_room_evicts_only_finished_leases(void **state) {
    (void)state;
    rl_mem_lease_table table;
    assert_true(rl__mem_lease_table_init(&table));
    rl_mem_lease *denied = rl__mem_lease_add(&table, 0, 1, 0, 100, 0);
    assert_non_null(denied);
    assert_true(rl__mem_lease_make_room(&table, 2, 0));
    assert_false(rl__mem_lease_make_room(&table, 1, 0) && table.count != 0);
    assert_int_equal(table.count, 0);
    rl__mem_lease_table_free(&table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_exactly_the_remembered_leases),
        cmocka_unit_test(make_room_evicts_only_finished_leases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
