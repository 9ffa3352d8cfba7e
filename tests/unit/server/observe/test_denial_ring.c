/* test_denial_ring.c — the recent denials (server/observe/denial_ring.h):
 * only denials are noted, with what the answer said; newest first over
 * every loop; each loop keeps its share and forgets its oldest; filters by
 * key and lease id (any case); loops noting while readers read (run under
 * TSan too). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/observe/denial_ring.h"
#include "server/observe/observe.h"

/* A reserve answered with a denial of key for lease (NULL key: allowed). */
static rl_api_outcome outcome_of(const char *key, const char *lease, uint64_t requested) {
    rl_api_outcome o;
    memset(&o, 0, sizeof o);
    o.endpoint = RL_API_RESERVE;
    o.http_status = 200;
    o.items = 1;
    o.lease_id = lease;
    if (key == NULL) {
        o.first_result = RL_API_RESULT_ALLOWED;
        o.results[RL_API_RESULT_ALLOWED] = 1;
        return o;
    }
    o.first_result = RL_API_RESULT_DENIED_CAPACITY;
    o.results[RL_API_RESULT_DENIED_CAPACITY] = 1;
    snprintf(o.denied_by_key, sizeof o.denied_by_key, "%s", key);
    o.denied_by.reason = RL_DENIAL_CAPACITY;
    o.denied_by.requested = requested;
    o.denied_by.available = 3;
    o.denied_by.capacity = 10;
    o.first_denied_lease_id = lease;
    o.first_denied_job_id = "job-1";
    o.first_denied_retry_after_ms = 1500;
    return o;
}

static void test_notes_denials_only(void **state) {
    (void)state;
    rl_denial_ring *ring = rl_denial_ring_create(2);
    assert_non_null(ring);
    assert_int_equal(rl_denial_ring_capacity(ring), RL_DENIAL_RING_CAPACITY);
    rl_api_outcome allowed = outcome_of(NULL, "01JD5Z8Q6X4W8N1V0M9R7T3K2A", 0);
    rl_denial_ring_note(ring, 0, &allowed);
    rl_api_outcome completed = {.endpoint = RL_API_COMPLETE, .http_status = 200, .items = 1};
    rl_denial_ring_note(ring, 1, &completed);
    rl_denial_entry out[4];
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 4), 0);
    assert_int_equal(rl_denial_ring_noted_total(ring), 0);

    /* A batch of 3 with 2 denied: the first denied item, and the counts. */
    rl_api_outcome batch = outcome_of("tenant:a:tpm", "01JD5Z8Q6X4W8N1V0M9R7T3K2B", 7);
    batch.endpoint = RL_API_RESERVE_BATCH;
    batch.items = 3;
    batch.results[RL_API_RESULT_ALLOWED] = 1;
    batch.results[RL_API_RESULT_DENIED_EXCEEDS_CAPACITY] = 1;
    batch.denied_by.period_end_unix_ms = 1796083200000u;
    batch.dry_run = true;
    rl_denial_ring_note(ring, 1, &batch);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 4), 1);
    assert_int_equal(out[0].seq, 1);
    assert_true(out[0].at_unix_ms > 1700000000000u);
    assert_int_equal(out[0].endpoint, RL_API_RESERVE_BATCH);
    assert_string_equal(out[0].lease_id, "01JD5Z8Q6X4W8N1V0M9R7T3K2B");
    assert_string_equal(out[0].job_id, "job-1");
    assert_string_equal(out[0].key, "tenant:a:tpm");
    assert_null(out[0].denied_by.key);
    assert_int_equal(out[0].denied_by.reason, RL_DENIAL_CAPACITY);
    assert_int_equal(out[0].denied_by.requested, 7);
    assert_int_equal(out[0].denied_by.available, 3);
    assert_int_equal(out[0].denied_by.capacity, 10);
    assert_int_equal(out[0].denied_by.period_end_unix_ms, 1796083200000u);
    assert_int_equal(out[0].retry_after_ms, 1500);
    assert_int_equal(out[0].items, 3);
    assert_int_equal(out[0].denied_items, 2);
    assert_true(out[0].dry_run);
    /* No lease id or job id (a body that named none): empty strings. */
    rl_api_outcome bare = outcome_of("k", NULL, 1);
    bare.first_denied_job_id = NULL;
    rl_denial_ring_note(ring, 0, &bare);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 1), 1);
    assert_string_equal(out[0].lease_id, "");
    assert_string_equal(out[0].job_id, "");
    /* A loop the ring was not made for is not noted (never written past). */
    rl_denial_ring_note(ring, 2, &bare);
    assert_int_equal(rl_denial_ring_noted_total(ring), 2);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 0), 0);
    rl_denial_ring_destroy(ring);
    rl_denial_ring_destroy(NULL);
    assert_null(rl_denial_ring_create(0));
}

static void test_newest_first_over_loops_and_filters(void **state) {
    (void)state;
    rl_denial_ring *ring = rl_denial_ring_create(3);
    const char *leases[] = {"01JD5Z8Q6X4W8N1V0M9R7T3K20", "01JD5Z8Q6X4W8N1V0M9R7T3K21", "01JD5Z8Q6X4W8N1V0M9R7T3K22",
                            "01JD5Z8Q6X4W8N1V0M9R7T3K23", "01jd5z8q6x4w8n1v0m9r7t3k24"};
    for (uint32_t i = 0; i < 5; i++) {
        rl_api_outcome o = outcome_of(i % 2 == 0 ? "even" : "odd", leases[i], i);
        rl_denial_ring_note(ring, (i * 2) % 3, &o);
    }
    rl_denial_entry out[8];
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 8), 5);
    for (int i = 0; i < 5; i++) assert_int_equal(out[i].denied_by.requested, 4 - i);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, 2), 2);
    assert_int_equal(out[0].denied_by.requested, 4);
    assert_int_equal(out[1].denied_by.requested, 3);
    rl_denial_filter odd = {"odd", NULL};
    assert_int_equal(rl_denial_ring_read(ring, &odd, out, 8), 2);
    assert_int_equal(out[0].denied_by.requested, 3);
    assert_int_equal(out[1].denied_by.requested, 1);
    /* A lease id in either case names the same lease. */
    rl_denial_filter lease = {"", "01JD5Z8Q6X4W8N1V0M9R7T3K24"};
    assert_int_equal(rl_denial_ring_read(ring, &lease, out, 8), 1);
    assert_string_equal(out[0].lease_id, "01jd5z8q6x4w8n1v0m9r7t3k24");
    rl_denial_filter both = {"even", "01JD5Z8Q6X4W8N1V0M9R7T3K21"};
    assert_int_equal(rl_denial_ring_read(ring, &both, out, 8), 0);
    rl_denial_ring_destroy(ring);
}

/* Each loop keeps its share: a busy loop forgets its own oldest, not the
 * quiet loop's. */
static void test_each_loop_keeps_its_share(void **state) {
    (void)state;
    rl_denial_ring *ring = rl_denial_ring_create(2);
    size_t share = RL_DENIAL_RING_CAPACITY / 2;
    rl_api_outcome quiet = outcome_of("quiet", "01JD5Z8Q6X4W8N1V0M9R7T3K2Q", 0);
    rl_denial_ring_note(ring, 1, &quiet);
    for (uint64_t i = 1; i <= share + 10; i++) {
        rl_api_outcome busy = outcome_of("busy", "01JD5Z8Q6X4W8N1V0M9R7T3K2B", i);
        rl_denial_ring_note(ring, 0, &busy);
    }
    assert_int_equal(rl_denial_ring_noted_total(ring), share + 11);
    rl_denial_entry *out = calloc(RL_DENIAL_RING_CAPACITY, sizeof *out);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, RL_DENIAL_RING_CAPACITY), share + 1);
    assert_int_equal(out[0].denied_by.requested, share + 10); /* the newest */
    assert_int_equal(out[share - 1].denied_by.requested, 11); /* the oldest of the busy loop kept */
    assert_string_equal(out[share].key, "quiet");
    free(out);
    rl_denial_ring_destroy(ring);
    /* Many loops: each keeps at least RL_DENIAL_RING_MIN_PER_LOOP. */
    ring = rl_denial_ring_create(64);
    assert_int_equal(rl_denial_ring_capacity(ring), 64 * RL_DENIAL_RING_MIN_PER_LOOP);
    rl_denial_ring_destroy(ring);
}

/* The observer's fan-out reaches the ring. */
static void test_observer_feeds_the_ring(void **state) {
    (void)state;
    rl_observe watchers = {0};
    rl_api_outcome o = outcome_of("k", "01JD5Z8Q6X4W8N1V0M9R7T3K2A", 1);
    /* no watcher set: no observer at all (the loops do not even read the clock) */
    assert_null(rl_observe_http_observer(&watchers).answered);
    rl_observe_answered(&watchers, 0, &o, 10); /* and the fan-out calls nobody */
    watchers.denials = rl_denial_ring_create(1);
    rl_http_observer observer = rl_observe_http_observer(&watchers);
    assert_non_null(observer.answered);
    observer.answered(observer.context, 0, &o, 10);
    rl_denial_entry out[1];
    assert_int_equal(rl_denial_ring_read(watchers.denials, NULL, out, 1), 1);
    assert_string_equal(out[0].key, "k");
    rl_denial_ring_destroy(watchers.denials);
}

#define WRITERS 3
#define NOTES_EACH 3000

typedef struct writer_arg {
    rl_denial_ring *ring;
    uint32_t loop;
} writer_arg;

static void *write_denials(void *arg) {
    writer_arg *w = arg;
    char key[32];
    snprintf(key, sizeof key, "loop:%u", w->loop);
    for (uint64_t i = 1; i <= NOTES_EACH; i++) {
        rl_api_outcome o = outcome_of(key, "01JD5Z8Q6X4W8N1V0M9R7T3K2A", i);
        rl_denial_ring_note(w->ring, w->loop, &o);
    }
    return NULL;
}

/* Loops note while a reader reads: every entry read is whole (its key and
 * figures from one note), and newest first. */
static void test_loops_note_while_read(void **state) {
    (void)state;
    rl_denial_ring *ring = rl_denial_ring_create(WRITERS);
    pthread_t threads[WRITERS];
    writer_arg args[WRITERS];
    for (uint32_t i = 0; i < WRITERS; i++) {
        args[i] = (writer_arg){ring, i};
        assert_int_equal(pthread_create(&threads[i], NULL, write_denials, &args[i]), 0);
    }
    rl_denial_entry *out = calloc(RL_DENIAL_RING_CAPACITY, sizeof *out);
    for (int round = 0; round < 50; round++) {
        size_t n = rl_denial_ring_read(ring, NULL, out, RL_DENIAL_RING_CAPACITY);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(strncmp(out[i].key, "loop:", 5), 0);
            assert_true(out[i].denied_by.requested >= 1 && out[i].denied_by.requested <= NOTES_EACH);
            if (i > 0) assert_true(out[i - 1].seq > out[i].seq);
        }
    }
    for (uint32_t i = 0; i < WRITERS; i++) pthread_join(threads[i], NULL);
    assert_int_equal(rl_denial_ring_noted_total(ring), WRITERS * NOTES_EACH);
    assert_int_equal(rl_denial_ring_read(ring, NULL, out, RL_DENIAL_RING_CAPACITY), rl_denial_ring_capacity(ring));
    free(out);
    rl_denial_ring_destroy(ring);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notes_denials_only),
        cmocka_unit_test(test_newest_first_over_loops_and_filters),
        cmocka_unit_test(test_each_loop_keeps_its_share),
        cmocka_unit_test(test_observer_feeds_the_ring),
        cmocka_unit_test(test_loops_note_while_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
