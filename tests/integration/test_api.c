/* test_api.c — every endpoint of docs/api.md over real HTTP against the built
 * daemon: status codes, exact bodies and error strings (docs/api.md, docs/concepts.md), keep-alive, Content-Type.
 *
 * One daemon serves the whole group (config: max_body_bytes 65536,
 * max_batch 8); each test defines its own limit keys so tests do not
 * interfere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "ratelimiter/types.h"
#include "support/daemon.h"
#include "support/registry_text.h"
#include "support/ulid_gen.h"

static rl_test_daemon daemon_;

/* The 404 of a GET of a key no limit has; a reserve's, whose detail says
 * what to do (up to the dry run's member, when it is one). */
#define UNKNOWN_KEY_GET_404(key) "{\"error\":\"unknown_limit_key:" key "\",\"detail\":\"no limit has the key " key "\"}"
#define UNKNOWN_KEY_RESERVE_404_START(key)                                                       \
    "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,\"error\":\"unknown_limit_key:" key \
    "\",\"detail\":\"no limit has the key " key ": define it (PUT /v1/admin/limits, or a template that "  \
    "matches it) and retry; nothing was reserved\""

#define RESERVE_400_PREFIX                                                                        \
    "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,\"error\":\"invalid_request\"," \
    "\"detail\":\""

/* ---- helpers ------------------------------------------------------------ */

typedef struct reply {
    long status;
    char body[65536];
    char content_type[128];
} reply;

static reply last;

/* Sends a request on the group's keep-alive client; the answer is in `last`. */
static long call(const char *method, const char *path, const char *body) {
    rl_test_response r;
    rl_test_daemon_http(&daemon_, method, path, body, &r);
    if (r.status == 0) fail_msg("%s %s: transfer failed: %s", method, path, r.error);
    last.status = r.status;
    snprintf(last.body, sizeof last.body, "%s", r.body);
    snprintf(last.content_type, sizeof last.content_type, "%s", r.content_type);
    rl_test_response_free(&r);
    /* Every answer is JSON. */
    if (strcmp(last.content_type, "application/json") != 0)
        fail_msg("%s %s: Content-Type \"%s\"", method, path, last.content_type);
    return last.status;
}

static void expect(const char *method, const char *path, const char *body, long status,
                   const char *exact_body) {
    long got = call(method, path, body);
    if (got != status) fail_msg("%s %s -> %ld (wanted %ld): %s", method, path, got, status, last.body);
    if (exact_body != NULL && strcmp(last.body, exact_body) != 0)
        fail_msg("%s %s body:\n  got    %s\n  wanted %s", method, path, last.body, exact_body);
}

static bool starts_with(const char *text, const char *prefix) {
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *text, const char *suffix) {
    size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

/* A number at a dotted path ("limit.usage.used") of last.body. */
static double jnum(const char *dotted) {
    cJSON *root = cJSON_Parse(last.body);
    if (root == NULL) fail_msg("not JSON: %s", last.body);
    char path[256];
    snprintf(path, sizeof path, "%s", dotted);
    cJSON *node = root;
    for (char *save = NULL, *part = strtok_r(path, ".", &save); part != NULL && node != NULL;
         part = strtok_r(NULL, ".", &save))
        node = cJSON_GetObjectItemCaseSensitive(node, part);
    if (!cJSON_IsNumber(node)) {
        cJSON_Delete(root);
        fail_msg("no number at %s in %s", dotted, last.body);
    }
    double value = node->valuedouble;
    cJSON_Delete(root);
    return value;
}

static void put_limit(const char *json) {
    if (call("PUT", "/v1/admin/limits", json) != 200) fail_msg("PUT %s -> %ld %s", json, last.status, last.body);
}

static void put_rolling(const char *key, uint64_t capacity, uint32_t window_seconds) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%llu,\"window_seconds\":%u,"
             "\"unit\":\"tokens\"}",
             key, (unsigned long long)capacity, window_seconds);
    put_limit(json);
}

static void put_concurrency(const char *key, uint64_t capacity) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"key\":\"%s\",\"kind\":\"concurrency\",\"capacity\":%llu,\"timeout_seconds\":300}",
             key, (unsigned long long)capacity);
    put_limit(json);
}

/* A reserve body for one key. */
static const char *reserve_body(const char *lease_id, const char *key, uint64_t amount) {
    static char body[1024];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"job-1\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}",
             lease_id, key, (unsigned long long)amount);
    return body;
}

static long reserve(const char *lease_id, const char *key, uint64_t amount) {
    return call("POST", "/v1/reserve", reserve_body(lease_id, key, amount));
}

static void complete(const char *lease_id, const char *key, uint64_t actual) {
    char body[1024];
    if (key != NULL)
        snprintf(body, sizeof body,
                 "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"%s\",\"actual_amount\":%llu}]}", lease_id,
                 key, (unsigned long long)actual);
    else
        snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[]}", lease_id);
    expect("POST", "/v1/complete", body, 200, "{\"ok\":true,\"error\":\"\"}");
}

static double usage_of(const char *key, const char *field) {
    char path[512], dotted[64];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    if (call("GET", path, NULL) != 200) fail_msg("GET %s -> %ld", path, last.status);
    snprintf(dotted, sizeof dotted, "limit.usage.%s", field);
    return jnum(dotted);
}

/* ---- group -------------------------------------------------------------- */

static int group_setup(void **state) {
    (void)state;
    rl_test_daemon_init(&daemon_);
    rl_test_daemon_write_registry(
        &daemon_,
        "[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":3000,"
        "\"window_seconds\":60,\"timeout_seconds\":0,\"unit\":\"requests\",\"description\":\"rpm\","
        "\"overage\":\"debt\"}]\n");
    rl_test_daemon_write_config(&daemon_, "server:\n  max_body_bytes: 65536\n  max_batch: 8\n");
    const char *args[] = {"-c", daemon_.config_path, "--listen", "127.0.0.1:0", NULL};
    if (!rl_test_daemon_start(&daemon_, args)) return -1;
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    int code = rl_test_daemon_stop(&daemon_);
    rl_test_daemon_cleanup(&daemon_);
    return code == 0 ? 0 : -1;
}

/* ---- tests -------------------------------------------------------------- */

static void test_healthz(void **state) {
    (void)state;
    expect("GET", "/v1/admin/limits", NULL, 200, NULL);
    cJSON *root = cJSON_Parse(last.body);
    int count = cJSON_GetArraySize(cJSON_GetObjectItem(root, "limits"));
    cJSON_Delete(root);
    char wanted[128];
    snprintf(wanted, sizeof wanted, "{\"ok\":true,\"backend\":\"memory\",\"limits\":%d}", count);
    expect("GET", "/healthz", NULL, 200, wanted);
    /* The limit loaded from the registry file at start. */
    expect("GET", "/v1/admin/limits/global:llm:openai:gpt-4o:rpm", NULL, 200, NULL);
}

static void test_reserve_allowed_then_denied(void **state) {
    (void)state;
    put_rolling("t1:rpm", 2, 60);
    char a[27], b[27], c[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(a), "t1:rpm", 1), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":"));
    assert_true(ends_with(last.body, ",\"error\":\"\"}"));
    assert_true(jnum("reserved_at_unix_ms") > 1.7e12);
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(b), "t1:rpm", 1), 200, NULL);
    assert_true(jnum("reserved_at_unix_ms") > 0);

    /* Denied: 200, allowed false, a retry hint within the window. */
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(c), "t1:rpm", 1), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":false,\"retry_after_ms\":"));
    /* The wire only grows: v1's fields as they were, then which limit said
     * no and by how much. */
    assert_true(ends_with(last.body, ",\"reserved_at_unix_ms\":0,\"error\":\"\",\"denied_by\":{\"key\":\"t1:rpm\","
                                     "\"reason\":\"capacity\",\"requested\":1,\"available\":0,\"capacity\":2}}"));
    double retry = jnum("retry_after_ms");
    assert_true(retry > 0 && retry <= 60000);
}

static void test_reserve_four_requirements(void **state) {
    (void)state;
    put_rolling("t2:rpm", 100, 60);
    put_rolling("t2:tpm", 10000, 60);
    put_concurrency("t2:concurrency", 5);
    put_rolling("tenant:t2:llm:daily_tokens", 5000, 86400);
    char id[27], body[1024];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t2:rpm\",\"amount\":1},"
             "{\"key\":\"t2:tpm\",\"amount\":1800},{\"key\":\"t2:concurrency\",\"amount\":1},"
             "{\"key\":\"tenant:t2:llm:daily_tokens\",\"amount\":1800}]}",
             rl_test_ulid_new(id));
    expect("POST", "/v1/reserve", body, 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true,"));
    assert_int_equal(usage_of("t2:tpm", "used"), 1800);
    assert_int_equal(usage_of("t2:concurrency", "active"), 1);
    /* Complete releases concurrency and shrinks the rolling reservations. */
    char complete_body[512];
    snprintf(complete_body, sizeof complete_body,
             "{\"lease_id\":\"%s\",\"job_id\":\"j\",\"actuals\":[{\"key\":\"t2:tpm\",\"actual_amount\":740},"
             "{\"key\":\"tenant:t2:llm:daily_tokens\",\"actual_amount\":740}]}",
             id);
    expect("POST", "/v1/complete", complete_body, 200, "{\"ok\":true,\"error\":\"\"}");
    assert_int_equal(usage_of("t2:tpm", "used"), 740);
    assert_int_equal(usage_of("tenant:t2:llm:daily_tokens", "used"), 740);
    assert_int_equal(usage_of("t2:concurrency", "used"), 0);
    assert_int_equal(usage_of("t2:rpm", "used"), 1);
}

static void test_reserve_malformed(void **state) {
    (void)state;
    put_rolling("t3:rpm", 10, 60);
    char id[27];
    rl_test_ulid_new(id);
    char too_many[4096] = "{\"lease_id\":\"";
    strcat(too_many, id);
    strcat(too_many, "\",\"requirements\":[");
    for (int i = 0; i < 33; i++) {
        char item[64];
        snprintf(item, sizeof item, "%s{\"key\":\"k%d\",\"amount\":1}", i ? "," : "", i);
        strcat(too_many, item);
    }
    strcat(too_many, "]}");
    char long_key[300];
    memset(long_key, 'k', 257);
    long_key[257] = '\0';
    char long_key_body[1024];
    snprintf(long_key_body, sizeof long_key_body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":1}]}", id, long_key);

    const char *bad[] = {
        "{",
        "",
        "[]",
        "null",
        "{\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1}]}",                                  /* no lease_id */
        "{\"lease_id\":\"not-a-ulid\",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1}]}",
        "{\"lease_id\":\"81J0000000000000000000000A\",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1}]}",
        "{\"lease_id\":12,\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1}]}",
        too_many,
        long_key_body,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect("POST", "/v1/reserve", bad[i], 400, NULL);
        if (!starts_with(last.body, RESERVE_400_PREFIX) || !ends_with(last.body, "\"}"))
            fail_msg("case %zu: %s", i, last.body);
    }

    /* Field by field on an otherwise valid lease. */
    const char *bad_requirements[] = {
        "",                                                  /* missing */
        ",\"requirements\":[]",                              /* empty */
        ",\"requirements\":{}",                              /* not an array */
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":0}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":-1}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1.5}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":\"1\"}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":18446744073709551616}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\"}]",
        ",\"requirements\":[{\"amount\":1}]",
        ",\"requirements\":[{\"key\":\"\",\"amount\":1}]",
        ",\"requirements\":[{\"key\":\"has space\",\"amount\":1}]",
        ",\"requirements\":[{\"key\":7,\"amount\":1}]",
        ",\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1},{\"key\":\"t3:rpm\",\"amount\":2}]",
        ",\"requirements\":[7]",
        ",\"job_id\":5,\"requirements\":[{\"key\":\"t3:rpm\",\"amount\":1}]",
    };
    for (size_t i = 0; i < sizeof bad_requirements / sizeof bad_requirements[0]; i++) {
        char body[1024];
        snprintf(body, sizeof body, "{\"lease_id\":\"%s\"%s}", id, bad_requirements[i]);
        expect("POST", "/v1/reserve", body, 400, NULL);
        if (!starts_with(last.body, RESERVE_400_PREFIX)) fail_msg("field case %zu: %s", i, last.body);
    }
    /* Nothing was reserved by any of them. */
    assert_int_equal(usage_of("t3:rpm", "used"), 0);
    /* Trailing data after the object is malformed too. */
    char body[1100];
    snprintf(body, sizeof body, "%.1000s x", reserve_body(id, "t3:rpm", 1));
    expect("POST", "/v1/reserve", body, 400, NULL);
    assert_true(starts_with(last.body, RESERVE_400_PREFIX));
}

static void test_unknown_key_404(void **state) {
    (void)state;
    put_rolling("t4:rpm", 10, 60);
    char id[27], body[1024];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t4:rpm\",\"amount\":1},"
             "{\"key\":\"tenant:foo:llm:daily_tokens\",\"amount\":1}]}",
             rl_test_ulid_new(id));
    expect("POST", "/v1/reserve", body, 404, UNKNOWN_KEY_RESERVE_404_START("tenant:foo:llm:daily_tokens") "}");
    /* All or nothing: the known key was not charged. */
    assert_int_equal(usage_of("t4:rpm", "used"), 0);
}

static void test_body_too_large_413(void **state) {
    (void)state;
    /* A body announced above max_body_bytes (65536) is refused before it is read. */
    const char request[] = "POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                           "Content-Length: 65537\r\n\r\n";
    char out[4096];
    long n = rl_test_raw_exchange(daemon_.port, request, sizeof request - 1, 5000, out, sizeof out);
    assert_true(n > 0);
    if (!starts_with(out, "HTTP/1.1 413")) fail_msg("%s", out);
    assert_non_null(strstr(out, "content-type: application/json"));
    assert_true(ends_with(out, "\r\n\r\n{\"error\":\"invalid_request\"}\n"));

    /* Sent for real through curl. */
    size_t size = 70000;
    char *big = malloc(size + 1);
    memset(big, ' ', size);
    big[size] = '\0';
    big[0] = '{';
    big[size - 1] = '}';
    expect("POST", "/v1/reserve", big, 413, "{\"error\":\"invalid_request\"}");
    free(big);
    /* The server is fine afterwards (curl reconnects). */
    expect("GET", "/healthz", NULL, 200, NULL);
}

/* One exchange on a connection of its own, as sent: the answer's body (into
 * out, after its head), which Content-Length must measure exactly. */
static const char *raw_body(const char *request, char *out, size_t size) {
    long n = rl_test_raw_exchange(daemon_.port, request, strlen(request), 5000, out, size);
    if (n <= 0 || (size_t)n >= size - 1) fail_msg("no whole answer to %s", request);
    const char *body = strstr(out, "\r\n\r\n");
    const char *length = strstr(out, "\r\nContent-Length: ");
    if (body == NULL || length == NULL || length > body) fail_msg("no Content-Length: %s", out);
    body += 4;
    assert_int_equal(strtol(length + 18, NULL, 10), (long)((out + n) - body));
    return body;
}

/* A JSON answer, errors included, ends with a newline that Content-Length
 * counts, so that a shell prompt after curl starts on a line of its own
 * (tests/integration/support checks it of every answer the tests get, and
 * drops it); other bodies (the metrics' text, the console's files) go as
 * they are. */
static void test_json_answers_end_with_a_newline(void **state) {
    (void)state;
    put_rolling("t21:rpm", 1, 60);
    static char out[65536];
    const char *gets[] = {"/healthz", "/v1/admin/limits/t21:rpm", "/v1/admin/limits/t21:none", "/nope", "/"};
    for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++) {
        char request[256];
        snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", gets[i]);
        const char *body = raw_body(request, out, sizeof out);
        if (!ends_with(body, "}\n") || ends_with(body, "\n\n")) fail_msg("GET %s: %s", gets[i], body);
    }
    const char *refused = raw_body("POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n"
                                   "Connection: close\r\n\r\n{",
                                   out, sizeof out);
    assert_true(starts_with(refused, RESERVE_400_PREFIX) && ends_with(refused, "\"}\n"));

    /* A console file: the file's bytes, not one more. */
    const char *css = raw_body("GET /console/console.css HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                               out, sizeof out);
    FILE *file = fopen(RL_SOURCE_DIR "/console/console.css", "rb");
    assert_non_null(file);
    static char source[65536];
    size_t source_len = fread(source, 1, sizeof source - 1, file);
    fclose(file);
    source[source_len] = '\0';
    assert_string_equal(css, source);
}

static void test_wrong_method_405(void **state) {
    (void)state;
    const char *cases[][2] = {
        {"GET", "/v1/reserve"},        {"PUT", "/v1/complete"},      {"GET", "/v1/reserve/batch"},
        {"DELETE", "/v1/complete/batch"}, {"DELETE", "/v1/admin/limits"}, {"POST", "/v1/admin/limits"},
        {"PUT", "/v1/admin/limits/x"}, {"POST", "/healthz"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect(cases[i][0], cases[i][1], "{}", 405, "{\"error\":\"invalid_request\"}");
}

static void test_unknown_path_404(void **state) {
    (void)state;
    /* Each says what was not found, and where the API is. */
    const char *paths[] = {"/v2/reserve", "/v1/reserve/", "/v1/reserves", "/healthz/x",
                           "/v1/admin", "/V1/reserve", "//"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char wanted[256];
        snprintf(wanted, sizeof wanted,
                 "{\"error\":\"invalid_request\",\"detail\":\"no route for GET %s: the API is under /v1/ "
                 "(see /console)\"}",
                 paths[i]);
        expect("GET", paths[i], NULL, 404, wanted);
    }
    /* The root is the console's (test_console.c): a redirect there. */
    expect("GET", "/", NULL, 302, "{\"detail\":\"the web console is at /console\"}");
    expect("POST", "/nope", "{}", 404,
           "{\"error\":\"invalid_request\",\"detail\":\"no route for POST /nope: the API is under /v1/ (see "
           "/console)\"}");
    /* A query string does not change the route. */
    expect("GET", "/healthz?verbose=1", NULL, 200, NULL);
}

static void test_admin_put_get_list(void **state) {
    (void)state;
    put_limit("{\"key\":\"t5:tpm\",\"kind\":\"rolling\",\"capacity\":3000,\"window_seconds\":60,"
              "\"timeout_seconds\":0,\"unit\":\"tokens\",\"description\":\"t5 \\\"tokens\\\" per minute\","
              "\"overage\":\"deny\"}");
    assert_string_equal(last.body, "{\"ok\":true,\"status\":\"active\"}");
    const char *definition =
        "{\"key\":\"t5:tpm\",\"kind\":\"rolling\",\"capacity\":3000,\"window_seconds\":60,"
        "\"timeout_seconds\":0,\"unit\":\"tokens\",\"description\":\"t5 \\\"tokens\\\" per minute\","
        "\"overage\":\"deny\"}";
    char wanted[2048];
    snprintf(wanted, sizeof wanted,
             "{\"limit\":{\"definition\":%s,\"status\":\"active\",\"pending_decrease_to\":0,"
             "\"usage\":{\"capacity\":3000,\"used\":0,\"available\":3000,\"active\":0,\"debt\":0,"
             "\"debt_total\":0,\"overage_denied_total\":0}}}",
             definition);
    expect("GET", "/v1/admin/limits/t5:tpm", NULL, 200, wanted);

    /* Live usage. */
    char a[27], b[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(a), "t5:tpm", 1000), 200, NULL);
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(b), "t5:tpm", 500), 200, NULL);
    assert_int_equal(usage_of("t5:tpm", "used"), 1500);
    assert_int_equal(usage_of("t5:tpm", "available"), 1500);
    assert_int_equal(usage_of("t5:tpm", "active"), 2);

    /* Defaults: overage debt, empty unit and description. */
    put_limit("{\"key\":\"t5:concurrency\",\"kind\":\"concurrency\",\"capacity\":4,\"timeout_seconds\":30}");
    expect("GET", "/v1/admin/limits/t5:concurrency", NULL, 200, NULL);
    assert_true(starts_with(last.body,
                            "{\"limit\":{\"definition\":{\"key\":\"t5:concurrency\",\"kind\":\"concurrency\","
                            "\"capacity\":4,\"window_seconds\":0,\"timeout_seconds\":30,\"unit\":\"\","
                            "\"description\":\"\",\"overage\":\"debt\"}"));

    /* The list holds both, sorted by key, with usage. */
    expect("GET", "/v1/admin/limits", NULL, 200, NULL);
    assert_true(starts_with(last.body, "{\"limits\":[{\"definition\":"));
    const char *c = strstr(last.body, "\"key\":\"t5:concurrency\"");
    const char *t = strstr(last.body, "\"key\":\"t5:tpm\"");
    assert_true(c != NULL && t != NULL && c < t);
    assert_non_null(strstr(last.body, "\"used\":1500"));
    cJSON *root = cJSON_Parse(last.body);
    const cJSON *limits = cJSON_GetObjectItem(root, "limits");
    const char *previous = "";
    for (const cJSON *item = limits->child; item != NULL; item = item->next) {
        const char *key = cJSON_GetObjectItem(cJSON_GetObjectItem(item, "definition"), "key")->valuestring;
        assert_true(strcmp(previous, key) < 0);
        previous = key;
    }
    cJSON_Delete(root);

    /* Update in place: the latest definition wins. */
    put_limit("{\"key\":\"t5:concurrency\",\"kind\":\"concurrency\",\"capacity\":8,\"timeout_seconds\":30}");
    assert_int_equal(usage_of("t5:concurrency", "capacity"), 8);

    expect("GET", "/v1/admin/limits/t5:nope", NULL, 404, UNKNOWN_KEY_GET_404("t5:nope"));
}

static void test_admin_put_invalid(void **state) {
    (void)state;
    const char *bad[] = {
        "{",
        "[]",
        "{\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}",
        "{\"key\":\"\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}",
        "{\"key\":\"a b\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}",
        "{\"key\":\"t6\",\"kind\":\"bucket\",\"capacity\":1,\"window_seconds\":1}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":1}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":-5,\"window_seconds\":1}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1.5,\"window_seconds\":1}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":0}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1,\"timeout_seconds\":5}",
        "{\"key\":\"t6\",\"kind\":\"concurrency\",\"capacity\":1}",
        "{\"key\":\"t6\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":5,\"window_seconds\":5}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1,\"overage\":\"forgive\"}",
        "{\"key\":\"t6\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1,\"unit\":5}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect("PUT", "/v1/admin/limits", bad[i], 400, NULL);
        if (!starts_with(last.body, "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\""))
            fail_msg("case %zu: %s", i, last.body);
    }
    /* None of them created anything. */
    expect("GET", "/v1/admin/limits/t6", NULL, 404, UNKNOWN_KEY_GET_404("t6"));
}

/* Issue 11: a money budget over a calendar month, through the API: its
 * definition and LimitInfo carry the period, the time zone, what is
 * committed and what is reserved; a reserve holds, a Complete charges the
 * actual; wrong budgets are 400s that name the field. */
static void test_budget_over_http(void **state) {
    (void)state;
    put_limit("{\"key\":\"tenant:acme:spend:monthly\",\"kind\":\"budget\",\"capacity\":50000000,\"period\":\"month\","
              "\"timezone\":\"UTC\",\"timeout_seconds\":600,\"unit\":\"usd_micros\",\"overage\":\"debt\"}");
    assert_string_equal(last.body, "{\"ok\":true,\"status\":\"active\"}");
    char id[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(id), "tenant:acme:spend:monthly", 30000000), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
    complete(id, "tenant:acme:spend:monthly", 1250000);
    expect("GET", "/v1/admin/limits/tenant:acme:spend:monthly", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"overage\":\"debt\",\"period\":\"month\",\"timezone\":\"UTC\"}"));
    assert_non_null(strstr(last.body, "\"used\":1250000,\"available\":48750000,"));
    assert_non_null(strstr(last.body, ",\"committed\":1250000,\"reserved\":0}}}"));
    double start = jnum("limit.usage.period_start_unix_ms"), end = jnum("limit.usage.period_end_unix_ms");
    assert_true(start > 1.7e12 && end > start && end - start >= 28.0 * 86400000 && end - start <= 31.0 * 86400000);
    /* a denial names the budget and waits for the month's end at most */
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(id), "tenant:acme:spend:monthly", 49000000), 200, NULL);
    assert_non_null(strstr(last.body, "\"denied_by\":{\"key\":\"tenant:acme:spend:monthly\",\"reason\":\"capacity\","
                                      "\"requested\":49000000,\"available\":48750000,\"capacity\":50000000,"
                                      "\"period_end_unix_ms\":"));
    assert_true(jnum("denied_by.period_end_unix_ms") == end);
    assert_true(jnum("retry_after_ms") > 0 && jnum("retry_after_ms") <= 31.0 * 86400000);
    /* the time zone defaults to UTC; a local one is kept as given */
    put_limit("{\"key\":\"tenant:acme:daily\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"day\",\"timeout_seconds\":60}");
    expect("GET", "/v1/admin/limits/tenant:acme:daily", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"period\":\"day\",\"timezone\":\"UTC\""));
    put_limit("{\"key\":\"tenant:acme:daily\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"week\","
              "\"timezone\":\"America/New_York\",\"timeout_seconds\":60}");
    expect("GET", "/v1/admin/limits/tenant:acme:daily", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"period\":\"week\",\"timezone\":\"America/New_York\""));

    struct {
        const char *body, *names;
    } bad[] = {
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"month\",\"timezone\":\"Mars/Olympus\","
         "\"timeout_seconds\":60}", "timezone"},
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"year\",\"timeout_seconds\":60}", "period"},
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"timeout_seconds\":60}", "period"},
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"day\"}", "timeout_seconds"},
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"day\",\"timeout_seconds\":604801}",
         "timeout_seconds"},
        {"{\"key\":\"b1\",\"kind\":\"budget\",\"capacity\":10,\"period\":\"day\",\"timeout_seconds\":60,"
         "\"window_seconds\":60}", "window_seconds"},
        {"{\"key\":\"b1\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60,\"period\":\"day\"}", "period"},
        {"{\"key\":\"b1\",\"kind\":\"concurrency\",\"capacity\":10,\"timeout_seconds\":60,\"timezone\":\"UTC\"}",
         "timezone"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect("PUT", "/v1/admin/limits", bad[i].body, 400, NULL);
        if (!starts_with(last.body, "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"") ||
            strstr(last.body, bad[i].names) == NULL)
            fail_msg("case %zu: %s does not name %s", i, last.body, bad[i].names);
    }
    expect("GET", "/v1/admin/limits/b1", NULL, 404, UNKNOWN_KEY_GET_404("b1"));

    /* an open reservation keeps a budget a budget, and the 409 names both kinds */
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(id), "tenant:acme:daily", 3), 200, NULL);
    expect("PUT", "/v1/admin/limits", "{\"key\":\"tenant:acme:daily\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60}",
           409, NULL);
    if (strstr(last.body, "holds 3 in 1 reservation of its budget kind: its kind can change to rolling only") == NULL)
        fail_msg("%s", last.body);
}

/* The audit entries of key since since_unix_ms (limit 1000), into a cJSON
 * array the caller deletes through *root; *next gets next_since_unix_ms. */
static const cJSON *audit_entries(const char *key, uint64_t since_unix_ms, cJSON **root, double *next) {
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */
    char path[512];
    snprintf(path, sizeof path, "/v1/admin/audit?key=%s&since_unix_ms=%llu&limit=1000", key,
             (unsigned long long)since_unix_ms);
    expect("GET", path, NULL, 200, NULL);
    *next = jnum("next_since_unix_ms");
    *root = cJSON_Parse(last.body);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(*root, "entries");
    if (!cJSON_IsArray(entries)) fail_msg("no entries: %s", last.body);
    return entries;
}

static double field_number(const cJSON *entry, const char *name) {
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(entry, name);
    if (!cJSON_IsNumber(value)) fail_msg("no %s in an entry", name);
    return value->valuedouble;
}

static const char *field_string(const cJSON *entry, const char *name) {
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(entry, name);
    if (!cJSON_IsString(value)) fail_msg("no %s in an entry", name);
    return value->valuestring;
}

/* GET /v1/admin/audit: what each Complete charged, per key, in time order;
 * paging by next_since_unix_ms; the query's mistakes. Needs the memory
 * backend's audit log (beside the registry by default). */
static void test_audit_over_http(void **state) {
    (void)state;
    put_limit("{\"key\":\"audit:spend\",\"kind\":\"budget\",\"capacity\":1000,\"period\":\"month\","
              "\"timeout_seconds\":600,\"unit\":\"usd_micros\"}");
    put_rolling("audit:tpm", 1000, 60);
    char a[27], b[27], body[1024];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"job_id\":\"job-a\",\"requirements\":[{\"key\":\"audit:spend\",\"amount\":400},"
             "{\"key\":\"audit:tpm\",\"amount\":300}]}",
             rl_test_ulid_new(a));
    expect("POST", "/v1/reserve", body, 200, NULL);
    double reserved_at = jnum("reserved_at_unix_ms");
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"audit:spend\",\"actual_amount\":150},"
             "{\"key\":\"audit:tpm\",\"actual_amount\":120}]}",
             a);
    expect("POST", "/v1/complete", body, 200, "{\"ok\":true,\"error\":\"\"}");
    expect("POST", "/v1/complete", body, 200, NULL); /* again: nothing charged twice */

    cJSON *root;
    double next;
    const cJSON *entries = audit_entries("audit:spend", 0, &root, &next);
    assert_int_equal(cJSON_GetArraySize(entries), 1);
    const cJSON *e = cJSON_GetArrayItem(entries, 0);
    assert_string_equal(field_string(e, "lease_id"), a);
    assert_string_equal(field_string(e, "job_id"), "job-a");
    assert_string_equal(field_string(e, "key"), "audit:spend");
    assert_true(field_number(e, "reserved") == 400 && field_number(e, "actual") == 150);
    double at = field_number(e, "at_unix_ms"), period = field_number(e, "period_start_unix_ms");
    assert_true(at >= reserved_at && period > 0 && period <= reserved_at);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "expired")));
    assert_true(next > at);
    cJSON_Delete(root);
    /* A rolling limit's entry has no period; the key may be percent-encoded. */
    entries = audit_entries("audit%3Atpm", 0, &root, &next);
    assert_int_equal(cJSON_GetArraySize(entries), 1);
    e = cJSON_GetArrayItem(entries, 0);
    assert_true(field_number(e, "reserved") == 300 && field_number(e, "actual") == 120);
    assert_true(field_number(e, "period_start_unix_ms") == 0);
    cJSON_Delete(root);

    /* Paging: limit 1 gives the oldest; next_since_unix_ms the rest. A
     * reservation not completed yet is no entry. */
    rl_test_sleep_ms(5); /* b's entry in a later millisecond than a's */
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(b), "audit:spend", 100), 200, NULL);
    entries = audit_entries("audit:spend", 0, &root, &next);
    assert_int_equal(cJSON_GetArraySize(entries), 1);
    cJSON_Delete(root);
    complete(b, "audit:spend", 60);
    rl_test_sleep_ms(2);
    expect("GET", "/v1/admin/audit?key=audit:spend&limit=1", NULL, 200, NULL);
    assert_non_null(strstr(last.body, a));
    assert_null(strstr(last.body, b));
    next = jnum("next_since_unix_ms");
    entries = audit_entries("audit:spend", (uint64_t)next, &root, &next);
    assert_int_equal(cJSON_GetArraySize(entries), 1);
    e = cJSON_GetArrayItem(entries, 0);
    assert_string_equal(field_string(e, "lease_id"), b);
    assert_string_equal(field_string(e, "job_id"), "job-1");
    assert_true(field_number(e, "reserved") == 100 && field_number(e, "actual") == 60);
    cJSON_Delete(root);
    /* Past the last entry: empty, ask again from the same time. */
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/audit?key=audit:spend&since_unix_ms=%.0f", next);
    char wanted[128];
    snprintf(wanted, sizeof wanted, "{\"entries\":[],\"next_since_unix_ms\":%.0f}", next);
    expect("GET", path, NULL, 200, wanted);

    /* A key nobody defined has no entries (the log outlives definitions). */
    expect("GET", "/v1/admin/audit?key=audit:never", NULL, 200, "{\"entries\":[],\"next_since_unix_ms\":0}");
    /* Mistakes: 400 naming the parameter; another method 405. */
    expect("GET", "/v1/admin/audit", NULL, 400,
           "{\"error\":\"invalid_request\",\"detail\":\"key is required: GET "
           "/v1/admin/audit?key=K[&since_unix_ms=T][&limit=N]\"}");
    expect("GET", "/v1/admin/audit?key=audit:spend&limit=0", NULL, 400,
           "{\"error\":\"invalid_request\",\"detail\":\"limit must be a decimal integer 1..1000\"}");
    expect("GET", "/v1/admin/audit?key=audit:spend&since_unix_ms=-1", NULL, 400, NULL);
    assert_non_null(strstr(last.body, "since_unix_ms must be a decimal integer"));
    expect("GET", "/v1/admin/audit?key=audit:spend&since=1", NULL, 400, NULL);
    assert_non_null(strstr(last.body, "unknown parameter \\\"since\\\""));
    expect("GET", "/v1/admin/audit?key=a%20b", NULL, 400, NULL);
    assert_non_null(strstr(last.body, "key must be"));
    expect("POST", "/v1/admin/audit?key=audit:spend", "{}", 405, "{\"error\":\"invalid_request\"}");
}

/* A budget reservation never completed is refunded in full at its timeout,
 * and the audit log says so: expired, actual 0. Needs the memory backend's
 * audit log; waits (up to a deadline) for the daemon's sweep. */
static void test_audit_of_an_expired_budget_reservation(void **state) {
    (void)state;
    put_limit("{\"key\":\"audit:short\",\"kind\":\"budget\",\"capacity\":100,\"period\":\"day\","
              "\"timeout_seconds\":1}");
    char id[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(id), "audit:short", 50), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
    cJSON *root = NULL;
    double next;
    const cJSON *entries = NULL;
    for (long until = rl_test_now_ms() + 30000; rl_test_now_ms() < until; rl_test_sleep_ms(50)) {
        cJSON_Delete(root);
        entries = audit_entries("audit:short", 0, &root, &next);
        if (cJSON_GetArraySize(entries) > 0) break;
    }
    if (cJSON_GetArraySize(entries) != 1) fail_msg("no expired entry: %s", last.body);
    const cJSON *e = cJSON_GetArrayItem(entries, 0);
    assert_string_equal(field_string(e, "lease_id"), id);
    assert_true(field_number(e, "reserved") == 50 && field_number(e, "actual") == 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "expired")));
    cJSON_Delete(root);
    assert_true(usage_of("audit:short", "used") == 0);
}

/* Issue 9: a capacity above 2^53 was rounded to 2^53 and accepted (200),
 * while reserve refused the same number. Every integer of a definition is
 * read exactly now: refused with a detail naming the field, nothing stored. */
static void test_admin_put_integers_exact(void **state) {
    (void)state;
    const char *prefix = "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"";
    expect("PUT", "/v1/admin/limits",
           "{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":9007199254740993,\"window_seconds\":60}",
           400, NULL);
    if (!starts_with(last.body, prefix) || strstr(last.body, "capacity") == NULL)
        fail_msg("%s", last.body);
    expect("GET", "/v1/admin/limits/t6b", NULL, 404, UNKNOWN_KEY_GET_404("t6b"));

    /* 2^53 itself is the largest capacity; a refused PUT leaves it as it was. */
    put_limit("{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":9007199254740992,\"window_seconds\":60}");
    const char *refused[] = {
        "{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":9007199254740993,\"window_seconds\":60}",
        "{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":1e16,\"window_seconds\":60}",
        "{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":59.99999999999999999}",
    };
    const char *field[] = {"capacity", "capacity", "window_seconds"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        expect("PUT", "/v1/admin/limits", refused[i], 400, NULL);
        if (!starts_with(last.body, prefix) || strstr(last.body, field[i]) == NULL)
            fail_msg("case %zu: %s", i, last.body);
    }
    expect("GET", "/v1/admin/limits/t6b", NULL, 200, NULL);
    if (strstr(last.body, "\"definition\":{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":9007199254740992,"
                          "\"window_seconds\":60,") == NULL)
        fail_msg("%s", last.body);
    /* An integer written as a float is that integer. */
    put_limit("{\"key\":\"t6b\",\"kind\":\"rolling\",\"capacity\":1.8e3,\"window_seconds\":60.0}");
    assert_int_equal(usage_of("t6b", "capacity"), 1800);
}

/* A limit's kind changes only while it holds nothing: 409 limit_in_use,
 * and the limit, its reservation and the registry file stay as they were. */
static void test_admin_kind_change_in_use(void **state) {
    (void)state;
    put_limit("{\"key\":\"t6k\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":3600}");
    char lease[27];
    rl_test_ulid_new(lease);
    assert_int_equal(reserve(lease, "t6k", 1), 200);
    const char *to_concurrency = "{\"key\":\"t6k\",\"kind\":\"concurrency\",\"capacity\":10,\"timeout_seconds\":5}";
    expect("PUT", "/v1/admin/limits", to_concurrency, 409, NULL);
    if (!starts_with(last.body, "{\"ok\":false,\"error\":\"limit_in_use\",\"detail\":\"limit \\\"t6k\\\" holds 1 ") ||
        strstr(last.body, "rolling") == NULL)
        fail_msg("%s", last.body);
    expect("GET", "/v1/admin/limits/t6k", NULL, 200, NULL);
    if (strstr(last.body, "\"kind\":\"rolling\"") == NULL) fail_msg("%s", last.body);
    assert_int_equal(usage_of("t6k", "used"), 1);
    char err[512] = "";
    char *registry = rl_test_registry_text(daemon_.registry_path, err, sizeof err);
    if (registry == NULL) fail_msg("the registry: %s", err);
    if (strstr(registry, "{\"key\":\"t6k\",\"kind\":\"rolling\",") == NULL) fail_msg("%s", registry);
    free(registry);
    /* Once it holds nothing, the kind changes. */
    complete(lease, "t6k", 0);
    put_limit(to_concurrency);
    assert_int_equal(usage_of("t6k", "capacity"), 10);
    expect("GET", "/v1/admin/limits/t6k", NULL, 200, NULL);
    if (strstr(last.body, "\"kind\":\"concurrency\"") == NULL) fail_msg("%s", last.body);
}

/* A key (a pattern) of the longest length there is: a refusal that names it
 * arrives whole, its sentence to the end. */
static void test_details_name_the_longest_key_whole(void **state) {
    (void)state;
    char key[RL_KEY_MAX_LEN + 1], json[1024], wanted[2048];
    memset(key, 'k', sizeof key - 1);
    memcpy(key, "t6long:", 7);
    key[RL_KEY_MAX_LEN] = '\0';
    put_rolling(key, 10, 3600);
    char lease[27];
    assert_int_equal(reserve(rl_test_ulid_new(lease), key, 1), 200);
    snprintf(json, sizeof json, "{\"key\":\"%s\",\"kind\":\"concurrency\",\"capacity\":10,\"timeout_seconds\":5}", key);
    snprintf(wanted, sizeof wanted,
             "{\"ok\":false,\"error\":\"limit_in_use\",\"detail\":\"limit \\\"%s\\\" holds 1 in 1 reservation of its "
             "rolling kind: its kind can change to concurrency only when it holds nothing (rolling usage leaves at "
             "the end of its window, concurrency holds and budget reservations at Complete or their timeout); or "
             "define the new limit under another key\"}",
             key);
    expect("PUT", "/v1/admin/limits", json, 409, wanted);

    char pattern[RL_KEY_MAX_LEN + 1], made[RL_KEY_MAX_LEN + 1];
    memset(pattern, 'p', sizeof pattern - 1);
    memcpy(pattern, "t6long:{tenant}:", 16);
    pattern[RL_KEY_MAX_LEN] = '\0';
    snprintf(made, sizeof made, "t6long:acme:%s", pattern + 16);
    snprintf(json, sizeof json, "{\"pattern\":\"%s\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":3600}",
             pattern);
    expect("PUT", "/v1/admin/templates", json, 200, "{\"ok\":true}");
    assert_int_equal(reserve(rl_test_ulid_new(lease), made, 1), 200);
    snprintf(json, sizeof json,
             "{\"pattern\":\"%s\",\"kind\":\"concurrency\",\"capacity\":10,\"timeout_seconds\":5}", pattern);
    snprintf(wanted, sizeof wanted,
             "{\"ok\":false,\"error\":\"limit_in_use\",\"detail\":\"a limit made from template \\\"%s\\\" holds "
             "reservations: the template's kind can change only once none of the limits made from it holds "
             "anything; or put the new template under another pattern\"}",
             pattern);
    expect("PUT", "/v1/admin/templates", json, 409, wanted);
}

/* overview.md Example 4: a decrease waits for usage, denying meanwhile. */
static void test_decreasing_flow(void **state) {
    (void)state;
    const char *key = "t7:concurrency";
    put_concurrency(key, 3);
    char a[27], b[27], c[27], d[27], e[27];
    rl_test_ulid_new(a);
    rl_test_ulid_new(b);
    rl_test_ulid_new(c);
    for (int i = 0; i < 3; i++) {
        const char *id = i == 0 ? a : i == 1 ? b : c;
        reserve(id, key, 1);
        assert_true(starts_with(last.body, "{\"allowed\":true"));
    }
    put_limit("{\"key\":\"t7:concurrency\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":300}");
    assert_string_equal(last.body, "{\"ok\":true,\"status\":\"decreasing\"}");
    expect("GET", "/v1/admin/limits/t7:concurrency", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"status\":\"decreasing\",\"pending_decrease_to\":1"));

    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(d), key, 1), 200,
           "{\"allowed\":false,\"retry_after_ms\":10000,\"reserved_at_unix_ms\":0,"
           "\"error\":\"limit_decreasing:t7:concurrency\",\"denied_by\":{\"key\":\"t7:concurrency\","
           "\"reason\":\"decreasing\",\"requested\":1,\"available\":0,\"capacity\":1}}");

    /* Usage falls to the new capacity: the decrease applies. */
    complete(a, NULL, 0);
    complete(b, NULL, 0);
    expect("GET", "/v1/admin/limits/t7:concurrency", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"status\":\"active\",\"pending_decrease_to\":0"));
    assert_int_equal(jnum("limit.usage.capacity"), 1);
    /* Full at capacity 1: a plain denial now. */
    reserve(rl_test_ulid_new(e), key, 1);
    assert_true(starts_with(last.body, "{\"allowed\":false"));
    assert_true(ends_with(last.body, "\"error\":\"\",\"denied_by\":{\"key\":\"t7:concurrency\",\"reason\":\"capacity\","
                                     "\"requested\":1,\"available\":0,\"capacity\":1}}"));
    complete(c, NULL, 0);
    reserve(rl_test_ulid_new(e), key, 1);
    assert_true(starts_with(last.body, "{\"allowed\":true"));

    /* An increase applies at once and cancels a pending decrease. */
    put_concurrency("t7b", 2);
    char f[27], g[27];
    reserve(rl_test_ulid_new(f), "t7b", 2);
    put_limit("{\"key\":\"t7b\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":300}");
    assert_string_equal(last.body, "{\"ok\":true,\"status\":\"decreasing\"}");
    put_limit("{\"key\":\"t7b\",\"kind\":\"concurrency\",\"capacity\":5,\"timeout_seconds\":300}");
    assert_string_equal(last.body, "{\"ok\":true,\"status\":\"active\"}");
    reserve(rl_test_ulid_new(g), "t7b", 3);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
}

static void test_exceeds_capacity(void **state) {
    (void)state;
    put_rolling("t8:tpm", 1000, 60);
    char id[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(id), "t8:tpm", 1001), 200,
           "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
           "\"error\":\"exceeds_capacity:t8:tpm\",\"denied_by\":{\"key\":\"t8:tpm\","
           "\"reason\":\"exceeds_capacity\",\"requested\":1001,\"available\":1000,\"capacity\":1000}}");
}

static void test_batches(void **state) {
    (void)state;
    put_rolling("t9:rpm", 2, 60);
    put_rolling("t9:other", 10, 60);
    char a[27], b[27], c[27], d[27], e[27], body[4096];
    snprintf(body, sizeof body,
             "{\"requests\":["
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"t9:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:nope\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:rpm\",\"amount\":2}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:other\",\"amount\":3}]},"
             "7,"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:rpm\",\"amount\":1}]}"
             "]}",
             rl_test_ulid_new(a), rl_test_ulid_new(b), rl_test_ulid_new(c), rl_test_ulid_new(d),
             rl_test_ulid_new(e));
    expect("POST", "/v1/reserve/batch", body, 200, NULL);
    cJSON *root = cJSON_Parse(last.body);
    const cJSON *results = cJSON_GetObjectItem(root, "results");
    assert_int_equal(cJSON_GetArraySize(results), 7);
    const struct {
        bool allowed;
        const char *error;
    } wanted[] = {
        {true, ""},
        {false, "invalid_request"},
        {false, "unknown_limit_key:t9:nope"},
        {false, ""}, /* 1 used of 2: amount 2 does not fit */
        {true, ""},
        {false, "invalid_request"},
        {true, ""}, /* in order: the last unit of t9:rpm */
    };
    for (int i = 0; i < 7; i++) {
        const cJSON *r = cJSON_GetArrayItem(results, i);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(r, "allowed")), wanted[i].allowed);
        assert_string_equal(cJSON_GetObjectItem(r, "error")->valuestring, wanted[i].error);
        /* an invalid item carries a detail naming its place in the batch, an
         * unknown key's one naming the key; no other */
        const cJSON *detail = cJSON_GetObjectItem(r, "detail");
        if (strcmp(wanted[i].error, "invalid_request") == 0) {
            assert_non_null(detail);
            char prefix[32];
            snprintf(prefix, sizeof prefix, "requests[%d]", i);
            assert_true(starts_with(detail->valuestring, prefix));
        } else if (starts_with(wanted[i].error, "unknown_limit_key:")) {
            assert_non_null(detail);
            assert_true(starts_with(detail->valuestring, "no limit has the key t9:nope: define it"));
        } else {
            assert_null(detail);
        }
        double reserved_at = cJSON_GetObjectItem(r, "reserved_at_unix_ms")->valuedouble;
        assert_true(wanted[i].allowed ? reserved_at > 0 : reserved_at == 0);
    }
    cJSON_Delete(root);
    assert_int_equal(usage_of("t9:rpm", "used"), 2);
    assert_int_equal(usage_of("t9:other", "used"), 3);

    /* Whole payload malformed: 400. */
    const char *bad[] = {"{", "{}", "{\"requests\":[]}", "{\"requests\":{}}", "[]",
                         "{\"requests\":[1,2,3,4,5,6,7,8,9]}" /* above max_batch 8 */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect("POST", "/v1/reserve/batch", bad[i], 400, NULL);
        if (!starts_with(last.body, "{\"error\":\"invalid_request\",\"detail\":\""))
            fail_msg("case %zu: %s", i, last.body);
        expect("POST", "/v1/complete/batch", bad[i], 400, NULL);
        assert_true(starts_with(last.body, "{\"error\":\"invalid_request\",\"detail\":\""));
    }

    snprintf(body, sizeof body,
             "{\"requests\":[{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"t9:rpm\",\"actual_amount\":1}]},"
             "{\"lease_id\":\"nope\"},{\"lease_id\":\"%s\"},{\"lease_id\":\"%s\",\"actuals\":[{\"key\":"
             "\"t9:other\",\"actual_amount\":1}]}]}",
             a, c, d);
    expect("POST", "/v1/complete/batch", body, 200,
           "{\"results\":[{\"ok\":true,\"error\":\"\"},{\"ok\":false,\"error\":\"invalid_request\","
           "\"detail\":\"requests[1].lease_id must be a ULID: 26 characters of Crockford base32, the first 0..7\"},"
           "{\"ok\":true,\"error\":\"\"},{\"ok\":true,\"error\":\"\"}]}");
}

static void test_idempotent_retry(void **state) {
    (void)state;
    put_rolling("t10:tpm", 100, 60);
    char id[27];
    rl_test_ulid_new(id);
    expect("POST", "/v1/reserve", reserve_body(id, "t10:tpm", 30), 200, NULL);
    char first[512];
    snprintf(first, sizeof first, "%.500s", last.body);
    assert_true(starts_with(first, "{\"allowed\":true"));
    /* The same lease again (a client retrying after a timeout): same answer,
     * same reserved_at_unix_ms, charged once. */
    for (int i = 0; i < 3; i++) expect("POST", "/v1/reserve", reserve_body(id, "t10:tpm", 30), 200, first);
    assert_int_equal(usage_of("t10:tpm", "used"), 30);
    assert_int_equal(usage_of("t10:tpm", "active"), 1);
}

/* The reproduction: lease L on a, b filled by another, L again on b
 * with 10: 409 lease_id_conflict with a detail, b unchanged; in a batch,
 * that item's result. */
static void test_reused_lease_id_conflicts(void **state) {
    (void)state;
    put_rolling("t10c:a", 10, 60);
    put_rolling("t10c:b", 10, 60);
    char lease[27], filler[27];
    rl_test_ulid_new(lease);
    expect("POST", "/v1/reserve", reserve_body(lease, "t10c:a", 1), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(filler), "t10c:b", 10), 200, NULL);
    const char *conflict =
        "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,\"error\":\"lease_id_conflict\","
        "\"detail\":\"this lease id was reserved before with other requirements (keys or amounts): a retry must "
        "send the same request; a new request needs a new lease id\"}";
    for (int i = 0; i < 3; i++) expect("POST", "/v1/reserve", reserve_body(lease, "t10c:b", 10), 409, conflict);
    assert_int_equal(usage_of("t10c:b", "used"), 10);
    assert_int_equal(usage_of("t10c:a", "used"), 1);
    char body[1024], fresh[27];
    snprintf(body, sizeof body,
             "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t10c:b\",\"amount\":10}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t10c:a\",\"amount\":2}]}]}",
             lease, rl_test_ulid_new(fresh));
    expect("POST", "/v1/reserve/batch", body, 200, NULL);
    char want[1024];
    snprintf(want, sizeof want, "{\"results\":[%s,{\"allowed\":true,", conflict);
    if (!starts_with(last.body, want)) fail_msg("%s", last.body);
    assert_int_equal(usage_of("t10c:a", "used"), 3);
    /* the true retry still gets its first outcome */
    expect("POST", "/v1/reserve", reserve_body(lease, "t10c:a", 1), 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
}

static void test_denied_lease_stays_denied(void **state) {
    (void)state;
    put_concurrency("t11:concurrency", 1);
    char holder[27], denied[27], fresh[27];
    reserve(rl_test_ulid_new(holder), "t11:concurrency", 1);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
    reserve(rl_test_ulid_new(denied), "t11:concurrency", 1);
    assert_true(starts_with(last.body, "{\"allowed\":false"));
    complete(holder, NULL, 0);
    assert_int_equal(usage_of("t11:concurrency", "used"), 0);
    /* Capacity is free, but the denied lease id stays denied... */
    reserve(denied, "t11:concurrency", 1);
    assert_true(starts_with(last.body, "{\"allowed\":false"));
    /* ...and a new lease id gets it. */
    reserve(rl_test_ulid_new(fresh), "t11:concurrency", 1);
    assert_true(starts_with(last.body, "{\"allowed\":true"));
}

static void test_complete_rules(void **state) {
    (void)state;
    char id[27];
    /* Unknown lease: nothing to release, ok. Twice: still ok. */
    rl_test_ulid_new(id);
    complete(id, NULL, 0);
    complete(id, "t12:never", 5);
    char body[256];
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\"}", id); /* actuals may be absent */
    expect("POST", "/v1/complete", body, 200, "{\"ok\":true,\"error\":\"\"}");

    const char *bad[] = {
        "{",
        "{}",
        "{\"lease_id\":\"short\"}",
        "{\"lease_id\":\"01J0000000000000000000000A\",\"actuals\":{}}",
        "{\"lease_id\":\"01J0000000000000000000000A\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":-1}]}",
        "{\"lease_id\":\"01J0000000000000000000000A\",\"actuals\":[{\"key\":\"k\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect("POST", "/v1/complete", bad[i], 400, NULL);
        if (!starts_with(last.body, "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\""))
            fail_msg("case %zu: %s", i, last.body);
    }
}

static void test_key_path_encoding(void **state) {
    (void)state;
    const char *key = "tenant:acme/eu:llm:daily_tokens";
    put_rolling(key, 500, 86400);
    const char *paths[] = {
        "/v1/admin/limits/tenant:acme/eu:llm:daily_tokens",
        "/v1/admin/limits/tenant%3Aacme%2Feu%3Allm%3Adaily_tokens",
        "/v1/admin/limits/tenant%3aacme/eu%3Allm:daily_tokens",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        expect("GET", paths[i], NULL, 200, NULL);
        assert_true(starts_with(last.body, "{\"limit\":{\"definition\":{\"key\":\"tenant:acme/eu:llm:daily_tokens\""));
    }
    expect("GET", "/v1/admin/limits/tenant%3Aacme%2Fus", NULL, 404, UNKNOWN_KEY_GET_404("tenant:acme/us"));
    expect("GET", "/v1/admin/limits/bad%2", NULL, 400, NULL);
    assert_true(starts_with(last.body, "{\"error\":\"invalid_request\",\"detail\":\""));
    expect("GET", "/v1/admin/limits/a%20b", NULL, 400, NULL);
}

/* DELETE /v1/admin/limits/{key}: answered once durable; the limit and its
 * reservations go (nothing charged or audited); a lease that held it keeps
 * its other keys and its first outcome; the key is then unknown until put
 * again, as a new, empty limit. */
static void test_admin_delete(void **state) {
    (void)state;
    put_rolling("t9:tpm", 100, 60);
    put_concurrency("t9:conc", 1);
    put_rolling("t9:keep", 100, 60);
    char a[27], b[27], body[1024];
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t9:tpm\",\"amount\":60},"
             "{\"key\":\"t9:conc\",\"amount\":1},{\"key\":\"t9:keep\",\"amount\":10}]}",
             rl_test_ulid_new(a));
    expect("POST", "/v1/reserve", body, 200, NULL);
    double reserved_at = jnum("reserved_at_unix_ms");

    expect("DELETE", "/v1/admin/limits/t9%3Atpm", NULL, 200, "{\"ok\":true}");
    expect("DELETE", "/v1/admin/limits/t9:conc", NULL, 200, "{\"ok\":true}");
    expect("GET", "/v1/admin/limits/t9:tpm", NULL, 404, UNKNOWN_KEY_GET_404("t9:tpm"));
    expect("DELETE", "/v1/admin/limits/t9:tpm", NULL, 404,
           "{\"ok\":false,\"error\":\"unknown_limit_key:t9:tpm\",\"detail\":\"no limit has the key t9:tpm\"}");
    expect("GET", "/v1/admin/limits", NULL, 200, NULL);
    assert_null(strstr(last.body, "\"t9:tpm\""));
    assert_non_null(strstr(last.body, "\"t9:keep\""));
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(b), "t9:tpm", 1), 404,
           UNKNOWN_KEY_RESERVE_404_START("t9:tpm") "}");
    expect("POST", "/v1/reserve", body, 200, NULL); /* a retry: its first outcome */
    assert_true(jnum("reserved_at_unix_ms") == reserved_at);
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"t9:tpm\",\"actual_amount\":10},"
             "{\"key\":\"t9:keep\",\"actual_amount\":5}]}",
             a);
    expect("POST", "/v1/complete", body, 200, "{\"ok\":true,\"error\":\"\"}");
    assert_int_equal(usage_of("t9:keep", "used"), 5);
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */
    cJSON *root;
    double next;
    assert_int_equal(cJSON_GetArraySize(audit_entries("t9:tpm", 0, &root, &next)), 0);
    cJSON_Delete(root);
    assert_int_equal(cJSON_GetArraySize(audit_entries("t9:keep", 0, &root, &next)), 1);
    cJSON_Delete(root);

    put_rolling("t9:tpm", 100, 60); /* a new limit: empty */
    assert_int_equal(usage_of("t9:tpm", "used"), 0);
    put_concurrency("t9:conc", 1);
    assert_int_equal(usage_of("t9:conc", "active"), 0);

    expect("DELETE", "/v1/admin/limits/", NULL, 400, NULL);
    assert_true(starts_with(last.body, "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"the key in the path"));
    expect("DELETE", "/v1/admin/limits/a%20b", NULL, 400, NULL);
    expect("DELETE", "/v1/admin/limits/bad%2", NULL, 400, NULL);
    /* the key's path takes GET and DELETE, the list's GET and PUT */
    const char wrong[] = "POST /v1/admin/limits/t9:tpm HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n";
    char out[4096];
    rl_test_raw_exchange(daemon_.port, wrong, sizeof wrong - 1, 5000, out, sizeof out);
    assert_true(starts_with(out, "HTTP/1.1 405"));
    assert_non_null(strstr(out, "allow: GET, DELETE\r\n"));
}

static void test_keep_alive(void **state) {
    (void)state;
    /* HTTP/1.1 keeps the connection: many requests, and h2o says keep-alive. */
    const char request[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /healthz HTTP/1.1\r\nHost: localhost\r\n"
                           "Connection: close\r\n\r\n";
    char out[4096];
    rl_test_raw_exchange(daemon_.port, request, sizeof request - 1, 5000, out, sizeof out);
    const char *second = strstr(out + 1, "HTTP/1.1 200");
    assert_true(starts_with(out, "HTTP/1.1 200"));
    assert_non_null(second);
    assert_non_null(strstr(out, "Connection: keep-alive"));
}

/* optional and dry_run over HTTP: exact bodies, statuses, the 400s of a
 * non-boolean, a dry run in a batch. */
static void test_optional_and_dry_run(void **state) {
    (void)state;
    put_concurrency("t20:conc", 1);
    char lease[27], other[27], body[1024];
    /* a dry run: a reserve's answer, "dry_run":true last, nothing held */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"dry_run\":true,\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1},"
             "{\"key\":\"t20:none\",\"amount\":1,\"optional\":true}]}",
             rl_test_ulid_new(lease));
    expect("POST", "/v1/reserve", body, 200, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":"));
    assert_true(ends_with(last.body, ",\"error\":\"\",\"dry_run\":true}"));
    assert_true(jnum("reserved_at_unix_ms") > 1.7e12);
    assert_int_equal(usage_of("t20:conc", "used"), 0);
    /* the same id for real: a new lease (nothing remembered), the optional key skipped */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1},"
             "{\"key\":\"t20:none\",\"amount\":1,\"optional\":true}]}",
             lease);
    expect("POST", "/v1/reserve", body, 200, NULL);
    assert_true(ends_with(last.body, ",\"error\":\"\"}"));
    assert_int_equal(usage_of("t20:conc", "used"), 1);
    /* a denied dry run names its limit, as the reserve would */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"dry_run\":true,\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1}]}",
             rl_test_ulid_new(other));
    expect("POST", "/v1/reserve", body, 200, NULL);
    assert_true(ends_with(last.body, ",\"reserved_at_unix_ms\":0,\"error\":\"\",\"denied_by\":{\"key\":\"t20:conc\","
                                     "\"reason\":\"capacity\",\"requested\":1,\"available\":0,\"capacity\":1},"
                                     "\"dry_run\":true}"));
    /* an undefined key, not optional: the 404 of a reserve, as a dry run's */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"dry_run\":true,\"requirements\":[{\"key\":\"t20:none\",\"amount\":1}]}", other);
    expect("POST", "/v1/reserve", body, 404, UNKNOWN_KEY_RESERVE_404_START("t20:none") ",\"dry_run\":true}");
    /* a remembered id with other requirements: the 409, as a dry run's */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"dry_run\":true,\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1}]}", lease);
    expect("POST", "/v1/reserve", body, 409, NULL);
    assert_true(starts_with(last.body, "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                       "\"error\":\"lease_id_conflict\",\"detail\":"));
    assert_true(ends_with(last.body, "\",\"dry_run\":true}"));
    /* not booleans: 400 naming the field */
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"dry_run\":1,\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1}]}", other);
    expect("POST", "/v1/reserve", body, 400, RESERVE_400_PREFIX "dry_run must be true or false\"}");
    snprintf(body, sizeof body,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1,\"optional\":\"yes\"}]}",
             other);
    expect("POST", "/v1/reserve", body, 400,
           RESERVE_400_PREFIX "requirements[0].optional must be true or false\"}");
    /* a batch: each item its own; the dry one holds nothing */
    char a[27], b[27];
    snprintf(body, sizeof body,
             "{\"requests\":[{\"lease_id\":\"%s\",\"dry_run\":true,\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"t20:none\",\"amount\":1,\"optional\":true}]},"
             "{\"lease_id\":\"%s\",\"dry_run\":\"no\",\"requirements\":[{\"key\":\"t20:conc\",\"amount\":1}]}]}",
             rl_test_ulid_new(a), rl_test_ulid_new(b), other);
    expect("POST", "/v1/reserve/batch", body, 200, NULL);
    assert_true(starts_with(last.body, "{\"results\":[{\"allowed\":false,"));
    assert_non_null(strstr(last.body, "\"capacity\":1},\"dry_run\":true},{\"allowed\":true,"));
    assert_true(ends_with(last.body, "\"detail\":\"requests[2].dry_run must be true or false\"}]}"));
    assert_int_equal(usage_of("t20:conc", "used"), 1);
}

/* Templates over HTTP: exact answers; a new tenant's first reserve just
 * works; an audit entry names the made key; a made key's GET names its
 * template; a delete drops it. */
static void test_templates(void **state) {
    (void)state;
    expect("PUT", "/v1/admin/templates",
           "{\"pattern\":\"t10:{tenant}:tokens\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60,"
           "\"unit\":\"tokens\"}",
           200, "{\"ok\":true}");
    expect("PUT", "/v1/admin/templates", "{\"pattern\":\"t10:x\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}",
           400, NULL);
    assert_non_null(strstr(last.body, "\"error\":\"invalid_request\",\"detail\":\"pattern must be a key"));
    char a[27], b[27];
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(a), "t10:acme:tokens", 60), 200, NULL);
    assert_non_null(strstr(last.body, "\"allowed\":true"));
    expect("POST", "/v1/reserve", reserve_body(rl_test_ulid_new(b), "t10:acme:tokens", 60), 200, NULL);
    assert_non_null(strstr(last.body, "\"denied_by\":{\"key\":\"t10:acme:tokens\",\"reason\":\"capacity\",\"requested\":60,"
                                      "\"available\":40,\"capacity\":100}"));
    expect("GET", "/v1/admin/limits/t10:acme:tokens", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "\"used\":60"));
    assert_non_null(strstr(last.body, ",\"template\":\"t10:{tenant}:tokens\"}}"));
    char body[512];
    snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"t10:acme:tokens\",\"actual_amount\":25}]}", a);
    expect("POST", "/v1/complete", body, 200, "{\"ok\":true,\"error\":\"\"}");
    assert_int_equal(usage_of("t10:acme:tokens", "used"), 25);
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */
    cJSON *root;
    double next;
    assert_int_equal(cJSON_GetArraySize(audit_entries("t10:acme:tokens", 0, &root, &next)), 1);
    cJSON_Delete(root);
    expect("GET", "/v1/admin/templates", NULL, 200, NULL);
    assert_non_null(strstr(last.body, "{\"pattern\":\"t10:{tenant}:tokens\",\"kind\":\"rolling\",\"capacity\":100,"));
    expect("DELETE", "/v1/admin/templates/t10:%7Btenant%7D:tokens", NULL, 200, "{\"ok\":true}");
    expect("DELETE", "/v1/admin/templates/t10:%7Btenant%7D:tokens", NULL, 404,
           "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"no template has the pattern t10:{tenant}:tokens\"}");
    expect("GET", "/v1/admin/limits/t10:acme:tokens", NULL, 404, UNKNOWN_KEY_GET_404("t10:acme:tokens"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthz),
        cmocka_unit_test(test_reserve_allowed_then_denied),
        cmocka_unit_test(test_reserve_four_requirements),
        cmocka_unit_test(test_reserve_malformed),
        cmocka_unit_test(test_unknown_key_404),
        cmocka_unit_test(test_body_too_large_413),
        cmocka_unit_test(test_wrong_method_405),
        cmocka_unit_test(test_unknown_path_404),
        cmocka_unit_test(test_json_answers_end_with_a_newline),
        cmocka_unit_test(test_admin_put_get_list),
        cmocka_unit_test(test_admin_put_invalid),
        cmocka_unit_test(test_budget_over_http),
        cmocka_unit_test(test_audit_over_http),
        cmocka_unit_test(test_audit_of_an_expired_budget_reservation),
        cmocka_unit_test(test_admin_put_integers_exact),
        cmocka_unit_test(test_admin_kind_change_in_use),
        cmocka_unit_test(test_details_name_the_longest_key_whole),
        cmocka_unit_test(test_decreasing_flow),
        cmocka_unit_test(test_exceeds_capacity),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_idempotent_retry),
        cmocka_unit_test(test_reused_lease_id_conflicts),
        cmocka_unit_test(test_denied_lease_stays_denied),
        cmocka_unit_test(test_complete_rules),
        cmocka_unit_test(test_key_path_encoding),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_optional_and_dry_run),
        cmocka_unit_test(test_admin_delete),
        cmocka_unit_test(test_templates),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
