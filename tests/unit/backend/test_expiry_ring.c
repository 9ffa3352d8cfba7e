/* test_expiry_ring.c — the FIFO of rolling reservations: order, tombstones,
 * sequence numbers that survive growth and shrinking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backend/memory/expiry_ring.h"

static void push(rl_expiry_ring *ring, uint64_t amount, uint64_t at_ms, uint64_t *seq) {
    assert_true(rl__expiry_ring_reserve_one(ring));
    *seq = rl__expiry_ring_push(ring, amount, at_ms);
}

static void expires_in_order_and_skips_tombstones(void **state) {
    (void)state;
    rl_expiry_ring ring;
    rl__expiry_ring_init(&ring);
    assert_null(rl__expiry_ring_front(&ring));
    assert_int_equal(rl__expiry_ring_tail_ms(&ring), 0);
    uint64_t seqs[100];
    for (uint64_t i = 0; i < 100; i++) push(&ring, i + 1, 1000 + i, &seqs[i]);
    assert_int_equal(rl__expiry_ring_tail_ms(&ring), 1099);
    assert_int_equal(ring.live, 100);
    for (uint64_t i = 0; i < 100; i += 2) rl__expiry_ring_remove(&ring, seqs[i]);
    assert_int_equal(ring.live, 50);
    assert_false(rl_expiry_ring_holds(&ring, seqs[0]));
    assert_true(rl_expiry_ring_holds(&ring, seqs[1]));
    for (uint64_t i = 1; i < 100; i += 2) {
        const rl_expiry_slot *front = rl__expiry_ring_front(&ring);
        assert_non_null(front);
        assert_int_equal(front->amount, i + 1);
        assert_int_equal(front->at_ms, 1000 + i);
        rl__expiry_ring_pop(&ring);
        assert_false(rl_expiry_ring_holds(&ring, seqs[i]));
    }
    assert_null(rl__expiry_ring_front(&ring));
    assert_int_equal(ring.live, 0);
    rl__expiry_ring_free(&ring);
}

static void sequence_numbers_survive_growth_and_shrinking(void **state) {
    (void)state;
    rl_expiry_ring ring;
    rl__expiry_ring_init(&ring);
    enum { N = 20000 };
    static uint64_t seqs[N];
    /* wrap around a few times first, then grow past many doublings */
    for (uint64_t i = 0; i < 50; i++) {
        push(&ring, 1, i, &seqs[0]);
        rl__expiry_ring_front(&ring);
        rl__expiry_ring_pop(&ring);
    }
    for (uint64_t i = 0; i < N; i++) push(&ring, i + 1, 100 + i, &seqs[i]);
    for (uint64_t i = 0; i < N; i++) {
        assert_true(rl_expiry_ring_holds(&ring, seqs[i]));
        assert_int_equal(rl_expiry_ring_at(&ring, seqs[i])->amount, i + 1);
    }
    /* pop most of it: the ring shrinks, the rest keep their numbers */
    for (uint64_t i = 0; i < N - 100; i++) {
        rl__expiry_ring_front(&ring);
        rl__expiry_ring_pop(&ring);
    }
    assert_true(ring.mask + 1 < N);
    for (uint64_t i = N - 100; i < N; i++) assert_int_equal(rl_expiry_ring_at(&ring, seqs[i])->amount, i + 1);
    rl__expiry_ring_free(&ring);
}

/* Whether the ring's slots lie in the ring itself. */
static bool slots_inside(const rl_expiry_ring *ring) {
    const char *slots = (const char *)ring->slots, *start = (const char *)ring;
    return slots >= start && slots < start + sizeof *ring;
}

/* A ring of a reservation or two (most limits', a million tenants' made
 * from a template) takes no block of its own: one that small would wait
 * among glibc's fastbins once freed from another thread, keeping the free
 * memory around it from going back to the kernel. */
static void a_couple_of_reservations_take_no_block(void **state) {
    (void)state;
    rl_expiry_ring ring;
    rl__expiry_ring_init(&ring);
    uint64_t seq[3];
    push(&ring, 5, 100, &seq[0]);
    push(&ring, 6, 200, &seq[1]);
    assert_true(slots_inside(&ring));
    push(&ring, 7, 300, &seq[2]); /* a third: a block of its own, the first two moved along */
    assert_false(slots_inside(&ring));
    for (int i = 0; i < 3; i++) assert_int_equal(rl_expiry_ring_at(&ring, seq[i])->amount, 5 + i);
    rl__expiry_ring_free(&ring);
    push(&ring, 8, 400, &seq[0]); /* freed, then used again */
    assert_true(slots_inside(&ring));
    rl__expiry_ring_free(&ring);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expires_in_order_and_skips_tombstones),
        cmocka_unit_test(sequence_numbers_survive_growth_and_shrinking),
        cmocka_unit_test(a_couple_of_reservations_take_no_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
