/* test_heap.c — the intrusive min-heap under the memory backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/memory/heap.h"

typedef struct item {
    rl_heap_node node;
    int visited;
} item;

static void pops_in_order_and_removes_from_the_middle(void **state) {
    (void)state;
    enum { N = 1000 };
    static item items[N];
    rl_heap heap;
    rl__heap_init(&heap);
    srand(7);
    for (int i = 0; i < N; i++) {
        items[i].node.at_ms = (uint64_t)(rand() % 500);
        assert_true(rl__heap_push(&heap, &items[i].node));
    }
    /* remove every third node from wherever it sits */
    for (int i = 0; i < N; i += 3) rl__heap_remove(&heap, &items[i].node);
    uint64_t last = 0;
    int popped = 0;
    rl_heap_node *top;
    while ((top = rl_heap_top(&heap)) != NULL) {
        assert_true(top->at_ms >= last);
        last = top->at_ms;
        rl__heap_remove(&heap, top);
        assert_int_equal(top->index, RL_HEAP_NOT_QUEUED);
        popped++;
    }
    assert_int_equal(popped, N - (N + 2) / 3);
    rl__heap_free(&heap);
}

static bool stop_at_fifth(const rl_heap_node *node, void *context) {
    int *seen = context;
    ((item *)node)->visited = ++*seen;
    return *seen == 5;
}

static void walk_visits_in_ascending_order_without_changing_the_heap(void **state) {
    (void)state;
    item items[64] = {0};
    rl_heap heap;
    rl__heap_init(&heap);
    for (int i = 0; i < 64; i++) {
        items[i].node.at_ms = (uint64_t)((i * 37) % 64);
        rl__heap_push(&heap, &items[i].node);
    }
    uint32_t *scratch = NULL;
    uint32_t scratch_capacity = 0;
    int seen = 0;
    const rl_heap_node *stop = rl__heap_walk(&heap, stop_at_fifth, &seen, &scratch, &scratch_capacity);
    assert_non_null(stop);
    assert_int_equal(stop->at_ms, 4);
    for (int i = 0; i < 64; i++) {
        if (items[i].node.at_ms < 5) assert_int_equal(items[i].visited, (int)items[i].node.at_ms + 1);
        else assert_int_equal(items[i].visited, 0);
    }
    assert_int_equal(heap.count, 64);
    assert_int_equal(rl_heap_top(&heap)->at_ms, 0);
    free(scratch);
    rl__heap_free(&heap);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pops_in_order_and_removes_from_the_middle),
        cmocka_unit_test(walk_visits_in_ascending_order_without_changing_the_heap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
