/* test_due_queue.c — leases come out in due order across lifetime rings and
 * the overflow heap, and rings are re-keyed once empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/memory/due_queue.h"

static void pops_in_due_order_across_many_lifetimes(void **state) {
    (void)state;
    rl_due_queue queue;
    rl__due_queue_init(&queue);
    enum { N = 20000, LIFETIMES = 12 }; /* more lifetimes than rings: some overflow */
    srand(3);
    uint64_t now_ms = 0;
    for (uint64_t i = 0; i < N; i++) {
        now_ms += (uint64_t)(rand() % 3);
        uint64_t lifetime_ms = 100u * (uint64_t)(1 + rand() % LIFETIMES);
        assert_true(rl__due_queue_reserve_one(&queue, lifetime_ms));
        rl__due_queue_push(&queue, (void *)(uintptr_t)(i + 1), i, now_ms, lifetime_ms);
    }
    uint64_t last = 0, popped = 0;
    const rl_due_slot *top;
    while ((top = rl__due_queue_top(&queue)) != NULL) {
        assert_true(top->at_ms >= last);
        assert_int_equal((uintptr_t)top->item, top->hash + 1);
        last = top->at_ms;
        rl__due_queue_pop(&queue);
        popped++;
    }
    assert_int_equal(popped, N);
    /* all empty now: new lifetimes take the rings over */
    for (uint64_t i = 0; i < 8; i++) {
        assert_true(rl__due_queue_reserve_one(&queue, 7777 + i));
        rl__due_queue_push(&queue, (void *)(uintptr_t)1, 0, now_ms, 7777 + i);
    }
    assert_int_equal(queue.overflow.count, 0);
    rl__due_queue_free(&queue);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pops_in_due_order_across_many_lifetimes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
