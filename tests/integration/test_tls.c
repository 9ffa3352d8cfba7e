/* test_tls.c — the built daemon over real HTTPS (server.tls.cert_file,
 * key_file) with a certificate made for the test by `openssl req` in the
 * daemon's temporary directory (no key is kept in the tree): the API with
 * its tokens, rlctl with --cacert, the library with ca_file; plain HTTP and
 * a client that does not trust the certificate get nothing; a key that does
 * not load or does not match stops start-up naming the file, and so does an
 * encrypted key (without asking for its pass phrase on the terminal) or a
 * FIFO.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "support/certificate.h"
#include "support/daemon.h"
#include "support/rlctl_run.h"
#include "support/ulid_gen.h"

#define ADMIN_TOKEN "admin-tls-6f1ed002ab5595859014ebf0951522d9"

static rl_test_daemon daemon_;
static char cert_path[320], key_path[320], https_url[64];
static rl_test_rlctl_output ran;

static int setup(void **state) {
    (void)state;
    rl_test_http_global_init();
    rl_test_daemon_init(&daemon_);
    if (!rl_test_make_certificate(daemon_.dir, "server", cert_path, key_path, sizeof cert_path)) return -1;
    char tokens[320], yaml[1400];
    snprintf(tokens, sizeof tokens, "%s/admin.tokens", daemon_.dir);
    FILE *f = fopen(tokens, "w");
    if (f == NULL) return -1;
    fputs(ADMIN_TOKEN "\n", f);
    fclose(f);
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\nadmin:\n  tokens_file: %s\n",
             cert_path, key_path, tokens);
    rl_test_daemon_write_config(&daemon_, yaml);
    rl_test_daemon_write_registry(&daemon_, "[{\"key\":\"tls:rpm\",\"kind\":\"rolling\",\"capacity\":100,"
                                            "\"window_seconds\":60}]");
    const char *args[] = {"-c", daemon_.config_path, NULL};
    if (!rl_test_daemon_start(&daemon_, args)) return -1;
    snprintf(https_url, sizeof https_url, "https://localhost:%u", (unsigned)daemon_.port);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    int code = rl_test_daemon_stop(&daemon_);
    rl_test_daemon_cleanup(&daemon_);
    return code == 0 ? 0 : -1;
}

static void test_https_api(void **state) {
    (void)state;
    rl_test_response r;
    /* Plain HTTP on the HTTPS port: no answer at all. */
    assert_int_equal(rl_test_daemon_http(&daemon_, "GET", "/healthz", NULL, &r), 0);
    rl_test_response_free(&r);
    /* A client that does not trust the certificate gets nothing either. */
    rl_test_client_use_https(&daemon_.client, NULL);
    assert_int_equal(rl_test_daemon_http(&daemon_, "GET", "/healthz", NULL, &r), 0);
    assert_non_null(strstr(r.error, "certificate"));
    rl_test_response_free(&r);

    rl_test_client_use_https(&daemon_.client, cert_path);
    assert_int_equal(rl_test_daemon_http(&daemon_, "GET", "/healthz", NULL, &r), 200);
    rl_test_response_free(&r);
    assert_int_equal(rl_test_daemon_http(&daemon_, "GET", "/v1/admin/limits", NULL, &r), 401);
    assert_non_null(strstr(r.body, "\"error\":\"unauthorized\""));
    rl_test_response_free(&r);
    daemon_.client.bearer_token = ADMIN_TOKEN;
    assert_int_equal(rl_test_daemon_http(&daemon_, "PUT", "/v1/admin/limits",
                                         "{\"key\":\"tls:new\",\"kind\":\"rolling\",\"capacity\":7,\"window_seconds\":60}",
                                         &r),
                     200);
    rl_test_response_free(&r);
    /* Keep-alive inside TLS: several requests, one connection. */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(rl_test_daemon_http(&daemon_, "GET", "/v1/admin/limits/tls:new", NULL, &r), 200);
        assert_non_null(strstr(r.body, "\"capacity\":7"));
        rl_test_response_free(&r);
    }
    daemon_.client.bearer_token = NULL;
    /* Reserve is open here (no data.tokens_file), over HTTPS. */
    char lease[27], body[200];
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tls:rpm\",\"amount\":1}]}",
             rl_test_ulid_new(lease));
    assert_int_equal(rl_test_daemon_http(&daemon_, "POST", "/v1/reserve", body, &r), 200);
    assert_non_null(strstr(r.body, "\"allowed\":true"));
    rl_test_response_free(&r);
}

#define RLCTL(...) rl_test_rlctl_run(daemon_.dir, (const char *const[]){__VA_ARGS__, NULL}, NULL, &ran)

static void test_rlctl_https(void **state) {
    (void)state;
    assert_int_equal(RLCTL("--url", https_url, "--cacert", cert_path, "--token", ADMIN_TOKEN, "list"), 0);
    assert_non_null(strstr(ran.out, "tls:rpm"));
    assert_int_equal(RLCTL("--url", https_url, "--cacert", cert_path, "reserve", "tls:rpm=1"), 0);
    char env_cacert[400];
    snprintf(env_cacert, sizeof env_cacert, "RLCTL_CACERT=%s", cert_path);
    const char *env[] = {env_cacert, NULL};
    const char *args[] = {"--url", https_url, "health", NULL};
    assert_int_equal(rl_test_rlctl_run(daemon_.dir, args, env, &ran), 0);
    /* Without the authority: unreachable, and why. */
    assert_int_equal(RLCTL("--url", https_url, "--token", ADMIN_TOKEN, "list"), 4);
    assert_non_null(strstr(ran.err, "certificate"));
    assert_int_equal(RLCTL("--url", https_url, "reserve", "tls:rpm=1"), 4);
}

static void test_http_limiter_https(void **state) {
    (void)state;
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = https_url;
    options.ca_file = cert_path;
    options.bearer_token = ADMIN_TOKEN;
    rl_limiter *limiter = NULL;
    char err[RL_LIMITER_ERR_SIZE];
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_OK);
    rl_requirement requirement = {"tls:rpm", 1, false};
    char lease[27];
    rl_reserve_request request = {.lease_id = rl_test_ulid_new(lease), .requirements = &requirement,
                                  .requirement_count = 1};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_true(result.allowed);
    rl_complete_request complete = {.lease_id = lease};
    assert_int_equal(rl_limiter_complete(limiter, &complete), RL_OK);
    rl_audit_entry entries[4];
    rl_audit_query query = {.key = "tls:rpm", .limit = 4};
    rl_audit_page page = {.entries = entries};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_OK);
    rl_limiter_destroy(limiter);

    /* A CA file that is not the daemon's: every retry fails until the deadline. */
    char other_cert[320], other_key[320];
    assert_true(rl_test_make_certificate(daemon_.dir, "other", other_cert, other_key, sizeof other_cert));
    options.ca_file = other_cert;
    options.deadline_ms = 300;
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_OK);
    request.lease_id = rl_test_ulid_new(lease);
    assert_int_not_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    rl_limiter_destroy(limiter);
}

/* A start that cannot serve HTTPS stops with the file's name. */
static void test_bad_files_stop_start(void **state) {
    (void)state;
    rl_test_daemon other;
    rl_test_daemon_init(&other);
    char other_cert[320], other_key[320], yaml[1400], err[4096];
    assert_true(rl_test_make_certificate(other.dir, "other", other_cert, other_key, sizeof other_cert));
    const char *args[] = {"-c", other.config_path, NULL};
    /* The key of another certificate. */
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\n", cert_path, other_key);
    rl_test_daemon_write_config(&other, yaml);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "server.tls.key_file") == NULL || strstr(err, other_key) == NULL ||
        strstr(err, "key values mismatch") == NULL)
        fail_msg("%s", err);
    /* A certificate file that is not one. */
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\n", other.config_path,
             other_key);
    rl_test_daemon_write_config(&other, yaml);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "cannot load server.tls.cert_file") == NULL || strstr(err, other.config_path) == NULL)
        fail_msg("%s", err);
    /* Half a pair. */
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n", other_cert);
    rl_test_daemon_write_config(&other, yaml);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "server.tls needs both cert_file and key_file") == NULL) fail_msg("%s", err);
    rl_test_daemon_cleanup(&other);
}

/* A key encrypted with a pass phrase is refused with a sentence that says
 * so, without a prompt: the daemon runs on a terminal of its own here (as
 * when started by hand), where OpenSSL would ask for the pass phrase and
 * wait; nothing is written there. A certificate that is a FIFO is refused
 * at once (OpenSSL's own loader would wait in open() for a writer). */
static void test_encrypted_key_and_fifo_refused(void **state) {
    (void)state;
    rl_test_daemon other;
    rl_test_daemon_init(&other);
    char encrypted[320], fifo[320], command[1200], yaml[1400], err[4096];
    snprintf(encrypted, sizeof encrypted, "%s/encrypted.key", other.dir);
    snprintf(command, sizeof command,
             "openssl pkey -in '%s' -aes256 -passout pass:nobody-types-this -out '%s' 2>/dev/null", key_path,
             encrypted);
    assert_int_equal(system(command), 0);
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\n", cert_path, encrypted);
    rl_test_daemon_write_config(&other, yaml);
    const char *args[] = {"-c", other.config_path, NULL};
    int terminal = -1;
    rl_test_daemon_launch(&other, args, &terminal);
    int code = rl_test_daemon_wait_exit(&other, 20000);
    char screen[1024];
    fcntl(terminal, F_SETFL, O_NONBLOCK);
    ssize_t shown = read(terminal, screen, sizeof screen - 1); /* -1 (EIO, EAGAIN): nothing was written there */
    screen[shown > 0 ? shown : 0] = '\0';
    close(terminal);
    rl_test_daemon_read_stderr(&other, err, sizeof err);
    if (code != 1 || strstr(err, "server.tls.key_file") == NULL || strstr(err, encrypted) == NULL ||
        strstr(err, "is encrypted, and encrypted keys are not supported") == NULL)
        fail_msg("exit %d, said:\n%s\non its terminal:\n%s", code, err, screen);
    if (shown > 0) fail_msg("the daemon wrote on its terminal: %s", screen);

    snprintf(fifo, sizeof fifo, "%s/cert.fifo", other.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(yaml, sizeof yaml, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\n", fifo, key_path);
    rl_test_daemon_write_config(&other, yaml);
    assert_int_equal(rl_test_daemon_run_to_exit(&other, args, 20000, err, sizeof err), 1);
    if (strstr(err, "server.tls.cert_file: ") == NULL || strstr(err, "cert.fifo: is a FIFO, not a regular file") == NULL)
        fail_msg("%s", err);
    rl_test_daemon_cleanup(&other);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_https_api),
        cmocka_unit_test(test_rlctl_https),
        cmocka_unit_test(test_http_limiter_https),
        cmocka_unit_test(test_bad_files_stop_start),
        cmocka_unit_test(test_encrypted_key_and_fifo_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
