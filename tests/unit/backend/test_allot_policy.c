/* test_allot_policy.c — the sizing rules of allotments
 * (backend/allot/allot_policy.h): a key's rate rises at once and falls by
 * quarters, never to 0 while leases ask anything, and keeps still when no
 * time passed; the least room worth holding; what to hold; when an
 * allotment is carved again (room, time, too much) and when not; the
 * hysteresis between the synchronous path and allotments. Amounts saturate
 * at RL_AMOUNT_MAX, whatever the inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backend/allot/allot_policy.h"
#include "ratelimiter/types.h"

/* ---- rate ---- */

static void a_rise_is_taken_at_once(void **state) {
    (void)state;
    assert_int_equal(rl__allot_rate_per_s(0, 100, 1000), 100);
    assert_int_equal(rl__allot_rate_per_s(10, 100, 500), 200); /* per second, not per call */
    assert_int_equal(rl__allot_rate_per_s(10, 3, 50), 60);
    assert_int_equal(rl__allot_rate_per_s(100, 100, 1000), 100); /* the same: as observed */
    assert_int_equal(rl__allot_rate_per_s(7, 1, 1), 1000);
}

static void a_fall_gives_the_newest_observation_a_quarter(void **state) {
    (void)state;
    assert_int_equal(rl__allot_rate_per_s(100, 20, 1000), 80);  /* (3*100 + 20) / 4 */
    assert_int_equal(rl__allot_rate_per_s(100, 21, 1000), 81);  /* 80.25: rounded up, there is demand */
    assert_int_equal(rl__allot_rate_per_s(100, 0, 1000), 75);   /* no demand: 300 / 4 */
    assert_int_equal(rl__allot_rate_per_s(75, 0, 1000), 56);    /* 56.25: rounded down, no demand */
    assert_int_equal(rl__allot_rate_per_s(100, 10, 200), 88);   /* observed 50: (300 + 50) / 4 = 87.5 */
    /* Without demand it falls by quarters all the way to 0. */
    uint64_t rate = 1000;
    const uint64_t expected[] = {750, 562, 421, 315, 236, 177, 132, 99, 74, 55};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        rate = rl__allot_rate_per_s(rate, 0, 1000);
        assert_int_equal(rate, expected[i]);
    }
    int steps = 0;
    while (rate > 0 && steps < 100) {
        rate = rl__allot_rate_per_s(rate, 0, 1000);
        steps++;
    }
    assert_int_equal(rate, 0);
    assert_int_equal(steps, 12); /* 41 30 22 16 12 9 6 4 3 2 1 0: never stuck above 0 */
    assert_int_equal(rl__allot_rate_per_s(1, 0, 1000), 0);
}

static void any_demand_keeps_the_rate_above_zero(void **state) {
    (void)state;
    assert_int_equal(rl__allot_rate_per_s(1, 1, 1000), 1);
    assert_int_equal(rl__allot_rate_per_s(2, 1, 1000), 2);   /* 1.75, rounded up */
    assert_int_equal(rl__allot_rate_per_s(1000, 1, 1000), 751);
    /* A trickle slower than a unit a second is still demand. */
    assert_int_equal(rl__allot_rate_per_s(0, 1, 2000), 1);
    assert_int_equal(rl__allot_rate_per_s(1, 1, 60000), 1);
    assert_int_equal(rl__allot_rate_per_s(8, 1, 5000), 7); /* (24 + 1) / 4 = 6.25, up */
    uint64_t rate = 1000;
    for (int i = 0; i < 200; i++) {
        rate = rl__allot_rate_per_s(rate, 1, 3000);
        assert_true(rate >= 1);
    }
    /* ...and no demand lets it reach 0 from there. */
    for (int i = 0; i < 20; i++) rate = rl__allot_rate_per_s(rate, 0, 3000);
    assert_int_equal(rate, 0);
}

static void no_time_elapsed_keeps_the_rate(void **state) {
    (void)state;
    assert_int_equal(rl__allot_rate_per_s(42, 1000, 0), 42);
    assert_int_equal(rl__allot_rate_per_s(42, 0, 0), 42);
    assert_int_equal(rl__allot_rate_per_s(0, 5, 0), 0);
    assert_int_equal(rl__allot_rate_per_s(RL_AMOUNT_MAX, 0, 0), RL_AMOUNT_MAX);
}

static void a_huge_rate_saturates(void **state) {
    (void)state;
    assert_int_equal(rl__allot_rate_per_s(0, RL_AMOUNT_MAX, 1), RL_AMOUNT_MAX);       /* x1000 */
    assert_int_equal(rl__allot_rate_per_s(0, UINT64_MAX, 1), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_rate_per_s(0, RL_AMOUNT_MAX, 1000), RL_AMOUNT_MAX);    /* exact, not above */
    assert_int_equal(rl__allot_rate_per_s(0, RL_AMOUNT_MAX / 1000, 1), RL_AMOUNT_MAX / 1000 * 1000);
    assert_int_equal(rl__allot_rate_per_s(UINT64_MAX, 0, 1000), RL_AMOUNT_MAX);       /* 3 * rate needs 66 bits */
    assert_int_equal(rl__allot_rate_per_s(UINT64_MAX, UINT64_MAX, 1), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_rate_per_s(RL_AMOUNT_MAX, 0, 1000), RL_AMOUNT_MAX / 4 * 3);
    assert_int_equal(rl__allot_rate_per_s(RL_AMOUNT_MAX, 1, UINT64_MAX), RL_AMOUNT_MAX / 4 * 3 + 1);
}

/* ---- sizes ---- */

static void min_room_is_two_of_the_largest_lease(void **state) {
    (void)state;
    assert_int_equal(rl__allot_min_room(0), 2);
    assert_int_equal(rl__allot_min_room(1), 2);
    assert_int_equal(rl__allot_min_room(2), 4);
    assert_int_equal(rl__allot_min_room(7), 14);
    assert_int_equal(rl__allot_min_room(RL_AMOUNT_MAX / 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_min_room(RL_AMOUNT_MAX / 2 + 1), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_min_room(RL_AMOUNT_MAX), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_min_room(UINT64_MAX), RL_AMOUNT_MAX);
}

static void want_is_what_is_live_plus_the_horizon_or_min_room(void **state) {
    (void)state;
    assert_int_equal(rl__allot_want(3, 100, 500, 10), 53);  /* 3 + 100/s * 0.5 s */
    assert_int_equal(rl__allot_want(3, 10, 500, 10), 13);   /* 5 ahead < min_room */
    assert_int_equal(rl__allot_want(3, 20, 500, 10), 13);   /* 10 ahead = min_room */
    assert_int_equal(rl__allot_want(3, 22, 500, 10), 14);
    assert_int_equal(rl__allot_want(0, 0, 500, 2), 2);
    assert_int_equal(rl__allot_want(3, 7, 300, 1), 5);      /* 2.1 ahead, rounded down */
    assert_int_equal(rl__allot_want(40, 0, 0, 2), 42);
    /* Saturating, never wrapping. */
    assert_int_equal(rl__allot_want(RL_AMOUNT_MAX - 1, 100, 1000, 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(RL_AMOUNT_MAX - 2, 0, 0, 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(RL_AMOUNT_MAX - 3, 0, 0, 2), RL_AMOUNT_MAX - 1);
    assert_int_equal(rl__allot_want(0, RL_AMOUNT_MAX, 1000000, 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(0, UINT64_MAX, UINT64_MAX, 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(UINT64_MAX, 0, 0, 2), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(0, 0, 0, UINT64_MAX), RL_AMOUNT_MAX);
    assert_int_equal(rl__allot_want(0, 0, 0, RL_AMOUNT_MAX + 1), RL_AMOUNT_MAX);
}

/* ---- carving again ---- */

static void needs_carve_for_each_of_its_reasons(void **state) {
    (void)state;
    /* none: room 8 of 8 wanted, half the time left, capacity 10 of 10 wanted */
    assert_false(rl__allot_needs_carve(10, 2, 10, 1000, 2000));
    assert_false(rl__allot_needs_carve(10, 2, 18, 1000, 2000)); /* room 8, wanted 16: exactly half */
    /* half its room for demand gone */
    assert_true(rl__allot_needs_carve(10, 2, 19, 1000, 2000));  /* room 8, wanted 17 */
    assert_true(rl__allot_needs_carve(10, 9, 12, 2000, 2000));  /* room 1, wanted 3 */
    assert_false(rl__allot_needs_carve(10, 9, 10, 2000, 2000)); /* room 1, wanted 1 */
    assert_true(rl__allot_needs_carve(0, 0, 2, 2000, 2000));    /* nothing held yet */
    assert_true(rl__allot_needs_carve(5, 8, 12, 2000, 2000));   /* above its capacity: no room, 4 wanted */
    assert_false(rl__allot_needs_carve(5, 8, 8, 2000, 2000));   /* ...and none wanted */
    /* half its time gone */
    assert_true(rl__allot_needs_carve(10, 2, 10, 999, 2000));
    assert_true(rl__allot_needs_carve(10, 2, 10, 0, 2000));
    assert_true(rl__allot_needs_carve(10, 2, 10, 1000, 2001));
    /* more than twice what is wanted */
    assert_false(rl__allot_needs_carve(20, 0, 10, 2000, 2000));
    assert_true(rl__allot_needs_carve(22, 0, 10, 2000, 2000));
    assert_true(rl__allot_needs_carve(RL_AMOUNT_MAX, 0, 2, 2000, 2000));
    /* large amounts do not wrap */
    assert_false(rl__allot_needs_carve(RL_AMOUNT_MAX, 0, RL_AMOUNT_MAX, 2000, 2000));
    assert_false(rl__allot_needs_carve(RL_AMOUNT_MAX, RL_AMOUNT_MAX / 2, RL_AMOUNT_MAX, 2000, 2000));
    assert_false(rl__allot_needs_carve(RL_AMOUNT_MAX / 2, 0, RL_AMOUNT_MAX, 2000, 2000));
    assert_true(rl__allot_needs_carve(RL_AMOUNT_MAX / 2 - 1, 0, RL_AMOUNT_MAX, 2000, 2000));
}

/* ---- the synchronous path ---- */

static void sync_has_hysteresis(void **state) {
    (void)state;
    assert_true(rl__allot_goes_sync(9, 10));
    assert_false(rl__allot_goes_sync(10, 10));
    assert_true(rl__allot_goes_sync(0, 2));
    assert_false(rl__allot_leaves_sync(19, 10));
    assert_true(rl__allot_leaves_sync(20, 10));
    assert_true(rl__allot_leaves_sync(21, 10));
    assert_false(rl__allot_leaves_sync(RL_AMOUNT_MAX, RL_AMOUNT_MAX / 2 + 1));
    assert_true(rl__allot_leaves_sync(RL_AMOUNT_MAX, RL_AMOUNT_MAX / 2));
    /* A share moving between min_room and twice it changes nothing either way. */
    bool sync = false;
    const uint64_t shares[] = {30, 12, 9, 12, 19, 15, 10, 20, 11, 10, 9};
    const bool expected[] = {false, false, true, true, true, true, true, false, false, false, true};
    for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++) {
        if (!sync && rl__allot_goes_sync(shares[i], 10)) sync = true;
        else if (sync && rl__allot_leaves_sync(shares[i], 10)) sync = false;
        assert_int_equal(sync, expected[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_rise_is_taken_at_once),
        cmocka_unit_test(a_fall_gives_the_newest_observation_a_quarter),
        cmocka_unit_test(any_demand_keeps_the_rate_above_zero),
        cmocka_unit_test(no_time_elapsed_keeps_the_rate),
        cmocka_unit_test(a_huge_rate_saturates),
        cmocka_unit_test(min_room_is_two_of_the_largest_lease),
        cmocka_unit_test(want_is_what_is_live_plus_the_horizon_or_min_room),
        cmocka_unit_test(needs_carve_for_each_of_its_reasons),
        cmocka_unit_test(sync_has_hysteresis),
    };
    return cmocka_run_group_tests_name("allot policy", tests, NULL, NULL);
}
