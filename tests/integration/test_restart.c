/* test_restart.c — the daemon's life: limits survive a restart on the same
 * registry file; a corrupt, invalid or unreadable registry or a bad config
 * stops start-up with a clear message and a non-zero status; SIGTERM and
 * SIGINT stop it cleanly (status 0); one daemon on its data files; the
 * audit log kept whole without a journal. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/daemon.h"

static long call(rl_test_daemon *daemon, const char *method, const char *path, const char *body,
                 char *out, size_t out_size) {
    rl_test_response r;
    long status = rl_test_daemon_http(daemon, method, path, body, &r);
    if (status == 0) fail_msg("%s %s failed: %s", method, path, r.error);
    snprintf(out, out_size, "%s", r.body);
    rl_test_response_free(&r);
    return status;
}

static const char *const tpm_def =
    "{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"kind\":\"rolling\",\"capacity\":30000,"
    "\"window_seconds\":60,\"timeout_seconds\":0,\"unit\":\"tokens\",\"description\":\"TPM\","
    "\"overage\":\"deny\"}";
static const char *const concurrency_def =
    "{\"key\":\"global:llm:openai:gpt-4o:concurrency\",\"kind\":\"concurrency\",\"capacity\":200,"
    "\"window_seconds\":0,\"timeout_seconds\":300,\"unit\":\"inflight\",\"description\":\"\","
    "\"overage\":\"debt\"}";

static void test_limits_survive_restart(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    char body[8192], text[8192];

    /* No registry file yet: the daemon starts empty. */
    assert_true(rl_test_daemon_start(&d, NULL));
    rl_test_daemon_read_stderr(&d, text, sizeof text);
    assert_non_null(strstr(text, "(backend memory, 0 limits, 2 threads)"));
    assert_int_equal(call(&d, "GET", "/healthz", NULL, body, sizeof body), 200);
    assert_string_equal(body, "{\"ok\":true,\"backend\":\"memory\",\"limits\":0}");

    assert_int_equal(call(&d, "PUT", "/v1/admin/limits", tpm_def, body, sizeof body), 200);
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits", concurrency_def, body, sizeof body), 200);
    assert_int_equal(access(d.registry_path, F_OK), 0); /* the first put created the file */
    assert_int_equal(rl_test_daemon_stop(&d), 0);

    /* Same registry, new process: both limits, exactly as defined. */
    assert_true(rl_test_daemon_start(&d, NULL));
    rl_test_daemon_read_stderr(&d, text, sizeof text);
    assert_non_null(strstr(text, "(backend memory, 2 limits, 2 threads)"));
    assert_int_equal(call(&d, "GET", "/healthz", NULL, body, sizeof body), 200);
    assert_string_equal(body, "{\"ok\":true,\"backend\":\"memory\",\"limits\":2}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:tpm", NULL, body,
                          sizeof body),
                     200);
    char wanted[1024];
    snprintf(wanted, sizeof wanted, "{\"limit\":{\"definition\":%s,", tpm_def);
    assert_true(strncmp(body, wanted, strlen(wanted)) == 0);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:concurrency", NULL,
                          body, sizeof body),
                     200);
    snprintf(wanted, sizeof wanted, "{\"limit\":{\"definition\":%s,", concurrency_def);
    assert_true(strncmp(body, wanted, strlen(wanted)) == 0);

    /* A change after the restart survives the next one too; SIGINT is clean as well. */
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits",
                          "{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"kind\":\"rolling\","
                          "\"capacity\":45000,\"window_seconds\":60}",
                          body, sizeof body),
                     200);
    assert_int_equal(rl_test_daemon_stop_with(&d, SIGINT), 0);
    assert_true(rl_test_daemon_start(&d, NULL));
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:tpm", NULL, body,
                          sizeof body),
                     200);
    assert_non_null(strstr(body, "\"capacity\":45000"));
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_read_stderr(&d, text, sizeof text);
    assert_non_null(strstr(text, "SIGTERM received"));
    rl_test_daemon_cleanup(&d);
}

/* A DELETE, once answered, survives a kill -9: the registry no longer has
 * the limit, and the journal's replay brings back neither it nor what it
 * held (a key put again starts empty); the other limits keep their usage. */
static void test_a_delete_survives_kill(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    char body[8192];
    assert_true(rl_test_daemon_start(&d, NULL));
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits", tpm_def, body, sizeof body), 200);
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits", concurrency_def, body, sizeof body), 200);
    const char *reserve =
        "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\",\"requirements\":["
        "{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"amount\":1800},"
        "{\"key\":\"global:llm:openai:gpt-4o:concurrency\",\"amount\":1}]}";
    assert_int_equal(call(&d, "POST", "/v1/reserve", reserve, body, sizeof body), 200);
    assert_int_equal(call(&d, "DELETE", "/v1/admin/limits/global:llm:openai:gpt-4o:tpm", NULL, body, sizeof body),
                     200);
    assert_int_equal(rl_test_daemon_stop_with(&d, SIGKILL), 128 + SIGKILL);

    assert_true(rl_test_daemon_start(&d, NULL));
    assert_int_equal(call(&d, "GET", "/healthz", NULL, body, sizeof body), 200);
    assert_string_equal(body, "{\"ok\":true,\"backend\":\"memory\",\"limits\":1}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:tpm", NULL, body, sizeof body), 404);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:concurrency", NULL, body,
                          sizeof body),
                     200);
    assert_non_null(strstr(body, "\"active\":1"));
    assert_int_equal(call(&d, "POST", "/v1/reserve", reserve, body, sizeof body), 200); /* its first outcome */
    assert_non_null(strstr(body, "\"allowed\":true"));
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits", tpm_def, body, sizeof body), 200);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o:tpm", NULL, body, sizeof body), 200);
    assert_non_null(strstr(body, "\"used\":0"));
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

/* The daemon refuses to start on reg, with a message naming the file. */
static void expect_refused_registry(const char *registry, const char *fragment) {
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    rl_test_daemon_write_registry(&d, registry);
    char text[8192];
    int code = rl_test_daemon_run_to_exit(&d, NULL, 20000, text, sizeof text);
    if (code == 0 || code == -1) fail_msg("exit %d for registry %s:\n%s", code, registry, text);
    if (strstr(text, "ratelimiterd: cannot start: ") == NULL || strstr(text, d.registry_path) == NULL ||
        strstr(text, fragment) == NULL)
        fail_msg("unclear message for %s (wanted \"%s\"):\n%s", registry, fragment, text);
    assert_null(strstr(text, "listening on"));
    rl_test_daemon_cleanup(&d);
}

static void test_corrupt_registry(void **state) {
    (void)state;
    expect_refused_registry("[{\"key\":\"a\",", "JSON");
    expect_refused_registry("not json at all", "JSON");
    expect_refused_registry("{\"key\":\"a\"}", "array");
}

static void test_invalid_definition_in_registry(void **state) {
    (void)state;
    expect_refused_registry("[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":1}]",
                            "capacity");
    expect_refused_registry("[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1},"
                            "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":1}]",
                            "already defined");
}

static void test_unreadable_registry(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    /* A directory where the file should be: unreadable as a registry (root
     * reads any file, so permissions cannot make one unreadable here). */
    assert_int_equal(mkdir(d.registry_path, 0700), 0);
    char text[8192];
    int code = rl_test_daemon_run_to_exit(&d, NULL, 20000, text, sizeof text);
    assert_int_equal(code, 1);
    assert_non_null(strstr(text, d.registry_path));
    rmdir(d.registry_path);
    rl_test_daemon_cleanup(&d);
}

static void test_bad_config_and_flags(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    char text[8192];
    rl_test_daemon_write_config(&d, "server:\n  max_batch: 8\n  max_bach: 9\n");
    const char *with_config[] = {"-c", d.config_path, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, with_config, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, ":3: unknown key 'max_bach' in section 'server'"));

    const char *missing_config[] = {"--config", "/nonexistent/config.yaml", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, missing_config, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "/nonexistent/config.yaml"));

    const char *bad_threads[] = {"--threads", "many", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, bad_threads, 20000, text, sizeof text), 2);
    assert_non_null(strstr(text, "--threads"));

    const char *bad_backend[] = {"--backend", "tigerbeetle", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, bad_backend, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "backend \"tigerbeetle\" is not available"));

    /* Redis not there at start: exit 1 naming the address (port 1: nothing listens). */
    const char *no_redis[] = {"--backend", "redis", "--redis", "127.0.0.1:1", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, no_redis, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "cannot start: the redis backend failed"));
    assert_non_null(strstr(text, "127.0.0.1:1"));

    const char *bad_redis[] = {"--redis", "localhost", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, bad_redis, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "redis address \"localhost\""));

    const char *bad_listen[] = {"--listen", "localhost", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, bad_listen, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "listen address"));

    const char *help[] = {"--help", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, help, 20000, text, sizeof text), 0);
    assert_non_null(strstr(text, "usage: ratelimiterd"));
    const char *version[] = {"--version", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, version, 20000, text, sizeof text), 0);
    assert_non_null(strstr(text, "ratelimiterd " RL_VERSION));
    rl_test_daemon_cleanup(&d);
}

/* The flags override the config file. */
static void test_flags_override_config(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    rl_test_daemon_write_config(&d, "server:\n  listen_addr: \"127.0.0.1:1\"\n  threads: 3\n"
                                    "registry:\n  path: /nonexistent/dir/limits.json\n");
    /* spawn() passes --listen 127.0.0.1:0 --registry <tmp> --threads 2 first;
     * -c comes after them, yet the flags still win over the file. */
    const char *args[] = {"-c", d.config_path, NULL};
    assert_true(rl_test_daemon_start(&d, args));
    char text[8192];
    rl_test_daemon_read_stderr(&d, text, sizeof text);
    assert_non_null(strstr(text, "2 threads)"));
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

/* A lease of 5 on tpm, completed with 3: a change to usage and an audit entry. */
static void spend(rl_test_daemon *d) {
    char body[1024];
    assert_int_equal(call(d, "PUT", "/v1/admin/limits", tpm_def, body, sizeof body), 200);
    assert_int_equal(call(d, "POST", "/v1/reserve",
                          "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\",\"requirements\":[{\"key\":"
                          "\"global:llm:openai:gpt-4o:tpm\",\"amount\":5}]}",
                          body, sizeof body),
                     200);
    assert_int_equal(call(d, "POST", "/v1/complete",
                          "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\",\"actuals\":[{\"key\":"
                          "\"global:llm:openai:gpt-4o:tpm\",\"actual_amount\":3}]}",
                          body, sizeof body),
                     200);
}

/* true if path is there, a directory when dir. */
static bool exists(const char *dir, const char *name, bool is_dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && (S_ISDIR(st.st_mode) == is_dir);
}

/* The journal and the audit log live beside the registry unless the flags
 * say otherwise: every daemon with a registry of its own (every test's)
 * keeps them apart. --no-journal and --no-audit keep neither. Needs the
 * memory backend's journal and audit log. */
static void test_journal_and_audit_beside_the_registry(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    assert_true(rl_test_daemon_start(&d, NULL));
    spend(&d);
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    assert_true(exists(d.dir, "journal", false));
    assert_true(exists(d.dir, "audit", true));
    rl_test_daemon_cleanup(&d);

    rl_test_daemon_init(&d);
    const char *off[] = {"--no-journal", "--no-audit", "--journal-fsync", "off", NULL};
    assert_true(rl_test_daemon_start(&d, off));
    spend(&d);
    char body[256];
    assert_int_equal(call(&d, "GET", "/v1/admin/audit?key=global:llm:openai:gpt-4o:tpm", NULL, body, sizeof body),
                     200);
    assert_string_equal(body, "{\"entries\":[],\"next_since_unix_ms\":0}");
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    assert_false(exists(d.dir, "journal", false));
    assert_false(exists(d.dir, "audit", true));

    char journal[400], audit[400];
    snprintf(journal, sizeof journal, "%s/elsewhere.journal", d.dir);
    snprintf(audit, sizeof audit, "%s/elsewhere-audit", d.dir);
    const char *elsewhere[] = {"--journal", journal, "--audit-dir", audit, "--journal-fsync", "everysec", NULL};
    assert_true(rl_test_daemon_start(&d, elsewhere));
    spend(&d);
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    assert_true(exists(d.dir, "elsewhere.journal", false));
    assert_true(exists(d.dir, "elsewhere-audit", true));
    assert_false(exists(d.dir, "journal", false));
    rl_test_daemon_cleanup(&d);
}

/* The new flags' mistakes stop start-up (2 for the command line, 1 for
 * settings that cannot work); a journal that cannot be opened names itself. */
static void test_journal_and_audit_flags(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    char text[8192];
    const char *fsync[] = {"--journal-fsync", "sometimes", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, fsync, 20000, text, sizeof text), 2);
    assert_non_null(strstr(text, "--journal-fsync must be always, everysec or off"));
    const char *both[] = {"--journal", "/tmp/j", "--no-journal", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, both, 20000, text, sizeof text), 2);
    assert_non_null(strstr(text, "--journal and --no-journal contradict each other"));
    const char *audit_both[] = {"--no-audit", "--audit-dir", "/tmp/a", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, audit_both, 20000, text, sizeof text), 2);
    const char *empty[] = {"--journal", "", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, empty, 20000, text, sizeof text), 2);
    const char *clash[] = {"--journal", d.registry_path, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, clash, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "the journal is the registry file"));
    rl_test_daemon_write_config(&d, "audit:\n  retention_days: 0\n");
    const char *retention[] = {"-c", d.config_path, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, retention, 20000, text, sizeof text), 1);
    assert_non_null(strstr(text, "'retention_days' must be an integer 1..3660"));

    /* Under a regular file no journal can be: the backend's sentence names it. */
    rl_test_daemon_write_registry(&d, "[]\n");
    char journal[400];
    snprintf(journal, sizeof journal, "%s/journal", d.registry_path);
    const char *unopenable[] = {"--journal", journal, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, unopenable, 20000, text, sizeof text), 1);
    if (strstr(text, "ratelimiterd: cannot start: the memory backend failed: ") == NULL || strstr(text, journal) == NULL)
        fail_msg("%s", text);
    rl_test_daemon_cleanup(&d);
}

/* How many audit entries key has (one page holds them all here). */
static size_t audit_entries(rl_test_daemon *d, const char *key) {
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */
    char path[300], body[65536];
    snprintf(path, sizeof path, "/v1/admin/audit?key=%s&limit=1000", key);
    assert_int_equal(call(d, "GET", path, NULL, body, sizeof body), 200);
    size_t n = 0;
    for (const char *at = body; (at = strstr(at, "\"lease_id\"")) != NULL; at++) n++;
    return n;
}

/* Without a journal the audit log is the only record of spend: restarts
 * keep it whole, and /metrics says that usage does not hold it. */
static void test_audit_kept_without_journal(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    const char *no_journal[] = {"--no-journal", NULL};
    const char *key = "global:llm:openai:gpt-4o:tpm";
    for (int round = 0; round < 3; round++) {
        assert_true(rl_test_daemon_start(&d, no_journal));
        assert_int_equal(audit_entries(&d, key), (size_t)round * 10);
        char body[1024];
        assert_int_equal(call(&d, "PUT", "/v1/admin/limits", tpm_def, body, sizeof body), 200);
        for (int i = 0; i < 10; i++) {
            char id[27], reserve[512], complete[512];
            snprintf(id, sizeof id, "01JD5Z8Q6X4W8N1V0M9R7T%02d%02d", round, i);
            snprintf(reserve, sizeof reserve, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":5}]}",
                     id, key);
            snprintf(complete, sizeof complete,
                     "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"%s\",\"actual_amount\":3}]}", id, key);
            assert_int_equal(call(&d, "POST", "/v1/reserve", reserve, body, sizeof body), 200);
            assert_int_equal(call(&d, "POST", "/v1/complete", complete, body, sizeof body), 200);
        }
        assert_int_equal(audit_entries(&d, key), (size_t)round * 10 + 10);
        char metrics[65536];
        assert_int_equal(call(&d, "GET", "/metrics", NULL, metrics, sizeof metrics), 200);
        char expected[64];
        snprintf(expected, sizeof expected, "\nratelimiter_audit_entries_unmatched %d\n", round * 10);
        if (strstr(metrics, round > 0 ? "\nratelimiter_audit_journal_mismatch 1\n"
                                       : "\nratelimiter_audit_journal_mismatch 0\n") == NULL ||
            strstr(metrics, expected) == NULL)
            fail_msg("round %d: %s", round, metrics);
        assert_int_equal(rl_test_daemon_stop(&d), 0);
    }
    char text[8192];
    rl_test_daemon_read_stderr(&d, text, sizeof text);
    assert_non_null(strstr(text, "are kept and numbering goes on after them; with no journal"));
    rl_test_daemon_cleanup(&d);
}

/* A second daemon on the first one's data (its registry, journal or audit
 * log) would interleave writes with it: it stops at start-up, non-zero,
 * naming the PID that holds the files, and the first goes on unharmed. */
static void test_one_daemon_per_data_directory(void **state) {
    (void)state;
    rl_test_daemon first, second;
    rl_test_daemon_init(&first);
    rl_test_daemon_init(&second);
    assert_true(rl_test_daemon_start(&first, NULL));
    spend(&first);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld holds it", (long)first.pid);
    char journal[400], audit[400], other_journal[400], other_audit[400];
    snprintf(journal, sizeof journal, "%s/journal", first.dir);
    snprintf(audit, sizeof audit, "%s/audit", first.dir);
    snprintf(other_journal, sizeof other_journal, "%s/journal", second.dir);
    snprintf(other_audit, sizeof other_audit, "%s/audit", second.dir);
    struct {
        const char *args[8];
        const char *names;
    } clashes[] = {
        {{"--registry", first.registry_path, "--journal", other_journal, "--audit-dir", other_audit, NULL},
         first.registry_path},
        {{"--journal", journal, "--audit-dir", other_audit, NULL}, journal},
        {{"--journal", other_journal, "--audit-dir", audit, NULL}, audit},
        {{"--no-journal", "--audit-dir", audit, NULL}, audit},
    };
    char text[8192];
    for (size_t i = 0; i < sizeof clashes / sizeof clashes[0]; i++) {
        assert_int_equal(rl_test_daemon_run_to_exit(&second, clashes[i].args, 20000, text, sizeof text), 1);
        if (strstr(text, pid) == NULL || strstr(text, clashes[i].names) == NULL ||
            strstr(text, "is in use") == NULL)
            fail_msg("clash %zu: %s", i, text);
    }
    spend(&first); /* the same lease again: its remembered answer */
    char body[512];
    assert_int_equal(call(&first, "GET", "/v1/admin/audit?key=global:llm:openai:gpt-4o:tpm", NULL, body, sizeof body),
                     200);
    assert_non_null(strstr(body, "\"actual\":3"));
    assert_int_equal(rl_test_daemon_stop(&first), 0);
    /* Once the first has stopped, its files are free (the lock files stay, holding nothing). */
    const char *after[] = {"--registry", first.registry_path, "--journal", journal, "--audit-dir", audit, NULL};
    assert_true(rl_test_daemon_start(&second, after));
    assert_int_equal(rl_test_daemon_stop(&second), 0);
    rl_test_daemon_cleanup(&second);
    rl_test_daemon_cleanup(&first);
}

static int connect_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    return fd;
}

/* Sends GET /healthz on fd; true if an answer arrives within timeout_ms. */
static bool answered(int fd, int timeout_ms, bool send_request) {
    static const char request[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
    if (send_request) assert_int_equal(send(fd, request, sizeof request - 1, MSG_NOSIGNAL), sizeof request - 1);
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

/* True if the daemon closes or resets fd (without answering) within timeout_ms. */
static bool cut(int fd, int timeout_ms) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    char buf[64];
    return recv(fd, buf, sizeof buf, 0) <= 0;
}

/* server.max_connections: at the bound a new connection takes the place of
 * an idle one that never sent a request; if every open one is in use (a
 * request in the last second), it is reset at once rather than left waiting
 * in the kernel's backlog. */
static void test_connection_bound(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    rl_test_daemon_write_config(&d, "server:\n  max_connections: 2\n");
    const char *args[] = {"-c", d.config_path, "--threads", "1", NULL};
    assert_true(rl_test_daemon_start(&d, args));
    rl_test_client_cleanup(&d.client); /* its connection would count too */

    int first = connect_to(d.port), second = connect_to(d.port);
    assert_true(answered(first, 5000, true));
    assert_true(answered(second, 5000, true));
    int third = connect_to(d.port); /* the kernel completes it; the daemon resets it */
    assert_true(cut(third, 5000));
    close(third);
    assert_true(answered(first, 5000, true)); /* the open ones are untouched */
    assert_true(answered(second, 5000, true));

    close(first); /* a slot frees: the next newcomer is served */
    int idle = connect_to(d.port);
    assert_false(cut(idle, 300));
    /* At the bound again: idle never sent a request, so it gives way. */
    int fourth = connect_to(d.port);
    assert_true(answered(fourth, 5000, true));
    assert_true(cut(idle, 5000));
    assert_true(answered(second, 5000, true));
    close(idle);
    close(second);
    close(fourth);
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_survive_restart),
        cmocka_unit_test(test_corrupt_registry),
        cmocka_unit_test(test_invalid_definition_in_registry),
        cmocka_unit_test(test_unreadable_registry),
        cmocka_unit_test(test_bad_config_and_flags),
        cmocka_unit_test(test_flags_override_config),
        cmocka_unit_test(test_journal_and_audit_beside_the_registry),
        cmocka_unit_test(test_journal_and_audit_flags),
        cmocka_unit_test(test_one_daemon_per_data_directory),
        cmocka_unit_test(test_audit_kept_without_journal),
        cmocka_unit_test(test_connection_bound),
        cmocka_unit_test(test_a_delete_survives_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
