/* rlctl_run.c — rlctl as a child process (rlctl_run.h). */
#include "rlctl_run.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void slurp(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "rb");
    size_t n = f != NULL ? fread(out, 1, size - 1, f) : 0;
    out[n] = '\0';
    if (f != NULL) fclose(f);
}

int rl_test_rlctl_run(const char *dir, const char *const *args, const char *const *env, rl_test_rlctl_output *ran) {
    char out_path[320], err_path[320];
    snprintf(out_path, sizeof out_path, "%s/rlctl.out", dir);
    snprintf(err_path, sizeof err_path, "%s/rlctl.err", dir);
    const char *argv[64];
    int n = 0;
    argv[n++] = RL_RLCTL_PATH;
    for (int i = 0; args[i] != NULL && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork failed");
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0) _exit(120);
        dup2(o, 1);
        dup2(e, 2);
        for (int i = 0; env != NULL && env[i] != NULL; i++) putenv((char *)env[i]);
        execv(RL_RLCTL_PATH, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    ran->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    slurp(out_path, ran->out, sizeof ran->out);
    slurp(err_path, ran->err, sizeof ran->err);
    return ran->code;
}
