/* test_console.c — the web console against the real daemon:
 *   - GET /v1/admin/denials: what was denied, newest first, single and batch,
 *     filtered by key and lease id, a bad query refused;
 *   - the console's files from the binary, with their media types and the
 *     headers that keep the page from being framed; HEAD as GET without
 *     the body;
 *   - the page's own change of a limit (a PUT with its Origin) is taken, one
 *     from another page is not;
 *   - the page in a real browser, Debian's headless Chromium driven over
 *     the DevTools protocol (support/browser.h): its DOM shows a limit's
 *     usage, the budget, the denials with their reasons; usage and a new
 *     denial appear without a reload; a denied lease, a lease that spent and
 *     a key are looked up by clicks, and a key from the page's address (a
 *     link that does not decode said to be none); the form defines a
 *     limit, changes one through its edit link, and shows the daemon's
 *     refusal of a bad one;
 *   - the page of a daemon with admin.tokens_file: it asks for the token,
 *     asks again when the daemon refuses one (wrong, or replaced at a
 *     SIGHUP), shows everything and changes a limit with the right one;
 *     and the same page over HTTPS.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/browser.h"
#include "support/certificate.h"
#include "support/daemon.h"
#include "support/ulid_gen.h"

static rl_test_daemon daemon_;
static char denied_lease[27], batch_denied_lease[27], spent_lease[27];

static void expect_contains(const char *text, const char *part) {
    if (strstr(text, part) == NULL) fail_msg("\"%s\" not in:\n%.2000s", part, text);
}

static long request(const char *method, const char *path, const char *body, rl_test_response *out) {
    return rl_test_daemon_http(&daemon_, method, path, body, out);
}

static void expect_answer_on(rl_test_daemon *daemon, const char *method, const char *path, const char *body,
                             long status, const char *part) {
    rl_test_response res;
    if (rl_test_daemon_http(daemon, method, path, body, &res) != status)
        fail_msg("%s %s: %ld %s", method, path, res.status, res.body);
    if (part != NULL) expect_contains(res.body, part);
    rl_test_response_free(&res);
}

static void expect_answer(const char *method, const char *path, const char *body, long status, const char *part) {
    expect_answer_on(&daemon_, method, path, body, status, part);
}

static void reserve_on(rl_test_daemon *daemon, const char *lease, const char *key, uint64_t amount,
                       const char *expect) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"job-%.4s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}",
             lease, lease + 22, key, (unsigned long long)amount);
    expect_answer_on(daemon, "POST", "/v1/reserve", body, 200, expect);
}

static void reserve(const char *lease, const char *key, uint64_t amount, const char *expect) {
    reserve_on(&daemon_, lease, key, amount, expect);
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
    expect_answer("GET", "/console/nothing.js", NULL, 404,
                  "{\"error\":\"invalid_request\",\"detail\":\"no route for GET /console/nothing.js: the console "
                  "has no file of that name (its page is /console)\"}");
    expect_answer("POST", "/console", "", 405, NULL);

    /* The page's own headers: scripts from the daemon only, never framed. */
    char raw[8192];
    const char get[] = "GET /console HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, get, sizeof get - 1, 5000, raw, sizeof raw) > 0);
    expect_contains(raw, "content-security-policy: default-src 'self'; frame-ancestors 'none'");
    expect_contains(raw, "x-content-type-options: nosniff");
    /* HEAD: the GET's status and headers, its length, and no body. */
    char head_raw[8192];
    const char head[] = "HEAD /console HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    long head_len = rl_test_raw_exchange(daemon_.port, head, sizeof head - 1, 5000, head_raw, sizeof head_raw);
    assert_true(head_len > 0);
    expect_contains(head_raw, "HTTP/1.1 200 OK\r\n");
    expect_contains(head_raw, "content-type: text/html; charset=utf-8\r\n");
    expect_contains(head_raw, "content-security-policy: default-src 'self'");
    const char *get_length = strstr(raw, "Content-Length: "), *head_length = strstr(head_raw, "Content-Length: ");
    assert_non_null(get_length);
    assert_non_null(head_length);
    assert_int_equal(strtol(head_length + 16, NULL, 10), strtol(get_length + 16, NULL, 10));
    assert_string_equal(head_raw + head_len - 4, "\r\n\r\n"); /* the headers' end is the answer's */
    /* The path as sent (curl would fold the dots): no file has that name. */
    const char dots[] = "GET /console/../healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, dots, sizeof dots - 1, 5000, raw, sizeof raw) > 0);
    expect_contains(raw, "HTTP/1.1 404 ");
    /* The daemon's address: on to the console. */
    const char root[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    assert_true(rl_test_raw_exchange(daemon_.port, root, sizeof root - 1, 5000, raw, sizeof raw) > 0);
    expect_contains(raw, "HTTP/1.1 302 Found\r\n");
    expect_contains(raw, "\r\nlocation: /console\r\n");
    expect_contains(raw, "{\"detail\":\"the web console is at /console\"}");
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

/* ---- the page in a real browser ----------------------------------------- */

static rl_test_browser browser = {.to_browser = -1, .from_browser = -1};

/* After each browser test, also a failed one: no browser is left running. */
static int close_browser(void **state) {
    (void)state;
    rl_test_browser_close(&browser);
    return 0;
}

static char *page_eval(const char *expression) {
    char err[4096];
    char *value = rl_test_browser_eval(&browser, expression, err, sizeof err);
    if (value == NULL) fail_msg("%s", err);
    return value;
}

static void page_do(const char *expression) { free(page_eval(expression)); }

static void page_wait(const char *condition) {
    if (!rl_test_browser_wait(&browser, condition, 15000)) {
        char *body = page_eval("document.body.outerHTML");
        fail_msg("the page never had %s:\n%.3000s", condition, body);
    }
}

/* The page's DOM contains each of the parts. */
static void expect_in_page(const char *const *parts, size_t count) {
    char *dom = page_eval("document.documentElement.outerHTML");
    for (size_t i = 0; i < count; i++) expect_contains(dom, parts[i]);
    free(dom);
}

/* The browser on url, its profile and log in dir; extra_flags for Chromium
 * or NULL. */
static void open_page(const char *dir, const char *url, const char *const *extra_flags) {
    char err[1024];
    if (!rl_test_browser_open_with(&browser, dir, url, extra_flags, err, sizeof err)) fail_msg("%s", err);
}

/* The browser on the daemon's path (the page, or an address that leads to it). */
static void open_console_at(const char *path) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)daemon_.port, path);
    open_page(daemon_.dir, url, NULL);
    /* The script ran to the end of a refresh. */
    page_wait("document.body.dataset.state === 'ready'");
}

static void open_console(void) { open_console_at("/console"); }

/* What the page shows on its own: limits with their usage, the budget, both
 * denials with their reasons; opened, as one would, at the daemon's address. */
static void test_console_shows_usage_and_denials(void **state) {
    (void)state;
    open_console_at("/");
    page_wait("location.pathname === '/console'");
    char denial[512], batch[512];
    snprintf(denial, sizeof denial,
             "<tr class=\"denial\" data-key=\"global:llm:gpt:tpm\" data-reason=\"capacity\" data-lease-id=\"%s\">",
             denied_lease);
    snprintf(batch, sizeof batch,
             "<tr class=\"denial\" data-key=\"tenant:acme:spend\" data-reason=\"exceeds_capacity\" "
             "data-lease-id=\"%s\">",
             batch_denied_lease);
    const char *parts[] = {
        /* 700 of 1000 tokens charged, a bar at 70 % */
        "<tr class=\"limit\" data-key=\"global:llm:gpt:tpm\" data-used=\"700\" data-capacity=\"1000\">",
        "700 / 1,000 tokens",
        "<div class=\"fill warn\" style=\"width: 70%;\"></div><span class=\"label\">70 %</span>",
        /* the budget with its period and forecast */
        "<tr class=\"budget\" data-key=\"tenant:acme:spend\">",
        "% of the month</span>",
        denial,
        "<span class=\"reason capacity\">capacity</span>",
        batch,
        "<span class=\"reason exceeds_capacity\">exceeds_capacity</span>",
        "batch: 1 of 2 denied",
        "2 since the daemon started; the last 1024 kept",
        /* what the list does not hold */
        "Limits made from a template are not listed here yet: look one up by its key",
    };
    expect_in_page(parts, sizeof parts / sizeof parts[0]);
    rl_test_browser_close(&browser);
}

/* Live: usage and a new denial appear without the page being loaded again. */
static void test_console_refreshes_live(void **state) {
    (void)state;
    open_console();
    page_do("window.loadedOnce = true");
    char more[27], late[27], condition[256];
    reserve(rl_test_ulid_new(more), "global:llm:gpt:tpm", 250, "\"allowed\":true"); /* 700 + 250 */
    reserve(rl_test_ulid_new(late), "global:llm:gpt:tpm", 100, "\"reason\":\"capacity\""); /* 50 free */
    page_wait("document.querySelector('tr.limit[data-key=\"global:llm:gpt:tpm\"]').dataset.used === '950'");
    snprintf(condition, sizeof condition, "document.querySelector('tr.denial[data-lease-id=\"%s\"]') !== null", late);
    page_wait(condition);
    page_wait("window.loadedOnce === true"); /* the same page all along */
    rl_test_browser_close(&browser);
}

/* "Why was this denied, what did it spend": a denied lease, a lease that
 * spent, a key, each from a click on the page. */
static void test_console_audit(void **state) {
    (void)state;
    open_console();
    char click[512], condition[512];
    snprintf(click, sizeof click, "document.querySelector('tr.denial[data-lease-id=\"%s\"] td.mono button').click()",
             denied_lease);
    page_do(click);
    snprintf(condition, sizeof condition, "document.querySelector('#audit').dataset.done === '%s'", denied_lease);
    page_wait(condition);
    char *summary = page_eval("document.querySelector('#audit-summary').textContent");
    expect_contains(summary, "by global:llm:gpt:tpm: capacity (asked 400, 300 of 1,000 free)");
    expect_contains(summary, "no spend found");
    free(summary);

    /* The lease that spent, typed into the form. */
    snprintf(click, sizeof click,
             "document.querySelector('#audit-query').value = '%s';"
             "document.querySelector('#audit-form').requestSubmit()",
             spent_lease);
    page_do(click);
    snprintf(condition, sizeof condition, "document.querySelector('#audit').dataset.done === '%s'", spent_lease);
    page_wait(condition);
    summary = page_eval("document.querySelector('#audit-summary').textContent");
    expect_contains(summary, "1 charges found");
    free(summary);
    char row[256];
    snprintf(row, sizeof row, "<tr class=\"audit-entry\" data-lease-id=\"%s\">", spent_lease);
    const char *parts[] = {row, "<td class=\"num\">900</td><td class=\"num\">700</td>"};
    expect_in_page(parts, 2);

    /* A key, from the denial's link: what was charged to it. */
    snprintf(click, sizeof click, "document.querySelector('tr.denial[data-lease-id=\"%s\"] td.key button').click()",
             denied_lease);
    page_do(click);
    page_wait("document.querySelector('#audit').dataset.done === 'global:llm:gpt:tpm'");
    summary = page_eval("document.querySelector('#audit-summary').textContent");
    expect_contains(summary, "1 charges to global:llm:gpt:tpm, 700 in all");
    free(summary);
    rl_test_browser_close(&browser);
}

/* The page's address can link to the audit: /console#audit=<key,
 * percent-encoded> looks it up once loaded. One that does not decode (a
 * link cut short) is said to be no key, where the audit shows, instead of
 * an uncaught URIError. */
static void test_console_audit_link(void **state) {
    (void)state;
    char url[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/console#audit=%%E0%%A4%%A", (unsigned)daemon_.port);
    open_page(daemon_.dir, url, NULL);
    page_wait("document.body.dataset.state === 'ready'");
    page_wait("document.querySelector('#audit-summary').classList.contains('error')");
    char *summary = page_eval("document.querySelector('#audit-summary').textContent");
    expect_contains(summary, "#audit= is not a key or lease id: \"%E0%A4%A\" is not valid percent-encoding");
    free(summary);
    rl_test_browser_close(&browser);

    snprintf(url, sizeof url, "http://127.0.0.1:%u/console#audit=global%%3Allm%%3Agpt%%3Atpm", (unsigned)daemon_.port);
    open_page(daemon_.dir, url, NULL);
    page_wait("document.querySelector('#audit').dataset.done === 'global:llm:gpt:tpm'");
    summary = page_eval("document.querySelector('#audit-summary').textContent");
    expect_contains(summary, "charges to global:llm:gpt:tpm");
    free(summary);
    rl_test_browser_close(&browser);
}

/* The form: a new limit, then an existing one changed through its edit
 * link; the daemon has them, and the table shows them. */
static void test_console_form_changes_limits(void **state) {
    (void)state;
    open_console();
    page_do("(() => { const f = document.querySelector('#limit-form').elements;"
            "f.key.value = 'tenant:console'; f.kind.value = 'rolling';"
            "f.kind.dispatchEvent(new Event('change'));"
            "f.capacity.value = '42'; f.window_seconds.value = '30'; f.unit.value = 'requests';"
            "document.querySelector('#limit-form button[type=submit]').click(); })()");
    page_wait("document.querySelector('#limit-result').textContent === 'saved: tenant:console is active'");
    expect_answer("GET", "/v1/admin/limits/tenant:console", NULL, 200,
                  "\"definition\":{\"key\":\"tenant:console\",\"kind\":\"rolling\",\"capacity\":42,"
                  "\"window_seconds\":30,\"timeout_seconds\":0,\"unit\":\"requests\"");
    page_wait("document.querySelector('tr.limit[data-key=\"tenant:console\"]').dataset.capacity === '42'");

    page_do("document.querySelector('tr.limit[data-key=\"tenant:acme:spend\"] button').click()");
    page_wait("document.querySelector('#limit-form').elements.capacity.value === '50000000'");
    char *kind = page_eval("document.querySelector('#limit-form').elements.period.value + ' ' +"
                           "document.querySelector('#limit-form').elements.kind.value");
    assert_string_equal(kind, "month budget");
    free(kind);
    page_do("document.querySelector('#limit-form').elements.capacity.value = '60000000';"
            "document.querySelector('#limit-form').requestSubmit()");
    page_wait("document.querySelector('#limit-result').textContent === 'saved: tenant:acme:spend is active'");
    expect_answer("GET", "/v1/admin/limits/tenant:acme:spend", NULL, 200,
                  "\"kind\":\"budget\",\"capacity\":60000000,\"window_seconds\":0,\"timeout_seconds\":600,"
                  "\"unit\":\"usd_micros\"");

    /* A definition the daemon refuses: its sentence on the page. */
    page_do("(() => { const f = document.querySelector('#limit-form').elements;"
            "f.key.value = 'tenant:console'; f.kind.value = 'budget'; f.kind.dispatchEvent(new Event('change'));"
            "f.timezone.value = 'Mars/Olympus'; f.capacity.value = '5';"
            "document.querySelector('#limit-form').requestSubmit(); })()");
    page_wait("document.querySelector('#limit-result').className === 'error'");
    char *why = page_eval("document.querySelector('#limit-result').textContent");
    expect_contains(why, "HTTP 400: invalid_request (timezone");
    free(why);
    expect_answer("GET", "/v1/admin/limits/tenant:console", NULL, 200, "\"capacity\":42");
    rl_test_browser_close(&browser);
}

/* ---- the console of a daemon that wants an admin token ------------------ */

#define CONSOLE_TOKEN "console-admin-8d41c6e09b2f4a7d93e5"
#define WRONG_TOKEN "console-admin-not-the-one-of-the-file"
#define ROTATED_TOKEN "Kq3v+9Zx/w.T_~0-Lr8mYb2cW4=" /* the base64 alphabet too */

/* The daemon of one test below (this file's daemon_ has no tokens): each
 * test starts it, the teardown stops it however the test ended. */
static rl_test_daemon locked = {.dir = ""};

static int close_browser_and_locked_daemon(void **state) {
    close_browser(state);
    if (locked.dir[0] != '\0') rl_test_daemon_cleanup(&locked);
    locked.dir[0] = '\0';
    return 0;
}

/* Writes `locked`'s admin.tokens_file with this one token; its path in path. */
static void write_admin_tokens(const char *token, char *path, size_t size) {
    snprintf(path, size, "%s/admin.tokens", locked.dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) fail_msg("cannot write %s", path);
    fprintf(f, "# the console's operator\n%s\n", token);
    fclose(f);
}

/* Starts `locked` with admin.tokens_file (CONSOLE_TOKEN) and the YAML
 * settings in more (or ""), its client trusting ca_file when not NULL (an
 * HTTPS daemon), on a limit 60 of 100 used and a denial of it; the denied
 * lease in denied. Reserve is open: only the admin API wants the token. */
static void start_locked_daemon(const char *more, const char *ca_file, char *denied) {
    char tokens[320], yaml[1600];
    write_admin_tokens(CONSOLE_TOKEN, tokens, sizeof tokens);
    snprintf(yaml, sizeof yaml, "admin:\n  tokens_file: %s\n%s", tokens, more);
    rl_test_daemon_write_config(&locked, yaml);
    rl_test_daemon_write_registry(&locked, "[{\"key\":\"console:locked\",\"kind\":\"rolling\",\"capacity\":100,"
                                           "\"window_seconds\":60,\"unit\":\"requests\"}]");
    const char *args[] = {"-c", locked.config_path, "--threads", "2", NULL};
    if (!rl_test_daemon_start(&locked, args)) fail_msg("the daemon with admin.tokens_file did not start");
    if (ca_file != NULL) rl_test_client_use_https(&locked.client, ca_file);
    char lease[27];
    reserve_on(&locked, rl_test_ulid_new(lease), "console:locked", 60, "\"allowed\":true");
    reserve_on(&locked, rl_test_ulid_new(denied), "console:locked", 50, "\"reason\":\"capacity\"");
    /* Without the token the admin API tells nothing. */
    expect_answer_on(&locked, "GET", "/v1/admin/limits", NULL, 401, "{\"error\":\"unauthorized\"");
}

/* The token dialog is open, saying why. */
static void expect_token_asked(const char *why) {
    char condition[512];
    snprintf(condition, sizeof condition,
             "document.querySelector('#token-dialog').open && "
             "document.querySelector('#token-why').textContent === '%s'",
             why);
    page_wait(condition);
}

/* Types token into the dialog's field and presses its button, as a person
 * would. */
static void give_token(const char *token) {
    char typed[512];
    snprintf(typed, sizeof typed,
             "document.querySelector('#token-input').value = '%s';"
             "document.querySelector('#token-form button[type=submit]').click()",
             token);
    page_do(typed);
}

#define ASKED_FIRST "The daemon asks for an admin token."
#define ASKED_AGAIN "The daemon did not take that token: type another."

/* Opened with no token, the page asks for one; a wrong one is refused and
 * asked again, one that cannot be a token is held back by the form; the
 * right one shows the limits and the denial, is kept in the tab (a reload
 * does not ask), and the form's change of a limit carries it. A SIGHUP
 * that replaces it has the page ask again; forgotten, it is asked for. */
static void test_console_asks_for_the_admin_token(void **state) {
    (void)state;
    rl_test_daemon_init(&locked);
    char denied[27], url[128];
    start_locked_daemon("", NULL, denied);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/console", (unsigned)locked.port);
    open_page(locked.dir, url, NULL);

    expect_token_asked(ASKED_FIRST);
    char *shown = page_eval("document.body.dataset.state + ' ' + document.querySelectorAll('tr.limit').length");
    assert_string_equal(shown, "loading 0");
    free(shown);

    give_token(WRONG_TOKEN);
    expect_token_asked(ASKED_AGAIN);
    shown = page_eval("document.body.dataset.state + ' ' + document.querySelectorAll('tr.limit').length");
    assert_string_equal(shown, "loading 0");
    free(shown);

    /* What cannot be a token (here a pasted ellipsis, which no header can
     * carry): the form keeps it and says so; nothing is sent. */
    give_token("console-admin-\\u2026");
    shown = page_eval("document.querySelector('#token-dialog').open + ' ' +"
                      "document.querySelector('#token-input').validity.patternMismatch + ' ' +"
                      "sessionStorage.getItem('ratelimiter.console.token')");
    assert_string_equal(shown, "true true " WRONG_TOKEN);
    free(shown);

    give_token(CONSOLE_TOKEN);
    page_wait("document.body.dataset.state === 'ready'");
    char denial[256];
    snprintf(denial, sizeof denial,
             "<tr class=\"denial\" data-key=\"console:locked\" data-reason=\"capacity\" data-lease-id=\"%s\">", denied);
    const char *parts[] = {
        "<tr class=\"limit\" data-key=\"console:locked\" data-used=\"60\" data-capacity=\"100\">",
        "60 / 100 requests",
        denial,
        "<span class=\"reason capacity\">capacity</span>",
    };
    expect_in_page(parts, sizeof parts / sizeof parts[0]);
    shown = page_eval("document.querySelector('#token-dialog').open + ' ' +"
                      "sessionStorage.getItem('ratelimiter.console.token') + ' ' +"
                      "document.querySelector('#forget-token').hidden");
    assert_string_equal(shown, "false " CONSOLE_TOKEN " false");
    free(shown);

    /* The form's PUT, with the token: the daemon has the new capacity. */
    page_do("document.querySelector('tr.limit[data-key=\"console:locked\"] button').click()");
    page_wait("document.querySelector('#limit-form').elements.capacity.value === '100'");
    page_do("document.querySelector('#limit-form').elements.capacity.value = '250';"
            "document.querySelector('#limit-form').requestSubmit()");
    page_wait("document.querySelector('#limit-result').textContent === 'saved: console:locked is active'");
    page_wait("document.querySelector('tr.limit[data-key=\"console:locked\"]').dataset.capacity === '250'");
    expect_answer_on(&locked, "GET", "/v1/admin/limits/console:locked", NULL, 401, "\"error\":\"unauthorized\"");
    locked.client.bearer_token = CONSOLE_TOKEN;
    expect_answer_on(&locked, "GET", "/v1/admin/limits/console:locked", NULL, 200,
                     "\"definition\":{\"key\":\"console:locked\",\"kind\":\"rolling\",\"capacity\":250,");
    locked.client.bearer_token = NULL;

    /* Loaded again in the same tab: the token is still there, nothing asked. */
    page_do("window.before = true; setTimeout(() => location.reload(), 0)");
    page_wait("window.before === undefined && document.body.dataset.state === 'ready'");
    shown = page_eval("document.querySelector('#token-dialog').open + ' ' +"
                      "document.querySelector('tr.limit[data-key=\"console:locked\"]').dataset.capacity");
    assert_string_equal(shown, "false 250");
    free(shown);

    /* The token taken out of the file (SIGHUP): the page asks again, and
     * takes the new one. The denials' answers come back a second late (a
     * slow daemon or network), so the refusal of the old token by one call
     * arrives after the new token was given for the other: it is not asked
     * about again, and the refreshes go on with the new token. */
    page_do("const answered = window.fetch; window.fetch = (url, init) => answered(url, init).then((res) =>"
            "  url.startsWith('/v1/admin/denials') ? new Promise((late) => setTimeout(() => late(res), 1000)) : res)");
    char tokens[320];
    write_admin_tokens(ROTATED_TOKEN, tokens, sizeof tokens);
    kill(locked.pid, SIGHUP);
    expect_token_asked(ASKED_AGAIN);
    give_token(ROTATED_TOKEN);
    page_wait("!document.querySelector('#token-dialog').open && "
              "sessionStorage.getItem('ratelimiter.console.token') === '" ROTATED_TOKEN "'");
    char late[27], condition[256];
    reserve_on(&locked, rl_test_ulid_new(late), "console:locked", 200, "\"reason\":\"capacity\"");
    snprintf(condition, sizeof condition, "document.querySelector('tr.denial[data-lease-id=\"%s\"]') !== null", late);
    page_wait(condition);
    shown = page_eval("String(document.querySelector('#token-dialog').open)");
    assert_string_equal(shown, "false");
    free(shown);

    /* Forgotten, then refused by the daemon: asked again. */
    page_do("document.querySelector('#forget-token').click()");
    expect_token_asked(ASKED_FIRST);
    rl_test_browser_close(&browser);
    assert_int_equal(rl_test_daemon_stop(&locked), 0);
}

/* Over HTTPS (server.tls.*, a certificate made now; Chromium told to take
 * it, as a browser would once its authority is trusted): the page loads,
 * asks for the token, and shows the limit. */
static void test_console_over_https(void **state) {
    (void)state;
    rl_test_daemon_init(&locked);
    char cert[320], key[320], tls[800], denied[27], url[128];
    if (!rl_test_make_certificate(locked.dir, "server", cert, key, sizeof cert)) fail_msg("openssl req failed");
    snprintf(tls, sizeof tls, "server:\n  tls:\n    cert_file: %s\n    key_file: %s\n", cert, key);
    start_locked_daemon(tls, cert, denied);
    snprintf(url, sizeof url, "https://127.0.0.1:%u/console", (unsigned)locked.port);
    const char *flags[] = {"--ignore-certificate-errors", NULL};
    open_page(locked.dir, url, flags);
    expect_token_asked(ASKED_FIRST);
    give_token(CONSOLE_TOKEN);
    page_wait("document.body.dataset.state === 'ready'");
    char denial[256];
    snprintf(denial, sizeof denial, "data-lease-id=\"%s\">", denied);
    const char *parts[] = {
        "<tr class=\"limit\" data-key=\"console:locked\" data-used=\"60\" data-capacity=\"100\">",
        "60 / 100 requests",
        denial,
    };
    expect_in_page(parts, sizeof parts / sizeof parts[0]);
    char *where = page_eval("location.protocol + ' ' + window.isSecureContext");
    assert_string_equal(where, "https: true");
    free(where);
    /* The form's PUT over HTTPS (its Origin is https://...). */
    page_do("document.querySelector('tr.limit[data-key=\"console:locked\"] button').click();"
            "document.querySelector('#limit-form').elements.capacity.value = '120';"
            "document.querySelector('#limit-form').requestSubmit()");
    page_wait("document.querySelector('#limit-result').textContent === 'saved: console:locked is active'");
    locked.client.bearer_token = CONSOLE_TOKEN;
    expect_answer_on(&locked, "GET", "/v1/admin/limits/console:locked", NULL, 200, "\"capacity\":120,");
    locked.client.bearer_token = NULL;
    rl_test_browser_close(&browser);
    assert_int_equal(rl_test_daemon_stop(&locked), 0);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_denials_endpoint),
        cmocka_unit_test(test_console_files),
        cmocka_unit_test(test_console_changes_a_limit),
        cmocka_unit_test_teardown(test_console_shows_usage_and_denials, close_browser),
        cmocka_unit_test_teardown(test_console_refreshes_live, close_browser),
        cmocka_unit_test_teardown(test_console_audit, close_browser),
        cmocka_unit_test_teardown(test_console_audit_link, close_browser),
        cmocka_unit_test_teardown(test_console_form_changes_limits, close_browser),
        cmocka_unit_test_teardown(test_console_asks_for_the_admin_token, close_browser_and_locked_daemon),
        cmocka_unit_test_teardown(test_console_over_https, close_browser_and_locked_daemon),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
