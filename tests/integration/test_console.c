/* test_console.c — the web console against the real daemon:
 *   - GET /v1/admin/denials: what was denied, newest first, single and batch,
 *     filtered by key and lease id, a bad query refused;
 *   - the console's files from the binary, with their media types and the
 *     headers that keep the page from being framed;
 *   - the page's own change of a limit (a PUT with its Origin) is taken, one
 *     from another page is not;
 *   - the page in a real browser: Debian's headless Chromium loads /console,
 *     runs its script against the daemon, and the DOM it leaves shows a
 *     limit's usage, a denial with its reason, and a lease's audit entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/daemon.h"
#include "support/ulid_gen.h"

#define CHROMIUM "/usr/bin/chromium"
#define BROWSER_DEADLINE_MS 90000

static rl_test_daemon daemon_;
static char denied_lease[27], batch_denied_lease[27], spent_lease[27];

static void expect_contains(const char *text, const char *part) {
    if (strstr(text, part) == NULL) fail_msg("\"%s\" not in:\n%.2000s", part, text);
}

static long request(const char *method, const char *path, const char *body, rl_test_response *out) {
    return rl_test_daemon_http(&daemon_, method, path, body, out);
}

static void expect_answer(const char *method, const char *path, const char *body, long status, const char *part) {
    rl_test_response res;
    if (request(method, path, body, &res) != status) fail_msg("%s %s: %ld %s", method, path, res.status, res.body);
    if (part != NULL) expect_contains(res.body, part);
    rl_test_response_free(&res);
}

static void reserve(const char *lease, const char *key, uint64_t amount, const char *expect) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"job-%.4s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}",
             lease, lease + 22, key, (unsigned long long)amount);
    expect_answer("POST", "/v1/reserve", body, 200, expect);
}

static int setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_, "[{\"key\":\"global:llm:gpt:tpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":60,"
                  "\"unit\":\"tokens\"},"
                  "{\"key\":\"tenant:acme:spend\",\"kind\":\"budget\",\"capacity\":50000000,\"period\":\"month\","
                  "\"timeout_seconds\":600,\"unit\":\"usd_micros\"}]\n");
    const char *args[] = {"--threads", "2", NULL};
    if (!rl_test_daemon_start(&daemon_, args)) return -1;
    /* 700 tokens spent, then 400 more asked (300 free): denied for capacity. */
    reserve(rl_test_ulid_new(spent_lease), "global:llm:gpt:tpm", 900, "\"allowed\":true");
    char body[512];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"global:llm:gpt:tpm\",\"actual_amount\":700}]}", spent_lease);
    expect_answer("POST", "/v1/complete", body, 200, "\"ok\":true");
    reserve(rl_test_ulid_new(denied_lease), "global:llm:gpt:tpm", 400, "\"reason\":\"capacity\"");
    /* A batch whose second item asks more than the budget's capacity. */
    char allowed[27];
    rl_test_ulid_new(allowed);
    rl_test_ulid_new(batch_denied_lease);
    snprintf(body, sizeof body,
             "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:spend\",\"amount\":1000}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"tenant:acme:spend\",\"amount\":60000000}]}]}",
             allowed, batch_denied_lease);
    expect_answer("POST", "/v1/reserve/batch", body, 200, "\"reason\":\"exceeds_capacity\"");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    rl_test_daemon_cleanup(&daemon_);
    return 0;
}

static void test_denials_endpoint(void **state) {
    (void)state;
    rl_test_response res;
    assert_int_equal(request("GET", "/v1/admin/denials", NULL, &res), 200);
    assert_string_equal(res.content_type, "application/json");
    /* Newest first: the batch's, then the single reserve's. */
    char *batch = strstr(res.body, batch_denied_lease), *single = strstr(res.body, denied_lease);
    assert_non_null(batch);
    assert_non_null(single);
    assert_true(batch < single);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "\"lease_id\":\"%s\",\"job_id\":\"job-%.4s\",\"endpoint\":\"reserve\",\"retry_after_ms\":", denied_lease,
             denied_lease + 22);
    expect_contains(res.body, expected);
    expect_contains(res.body, "\"items\":1,\"denied_items\":1,\"dry_run\":false,\"denied_by\":{\"key\":"
                              "\"global:llm:gpt:tpm\",\"reason\":\"capacity\",\"requested\":400,\"available\":300,"
                              "\"capacity\":1000}}");
    expect_contains(res.body, "\"endpoint\":\"reserve_batch\",\"retry_after_ms\":0,\"items\":2,\"denied_items\":1,"
                              "\"dry_run\":false,\"denied_by\":{\"key\":\"tenant:acme:spend\",\"reason\":"
                              "\"exceeds_capacity\",\"requested\":60000000,\"available\":49999000,\"capacity\":50000000,"
                              "\"period_end_unix_ms\":");
    expect_contains(res.body, "],\"kept\":1024,\"noted_total\":2}");
    rl_test_response_free(&res);

    /* Filters and limit. */
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/denials?lease_id=%s", denied_lease);
    for (char *c = path + strlen("/v1/admin/denials?lease_id="); *c != '\0'; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c); /* any case names the lease */
    assert_int_equal(request("GET", path, NULL, &res), 200);
    expect_contains(res.body, denied_lease);
    assert_null(strstr(res.body, batch_denied_lease));
    rl_test_response_free(&res);
    assert_int_equal(request("GET", "/v1/admin/denials?key=tenant%3Aacme%3Aspend", NULL, &res), 200);
    expect_contains(res.body, batch_denied_lease);
    assert_null(strstr(res.body, denied_lease));
    rl_test_response_free(&res);
    assert_int_equal(request("GET", "/v1/admin/denials?limit=1", NULL, &res), 200);
    expect_contains(res.body, batch_denied_lease);
    assert_null(strstr(res.body, denied_lease));
    rl_test_response_free(&res);
    expect_answer("GET", "/v1/admin/denials?key=nobody", NULL, 200, "{\"denials\":[],\"kept\":1024");

    /* A bad query changes nothing and says why; other methods are 405. */
    expect_answer("GET", "/v1/admin/denials?limit=1025", NULL, 400,
                  "{\"error\":\"invalid_request\",\"detail\":\"limit must be a decimal integer 1..1024\"}");
    expect_answer("GET", "/v1/admin/denials?lease_id=nope", NULL, 400, "lease_id must be a ULID");
    expect_answer("GET", "/v1/admin/denials?limt=5", NULL, 400, "unknown parameter \\\"limt\\\"");
    expect_answer("DELETE", "/v1/admin/denials", NULL, 405, "invalid_request");
}

static void test_console_files(void **state) {
    (void)state;
    const char *pages[] = {"/console", "/console/", "/console/index.html"};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        rl_test_response res;
        assert_int_equal(request("GET", pages[i], NULL, &res), 200);
        assert_string_equal(res.content_type, "text/html; charset=utf-8");
        expect_contains(res.body, "<script src=\"/console/console.js\" defer></script>");
        rl_test_response_free(&res);
    }
    rl_test_response res;
    assert_int_equal(request("GET", "/console/console.js", NULL, &res), 200);
    assert_string_equal(res.content_type, "text/javascript; charset=utf-8");
    expect_contains(res.body, "'/v1/admin/denials?limit='");
    rl_test_response_free(&res);
    assert_int_equal(request("GET", "/console/console.css", NULL, &res), 200);
    assert_string_equal(res.content_type, "text/css; charset=utf-8");
    rl_test_response_free(&res);
    expect_answer("GET", "/console/nothing.js", NULL, 404, "{\"error\":\"invalid_request\"}");
    expect_answer("POST", "/console", "", 405, NULL);

    /* The page's own headers: scripts from the daemon only, never framed. */
    char raw[8192];
    const char get[] = "GET /console HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, get, sizeof get - 1, 5000, raw, sizeof raw) > 0);
    expect_contains(raw, "content-security-policy: default-src 'self'; frame-ancestors 'none'");
    expect_contains(raw, "x-content-type-options: nosniff");
    /* The path as sent (curl would fold the dots): no file has that name. */
    const char dots[] = "GET /console/../healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, dots, sizeof dots - 1, 5000, raw, sizeof raw) > 0);
    expect_contains(raw, "HTTP/1.1 404 ");
}

/* The form's PUT carries the page's Origin (browsers add it to every PUT):
 * the daemon's own page is taken, another page (even on this machine) not. */
static void test_console_changes_a_limit(void **state) {
    (void)state;
    char raw[8192], put[1024];
    const char body[] = "{\"key\":\"tenant:new\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":60}";
    const char *origins[] = {"http://127.0.0.1:%u", "http://127.0.0.1:1%u"};
    for (int own = 1; own >= 0; own--) {
        char origin[64];
        snprintf(origin, sizeof origin, origins[own ? 0 : 1], (unsigned)daemon_.port);
        int n = snprintf(put, sizeof put,
                         "PUT /v1/admin/limits HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nOrigin: %s\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         (unsigned)daemon_.port, origin, sizeof body - 1, body);
        assert_true(rl_test_raw_exchange(daemon_.port, put, (size_t)n, 5000, raw, sizeof raw) > 0);
        if (own) {
            expect_contains(raw, "HTTP/1.1 200 ");
            expect_contains(raw, "{\"ok\":true,\"status\":\"active\"}");
        } else {
            expect_contains(raw, "HTTP/1.1 403 ");
        }
    }
    expect_answer("GET", "/v1/admin/limits/tenant:new", NULL, 200, "\"capacity\":5");
    expect_answer("DELETE", "/v1/admin/limits/tenant:new", NULL, 200, "\"ok\":true");
}

/* Runs Chromium headless on url; its --dump-dom output (the DOM once the
 * page's scripts have run for budget_ms of virtual time) into out. */
static void dump_dom(const char *url, int budget_ms, char *out, size_t out_size) {
    struct stat st;
    if (stat(CHROMIUM, &st) != 0)
        fail_msg(CHROMIUM " is missing: install Debian's chromium (make deps does)");
    char profile[400], dom_path[400], log_path[400], budget[64];
    snprintf(profile, sizeof profile, "%s/chromium-profile", daemon_.dir);
    snprintf(dom_path, sizeof dom_path, "%s/dom.html", daemon_.dir);
    snprintf(log_path, sizeof log_path, "%s/chromium.log", daemon_.dir);
    snprintf(budget, sizeof budget, "--virtual-time-budget=%d", budget_ms);
    char user_data[420];
    snprintf(user_data, sizeof user_data, "--user-data-dir=%s", profile);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int dom = open(dom_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int log = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (dom < 0 || log < 0) _exit(126);
        dup2(dom, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        setpgid(0, 0); /* its own group: the deadline kills every process it starts */
        /* The flags this machine's closed network needs (no background
         * connections, no component updates); --no-sandbox as the tests
         * may run as root. */
        execl(CHROMIUM, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", user_data, budget, "--dump-dom", url, (char *)NULL);
        _exit(127);
    }
    long deadline = rl_test_now_ms() + BROWSER_DEADLINE_MS;
    int status = 0;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (rl_test_now_ms() > deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("chromium did not finish within %d ms (log: %s)", BROWSER_DEADLINE_MS, log_path);
        }
        rl_test_sleep_ms(50);
    }
    kill(-pid, SIGKILL); /* anything it left behind */
    FILE *f = fopen(dom_path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, out_size - 1, f);
    out[n] = '\0';
    fclose(f);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n == 0) {
        char log[4096];
        FILE *l = fopen(log_path, "r");
        size_t m = l != NULL ? fread(log, 1, sizeof log - 1, l) : 0;
        log[m] = '\0';
        if (l != NULL) fclose(l);
        fail_msg("chromium exited with status %d and %zu bytes of DOM:\n%s", status, n, log);
    }
}

static void test_console_in_chromium(void **state) {
    (void)state;
    static char dom[1 << 20];
    char url[256], expected[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/console", (unsigned)daemon_.port);
    dump_dom(url, 5000, dom, sizeof dom);
    /* The script ran to the end of a refresh. */
    expect_contains(dom, "<body data-state=\"ready\">");
    /* The limit with its live usage: 700 of 1000 tokens charged, a bar at 70 %. */
    expect_contains(dom, "<tr class=\"limit\" data-key=\"global:llm:gpt:tpm\" data-used=\"700\" data-capacity=\"1000\">");
    expect_contains(dom, "700 / 1,000 tokens");
    expect_contains(dom, "<div class=\"fill warn\" style=\"width: 70%;\"></div><span class=\"label\">70 %</span>");
    /* The budget, with its period and forecast. */
    expect_contains(dom, "<tr class=\"budget\" data-key=\"tenant:acme:spend\">");
    expect_contains(dom, "% of the month</span>");
    /* Both denials with their reasons. */
    snprintf(expected, sizeof expected,
             "<tr class=\"denial\" data-key=\"global:llm:gpt:tpm\" data-reason=\"capacity\" data-lease-id=\"%s\">",
             denied_lease);
    expect_contains(dom, expected);
    expect_contains(dom, "<span class=\"reason capacity\">capacity</span>");
    snprintf(expected, sizeof expected,
             "<tr class=\"denial\" data-key=\"tenant:acme:spend\" data-reason=\"exceeds_capacity\" "
             "data-lease-id=\"%s\">",
             batch_denied_lease);
    expect_contains(dom, expected);
    expect_contains(dom, "batch: 1 of 2 denied");

    /* A lease's audit, linked from the page's address: what it spent. */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/console#audit=%s", (unsigned)daemon_.port, spent_lease);
    dump_dom(url, 5000, dom, sizeof dom);
    snprintf(expected, sizeof expected, "<table id=\"audit\" data-done=\"%s\">", spent_lease);
    expect_contains(dom, expected);
    snprintf(expected, sizeof expected, "<tr class=\"audit-entry\" data-lease-id=\"%s\">", spent_lease);
    expect_contains(dom, expected);
    expect_contains(dom, "1 charges found");
    /* And a denied one: why. */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/console#audit=%s", (unsigned)daemon_.port, denied_lease);
    dump_dom(url, 5000, dom, sizeof dom);
    expect_contains(dom, "by global:llm:gpt:tpm: capacity (asked 400, 300 of 1,000 free)");
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_denials_endpoint),
        cmocka_unit_test(test_console_files),
        cmocka_unit_test(test_console_changes_a_limit),
        cmocka_unit_test(test_console_in_chromium),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
