/* support/rlctl_run.h — run the built rlctl (RL_RLCTL_PATH) and keep what it
 * said and how it exited. */
#ifndef RL_TEST_RLCTL_RUN_H
#define RL_TEST_RLCTL_RUN_H

typedef struct rl_test_rlctl_output {
    int code; /* exit status, 128+signal if it died of one */
    char out[65536];
    char err[16384];
} rl_test_rlctl_output;

/* Runs rlctl with args (NULL-terminated, its argv after argv[0]) and env
 * (NULL-terminated "NAME=VALUE" added to its environment, or NULL); its
 * stdout and stderr go through files in dir into *ran (NUL-terminated,
 * truncated). Returns the exit status. Aborts the test if it cannot fork. */
int rl_test_rlctl_run(const char *dir, const char *const *args, const char *const *env, rl_test_rlctl_output *ran);

#endif
