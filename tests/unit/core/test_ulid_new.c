/* test_ulid_new.c — generated lease ids: valid, increasing, unique across threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ratelimiter/types.h"
#include "ratelimiter/ulid.h"

static void ids_are_valid_and_strictly_increasing(void **state) {
    (void)state;
    char previous[RL_ULID_TEXT_SIZE] = "";
    for (int i = 0; i < 100000; i++) {
        char id[RL_ULID_TEXT_SIZE];
        assert_non_null(rl_ulid_new(id));
        assert_int_equal(strlen(id), RL_ULID_LEN);
        assert_true(rl_ulid_is_valid(id, RL_ULID_LEN));
        assert_true(strcmp(previous, id) < 0); /* Crockford order is ASCII order */
        memcpy(previous, id, sizeof id);
    }
}

static void the_time_part_is_now(void **state) {
    (void)state;
    char id[RL_ULID_TEXT_SIZE];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t before_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    rl_ulid_new(id);
    uint64_t hi, lo;
    assert_true(rl_ulid_decode(id, RL_ULID_LEN, &hi, &lo));
    uint64_t id_ms = hi >> 16;
    assert_true(id_ms >= before_ms && id_ms < before_ms + 60000);
}

enum { THREADS = 8, PER_THREAD = 20000 };
static char ids[THREADS * PER_THREAD][RL_ULID_TEXT_SIZE]; /* thread t fills [t*PER_THREAD, ...) */

static void *make_ids(void *arg) {
    char (*mine)[RL_ULID_TEXT_SIZE] = arg;
    for (int i = 0; i < PER_THREAD; i++) rl_ulid_new(mine[i]);
    return NULL;
}

static int by_text(const void *a, const void *b) { return strcmp(a, b); }

static void threads_never_get_the_same_id(void **state) {
    (void)state;
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, make_ids, ids[t * PER_THREAD]);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    qsort(ids, (size_t)THREADS * PER_THREAD, RL_ULID_TEXT_SIZE, by_text);
    for (size_t i = 1; i < (size_t)THREADS * PER_THREAD; i++) assert_true(strcmp(ids[i - 1], ids[i]) < 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_are_valid_and_strictly_increasing),
        cmocka_unit_test(the_time_part_is_now),
        cmocka_unit_test(threads_never_get_the_same_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
