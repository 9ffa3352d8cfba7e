/* test_handlers.c — the router and the endpoints without sockets: a real
 * service (registry in a temp dir + memory backend) behind rl_handle_request.
 * GET /v1/admin/audit also on a small in-test backend whose audit_query
 * answers what the test set (entries, or a failure) and records what it was
 * asked; everything else of it is as plain as the service needs. Exact
 * bodies over real HTTP (and the memory backend's real audit entries) are
 * checked again in tests/integration. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/types.h"
#include "server/api/handler.h"
#include "server/service.h"
#include "support/lease_ids.h"

#define MAX_BATCH 4
#define LEASE "01JD5Z8Q6X4W8N1V0M9R7T3K2A"
/* What a reserve of an unknown key is told, after "no limit has the key <key>: ". */
#define UNKNOWN_KEY_ADVICE "define it (PUT /v1/admin/limits, or a template that matches it) and retry; nothing was reserved"

/* ---- the in-test backend ---------------------------------------------------- */

typedef struct audit_backend {
    rl_backend base;
    rl_status answer;           /* what audit_query returns */
    rl_audit_entry entries[3];  /* copied into the page, at most query->limit */
    size_t entry_count;
    uint64_t next_since_unix_ms;
    int calls;
    char key[RL_KEY_MAX_LEN + 1]; /* the last query */
    uint64_t since_unix_ms;
    uint32_t limit;
} audit_backend;

static rl_status apply_definition(rl_backend *b, const rl_limit_def *def, rl_limit_status *out) {
    (void)b, (void)def;
    if (out != NULL) *out = RL_LIMIT_STATUS_ACTIVE;
    return RL_OK;
}
static void reserve_batch(rl_backend *b, const rl_reserve_request *r, size_t n, rl_reserve_result *results) {
    (void)b, (void)r;
    memset(results, 0, n * sizeof *results);
}
static void complete_batch(rl_backend *b, const rl_complete_request *r, size_t n, rl_status *statuses) {
    (void)b, (void)r;
    for (size_t i = 0; i < n; i++) statuses[i] = RL_OK;
}
static rl_status limit_usage(rl_backend *b, const char *key, rl_limit_usage *out) {
    (void)b, (void)key, (void)out;
    return RL_UNKNOWN_LIMIT_KEY;
}
static void sweep(rl_backend *b) { (void)b; }
static void destroy(rl_backend *b) { free(b); }

static rl_status audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    audit_backend *b = (audit_backend *)base;
    b->calls++;
    snprintf(b->key, sizeof b->key, "%s", query->key);
    b->since_unix_ms = query->since_unix_ms;
    b->limit = query->limit;
    if (b->answer != RL_OK) return b->answer;
    /* The caller's array holds query->limit entries: write every one. */
    for (uint32_t i = 0; i < query->limit; i++) memset(&page->entries[i], 0, sizeof page->entries[i]);
    page->count = b->entry_count < query->limit ? b->entry_count : query->limit;
    memcpy(page->entries, b->entries, page->count * sizeof *page->entries);
    page->next_since_unix_ms = b->next_since_unix_ms;
    return RL_OK;
}

static const rl_backend_ops audit_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "audit-test",
    .apply_definition = apply_definition,
    .reserve_batch = reserve_batch,
    .complete_batch = complete_batch,
    .limit_usage = limit_usage,
    .sweep = sweep,
    .destroy = destroy,
    .audit_query = audit_query,
};

/* ---- the fixture -------------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    char subdir[96];
    char path[128];
    char log_path[136]; /* the registry's log beside it */
    audit_backend *audit; /* the service's backend in the audit tests, else NULL (memory) */
    rl_service *service;
    rl_handler_ctx ctx;
    rl_http_response res;
} fixture;

/* A service on the memory backend, or on the in-test audit backend. */
static int open_fixture(void **state, bool audit) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_handlers_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    /* The registry lives one level down so that a test can pull the
     * directory away and make persisting fail. */
    snprintf(f->subdir, sizeof f->subdir, "%s/data", f->dir);
    assert_int_equal(mkdir(f->subdir, 0700), 0);
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->subdir);
    snprintf(f->log_path, sizeof f->log_path, "%s.log", f->path);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    if (audit) {
        f->audit = calloc(1, sizeof *f->audit);
        f->audit->base.ops = &audit_ops;
        options.backend = &f->audit->base; /* the service's from here on */
    }
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, MAX_BATCH));
    *state = f;
    return 0;
}

static int setup(void **state) { return open_fixture(state, false); }
static int setup_audit(void **state) { return open_fixture(state, true); }

static int teardown(void **state) {
    fixture *f = *state;
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    unlink(f->path);
    unlink(f->log_path);
    rmdir(f->subdir);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Runs one request; returns the status, the body in f->res. A '?' in path
 * starts the query, as the HTTP glue splits it. */
static int call(fixture *f, const char *method, const char *path, const char *body) {
    const char *mark = strchr(path, '?');
    size_t path_len = mark != NULL ? (size_t)(mark - path) : strlen(path);
    rl_http_request req = {method, strlen(method), path, path_len, body, body != NULL ? strlen(body) : 0,
                           mark != NULL ? mark + 1 : NULL, mark != NULL ? strlen(mark + 1) : 0};
    memset(&f->res, 0, sizeof f->res);
    rl_handle_request(&f->ctx, &req, &f->res);
    assert_non_null(f->res.body);
    assert_false(f->res.body->failed);
    return f->res.status;
}

static const char *body(fixture *f) { return f->res.body->data; }

static void put_limit(fixture *f, const char *json) {
    if (call(f, "PUT", "/v1/admin/limits", json) != 200) fail_msg("PUT %s: %s", json, body(f));
}

static void test_routing(void **state) {
    fixture *f = *state;
    /* A 404 says what was not found, and where the API is. */
    assert_int_equal(call(f, "GET", "/nope", NULL), 404);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\","
                                 "\"detail\":\"no route for GET /nope: the API is under /v1/ (see /console)\"}");
    assert_null(f->res.allow);
    /* The path as sent, cut when long, with only printable ASCII of it. */
    assert_int_equal(call(f, "DELETE", "/v1/reserve/x y\x01\xff%00\"", NULL), 404);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\",\"detail\":\"no route for DELETE "
                                 "/v1/reserve/x?y??%00\\\": the API is under /v1/ (see /console)\"}");
    char long_path[400];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    assert_int_equal(call(f, "GET", long_path, NULL), 404);
    assert_non_null(strstr(body(f), "\"no route for GET /aaa"));
    assert_non_null(strstr(body(f), "aaa...: the API is under /v1/ (see /console)\"}"));
    assert_true(strlen(body(f)) < 350);
    /* A context that keeps no metrics (a daemon with metrics.enabled: false). */
    assert_int_equal(call(f, "GET", "/metrics", NULL), 404);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\",\"detail\":\"no route for GET /metrics: this "
                                 "daemon keeps no metrics (metrics.enabled: false)\"}");
    assert_int_equal(call(f, "GET", "/v1/reserve/", NULL), 404);
    assert_int_equal(call(f, "GET", "/v1", NULL), 404);
    assert_int_equal(call(f, "GET", "/", NULL), 302); /* to the console (test_handlers_console.c) */

    assert_int_equal(call(f, "GET", "/v1/reserve", NULL), 405);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\"}");
    assert_string_equal(f->res.allow, "POST");
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits", NULL), 405);
    assert_string_equal(f->res.allow, "GET, PUT");
    assert_int_equal(call(f, "POST", "/v1/admin/limits/x", NULL), 405);
    assert_string_equal(f->res.allow, "GET, DELETE");
    assert_int_equal(call(f, "POST", "/healthz", NULL), 405);
    assert_int_equal(call(f, "PUT", "/v1/complete/batch", NULL), 405);
    /* Method names are case-sensitive (RFC 9110). */
    assert_int_equal(call(f, "post", "/v1/reserve", NULL), 405);

    assert_int_equal(call(f, "PUT", "/v1/admin/audit", NULL), 405);
    assert_string_equal(f->res.allow, "GET");

    assert_int_equal(call(f, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"memory\",\"limits\":0}");

    /* HEAD is taken where GET is, answered as the GET (the HTTP layer drops
     * the body); not where GET is not. */
    assert_int_equal(call(f, "HEAD", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"memory\",\"limits\":0}");
    assert_int_equal(call(f, "HEAD", "/console/console.css", NULL), 200);
    assert_string_equal(f->res.content_type, "text/css; charset=utf-8");
    assert_int_equal(call(f, "HEAD", "/v1/admin/limits/x", NULL), 404);
    assert_int_equal(call(f, "HEAD", "/v1/reserve", NULL), 405);
    assert_string_equal(f->res.allow, "POST");
    assert_int_equal(call(f, "head", "/healthz", NULL), 405);
}

/* A memory backend opened without an audit directory keeps no log: every
 * page is empty and says to ask again from the same time. A query string
 * on another endpoint plays no part. */
static void test_audit_without_a_log(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k:spend&since_unix_ms=1764058800000", NULL), 200);
    assert_string_equal(body(f), "{\"entries\":[],\"next_since_unix_ms\":1764058800000}");
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k%20spend", NULL), 400);
    assert_int_equal(call(f, "GET", "/healthz?key=x", NULL), 200);
}

static void test_reserve_shapes(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"k:rpm\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60}");
    char id[27], body_text[512];

    snprintf(body_text, sizeof body_text,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k:rpm\",\"amount\":1}]}",
             rl_test_lease_id(1, id));
    assert_int_equal(call(f, "POST", "/v1/reserve", body_text), 200);
    assert_non_null(strstr(body(f), "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":"));

    snprintf(body_text, sizeof body_text,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k:rpm\",\"amount\":1}]}",
             rl_test_lease_id(2, id));
    assert_int_equal(call(f, "POST", "/v1/reserve", body_text), 200);
    assert_non_null(strstr(body(f), "{\"allowed\":false,"));

    snprintf(body_text, sizeof body_text,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"other\",\"amount\":1}]}",
             rl_test_lease_id(3, id));
    assert_int_equal(call(f, "POST", "/v1/reserve", body_text), 404);
    assert_string_equal(body(f), "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                 "\"error\":\"unknown_limit_key:other\","
                                 "\"detail\":\"no limit has the key other: " UNKNOWN_KEY_ADVICE "\"}");

    assert_int_equal(call(f, "POST", "/v1/reserve", "{"), 400);
    assert_non_null(strstr(body(f), "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                    "\"error\":\"invalid_request\",\"detail\":\""));
    assert_int_equal(call(f, "POST", "/v1/reserve", NULL), 400);
    assert_int_equal(call(f, "POST", "/v1/reserve", ""), 400);
}

static void test_batches(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"k:rpm\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60}");
    char a[27], b[27], body_text[1024];
    snprintf(body_text, sizeof body_text,
             "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"k:rpm\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"zz\",\"amount\":1}]}]}",
             rl_test_lease_id(10, a), rl_test_lease_id(11, b));
    assert_int_equal(call(f, "POST", "/v1/reserve/batch", body_text), 200);
    const char *text = body(f);
    assert_non_null(strstr(text, "{\"results\":[{\"allowed\":true,"));
    /* an invalid item says why, like a 400 does */
    assert_non_null(strstr(text, "},{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                 "\"error\":\"invalid_request\",\"detail\":\"requests[1].lease_id must be a ULID"));
    assert_non_null(strstr(text, "\"},{\"allowed\":false,\"retry_after_ms\":0,"
                                 "\"reserved_at_unix_ms\":0,\"error\":\"unknown_limit_key:zz\","
                                 "\"detail\":\"no limit has the key zz: " UNKNOWN_KEY_ADVICE "\"}]}"));

    /* Above max_batch, and not a batch at all: the whole payload is refused. */
    assert_int_equal(call(f, "POST", "/v1/reserve/batch",
                          "{\"requests\":[{},{},{},{},{}]}"), 400);
    assert_non_null(strstr(body(f), "{\"error\":\"invalid_request\",\"detail\":\""));
    assert_int_equal(call(f, "POST", "/v1/reserve/batch", "{\"requests\":[]}"), 400);
    assert_int_equal(call(f, "POST", "/v1/reserve/batch", "[]"), 400);

    snprintf(body_text, sizeof body_text,
             "{\"requests\":[{\"lease_id\":\"%s\",\"actuals\":[]},{\"lease_id\":7}]}", a);
    assert_int_equal(call(f, "POST", "/v1/complete/batch", body_text), 200);
    assert_non_null(strstr(body(f), "{\"results\":[{\"ok\":true,\"error\":\"\"},"
                                    "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"requests[1].lease_id"));
    assert_int_equal(call(f, "POST", "/v1/complete/batch", "{}"), 400);

    snprintf(body_text, sizeof body_text, "{\"lease_id\":\"%s\"}", b);
    assert_int_equal(call(f, "POST", "/v1/complete", body_text), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"error\":\"\"}");
    assert_int_equal(call(f, "POST", "/v1/complete", "{\"lease_id\":\"x\"}"), 400);
    assert_non_null(strstr(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\""));
}

static void test_admin(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "GET", "/v1/admin/limits", NULL), 200);
    assert_string_equal(body(f), "{\"limits\":[]}");
    put_limit(f, "{\"key\":\"b/x:y\",\"kind\":\"concurrency\",\"capacity\":2,\"timeout_seconds\":5}");
    put_limit(f, "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1}");
    assert_string_equal(body(f), "{\"ok\":true,\"status\":\"active\"}");

    assert_int_equal(call(f, "GET", "/v1/admin/limits", NULL), 200);
    const char *a = strstr(body(f), "\"key\":\"a\"");
    const char *b = strstr(body(f), "\"key\":\"b/x:y\"");
    assert_true(a != NULL && b != NULL && a < b); /* sorted by key */

    assert_int_equal(call(f, "GET", "/v1/admin/limits/b%2Fx%3Ay", NULL), 200);
    assert_non_null(strstr(body(f), "{\"limit\":{\"definition\":{\"key\":\"b/x:y\""));
    assert_int_equal(call(f, "GET", "/v1/admin/limits/b/x:y", NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/admin/limits/c", NULL), 404);
    assert_string_equal(body(f), "{\"error\":\"unknown_limit_key:c\",\"detail\":\"no limit has the key c\"}");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/", NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/admin/limits/a%20b", NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/admin/limits/a%2", NULL), 400);
    assert_non_null(strstr(body(f), "\"detail\""));

    assert_int_equal(call(f, "PUT", "/v1/admin/limits",
                          "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":1}"),
                     400);
    assert_non_null(strstr(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\""));
    assert_int_equal(call(f, "PUT", "/v1/admin/limits", "not json"), 400);

    assert_int_equal(call(f, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"memory\",\"limits\":2}");

    /* Keys are printable ASCII: quotes and backslashes are escaped on the way out. */
    put_limit(f, "{\"key\":\"q\\\"x\\\\y\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1}");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/q%22x%5Cy", NULL), 200);
    assert_non_null(strstr(body(f), "{\"limit\":{\"definition\":{\"key\":\"q\\\"x\\\\y\""));
    assert_int_equal(call(f, "GET", "/v1/admin/limits/q%22z", NULL), 404);
    assert_string_equal(body(f), "{\"error\":\"unknown_limit_key:q\\\"z\",\"detail\":\"no limit has the key q\\\"z\"}");
}

static void test_large_answer_buffer_is_trimmed(void **state) {
    fixture *f = *state;
    for (int i = 0; i < 300; i++) {
        char json[1400];
        snprintf(json, sizeof json,
                 "{\"key\":\"bulk:%03d\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1,"
                 "\"description\":\"%01000d\"}",
                 i, i);
        put_limit(f, json);
    }
    assert_int_equal(call(f, "GET", "/v1/admin/limits", NULL), 200);
    assert_true(f->ctx.body.len > RL_HANDLER_BODY_KEEP_BYTES);
    rl_handler_ctx_trim(&f->ctx);
    assert_true(f->ctx.body.cap <= RL_HANDLER_BODY_KEEP_BYTES);
    assert_int_equal(call(f, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"memory\",\"limits\":300}");
}

/* The registry's directory becomes a plain file, and no file may grow
 * (its log, still open, is appended to): no write can succeed (until
 * unblock_registry). */
static struct rlimit fsize_before_block;

static void block_registry(fixture *f) {
    char lock[sizeof f->path + 8];
    snprintf(lock, sizeof lock, "%s.lock", f->path);
    unlink(f->path);
    unlink(f->log_path);
    unlink(lock); /* the registry's lock file: it goes on holding the lock, unlinked */
    assert_int_equal(rmdir(f->subdir), 0);
    FILE *blocker = fopen(f->subdir, "w");
    assert_non_null(blocker);
    fclose(blocker);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &fsize_before_block), 0);
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
    struct rlimit none = {0, fsize_before_block.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &none), 0);
}

static void unblock_registry(fixture *f) {
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &fsize_before_block), 0);
    unlink(f->subdir);
    assert_int_equal(mkdir(f->subdir, 0700), 0);
}

/* A put whose registry write fails changes nothing: not the registry, not
 * the backend. */
static void test_put_failure_changes_nothing(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1}");
    block_registry(f);

    assert_int_equal(call(f, "PUT", "/v1/admin/limits",
                          "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":9,\"window_seconds\":1}"),
                     500);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"backend_error\"}");
    assert_int_equal(call(f, "PUT", "/v1/admin/limits",
                          "{\"key\":\"new\",\"kind\":\"rolling\",\"capacity\":9,\"window_seconds\":1}"),
                     500);

    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, "a", &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 5);
    assert_int_equal(limit.usage.capacity, 5);
    assert_int_equal(rl_service_get_limit(f->service, "new", &limit), RL_UNKNOWN_LIMIT_KEY);
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(f->service), "new", &usage),
                     RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_service_limit_count(f->service), 1);
    unblock_registry(f);
}

/* DELETE /v1/admin/limits/{key}: the key decoded as GET's; the limit and
 * what it holds go, from the registry and the backend; an absent key is a
 * 404 in the put's shape, a bad one a 400. */
static void test_delete(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"b/x:y\",\"kind\":\"concurrency\",\"capacity\":2,\"timeout_seconds\":5}");
    put_limit(f, "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":60}");
    char reserve[256];
    snprintf(reserve, sizeof reserve,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"a\",\"amount\":5},{\"key\":\"b/x:y\",\"amount\":1}]}", LEASE);
    assert_int_equal(call(f, "POST", "/v1/reserve", reserve), 200);

    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/b%2Fx%3Ay", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true}");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/b/x:y", NULL), 404);
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/b/x:y", NULL), 404);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"unknown_limit_key:b/x:y\","
                                 "\"detail\":\"no limit has the key b/x:y\"}");
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(f->service), "b/x:y", &usage), RL_UNKNOWN_LIMIT_KEY);
    /* the lease keeps its other key; a retry, its first outcome */
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(f->service), "a", &usage), RL_OK);
    assert_int_equal(usage.used, 5);
    assert_int_equal(call(f, "POST", "/v1/reserve", reserve), 200);
    assert_non_null(strstr(body(f), "\"allowed\":true"));

    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/", NULL), 400);
    assert_non_null(strstr(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"the key in the path"));
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/a%20b", NULL), 400);
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/a%2", NULL), 400);
    assert_int_equal(call(f, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"memory\",\"limits\":1}");

    /* persisted: the registry file holds "a" alone */
    rl_service_close(f->service);
    rl_handler_ctx_free(&f->ctx);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, MAX_BATCH));
    assert_int_equal(rl_service_limit_count(f->service), 1);
    assert_int_equal(call(f, "GET", "/v1/admin/limits/b/x:y", NULL), 404);
}

/* The admin writer's group (rl_service_put_limits): puts and deletes are
 * done in their order, each with its own answer. */
static void test_a_group_of_puts_and_deletes_in_order(void **state) {
    fixture *f = *state;
    rl_service_put group[7];
    memset(group, 0, sizeof group);
    const rl_limit_def a1 = {.key = "a", .kind = RL_KIND_ROLLING, .capacity = 1, .window_seconds = 9};
    const rl_limit_def a2 = {.key = "a", .kind = RL_KIND_ROLLING, .capacity = 2, .window_seconds = 9};
    const rl_limit_def b = {.key = "b", .kind = RL_KIND_CONCURRENCY, .capacity = 3, .timeout_seconds = 9};
    group[0].def = a1;
    group[1].op = RL_SERVICE_DELETE;
    snprintf(group[1].def.key, sizeof group[1].def.key, "a");
    group[2].def = a2;
    group[3].op = RL_SERVICE_DELETE;
    snprintf(group[3].def.key, sizeof group[3].def.key, "nope");
    group[4].def = b;
    group[5].op = RL_SERVICE_DELETE;
    snprintf(group[5].def.key, sizeof group[5].def.key, "b");
    group[6].op = RL_SERVICE_DELETE;
    snprintf(group[6].def.key, sizeof group[6].def.key, "bad key");
    rl_service_put_limits(f->service, group, 7);
    const rl_status want[] = {RL_OK, RL_OK, RL_OK, RL_UNKNOWN_LIMIT_KEY, RL_OK, RL_OK, RL_INVALID_REQUEST};
    for (int i = 0; i < 7; i++) assert_int_equal(group[i].status, want[i]);
    assert_non_null(strstr(group[6].err, "key"));
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, "a", &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 2);
    assert_int_equal(limit.usage.capacity, 2);
    assert_int_equal(rl_service_get_limit(f->service, "b", &limit), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_service_limit_count(f->service), 1);
    char err[256];
    assert_int_equal(rl_service_delete_limit(f->service, "a", err, sizeof err), RL_OK);
    assert_int_equal(rl_service_delete_limit(f->service, "a", err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_service_limit_count(f->service), 0);
}

/* A delete the registry cannot write changes nothing; one the backend
 * cannot do (the in-test backend has no delete) gives the registry its
 * definition back. */
static void test_delete_failure_changes_nothing(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1}");
    block_registry(f);
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/a", NULL), 500);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"backend_error\"}");
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, "a", &limit), RL_OK);
    assert_int_equal(limit.usage.capacity, 5);
    unblock_registry(f);
}

static void test_delete_without_backend_support(void **state) {
    fixture *f = *state;
    put_limit(f, "{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":1}");
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/a", NULL), 400);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"the audit-test backend cannot delete limits\"}");
    assert_int_equal(call(f, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"backend\":\"audit-test\",\"limits\":1}");
}

/* A limit the backend's journal brought back that the registry no longer
 * holds (a delete cut by a crash between the two) is deleted at start. */
static void test_a_delete_cut_short_is_finished_at_start(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_test_cut_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], journal[128], err[256];
    snprintf(path, sizeof path, "%s/limits.json", dir);
    snprintf(journal, sizeof journal, "%s/journal", dir);
    rl_service_options options = {.backend_name = "memory", .registry_path = path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    options.memory.journal_path = journal;
    rl_service *service = NULL;
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    rl_limit_def k = {.key = "k", .kind = RL_KIND_ROLLING, .capacity = 3, .window_seconds = 9};
    rl_limit_def j = {.key = "j", .kind = RL_KIND_ROLLING, .capacity = 4, .window_seconds = 9};
    assert_int_equal(rl_service_put_limit(service, &k, NULL, err, sizeof err), RL_OK);
    assert_int_equal(rl_service_put_limit(service, &j, NULL, err, sizeof err), RL_OK);
    rl_service_close(service);
    /* the registry's half of a delete of k, and no more */
    FILE *file = fopen(path, "w");
    fputs("[{\"key\":\"j\",\"kind\":\"rolling\",\"capacity\":4,\"window_seconds\":9}]", file);
    fclose(file);
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(service), "k", &usage), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(service), "j", &usage), RL_OK);
    rl_service_close(service);
    /* and for good: the journal has the delete now */
    file = fopen(path, "w");
    fputs("[]", file);
    fclose(file);
    options.memory.journal_path = journal;
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(service), "j", &usage), RL_UNKNOWN_LIMIT_KEY);
    rl_service_close(service);
    char command[160];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    assert_int_equal(system(command), 0);
}

/* ---- GET /v1/admin/audit on the in-test backend ------------------------------ */

static void test_a_page_in_api_shape(void **state) {
    fixture *f = *state;
    audit_backend *b = f->audit;
    b->entries[0] = (rl_audit_entry){1764058800123u, LEASE, "job-7", "tenant:a:spend", 400, 150, 1761955200000u, false};
    b->entries[1] = (rl_audit_entry){1764058800200u, LEASE, "", "tenant:a:spend", 90, 0, 1761955200000u, true};
    b->entry_count = 2;
    b->next_since_unix_ms = 1764058800201u;
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=tenant%3Aa%3Aspend&since_unix_ms=1764058800000&limit=5", NULL),
                     200);
    assert_string_equal(body(f),
                        "{\"entries\":[{\"at_unix_ms\":1764058800123,\"lease_id\":\"" LEASE "\",\"job_id\":\"job-7\","
                        "\"key\":\"tenant:a:spend\",\"reserved\":400,\"actual\":150,"
                        "\"period_start_unix_ms\":1761955200000,\"expired\":false},"
                        "{\"at_unix_ms\":1764058800200,\"lease_id\":\"" LEASE "\",\"job_id\":\"\","
                        "\"key\":\"tenant:a:spend\",\"reserved\":90,\"actual\":0,"
                        "\"period_start_unix_ms\":1761955200000,\"expired\":true}],"
                        "\"next_since_unix_ms\":1764058800201}");
    assert_int_equal(b->calls, 1);
    assert_string_equal(b->key, "tenant:a:spend"); /* decoded; need not be defined */
    assert_int_equal(b->since_unix_ms, 1764058800000u);
    assert_int_equal(b->limit, 5);

    /* The defaults; a page holds at most limit entries. */
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k", NULL), 200);
    assert_int_equal(b->since_unix_ms, 0);
    assert_int_equal(b->limit, 100);
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k&limit=1", NULL), 200);
    assert_non_null(strstr(body(f), "\"expired\":false}],\"next_since_unix_ms\":1764058800201}"));
    assert_null(strstr(body(f), "\"expired\":true"));
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k&limit=1000", NULL), 200);
    assert_int_equal(b->limit, 1000);
}

static void test_bad_queries_reach_no_backend(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "GET", "/v1/admin/audit", NULL), 400);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\",\"detail\":\"key is required: GET "
                                 "/v1/admin/audit?key=K[&since_unix_ms=T][&limit=N]\"}");
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k&limit=1001", NULL), 400);
    assert_string_equal(body(f), "{\"error\":\"invalid_request\",\"detail\":\"limit must be a decimal integer 1..1000\"}");
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k&since=1", NULL), 400);
    assert_non_null(strstr(body(f), "unknown parameter \\\"since\\\""));
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=%22&key=x", NULL), 400);
    assert_non_null(strstr(body(f), "key appears twice"));
    assert_int_equal(f->audit->calls, 0);
}

static void test_audit_routing(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "POST", "/v1/admin/audit?key=k", NULL), 405);
    assert_string_equal(f->res.allow, "GET");
    assert_string_equal(body(f), "{\"error\":\"invalid_request\"}");
    assert_int_equal(call(f, "GET", "/v1/admin/audit/k", NULL), 404);
    assert_int_equal(call(f, "GET", "/v1/admin/audi?key=k", NULL), 404);
    assert_int_equal(f->audit->calls, 0);
}

static void test_backend_failures(void **state) {
    fixture *f = *state;
    f->audit->answer = RL_BACKEND_ERROR; /* a store out of reach: retry later */
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k", NULL), 503);
    assert_string_equal(body(f), "{\"error\":\"backend_error\"}");
    f->audit->answer = RL_IO_ERROR; /* an audit file that cannot be read */
    assert_int_equal(call(f, "GET", "/v1/admin/audit?key=k", NULL), 500);
    assert_string_equal(body(f), "{\"error\":\"backend_error\"}");
    assert_int_equal(f->audit->calls, 2);
}

static void test_service_open_errors(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_test_service_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/limits.json", dir);
    rl_service_options options = {.backend_name = "memory", .registry_path = path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    rl_service *service = NULL;

    /* A missing file is an empty registry. */
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    assert_int_equal(rl_service_limit_count(service), 0);
    rl_service_close(service);

    FILE *file = fopen(path, "w");
    fputs("[{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":3,\"window_seconds\":9}]", file);
    fclose(file);
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(service, "k", &limit), RL_OK);
    assert_int_equal(limit.usage.capacity, 3); /* applied to the backend at open */
    rl_service_close(service);

    file = fopen(path, "w");
    fputs("[{\"key\":", file);
    fclose(file);
    assert_int_not_equal(rl_service_open(&options, &service, err, sizeof err), RL_OK);
    assert_null(service);
    assert_non_null(strstr(err, path));

    options.backend_name = "tigerbeetle";
    unlink(path);
    assert_int_equal(rl_service_open(&options, &service, err, sizeof err), RL_INVALID_REQUEST);
    assert_null(service);
    assert_non_null(strstr(err, "not available"));
    rmdir(dir);
}

/* ---- templates ---------------------------------------------------------------- */

#define DAILY_TEMPLATE                                                                                         \
    "{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\",\"kind\":\"rolling\",\"capacity\":1000,"                  \
    "\"window_seconds\":86400,\"unit\":\"tokens\"}"

/* Reopens the service on the same registry, as a restart does. */
static void reopen(fixture *f) {
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, MAX_BATCH));
}

static void reserve_key(fixture *f, const char *key, uint64_t amount, int n, const char *expect) {
    char id[27], json[512];
    snprintf(json, sizeof json, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}",
             rl_test_lease_id((uint64_t)n, id), key, (unsigned long long)amount);
    call(f, "POST", "/v1/reserve", json);
    if (strstr(body(f), expect) == NULL) fail_msg("reserve %s: %s lacks %s", key, body(f), expect);
}

/* PUT, GET and DELETE of templates; a key a template makes answers as a
 * limit, its LimitInfo naming the template, and is not listed. */
static void test_templates(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_string_equal(body(f), "{\"templates\":[]}");
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", DAILY_TEMPLATE), 200);
    assert_string_equal(body(f), "{\"ok\":true}");
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_string_equal(body(f), "{\"templates\":[{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\",\"kind\":"
                                 "\"rolling\",\"capacity\":1000,\"window_seconds\":86400,\"timeout_seconds\":0,"
                                 "\"unit\":\"tokens\",\"description\":\"\",\"overage\":\"debt\"}]}");
    reserve_key(f, "tenant:acme:llm:daily_tokens", 700, 1, "\"allowed\":true");
    reserve_key(f, "tenant:acme:llm:daily_tokens", 700, 2, "\"allowed\":false");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:acme:llm:daily_tokens", NULL), 200);
    assert_non_null(strstr(body(f), "\"used\":700"));
    assert_non_null(strstr(body(f), ",\"template\":\"tenant:{tenant}:llm:daily_tokens\"}}"));
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:new:llm:daily_tokens", NULL), 200);
    assert_non_null(strstr(body(f), "\"used\":0"));
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:a:b:llm:daily_tokens", NULL), 404);
    assert_int_equal(call(f, "GET", "/v1/admin/limits", NULL), 200);
    assert_string_equal(body(f), "{\"limits\":[]}");
    /* Not a limit: DELETE of the key is a 404; its own PUT wins. */
    assert_int_equal(call(f, "DELETE", "/v1/admin/limits/tenant:acme:llm:daily_tokens", NULL), 404);
    put_limit(f, "{\"key\":\"tenant:acme:llm:daily_tokens\",\"kind\":\"rolling\",\"capacity\":5000,"
                 "\"window_seconds\":86400}");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:acme:llm:daily_tokens", NULL), 200);
    assert_non_null(strstr(body(f), "\"used\":700"));
    assert_null(strstr(body(f), "\"template\""));

    /* Persisted like limits: a restart keeps the template. */
    reopen(f);
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_non_null(strstr(body(f), "tenant:{tenant}:llm:daily_tokens"));
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:b:llm:daily_tokens", NULL), 200);

    /* DELETE by pattern, percent-encoded or not. */
    assert_int_equal(call(f, "DELETE", "/v1/admin/templates/tenant:%7Btenant%7D:llm:daily_tokens", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true}");
    assert_int_equal(call(f, "DELETE", "/v1/admin/templates/tenant:{tenant}:llm:daily_tokens", NULL), 404);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"no template has the "
                                 "pattern tenant:{tenant}:llm:daily_tokens\"}");
    assert_int_equal(call(f, "GET", "/v1/admin/limits/tenant:b:llm:daily_tokens", NULL), 404);
    reopen(f);
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_string_equal(body(f), "{\"templates\":[]}");
}

static void test_template_refusals(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", "{\"key\":\"a:{b}\",\"kind\":\"rolling\",\"capacity\":1,"
                                                           "\"window_seconds\":60}"),
                     400);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"pattern is required\"}");
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", "{\"pattern\":\"a:{b}\",\"kind\":\"rolling\","
                                                           "\"capacity\":1}"),
                     400);
    assert_int_equal(call(f, "DELETE", "/v1/admin/templates/", NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/admin/templates/x", NULL), 405);
    assert_string_equal(f->res.allow, "DELETE");
    assert_int_equal(call(f, "POST", "/v1/admin/templates", NULL), 405);
    assert_string_equal(f->res.allow, "GET, PUT");
    /* A change of kind while a limit made from it holds something: 409,
     * and the template stays as it was, in the registry too. */
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", DAILY_TEMPLATE), 200);
    reserve_key(f, "tenant:acme:llm:daily_tokens", 10, 1, "\"allowed\":true");
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", "{\"pattern\":\"tenant:{tenant}:llm:daily_tokens\","
                                                           "\"kind\":\"concurrency\",\"capacity\":1,"
                                                           "\"timeout_seconds\":60}"),
                     409);
    assert_non_null(strstr(body(f), "{\"ok\":false,\"error\":\"limit_in_use\",\"detail\":\"a limit made from template"));
    reopen(f);
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_non_null(strstr(body(f), "\"kind\":\"rolling\""));
}

/* A backend without templates refuses them with a sentence, and the
 * registry keeps none. */
static void test_templates_without_backend_support(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "PUT", "/v1/admin/templates", DAILY_TEMPLATE), 400);
    assert_non_null(strstr(body(f), "cannot take this template (it has no templates)"));
    assert_int_equal(call(f, "GET", "/v1/admin/templates", NULL), 200);
    assert_string_equal(body(f), "{\"templates\":[]}");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_routing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_without_a_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_failure_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_answer_buffer_is_trimmed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_page_in_api_shape, setup_audit, teardown),
        cmocka_unit_test_setup_teardown(test_bad_queries_reach_no_backend, setup_audit, teardown),
        cmocka_unit_test_setup_teardown(test_audit_routing, setup_audit, teardown),
        cmocka_unit_test_setup_teardown(test_backend_failures, setup_audit, teardown),
        cmocka_unit_test(test_service_open_errors),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_failure_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_group_of_puts_and_deletes_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_without_backend_support, setup_audit, teardown),
        cmocka_unit_test(test_a_delete_cut_short_is_finished_at_start),
        cmocka_unit_test_setup_teardown(test_templates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_templates_without_backend_support, setup_audit, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
