/* test_admin_writer.c — puts queued while a group is being done become the
 * next group, in order, each answered once; stop drains. The group function
 * here is the test's: it holds the first group until the test has queued
 * the rest, so what is grouped with what is decided, not timed. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/api/admin_writer.h"

enum { JOBS = 50 };

typedef struct recorder {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    bool holding;        /* the group function waits while true */
    int groups;          /* calls so far */
    size_t sizes[JOBS];  /* each call's count */
    int in_group;        /* 1 while a call is under way */
    int done_count;
    int done_order[RL_ADMIN_WRITER_MAX_GROUP + 64];
} recorder;

static recorder rec;

static void group_fn(void *context, rl_service_put *puts, size_t count) {
    recorder *r = context;
    pthread_mutex_lock(&r->mutex);
    r->sizes[r->groups++] = count;
    r->in_group = 1;
    pthread_cond_broadcast(&r->changed);
    while (r->holding) pthread_cond_wait(&r->changed, &r->mutex);
    r->in_group = 0;
    pthread_mutex_unlock(&r->mutex);
    for (size_t i = 0; i < count; i++) {
        puts[i].status = RL_OK;
        puts[i].limit_status = puts[i].def.capacity % 2 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
    }
}

static void job_done(rl_admin_job *job) {
    pthread_mutex_lock(&rec.mutex);
    rec.done_order[rec.done_count++] = (int)job->put.def.capacity;
    /* the answer is the group function's, for this job's own definition */
    if (job->put.status != RL_OK ||
        job->put.limit_status != (job->put.def.capacity % 2 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE))
        rec.done_order[rec.done_count - 1] = -1;
    pthread_cond_broadcast(&rec.changed);
    pthread_mutex_unlock(&rec.mutex);
}

static rl_admin_job jobs[JOBS];

static void init_jobs(void) {
    memset(&rec, 0, sizeof rec);
    pthread_mutex_init(&rec.mutex, NULL);
    pthread_cond_init(&rec.changed, NULL);
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < JOBS; i++) {
        snprintf(jobs[i].put.def.key, sizeof jobs[i].put.def.key, "k%d", i);
        jobs[i].put.def.capacity = (uint64_t)i;
        jobs[i].done = job_done;
    }
}

static void wait_for(bool (*condition)(void)) {
    pthread_mutex_lock(&rec.mutex);
    while (!condition()) pthread_cond_wait(&rec.changed, &rec.mutex);
    pthread_mutex_unlock(&rec.mutex);
}

static bool first_group_under_way(void) { return rec.in_group == 1; }
static bool all_done(void) { return rec.done_count == JOBS; }

/* A writer whose first group (jobs[0]) is held under way while jobs[1..]
 * and then extra[0..extra_count) are queued behind it. */
static rl_admin_writer *queued_behind_a_group(rl_admin_job *extra, size_t extra_count) {
    rec.holding = true;
    rl_admin_writer *writer = rl_admin_writer_start(group_fn, &rec);
    assert_non_null(writer);
    assert_true(rl_admin_writer_submit(writer, &jobs[0]));
    wait_for(first_group_under_way);
    for (int i = 1; i < JOBS; i++) assert_true(rl_admin_writer_submit(writer, &jobs[i]));
    for (size_t i = 0; i < extra_count; i++) assert_true(rl_admin_writer_submit(writer, &extra[i]));
    return writer;
}

static void release(void) {
    pthread_mutex_lock(&rec.mutex);
    assert_int_equal(rec.done_count, 0); /* none answered before its group is done */
    rec.holding = false;
    pthread_cond_broadcast(&rec.changed);
    pthread_mutex_unlock(&rec.mutex);
}

static void test_waiting_puts_are_one_group(void **state) {
    (void)state;
    init_jobs();
    rl_admin_writer *writer = queued_behind_a_group(NULL, 0);
    release();
    wait_for(all_done);
    assert_int_equal(rec.groups, 2);
    assert_int_equal(rec.sizes[0], 1);
    assert_int_equal(rec.sizes[1], JOBS - 1);
    for (int i = 0; i < JOBS; i++) assert_int_equal(rec.done_order[i], i); /* in order, each its own answer */
    rl_admin_writer_stop(writer);
}

/* What is queued when stop is called is still done before stop returns. */
static void test_stop_drains(void **state) {
    (void)state;
    init_jobs();
    rl_admin_writer *writer = queued_behind_a_group(NULL, 0);
    release();
    rl_admin_writer_stop(writer); /* joins: every done has run */
    assert_int_equal(rec.done_count, JOBS);
    rl_admin_writer_stop(NULL);
}

/* More than a group holds waits for the next. */
static void test_groups_are_bounded(void **state) {
    (void)state;
    init_jobs();
    static rl_admin_job many[RL_ADMIN_WRITER_MAX_GROUP];
    memset(many, 0, sizeof many);
    for (size_t i = 0; i < RL_ADMIN_WRITER_MAX_GROUP; i++) many[i].done = job_done;
    rl_admin_writer *writer = queued_behind_a_group(many, RL_ADMIN_WRITER_MAX_GROUP);
    release();
    rl_admin_writer_stop(writer);
    assert_int_equal(rec.groups, 3);
    assert_int_equal(rec.sizes[1], RL_ADMIN_WRITER_MAX_GROUP);
    assert_int_equal(rec.sizes[2], JOBS - 1);
}

/* A job of many changes (a preset's apply) is one piece of a group: when
 * it does not fit beside what is queued before it, it waits whole for the
 * next group; its done comes once, after every one of its puts is answered. */
static int many_done_calls, many_answered;

static void many_done(rl_admin_job *job) {
    pthread_mutex_lock(&rec.mutex);
    many_done_calls++;
    for (size_t i = 0; i < job->count; i++) {
        rl_limit_status expected = job->puts[i].def.capacity % 2 ? RL_LIMIT_STATUS_DECREASING : RL_LIMIT_STATUS_ACTIVE;
        if (job->puts[i].status == RL_OK && job->puts[i].limit_status == expected) many_answered++;
    }
    pthread_cond_broadcast(&rec.changed);
    pthread_mutex_unlock(&rec.mutex);
}

static void test_a_job_of_many_puts_is_never_split(void **state) {
    (void)state;
    init_jobs();
    enum { MANY = RL_ADMIN_WRITER_MAX_GROUP - 10 };
    static rl_service_put puts[MANY];
    memset(puts, 0, sizeof puts);
    for (size_t i = 0; i < MANY; i++) puts[i].def.capacity = i;
    rl_admin_job many = {.puts = puts, .count = MANY, .done = many_done};
    many_done_calls = many_answered = 0;
    rl_admin_writer *writer = queued_behind_a_group(&many, 1);
    /* Never more than a group, never none. */
    rl_admin_job empty = {.puts = puts, .count = 0, .done = many_done};
    rl_admin_job too_many = {.puts = puts, .count = RL_ADMIN_WRITER_MAX_GROUP + 1, .done = many_done};
    assert_false(rl_admin_writer_submit(writer, &empty));
    assert_false(rl_admin_writer_submit(writer, &too_many));
    release();
    rl_admin_writer_stop(writer);
    assert_int_equal(rec.groups, 3);
    assert_int_equal(rec.sizes[1], JOBS - 1);
    assert_int_equal(rec.sizes[2], MANY);
    assert_int_equal(many_done_calls, 1);
    assert_int_equal(many_answered, MANY);
    assert_int_equal(rec.done_count, JOBS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiting_puts_are_one_group),
        cmocka_unit_test(test_stop_drains),
        cmocka_unit_test(test_groups_are_bounded),
        cmocka_unit_test(test_a_job_of_many_puts_is_never_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
