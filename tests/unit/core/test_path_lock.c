/* test_path_lock.c — one process at a time on a data file: a second
 * opening (in this process or another) is refused at once, naming the
 * holder's PID; the lock goes with its holder, released or killed -9; the
 * lock file is made with its directory and never needs cleaning up. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/path_lock.h"

typedef struct fixture {
    char dir[64];
    char lock_path[128];
    char data_path[128];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_lock_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->data_path, sizeof f->data_path, "%s/data/journal", f->dir);
    snprintf(f->lock_path, sizeof f->lock_path, "%s/data/journal.lock", f->dir); /* data/ does not exist yet */
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char command[256];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

static void beside_names_the_lock_file(void **state) {
    (void)state;
    char *path = rl__path_lock_beside("data/limits.json");
    assert_string_equal(path, "data/limits.json.lock");
    free(path);
}

static void a_second_opening_in_this_process_is_refused(void **state) {
    fixture *f = *state;
    rl__path_lock *held = NULL, *again = NULL;
    char err[512] = "";
    assert_int_equal(rl__path_lock_acquire(f->lock_path, f->data_path, &held, err, sizeof err), RL_OK);
    assert_int_equal(rl__path_lock_acquire(f->lock_path, f->data_path, &again, err, sizeof err), RL_IO_ERROR);
    assert_null(again);
    char expected[512];
    snprintf(expected, sizeof expected, "%s is in use: this process (pid %ld) has it open already (lock %s)",
             f->data_path, (long)getpid(), f->lock_path);
    if (strstr(err, expected) == NULL) fail_msg("%s", err);
    rl__path_lock_release(held);
    assert_int_equal(rl__path_lock_acquire(f->lock_path, f->data_path, &again, err, sizeof err), RL_OK);
    rl__path_lock_release(again);
    assert_int_equal(access(f->lock_path, F_OK), 0); /* the file stays, holding nothing */
}

/* A child takes the lock and waits; the parent is refused with the
 * child's PID, then takes it once the child is killed -9. */
static void another_process_is_named_and_its_death_frees_the_lock(void **state) {
    fixture *f = *state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        rl__path_lock *lock = NULL;
        char err[512];
        char ok = rl__path_lock_acquire(f->lock_path, f->data_path, &lock, err, sizeof err) == RL_OK ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1) _exit(2);
        pause();
        _exit(0);
    }
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    rl__path_lock *lock = NULL;
    char err[512] = "";
    assert_int_equal(rl__path_lock_acquire(f->lock_path, f->data_path, &lock, err, sizeof err), RL_IO_ERROR);
    char expected[64];
    snprintf(expected, sizeof expected, "pid %ld holds it", (long)child);
    if (strstr(err, expected) == NULL) fail_msg("%s", err);
    assert_int_equal(kill(child, SIGKILL), 0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(rl__path_lock_acquire(f->lock_path, f->data_path, &lock, err, sizeof err), RL_OK);
    rl__path_lock_release(lock);
    close(ready[0]);
    close(ready[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(beside_names_the_lock_file),
        cmocka_unit_test_setup_teardown(a_second_opening_in_this_process_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(another_process_is_named_and_its_death_frees_the_lock, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
