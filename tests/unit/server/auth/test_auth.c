/* test_auth.c — which path needs which token, the Authorization header's
 * forms, 401 and 403, and a reload that keeps the old tokens when the file
 * went bad (server/auth/auth.h). */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/auth/auth.h"

#define ADMIN "admin-0123456789abcdef"
#define DATA "data-0123456789abcdef"

static void write_file(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    fclose(file);
}

static rl_auth_verdict verdict(const rl_auth *auth, const char *path, const char *authorization) {
    rl_auth_decision decision;
    rl_auth_check(auth, path, strlen(path), authorization, authorization != NULL ? strlen(authorization) : 0,
                  &decision);
    assert_true((decision.verdict == RL_AUTH_PASS) == (decision.detail == NULL));
    return decision.verdict;
}

static void test_scopes(void **state) {
    (void)state;
    static const struct {
        const char *path;
        rl_auth_scope scope;
    } cases[] = {
        {"/v1/admin/limits", RL_AUTH_SCOPE_ADMIN},    {"/v1/admin/limits/a:b/c", RL_AUTH_SCOPE_ADMIN},
        {"/v1/admin", RL_AUTH_SCOPE_ADMIN},           {"/v1/admin/", RL_AUTH_SCOPE_ADMIN},
        {"/v1/admin/denials", RL_AUTH_SCOPE_ADMIN},   {"/v1/administrator", RL_AUTH_SCOPE_OPEN},
        {"/v1/reserve", RL_AUTH_SCOPE_DATA},          {"/v1/reserve/batch", RL_AUTH_SCOPE_DATA},
        {"/v1/complete", RL_AUTH_SCOPE_DATA},         {"/v1/complete/batch", RL_AUTH_SCOPE_DATA},
        {"/metrics", RL_AUTH_SCOPE_METRICS},          {"/healthz", RL_AUTH_SCOPE_OPEN},
        {"/console", RL_AUTH_SCOPE_OPEN},             {"/console/app.js", RL_AUTH_SCOPE_OPEN},
        {"/", RL_AUTH_SCOPE_OPEN},                    {"", RL_AUTH_SCOPE_OPEN},
        {"/V1/admin/limits", RL_AUTH_SCOPE_OPEN}, /* the router answers 404: nothing behind it */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (rl_auth_scope_of(cases[i].path, strlen(cases[i].path)) != cases[i].scope) fail_msg("%s", cases[i].path);
}

static void test_bearer_header(void **state) {
    (void)state;
    const char *token;
    size_t len;
    assert_true(rl_auth_bearer_token("Bearer abc", 10, &token, &len));
    assert_int_equal(len, 3);
    assert_memory_equal(token, "abc", 3);
    assert_true(rl_auth_bearer_token("bearer   abc  ", 14, &token, &len));
    assert_int_equal(len, 3);
    assert_true(rl_auth_bearer_token("BEARER abc", 10, &token, &len));
    assert_false(rl_auth_bearer_token("Bearer", 6, &token, &len));
    assert_false(rl_auth_bearer_token("Bearer ", 7, &token, &len));
    assert_false(rl_auth_bearer_token("Bearer    ", 10, &token, &len));
    assert_false(rl_auth_bearer_token("Bearerabc", 9, &token, &len));
    assert_false(rl_auth_bearer_token("Basic YWxhZGRpbjpvcGVu", 22, &token, &len));
    assert_false(rl_auth_bearer_token("Bearer abc def", 14, &token, &len));
    assert_false(rl_auth_bearer_token("", 0, &token, &len));
}

static void test_checks(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_test_auth_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char admin_path[64], data_path[64];
    snprintf(admin_path, sizeof admin_path, "%s/admin", dir);
    snprintf(data_path, sizeof data_path, "%s/data", dir);
    write_file(admin_path, ADMIN "\n");
    write_file(data_path, "# the services\n" DATA "\n");
    char err[512];

    /* Nothing set: every path open, and no auth is needed at all. */
    rl_auth_options none = {NULL, "", false};
    rl_auth *auth = NULL;
    assert_true(rl_auth_create(&none, &auth, err, sizeof err));
    assert_false(rl_auth_enabled(auth));
    assert_int_equal(verdict(auth, "/v1/admin/limits", NULL), RL_AUTH_PASS);
    rl_auth_destroy(auth);
    assert_int_equal(verdict(NULL, "/v1/admin/limits", NULL), RL_AUTH_PASS);

    /* The admin file alone: the data paths and /metrics stay open. */
    rl_auth_options admin_only = {admin_path, NULL, false};
    assert_true(rl_auth_create(&admin_only, &auth, err, sizeof err));
    assert_true(rl_auth_enabled(auth));
    assert_true(rl_auth_guards_admin(auth));
    assert_false(rl_auth_guards_data(auth));
    assert_int_equal(verdict(auth, "/v1/admin/limits", NULL), RL_AUTH_UNAUTHORIZED);
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Basic " ADMIN), RL_AUTH_UNAUTHORIZED);
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Bearer " DATA), RL_AUTH_FORBIDDEN);
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Bearer " ADMIN), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/v1/reserve", NULL), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/metrics", NULL), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/healthz", "Bearer wrong"), RL_AUTH_PASS);
    rl_auth_destroy(auth);

    /* Both, and /metrics: a data token reserves and reads metrics, never
     * administers; an admin token does everything. */
    rl_auth_options both = {admin_path, data_path, true};
    assert_true(rl_auth_create(&both, &auth, err, sizeof err));
    assert_int_equal(verdict(auth, "/v1/reserve", NULL), RL_AUTH_UNAUTHORIZED);
    assert_int_equal(verdict(auth, "/v1/reserve/batch", "Bearer " DATA), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/v1/complete", "Bearer " ADMIN), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/v1/complete", "Bearer " DATA "x"), RL_AUTH_FORBIDDEN);
    assert_int_equal(verdict(auth, "/v1/admin/audit", "Bearer " DATA), RL_AUTH_FORBIDDEN);
    assert_int_equal(verdict(auth, "/metrics", NULL), RL_AUTH_UNAUTHORIZED);
    assert_int_equal(verdict(auth, "/metrics", "Bearer " DATA), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/metrics", "Bearer " ADMIN), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/healthz", NULL), RL_AUTH_PASS);

    /* SIGHUP: a new token replaces the old one; a bad file keeps the old. */
    FILE *log = tmpfile();
    assert_non_null(log);
    write_file(admin_path, "admin-rotated-0123456789\n");
    assert_true(rl_auth_reload(auth, log));
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Bearer " ADMIN), RL_AUTH_FORBIDDEN);
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Bearer admin-rotated-0123456789"), RL_AUTH_PASS);
    write_file(admin_path, "admin-rotated-0123456789\nshort\n");
    unlink(data_path);
    assert_false(rl_auth_reload(auth, log));
    assert_int_equal(verdict(auth, "/v1/admin/limits", "Bearer admin-rotated-0123456789"), RL_AUTH_PASS);
    assert_int_equal(verdict(auth, "/v1/reserve", "Bearer " DATA), RL_AUTH_PASS);
    char said[2048] = "";
    rewind(log);
    size_t n = fread(said, 1, sizeof said - 1, log);
    said[n] = '\0';
    fclose(log);
    assert_non_null(strstr(said, "admin.tokens_file reloaded: 1 tokens"));
    assert_non_null(strstr(said, "admin.tokens_file not reloaded, its previous tokens stay"));
    assert_non_null(strstr(said, ":2: a token must be 16..512 characters"));
    assert_non_null(strstr(said, "data.tokens_file not reloaded"));
    rl_auth_destroy(auth);

    /* Refused at start: a bad file named with its line, a missing one, and
     * a token required that no file could give. */
    write_file(admin_path, ADMIN "\n");
    write_file(data_path, DATA "\n" DATA "\n");
    assert_false(rl_auth_create(&both, &auth, err, sizeof err));
    assert_null(auth);
    assert_non_null(strstr(err, data_path));
    assert_non_null(strstr(err, ":2: the same token as line 1"));
    unlink(data_path);
    assert_false(rl_auth_create(&both, &auth, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));
    rl_auth_options metrics_alone = {NULL, NULL, true};
    assert_false(rl_auth_create(&metrics_alone, &auth, err, sizeof err));
    assert_non_null(strstr(err, "metrics.require_token needs"));
    unlink(admin_path);
    rmdir(dir);
}

/* Loops check while the signal thread reloads: a token in every version of
 * the file always passes, and nothing is read after it is freed (TSan and
 * ASan watch). */
typedef struct checker {
    const rl_auth *auth;
    atomic_bool *stop;
    long checks, failures;
} checker;

static void *check_until_stopped(void *arg) {
    checker *c = arg;
    while (!atomic_load(c->stop)) {
        c->failures += verdict(c->auth, "/v1/admin/limits", "Bearer " ADMIN) != RL_AUTH_PASS;
        rl_auth_verdict rotating = verdict(c->auth, "/v1/admin/limits", "Bearer rotating-0123456789abcdef");
        c->failures += rotating != RL_AUTH_PASS && rotating != RL_AUTH_FORBIDDEN;
        c->checks++;
    }
    return NULL;
}

static void test_reload_while_checking(void **state) {
    (void)state;
    char path[] = "/tmp/rl_test_auth_reload_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, ADMIN "\n");
    rl_auth_options options = {path, NULL, false};
    rl_auth *auth = NULL;
    char err[512];
    assert_true(rl_auth_create(&options, &auth, err, sizeof err));
    atomic_bool stop;
    atomic_init(&stop, false);
    checker checkers[2] = {{auth, &stop, 0, 0}, {auth, &stop, 0, 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&threads[i], NULL, check_until_stopped, &checkers[i]), 0);
    FILE *log = fopen("/dev/null", "w");
    assert_non_null(log);
    for (int i = 0; i < 200; i++) {
        write_file(path, i % 2 == 0 ? ADMIN "\nrotating-0123456789abcdef\n" : "# rotated out\n" ADMIN "\n");
        assert_true(rl_auth_reload(auth, log));
    }
    fclose(log);
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(checkers[i].failures, 0);
        assert_true(checkers[i].checks > 0);
    }
    rl_auth_destroy(auth);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_bearer_header),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_reload_while_checking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
