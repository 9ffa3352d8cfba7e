/* test_pages.c — the memory backend's large arrays come from the kernel
 * directly: whole pages of their own, zeroed, a huge page's worth or more
 * starting on a huge page, and unmapped when freed; small ones from
 * malloc. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/memory/pages.h"

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Whether any page of [at, at + size) is mapped: mincore fails with ENOMEM
 * on a range that is not. */
static bool mapped(void *at, size_t size) {
    unsigned char residence[1024];
    assert_true(size / page_size() <= sizeof residence);
    if (mincore(at, size, residence) == 0) return true;
    assert_int_equal(errno, ENOMEM);
    return false;
}

static bool all_zero(const unsigned char *bytes, size_t size) {
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != 0) return false;
    return true;
}

static void a_large_array_is_pages_of_its_own_until_freed(void **state) {
    (void)state;
    size_t size = RL_MEM_PAGES_MIN_BYTES * 3;
    unsigned char *array = rl__mem_pages_alloc(size);
    assert_non_null(array);
    assert_int_equal((uintptr_t)array % page_size(), 0);
    assert_true(all_zero(array, size));
    memset(array, 0xab, size);
    rl__mem_pages_free(array, size);
    assert_false(mapped(array, size)); /* back to the kernel, not kept by an allocator */
}

static void a_huge_page_worth_starts_on_one(void **state) {
    (void)state;
    size_t size = RL_MEM_PAGES_HUGE_BYTES * 2;
    unsigned char *array = rl__mem_pages_alloc(size);
    assert_non_null(array);
    assert_int_equal((uintptr_t)array % RL_MEM_PAGES_HUGE_BYTES, 0);
    assert_true(all_zero(array, size));
    array[size - 1] = 1;
    rl__mem_pages_free(array, size);
    assert_false(mapped(array, size));
}

static void a_small_array_comes_from_malloc(void **state) {
    (void)state;
    size_t size = 1000;
    unsigned char *array = rl__mem_pages_alloc(size);
    assert_non_null(array);
    assert_true(all_zero(array, size));
    array[size - 1] = 1;
    rl__mem_pages_free(array, size);
    rl__mem_pages_free(NULL, size);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_large_array_is_pages_of_its_own_until_freed),
        cmocka_unit_test(a_huge_page_worth_starts_on_one),
        cmocka_unit_test(a_small_array_comes_from_malloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
