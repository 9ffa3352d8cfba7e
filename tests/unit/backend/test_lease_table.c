/* test_lease_table.c — remembered leases: lookups through the open-addressing
 * index stay right while leases come and go in due order (backward-shift
 * deletion), with growth, shrinking and recycling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void shedding_lets_go_of_what_a_passed_load_left(void **state) {
    (void)state;
    rl_mem_lease_table table;
    assert_true(rl__mem_lease_table_init(&table));
    enum { N = 100000 };
    for (uint64_t i = 0; i < N; i++) assert_non_null(rl__mem_lease_add(&table, 1, i, 1, 1000, 60000));
    assert_int_equal(rl__mem_lease_forget_due(&table, 61000, 0), N);
    assert_int_equal(table.mask + 1, 1024); /* the index is back to its first size */
    assert_int_equal(table.recycler.lengths[1], RL_MEM_LEASE_RECYCLE_MAX);
    rl__mem_lease_table_shed(&table);
    for (uint32_t n = 0; n <= RL_MAX_REQUIREMENTS; n++) {
        assert_int_equal(table.recycler.lengths[n], 0);
        assert_null(table.recycler.lists[n]);
    }
    assert_null(table.by_forget_at.rings[0].slots);
    /* A load again: as before. */
    assert_non_null(rl__mem_lease_add(&table, 2, 1, 1, 70000, 60000));
    assert_non_null(rl__mem_lease_find(&table, 2, 1));
    assert_int_equal(rl__mem_lease_forget_due(&table, 130000, 0), 1);
    rl__mem_lease_table_free(&table);
}

/* Whether any of this process's memory is advised into huge pages (the
 * "hg" of VmFlags in /proc/self/smaps). */
static bool any_huge_page_advice(void) {
    FILE *smaps = fopen("/proc/self/smaps", "r");
    assert_non_null(smaps);
    char line[512];
    bool advised = false;
    while (!advised && fgets(line, sizeof line, smaps) != NULL)
        advised = strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " hg") != NULL;
    fclose(smaps);
    return advised;
}

/* An index big enough for huge pages is advised into them while it lasts,
 * and nothing of that advice stays once the table is small again: in the
 * allocator's heap it would outlive the index, and the kernel would fill
 * whole 2 MB pages there for whatever small allocations came later. */
static void a_large_index_leaves_no_huge_pages_behind(void **state) {
    (void)state;
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) skip(); /* no huge pages to advise */
#ifdef __GLIBC__
    /* Blocks of the index's sizes from the allocator's heap, as glibc gives
     * them once it has freed a larger mapped block (its threshold follows
     * the largest freed): so it did in the daemon. (A sanitizer's allocator
     * takes no such setting.) */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
    assert_false(any_huge_page_advice());
    rl_mem_lease_table table;
    assert_true(rl__mem_lease_table_init(&table));
    enum { N = 400000 };
    for (uint64_t i = 0; i < N; i++) assert_non_null(rl__mem_lease_add(&table, 3, i, 1, 1000, 60000));
    assert_true(any_huge_page_advice());
    assert_int_equal(rl__mem_lease_forget_due(&table, 61000, 0), N);
    assert_int_equal(table.mask + 1, 1024);
    rl__mem_lease_table_shed(&table);
    assert_false(any_huge_page_advice());
    rl__mem_lease_table_free(&table);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_exactly_the_remembered_leases),
        cmocka_unit_test(make_room_evicts_only_finished_leases),
        cmocka_unit_test(shedding_lets_go_of_what_a_passed_load_left),
        cmocka_unit_test(a_large_index_leaves_no_huge_pages_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
