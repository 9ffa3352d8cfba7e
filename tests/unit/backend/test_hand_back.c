/* test_hand_back.c — when the memory backend hands freed memory back to
 * the kernel: never under a steady load, each time what it holds halves as
 * a burst drains, the last time at the sweep that forgets the last of it,
 * and never for a few items. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backend/memory/hand_back.h"

static void a_steady_load_hands_nothing_back(void **state) {
    (void)state;
    rl_mem_hand_back record;
    rl__mem_hand_back_init(&record);
    /* A million held, a tenth of them forgotten and replaced between sweeps. */
    for (int sweep = 0; sweep < 1000; sweep++)
        assert_false(rl__mem_hand_back_due(&record, 1000000, 900000));
    assert_int_equal(record.hand_backs, 0);
}

static void a_draining_burst_hands_back_as_it_halves_and_at_its_end(void **state) {
    (void)state;
    rl_mem_hand_back record;
    rl__mem_hand_back_init(&record);
    /* Two million held; each sweep forgets 150,000 until none is left. */
    uint64_t held = 2000000, hand_backs = 0, last_hand_back_at = 0;
    while (held > 0) {
        uint64_t after = held > 150000 ? held - 150000 : 0;
        if (rl__mem_hand_back_due(&record, held, after)) {
            hand_backs++;
            last_hand_back_at = after;
        }
        held = after;
    }
    /* At 950,000 (under half of 2M), 350,000, 50,000 and 0. */
    assert_int_equal(hand_backs, 4);
    assert_int_equal(record.hand_backs, 4);
    assert_int_equal(last_hand_back_at, 0);
    /* Nothing more while nothing more goes. */
    assert_false(rl__mem_hand_back_due(&record, 0, 0));
}

static void the_most_held_counts_from_the_last_hand_back(void **state) {
    (void)state;
    rl_mem_hand_back record;
    rl__mem_hand_back_init(&record);
    assert_false(rl__mem_hand_back_due(&record, 100000, 100000));
    assert_true(rl__mem_hand_back_due(&record, 100000, 40000));
    /* The 100,000 was handed back: 40,000 falling to 30,000 is not half. */
    assert_false(rl__mem_hand_back_due(&record, 40000, 30000));
    assert_true(rl__mem_hand_back_due(&record, 30000, 20000));
}

static void a_few_items_are_not_worth_it(void **state) {
    (void)state;
    rl_mem_hand_back record;
    rl__mem_hand_back_init(&record);
    assert_false(rl__mem_hand_back_due(&record, RL_MEM_HAND_BACK_MIN_ITEMS - 1, 0));
    assert_int_equal(record.hand_backs, 0);
    assert_true(rl__mem_hand_back_due(&record, RL_MEM_HAND_BACK_MIN_ITEMS, 0));
    assert_int_equal(record.hand_backs, 1);
    rl__mem_hand_back(); /* and asking for it is harmless */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_steady_load_hands_nothing_back),
        cmocka_unit_test(a_draining_burst_hands_back_as_it_halves_and_at_its_end),
        cmocka_unit_test(the_most_held_counts_from_the_last_hand_back),
        cmocka_unit_test(a_few_items_are_not_worth_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
