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

static void push(rl_due_queue *queue, uintptr_t item, uint64_t lifetime_ms) {
    assert_true(rl__due_queue_reserve_one(queue, lifetime_ms));
    rl__due_queue_push(queue, (void *)item, item, 0, lifetime_ms);
}

static void shedding_frees_only_what_empty_rings_and_heap_hold(void **state) {
    (void)state;
    rl_due_queue queue;
    rl__due_queue_init(&queue);
    /* Every ring holds a lifetime, the first a burst of them; the heap
     * another burst, of a ninth lifetime. */
    for (uintptr_t i = 0; i < 100000; i++) push(&queue, 1000000 + i, 1000);
    for (int r = 1; r < RL_DUE_QUEUE_RINGS; r++) push(&queue, (uintptr_t)r, 1000u * (uint64_t)(r + 1));
    for (uintptr_t i = 0; i < 5000; i++) push(&queue, 2000000 + i, 500);
    assert_int_equal(queue.overflow.count, 5000);
    /* Both bursts leave. */
    for (int i = 0; i < 100000; i++) rl__due_queue_pop_front(&queue, 0);
    for (int i = 0; i < 5000; i++) rl__due_queue_pop_front(&queue, RL_DUE_QUEUE_RINGS);
    assert_non_null(queue.rings[0].slots);
    assert_non_null(queue.overflow.slots);
    rl__due_queue_shed(&queue);
    assert_null(queue.rings[0].slots);
    assert_null(queue.overflow.slots);
    for (int r = 1; r < RL_DUE_QUEUE_RINGS; r++) assert_non_null(queue.rings[r].slots);
    assert_int_equal((uintptr_t)rl__due_queue_top(&queue)->item, 1);
    /* A shed ring and heap take slots again at their next push. */
    push(&queue, 9, 1000);
    push(&queue, 10, 100);
    assert_int_equal((uintptr_t)rl__due_queue_top(&queue)->item, 10);
    rl__due_queue_pop(&queue);
    assert_int_equal((uintptr_t)rl__due_queue_top(&queue)->item, 9);
    rl__due_queue_free(&queue);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pops_in_due_order_across_many_lifetimes),
        cmocka_unit_test(shedding_frees_only_what_empty_rings_and_heap_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
