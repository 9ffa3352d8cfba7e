/* test_rlctl.c — the built rlctl (RL_RLCTL_PATH) against a daemon started by
 * the test: every command, what it prints, and each exit code of --help
 * (0 ok, 1 denied, 2 usage, 3 refused by the server, 4 unreachable).
 *
 * One daemon serves the group; each test uses its own limit keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/daemon.h"
#include "support/rlctl_run.h"
#include "support/ulid_gen.h"

static rl_test_daemon daemon_;
static char url[64];

static rl_test_rlctl_output ran;

/* Runs rlctl with argv (NULL-terminated), stdout/stderr into `ran`; returns
 * its exit code. With_url puts --url <daemon> first. */
static int run_args(bool with_url, const char *const *args) {
    const char *argv[64];
    int n = 0;
    if (with_url) {
        argv[n++] = "--url";
        argv[n++] = url;
    }
    for (int i = 0; args[i] != NULL && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return rl_test_rlctl_run(daemon_.dir, argv, NULL, &ran);
}

#define RLCTL(...) run_args(true, (const char *const[]){__VA_ARGS__, NULL})
#define RLCTL_NO_URL(...) run_args(false, (const char *const[]){__VA_ARGS__, NULL})

/* Fails unless the last run exited with code. */
static void expect_code(int code) {
    if (ran.code != code)
        fail_msg("rlctl exited %d (wanted %d)\nstdout: %s\nstderr: %s", ran.code, code, ran.out, ran.err);
}

static void expect_contains(const char *text, const char *part) {
    if (strstr(text, part) == NULL) fail_msg("\"%s\" not in:\n%s", part, text);
}

/* A number at path a.b.c of the last stdout (JSON). */
static double out_number(const char *a, const char *b, const char *c) {
    cJSON *root = cJSON_Parse(ran.out);
    if (root == NULL) fail_msg("not JSON: %s", ran.out);
    const cJSON *node = cJSON_GetObjectItemCaseSensitive(root, a);
    if (b != NULL) node = cJSON_GetObjectItemCaseSensitive(node, b);
    if (c != NULL) node = cJSON_GetObjectItemCaseSensitive(node, c);
    if (!cJSON_IsNumber(node)) {
        cJSON_Delete(root);
        fail_msg("no number at %s.%s.%s in %s", a, b ? b : "", c ? c : "", ran.out);
    }
    double value = node->valuedouble;
    cJSON_Delete(root);
    return value;
}

static int group_setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_,
        "[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":3000,"
        "\"window_seconds\":60,\"timeout_seconds\":0,\"unit\":\"requests\",\"description\":\"rpm\","
        "\"overage\":\"debt\"}]\n");
    const char *args[] = {"--listen", "127.0.0.1:0", NULL};
    if (!rl_test_daemon_start(&daemon_, args)) return -1;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)daemon_.port);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    int code = rl_test_daemon_stop(&daemon_);
    rl_test_daemon_cleanup(&daemon_);
    return code == 0 ? 0 : -1;
}

/* ---- tests -------------------------------------------------------------- */

static void test_help_and_version(void **state) {
    (void)state;
    RLCTL_NO_URL("--help");
    expect_code(0);
    expect_contains(ran.out, "exit codes:");
    expect_contains(ran.out, "reserve");
    RLCTL_NO_URL("--version");
    expect_code(0);
    expect_contains(ran.out, "rlctl " RL_VERSION);
    static const char *const commands[] = {"list", "get", "put", "delete", "reserve", "complete", "health", "audit"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        RLCTL_NO_URL(commands[i], "--help");
        expect_code(0);
        expect_contains(ran.out, "usage: rlctl");
        expect_contains(ran.out, commands[i]);
    }
    RLCTL_NO_URL("help", "put");
    expect_code(0);
    expect_contains(ran.out, "--window-seconds");

    /* Usage errors: 2, with a sentence on stderr. */
    RLCTL_NO_URL("frobnicate");
    expect_code(2);
    expect_contains(ran.err, "unknown command \"frobnicate\"");
    RLCTL_NO_URL("--bogus");
    expect_code(2);
    run_args(false, (const char *const[]){NULL});
    expect_code(2);
    expect_contains(ran.err, "COMMAND");
    RLCTL_NO_URL("--timeout-ms", "abc", "list");
    expect_code(2);
    RLCTL_NO_URL("--url", "localhost:8080", "list");
    expect_code(2);
    RLCTL("list", "--nope");
    expect_code(2);
}

static void test_health(void **state) {
    (void)state;
    RLCTL("health");
    expect_code(0);
    expect_contains(ran.out, "\"ok\":true");
    expect_contains(ran.out, "\"backend\":\"memory\"");
    /* The answer's JSON on a line of its own: the daemon's final newline is
     * not printed again after rlctl's. */
    size_t len = strlen(ran.out);
    assert_true(len >= 2 && ran.out[len - 2] == '}' && ran.out[len - 1] == '\n');
}

static void test_put_get_list(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:a:tpm", "--kind", "rolling", "--capacity", "9007199254740992", "--window-seconds",
          "60", "--unit", "tokens", "--description", "a \"quoted\" limit", "--overage", "deny");
    expect_code(0);
    expect_contains(ran.out, "cli:a:tpm active");
    RLCTL("put", "--key", "cli:a:concurrency", "--kind", "concurrency", "--capacity", "5", "--timeout-seconds",
          "300");
    expect_code(0);

    RLCTL("get", "cli:a:tpm");
    expect_code(0);
    expect_contains(ran.out, "definition.capacity");
    expect_contains(ran.out, "9007199254740992");
    expect_contains(ran.out, "a \"quoted\" limit");
    expect_contains(ran.out, "deny");
    RLCTL("get", "--json", "cli:a:tpm");
    expect_code(0);
    assert_true(out_number("limit", "definition", "capacity") == 9007199254740992.0);
    assert_true(out_number("limit", "definition", "window_seconds") == 60);

    RLCTL("list");
    expect_code(0);
    expect_contains(ran.out, "KEY");
    expect_contains(ran.out, "AVAILABLE");
    expect_contains(ran.out, "STATUS");
    expect_contains(ran.out, "cli:a:concurrency");
    expect_contains(ran.out, "global:llm:openai:gpt-4o:rpm");
    RLCTL("list", "--json");
    expect_code(0);
    cJSON *root = cJSON_Parse(ran.out);
    assert_non_null(root);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(root, "limits")));
    cJSON_Delete(root);

    /* A lower capacity: decreasing (nothing is used, so it may apply at once). */
    RLCTL("put", "--key", "cli:a:concurrency", "--kind", "concurrency", "--capacity", "3", "--timeout-seconds",
          "300");
    expect_code(0);
    expect_contains(ran.out, "cli:a:concurrency ");
}

static void test_put_errors(void **state) {
    (void)state;
    /* Caught by rlctl: 2. */
    RLCTL("put", "--key", "cli:b:x", "--kind", "rolling");
    expect_code(2);
    expect_contains(ran.err, "--capacity");
    RLCTL("put", "--key", "cli:b:x", "--kind", "sliding", "--capacity", "5");
    expect_code(2);
    expect_contains(ran.err, "sliding");
    RLCTL("put", "--key", "cli:b:x", "--kind", "rolling", "--capacity", "-5", "--window-seconds", "60");
    expect_code(2);
    RLCTL("put", "--key", "cli:b:x", "--kind", "rolling", "--capacity", "5", "--overage", "maybe");
    expect_code(2);
    RLCTL("put", "--file", "x.json", "--key", "k");
    expect_code(2);
    /* Refused by the server: 3, with its detail. */
    RLCTL("put", "--key", "cli:b:x", "--kind", "rolling", "--capacity", "5");
    expect_code(3);
    expect_contains(ran.err, "invalid_request");
    expect_contains(ran.err, "window");
    RLCTL("put", "--key", "cli:b:x", "--kind", "concurrency", "--capacity", "5", "--window-seconds", "60",
          "--timeout-seconds", "10");
    expect_code(3);
    expect_contains(ran.err, "HTTP 400");
    RLCTL("get", "cli:b:x");
    expect_code(3);
    expect_contains(ran.err, "cli:b:x");
}

static void write_file(const char *name, const char *text, char *path, size_t size) {
    snprintf(path, size, "%s/%s", daemon_.dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Writes name (in the daemon's directory) with text, runs rlctl put --file
 * on it, and fails unless it exits with code. */
static void put_file(const char *name, const char *text, int code) {
    char path[512];
    write_file(name, text, path, sizeof path);
    RLCTL("put", "--file", path);
    expect_code(code);
}

static void test_put_file(void **state) {
    (void)state;
    /* An array: put one by one, stopping at the first error. */
    put_file("defs.json",
             "[{\"key\":\"cli:f:one\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60},\n"
             " {\"key\":\"cli:f:two\",\"kind\":\"concurrency\",\"capacity\":2,\"timeout_seconds\":30,"
             "\"unit\":\"inflight\",\"overage\":\"debt\"},\n"
             " {\"key\":\"cli:f:bad\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":60},\n"
             " {\"key\":\"cli:f:four\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60}]\n",
             3);
    expect_contains(ran.out, "cli:f:one active");
    expect_contains(ran.out, "cli:f:two active");
    expect_contains(ran.err, "[2] \"cli:f:bad\"");
    expect_contains(ran.err, "capacity");
    RLCTL("get", "cli:f:two");
    expect_code(0);
    RLCTL("get", "cli:f:four");
    expect_code(3);

    /* One object; a large capacity goes out exactly. */
    put_file("one.json",
             "{\"key\":\"cli:f:big\",\"kind\":\"rolling\",\"capacity\":1000000000000000,\"window_seconds\":60}",
             0);
    RLCTL("get", "--json", "cli:f:big");
    expect_code(0);
    assert_true(out_number("limit", "definition", "capacity") == 1e15);

    /* Each object goes out as the file writes it, for the daemon to read
     * exactly: 2^53 + 1 is refused, not rounded on the way to 2^53. */
    put_file("above.json",
             "{\"key\":\"cli:f:above\",\"kind\":\"rolling\",\"capacity\":9007199254740993,"
             "\"window_seconds\":60}",
             3);
    expect_contains(ran.err, "capacity must be an integer 1..9007199254740992");
    RLCTL("get", "cli:f:above");
    expect_code(3);
    put_file("float.json",
             "[{\"key\":\"cli:f:float\",\"kind\":\"rolling\",\"capacity\":1.8e3,\"window_seconds\":60.0}]",
             0);
    expect_contains(ran.out, "cli:f:float active");
    RLCTL("get", "--json", "cli:f:float");
    assert_true(out_number("limit", "definition", "capacity") == 1800);

    /* Not JSON, not there, not definitions: 2. */
    put_file("broken.json", "[{\"key\":", 2);
    expect_contains(ran.err, "not JSON");
    RLCTL("put", "--file", "/nonexistent/defs.json");
    expect_code(2);
    put_file("number.json", "42", 2);
}

static void test_reserve_complete(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:r:tpm", "--kind", "rolling", "--capacity", "100", "--window-seconds", "60");
    expect_code(0);
    RLCTL("put", "--key", "cli:r:conc", "--kind", "concurrency", "--capacity", "1", "--timeout-seconds", "300");
    expect_code(0);

    /* Allowed, with a lease id made by rlctl. */
    RLCTL("reserve", "--req", "cli:r:tpm=60", "--req", "cli:r:conc=1");
    expect_code(0);
    expect_contains(ran.out, "\"allowed\":true");
    cJSON *root = cJSON_Parse(ran.out);
    assert_non_null(root);
    const cJSON *lease = cJSON_GetObjectItem(root, "lease_id");
    assert_true(cJSON_IsString(lease) && strlen(lease->valuestring) == 26);
    char lease_id[27];
    snprintf(lease_id, sizeof lease_id, "%s", lease->valuestring);
    cJSON_Delete(root);
    assert_true(out_number("reserved_at_unix_ms", NULL, NULL) > 1.7e12);

    /* The same lease again: the same outcome, nothing reserved twice. */
    RLCTL("reserve", "--lease-id", lease_id, "cli:r:tpm=60", "cli:r:conc=1");
    expect_code(0);
    expect_contains(ran.out, lease_id);
    RLCTL("get", "--json", "cli:r:tpm");
    assert_true(out_number("limit", "usage", "used") == 60);
    /* The same lease id with other requirements: a conflict, exit 3, why on stderr. */
    RLCTL("reserve", "--lease-id", lease_id, "cli:r:tpm=61", "cli:r:conc=1");
    expect_code(3);
    expect_contains(ran.out, "\"error\":\"lease_id_conflict\"");
    expect_contains(ran.err, "lease_id_conflict: this lease id was reserved before with other requirements");
    RLCTL("get", "--json", "cli:r:tpm");
    assert_true(out_number("limit", "usage", "used") == 60);

    /* Denied: 1, the retry hint on stdout and a sentence on stderr. */
    char other[27];
    RLCTL("reserve", "--lease-id", rl_test_ulid_new(other), "--job-id", "job-7", "--req", "cli:r:tpm=1",
          "--req", "cli:r:conc=1");
    expect_code(1);
    expect_contains(ran.out, "\"allowed\":false");
    expect_contains(ran.out, "\"denied_by\":{\"key\":\"cli:r:conc\",\"reason\":\"capacity\",\"requested\":1,"
                             "\"available\":0,\"capacity\":1}}");
    expect_contains(ran.err, "denied by \"cli:r:conc\" (capacity: requested 1, available 0 of capacity 1), retry after");
    RLCTL("reserve", "--req", "cli:r:tpm=101");
    expect_code(1);
    expect_contains(ran.err, "exceeds_capacity");
    expect_contains(ran.err, "(exceeds_capacity: requested 101, available 40 of capacity 100)");

    /* Complete gives back the unused part and the slot. */
    RLCTL("complete", "--lease-id", lease_id, "--actual", "cli:r:tpm=20");
    expect_code(0);
    expect_contains(ran.out, "\"ok\":true");
    RLCTL("get", "--json", "cli:r:tpm");
    assert_true(out_number("limit", "usage", "used") == 20);
    RLCTL("get", "--json", "cli:r:conc");
    assert_true(out_number("limit", "usage", "used") == 0);
    RLCTL("complete", "--lease-id", lease_id); /* idempotent */
    expect_code(0);
    RLCTL("complete", "--lease-id", rl_test_ulid_new(other), "cli:r:tpm=0"); /* unknown lease: ok */
    expect_code(0);

    /* Refused by the server: 3. */
    RLCTL("reserve", "--req", "cli:r:nope=1");
    expect_code(3);
    expect_contains(ran.err, "unknown_limit_key");
    expect_contains(ran.err, "cli:r:nope");

    /* Usage errors: 2. */
    RLCTL("reserve");
    expect_code(2);
    RLCTL("reserve", "--req", "cli:r:tpm");
    expect_code(2);
    expect_contains(ran.err, "KEY=AMOUNT");
    RLCTL("reserve", "--req", "cli:r:tpm=0");
    expect_code(2);
    RLCTL("reserve", "--req", "cli:r:tpm=1", "--req", "cli:r:tpm=2");
    expect_code(2);
    RLCTL("reserve", "--lease-id", "not-a-ulid", "--req", "cli:r:tpm=1");
    expect_code(2);
    expect_contains(ran.err, "ULID");
    RLCTL("complete", "--actual", "cli:r:tpm=1");
    expect_code(2);
    expect_contains(ran.err, "--lease-id");
    RLCTL("complete", "--lease-id", "01J", "--actual", "cli:r:tpm=1");
    expect_code(2);
}

/* rlctl reserve --optional KEY=AMOUNT: skipped when KEY has no definition,
 * reserved when it has one; --dry-run: the answer a reserve would get,
 * "dry_run":true, the same exit code, nothing held or remembered. */
static void test_reserve_optional_and_dry_run(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:o:conc", "--kind", "concurrency", "--capacity", "1", "--timeout-seconds", "300");
    expect_code(0);
    RLCTL("reserve", "--dry-run", "--req", "cli:o:conc=1", "--optional", "cli:o:nope=5");
    expect_code(0);
    expect_contains(ran.out, "\"allowed\":true");
    expect_contains(ran.out, ",\"dry_run\":true}");
    RLCTL("get", "--json", "cli:o:conc");
    assert_true(out_number("limit", "usage", "used") == 0);

    char lease_id[27], other[27];
    RLCTL("reserve", "--lease-id", rl_test_ulid_new(lease_id), "--optional", "cli:o:conc=1", "--optional",
          "cli:o:nope=5");
    expect_code(0);
    expect_contains(ran.out, "\"allowed\":true");
    RLCTL("get", "--json", "cli:o:conc");
    assert_true(out_number("limit", "usage", "used") == 1);
    /* its retry says optional where it did, or is another request */
    RLCTL("reserve", "--lease-id", lease_id, "--optional", "cli:o:conc=1", "cli:o:nope=5");
    expect_code(3);
    expect_contains(ran.out, "\"error\":\"lease_id_conflict\"");
    /* a dry run's denial: exit 1, said as one */
    RLCTL("reserve", "--dry-run", "--lease-id", rl_test_ulid_new(other), "cli:o:conc=1");
    expect_code(1);
    expect_contains(ran.out, "\"denied_by\":{\"key\":\"cli:o:conc\"");
    expect_contains(ran.out, "\"dry_run\":true}");
    expect_contains(ran.err, "dry run: would be denied by \"cli:o:conc\"");
    /* an undefined key without --optional: refused, as a reserve is */
    RLCTL("reserve", "--dry-run", "--req", "cli:o:nope=1");
    expect_code(3);
    expect_contains(ran.err, "unknown_limit_key cli:o:nope");
    RLCTL("reserve", "--optional", "cli:o:conc");
    expect_code(2);
    expect_contains(ran.err, "KEY=AMOUNT");
    RLCTL("reserve", "--help");
    expect_code(0);
    expect_contains(ran.out, "--optional KEY=AMOUNT");
    expect_contains(ran.out, "--dry-run");
}

/* A budget from the command line: its period and zone, a reserve and a
 * Complete that charges the actual; a bad period or zone says why. */
static void test_budget(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:b:spend", "--kind", "budget", "--capacity", "1000", "--period", "month",
          "--timezone", "Europe/Paris", "--timeout-seconds", "600", "--unit", "usd_micros");
    expect_code(0);
    expect_contains(ran.out, "cli:b:spend active");
    char lease_id[27];
    RLCTL("reserve", "--lease-id", rl_test_ulid_new(lease_id), "cli:b:spend=400");
    expect_code(0);
    RLCTL("complete", "--lease-id", lease_id, "--actual", "cli:b:spend=150");
    expect_code(0);
    RLCTL("get", "--json", "cli:b:spend");
    assert_true(out_number("limit", "usage", "committed") == 150);
    assert_true(out_number("limit", "usage", "reserved") == 0);
    assert_true(out_number("limit", "usage", "period_end_unix_ms") > out_number("limit", "usage", "period_start_unix_ms"));
    expect_contains(ran.out, "\"timezone\":\"Europe/Paris\"");
    RLCTL("put", "--key", "cli:b:x", "--kind", "budget", "--capacity", "1", "--period", "year", "--timeout-seconds", "9");
    expect_code(2);
    expect_contains(ran.err, "--period \"year\" is not hour, day, week or month");
    RLCTL("put", "--key", "cli:b:x", "--kind", "budget", "--capacity", "1", "--period", "day", "--timezone", "Mars/Base",
          "--timeout-seconds", "9");
    expect_code(3);
    expect_contains(ran.err, "timezone");
}

/* rlctl audit: one line per entry (UTC time with ms, lease, job, reserved
 * -> actual, period start, "expired"), then the next since; --since pages,
 * --json prints the page. Needs the memory backend's audit log. */
static void test_audit(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:au:spend", "--kind", "budget", "--capacity", "1000", "--period", "month",
          "--timeout-seconds", "600");
    expect_code(0);
    char first[27], second[27];
    RLCTL("reserve", "--lease-id", rl_test_ulid_new(first), "--job-id", "job-a", "cli:au:spend=400");
    expect_code(0);
    RLCTL("complete", "--lease-id", first, "--actual", "cli:au:spend=150");
    expect_code(0);
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */

    RLCTL("audit", "cli:au:spend");
    expect_code(0);
    char line[256];
    snprintf(line, sizeof line, "  lease %s  job job-a  reserved 400 -> actual 150  period ", first);
    expect_contains(ran.out, line);
    expect_contains(ran.out, "-01T00:00:00.000Z\n"); /* the month's start, UTC */
    expect_contains(ran.out, "Z  lease ");           /* the time first: ...T..:..:..mmmZ */
    expect_contains(ran.out, "\nnext_since_unix_ms ");
    assert_null(strstr(ran.out, "expired"));
    /* The time is the entry's, in ISO-8601 with milliseconds. */
    assert_true(strlen(ran.out) > 24 && ran.out[4] == '-' && ran.out[10] == 'T' && ran.out[19] == '.' &&
                ran.out[23] == 'Z');

    RLCTL("audit", "--json", "cli:au:spend");
    expect_code(0);
    double next = out_number("next_since_unix_ms", NULL, NULL);
    expect_contains(ran.out, "\"reserved\":400,\"actual\":150,");
    char since[32];
    snprintf(since, sizeof since, "%.0f", next);

    /* --since: only what came after. */
    RLCTL("reserve", "--lease-id", rl_test_ulid_new(second), "cli:au:spend=100");
    expect_code(0);
    RLCTL("complete", "--lease-id", second, "--actual", "cli:au:spend=0");
    expect_code(0);
    RLCTL("audit", "--since", since, "--limit", "10", "cli:au:spend");
    expect_code(0);
    assert_null(strstr(ran.out, first));
    snprintf(line, sizeof line, "  lease %s  job -  reserved 100 -> actual 0  period ", second);
    expect_contains(ran.out, line);
    RLCTL("audit", "--limit", "1", "cli:au:spend");
    expect_code(0);
    expect_contains(ran.out, first);
    assert_null(strstr(ran.out, second));
}

/* Its mistakes: 2 for the command line, 3 for what the daemon refuses;
 * a key with nothing charged prints only the next since. */
static void test_audit_errors(void **state) {
    (void)state;
    RLCTL("audit", "cli:au:nothing", "--since", "1764058800123");
    expect_code(0);
    assert_string_equal(ran.out, "next_since_unix_ms 1764058800123\n");
    RLCTL("audit");
    expect_code(2);
    expect_contains(ran.err, "exactly one KEY");
    RLCTL("audit", "a", "b");
    expect_code(2);
    RLCTL("audit", "bad key");
    expect_code(2);
    expect_contains(ran.err, "is not a limit key");
    RLCTL("audit", "--limit", "0", "k");
    expect_code(2);
    expect_contains(ran.err, "--limit \"0\" must be an integer 1..1000");
    RLCTL("audit", "--limit", "1001", "k");
    expect_code(2);
    RLCTL("audit", "--since", "-5", "k");
    expect_code(2);
    expect_contains(ran.err, "--since");
    RLCTL("audit", "--since", "9007199254740993", "k");
    expect_code(2);
}

/* rlctl delete KEY: 0 and "KEY deleted"; 3 for a key with no limit (or a
 * bad one); 2 for a usage error; the limit is gone (get: 3). */
static void test_delete(void **state) {
    (void)state;
    RLCTL("put", "--key", "cli:d/x:tpm", "--kind", "rolling", "--capacity", "10", "--window-seconds", "60");
    expect_code(0);
    RLCTL("reserve", "--req", "cli:d/x:tpm=4");
    expect_code(0);
    RLCTL("delete", "cli:d/x:tpm");
    expect_code(0);
    expect_contains(ran.out, "cli:d/x:tpm deleted");
    RLCTL("get", "cli:d/x:tpm");
    expect_code(3);
    RLCTL("delete", "cli:d/x:tpm");
    expect_code(3);
    expect_contains(ran.err, "rlctl: delete: no limit has the key \"cli:d/x:tpm\"");
    RLCTL("reserve", "--req", "cli:d/x:tpm=1");
    expect_code(3);
    expect_contains(ran.err, "unknown_limit_key cli:d/x:tpm");
    RLCTL("delete", "a b");
    expect_code(3);
    expect_contains(ran.err, "invalid_request");
    RLCTL("delete");
    expect_code(2);
    RLCTL("delete", "x", "y");
    expect_code(2);
    RLCTL("delete", "--nope", "x");
    expect_code(2);
}

/* Templates: put --pattern, templates (table and --json), a key made from
 * one, delete --template. */
static void test_templates(void **state) {
    (void)state;
    RLCTL("put", "--pattern", "cli:{tenant}:tokens", "--kind", "rolling", "--capacity", "10", "--window-seconds",
          "60", "--unit", "tokens");
    expect_code(0);
    expect_contains(ran.out, "cli:{tenant}:tokens ok");
    RLCTL("templates");
    expect_code(0);
    expect_contains(ran.out, "cli:{tenant}:tokens  rolling  10 tokens per 60 s");
    RLCTL("templates", "--json");
    expect_code(0);
    expect_contains(ran.out, "\"pattern\":\"cli:{tenant}:tokens\"");
    RLCTL("reserve", "--req", "cli:acme:tokens=4");
    expect_code(0);
    RLCTL("get", "cli:acme:tokens");
    expect_code(0);
    expect_contains(ran.out, "template");
    expect_contains(ran.out, "cli:{tenant}:tokens");
    RLCTL("put", "--pattern", "cli:plain", "--kind", "rolling", "--capacity", "1", "--window-seconds", "1");
    expect_code(3);
    expect_contains(ran.err, "placeholder");
    RLCTL("put", "--pattern", "cli:{a}", "--key", "cli:b", "--kind", "rolling", "--capacity", "1");
    expect_code(2);
    RLCTL("delete", "--template", "cli:{tenant}:tokens");
    expect_code(0);
    expect_contains(ran.out, "cli:{tenant}:tokens deleted");
    RLCTL("delete", "--template", "cli:{tenant}:tokens");
    expect_code(3);
    expect_contains(ran.err, "no template has the pattern cli:{tenant}:tokens");
    RLCTL("reserve", "--req", "cli:acme:tokens=1");
    expect_code(3);
}

static void test_unreachable(void **state) {
    (void)state;
    /* Nothing listens on port 1: 4, and stderr says so. */
    static const char *const dead[] = {"--url", "http://127.0.0.1:1", "--timeout-ms", "300"};
#define DEAD(...) run_args(false, (const char *const[]){dead[0], dead[1], dead[2], dead[3], __VA_ARGS__, NULL})
    DEAD("health");
    expect_code(4);
    expect_contains(ran.err, "GET /healthz");
    DEAD("list");
    expect_code(4);
    DEAD("get", "k");
    expect_code(4);
    DEAD("put", "--key", "k", "--kind", "rolling", "--capacity", "1", "--window-seconds", "1");
    expect_code(4);
    DEAD("reserve", "--req", "k=1");
    expect_code(4);
    expect_contains(ran.err, "same lease id");
    char lease[27];
    DEAD("complete", "--lease-id", rl_test_ulid_new(lease));
    expect_code(4);
    DEAD("delete", "k");
    expect_code(4);
    expect_contains(ran.err, "rlctl: delete \"k\"");
    DEAD("audit", "k");
    expect_code(4);
    expect_contains(ran.err, "rlctl: audit \"k\": no answer from /v1/admin/audit?key=k");
#undef DEAD
}

/* rlctl presets and rlctl preset apply: the list, one preset, an apply
 * that keeps the operator's key (the group's registry holds gpt-4o:rpm),
 * and each refusal's exit code. */
static void test_presets(void **state) {
    (void)state;
    RLCTL("presets", "--help");
    expect_code(0);
    expect_contains(ran.out, "usage: rlctl [global options] presets");
    RLCTL("preset", "--help");
    expect_code(0);
    expect_contains(ran.out, "preset apply [--json] NAME");
    RLCTL("presets");
    expect_code(0);
    expect_contains(ran.out, "NAME                PROVIDER    TIER     AS OF       LIMITS\n");
    expect_contains(ran.out, "openai-tier-1       openai      Tier 1   2025-06-30  10\n");
    expect_contains(ran.out, "local               local                            0\n");
    RLCTL("presets", "gemini-free");
    expect_code(0);
    expect_contains(ran.out, "source    https://ai.google.dev/");
    expect_contains(ran.out, "global:llm:gemini:gemini-2.5-pro:rpd");
    expect_contains(ran.out, "  86400  requests\n");
    RLCTL("presets", "--json");
    expect_code(0);
    expect_contains(ran.out, "{\"presets\":[{\"name\":\"anthropic-tier-1\"");
    RLCTL("presets", "--json", "openai-free");
    expect_code(0);
    expect_contains(ran.out, "{\"name\":\"openai-free\",\"provider\":\"openai\"");
    RLCTL("presets", "openai-tier-9");
    expect_code(3);
    expect_contains(ran.err, "no preset named \"openai-tier-9\"");
    RLCTL("presets", "a", "b");
    expect_code(2);

    RLCTL("preset", "apply", "openai-tier-1");
    expect_code(0);
    expect_contains(ran.out, "global:llm:openai:gpt-4o:rpm kept\n");
    expect_contains(ran.out, "global:llm:openai:gpt-4o:tpm defined\n");
    RLCTL("preset", "apply", "openai-tier-1");
    expect_code(0);
    expect_contains(ran.out, "global:llm:openai:gpt-4o:tpm unchanged\n");
    RLCTL("preset", "apply", "--json", "openai-tier-1");
    expect_code(0);
    expect_contains(ran.out, "{\"ok\":true,\"preset\":\"openai-tier-1\",\"limits\":[");
    RLCTL("get", "global:llm:openai:gpt-4o:tpm");
    expect_code(0);
    expect_contains(ran.out, "openai-tier-1");

    RLCTL("preset", "apply", "openai-tier-9");
    expect_code(3);
    expect_contains(ran.err, "HTTP 404 invalid_request: no preset named \"openai-tier-9\"; the presets are:");
    RLCTL("preset", "apply");
    expect_code(2);
    RLCTL("preset", "apply", "a", "b");
    expect_code(2);
    RLCTL("preset", "remove", "openai-tier-1");
    expect_code(2);
    RLCTL("preset", "apply", "Open/AI");
    expect_code(2);
    expect_contains(ran.err, "is not a preset name");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version), cmocka_unit_test(test_health),
        cmocka_unit_test(test_put_get_list),     cmocka_unit_test(test_put_errors),
        cmocka_unit_test(test_put_file),         cmocka_unit_test(test_reserve_complete),
        cmocka_unit_test(test_budget),           cmocka_unit_test(test_audit),
        cmocka_unit_test(test_audit_errors),     cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_reserve_optional_and_dry_run),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_templates),
        cmocka_unit_test(test_presets),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
