/* test_handlers_presets.c — GET /v1/admin/presets and PUT
 * /v1/admin/presets/{name}/apply without sockets: a real service (registry
 * in a temp dir + memory backend) behind rl_handle_request, with and
 * without the admin writer. Exact bodies, routing, every refusal; what the
 * rule does to each key is test_service_preset's, over HTTP
 * tests/integration/test_presets.c's. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "ratelimiter/presets.h"
#include "server/api/handler.h"
#include "server/service.h"

typedef struct fixture {
    char dir[64];
    char path[96];
    char log_path[104];
    rl_service *service;
    rl_admin_writer *writer; /* NULL: changes done on the calling thread */
    rl_handler_ctx ctx;
    rl_http_response res;
} fixture;

static int open_fixture(void **state, size_t max_limits, bool writer) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_handlers_presets_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    snprintf(f->log_path, sizeof f->log_path, "%s.log", f->path);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path, .max_limits = max_limits};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, 8));
    if (writer) {
        f->writer = rl_admin_writer_start(rl_admin_writer_put_limits, f->service);
        assert_non_null(f->writer);
        f->ctx.admin_writer = f->writer;
    }
    *state = f;
    return 0;
}

static int setup(void **state) { return open_fixture(state, 0, false); }
static int setup_writer(void **state) { return open_fixture(state, 0, true); }
static int setup_small(void **state) { return open_fixture(state, 2, true); }

static int teardown(void **state) {
    fixture *f = *state;
    rl_admin_writer_stop(f->writer);
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    unlink(f->path);
    unlink(f->log_path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static int call(fixture *f, const char *method, const char *path, const char *body) {
    rl_http_request req = {method, strlen(method), path, strlen(path), body, body != NULL ? strlen(body) : 0, NULL, 0};
    memset(&f->res, 0, sizeof f->res);
    rl_handle_request(&f->ctx, &req, &f->res);
    assert_non_null(f->res.body);
    assert_false(f->res.body->failed);
    return f->res.status;
}

static const char *body(fixture *f) { return f->res.body->data; }

static bool starts_with(const char *text, const char *prefix) { return strncmp(text, prefix, strlen(prefix)) == 0; }

/* openai-free's keys in its order, each with result and then more
 * (",\"status\":\"active\"" or ""). */
#define OPENAI_FREE_KEY(key, result, more) "{\"key\":\"global:llm:openai:" key "\",\"result\":\"" result "\"" more "}"
#define OPENAI_FREE_KEYS(result, more)                                                                            \
    OPENAI_FREE_KEY("gpt-4o-mini:rpd", result, more) "," OPENAI_FREE_KEY("gpt-4o-mini:rpm", result, more) ","      \
    OPENAI_FREE_KEY("gpt-4o-mini:tpm", result, more) "," OPENAI_FREE_KEY("gpt-4.1-mini:rpd", result, more) ","     \
    OPENAI_FREE_KEY("gpt-4.1-mini:rpm", result, more) "," OPENAI_FREE_KEY("gpt-4.1-mini:tpm", result, more)

/* The list: every preset, every field, its limits as LimitDefinitions. */
static void test_the_list(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "GET", "/v1/admin/presets", NULL), 200);
    cJSON *root = cJSON_Parse(body(f));
    const cJSON *presets = cJSON_GetObjectItemCaseSensitive(root, "presets");
    assert_int_equal(cJSON_GetArraySize(presets), (int)rl_preset_count());
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, presets) {
        const rl_preset *p = rl_preset_at(i++);
        static const char *const names[] = {"name", "provider", "tier", "as_of", "source", "note"};
        const char *values[] = {p->name, p->provider, p->tier, p->as_of, p->source, p->note};
        for (size_t k = 0; k < 6; k++) {
            const cJSON *member = cJSON_GetObjectItemCaseSensitive(item, names[k]);
            assert_true(cJSON_IsString(member));
            assert_string_equal(member->valuestring, values[k]);
        }
        const cJSON *limits = cJSON_GetObjectItemCaseSensitive(item, "limits");
        assert_int_equal(cJSON_GetArraySize(limits), (int)rl_preset_limit_count(p));
        if (rl_preset_limit_count(p) == 0) continue;
        rl_limit_def def;
        rl_preset_limit(p, 0, &def);
        const cJSON *first = cJSON_GetArrayItem(limits, 0);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(first, "key")->valuestring, def.key);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(first, "kind")->valuestring, "rolling");
        assert_int_equal((uint64_t)cJSON_GetObjectItemCaseSensitive(first, "capacity")->valuedouble, def.capacity);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(first, "description")->valuestring, def.description);
    }
    cJSON_Delete(root);
    /* The exact start of it. */
    assert_true(starts_with(body(f), "{\"presets\":[{\"name\":\"anthropic-tier-1\",\"provider\":\"anthropic\",\"tier\":"
                                      "\"Tier 1\",\"as_of\":\"2025-06-30\",\"source\":\"https://"));
}

/* An apply's answer, key by key, and what it leaves: the same answers with
 * or without the writer. */
static void test_apply(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-free/apply", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"preset\":\"openai-free\",\"limits\":["
                                 OPENAI_FREE_KEYS("defined", ",\"status\":\"active\"") "]}");
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-free/apply", ""), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"preset\":\"openai-free\",\"limits\":[" OPENAI_FREE_KEYS("unchanged", "") "]}");
    /* LimitInfo says which preset made it, until the operator puts the key. */
    assert_int_equal(call(f, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o-mini:rpm", NULL), 200);
    assert_non_null(strstr(body(f), ",\"preset\":\"openai-free\"}}"));
    assert_int_equal(call(f, "PUT", "/v1/admin/limits",
                          "{\"key\":\"global:llm:openai:gpt-4o-mini:rpm\",\"kind\":\"rolling\",\"capacity\":2,"
                          "\"window_seconds\":60}"),
                     200);
    assert_int_equal(call(f, "GET", "/v1/admin/limits/global:llm:openai:gpt-4o-mini:rpm", NULL), 200);
    assert_null(strstr(body(f), "\"preset\""));
    assert_int_equal(call(f, "GET", "/v1/admin/limits", NULL), 200);
    assert_non_null(strstr(body(f), "\"preset\":\"openai-free\"}"));
    /* Tier 1 over the free tier: the operator's key kept, the rest updated. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1/apply", NULL), 200);
    assert_non_null(strstr(body(f), "{\"key\":\"global:llm:openai:gpt-4o-mini:rpm\",\"result\":\"kept\"}"));
    assert_non_null(strstr(body(f), "{\"key\":\"global:llm:openai:gpt-4o-mini:tpm\",\"result\":\"updated\","
                                    "\"status\":\"active\"}"));
    assert_non_null(strstr(body(f), "{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"result\":\"defined\","
                                    "\"status\":\"active\"}"));
    /* A name percent-encoded is the same name; "local" makes nothing. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai%2Dtier%2D1/apply", NULL), 200);
    assert_true(starts_with(body(f), "{\"ok\":true,\"preset\":\"openai-tier-1\",\"limits\":[{"));
    assert_null(strstr(body(f), "defined"));
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/local/apply", NULL), 200);
    assert_string_equal(body(f), "{\"ok\":true,\"preset\":\"local\",\"limits\":[]}");
}

/* What is refused, and the routes around the two endpoints. */
static void test_refusals_and_routes(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-9/apply", NULL), 404);
    assert_true(starts_with(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"no preset named "
                                      "\\\"openai-tier-9\\\"; the presets are: anthropic-tier-1, anthropic-tier-2,"));
    assert_non_null(strstr(body(f), "openai-tier-5\"}"));
    /* Names that are not one: nothing repeated from the path. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/%zz/apply", NULL), 404);
    assert_non_null(strstr(body(f), "\"detail\":\"no preset has that name; the presets are:"));
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/a%22b/apply", NULL), 404);
    assert_non_null(strstr(body(f), "no preset has that name"));
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1-and-then-some-more-words/apply", NULL), 404);
    assert_int_equal(call(f, "PUT", "/v1/admin/presets//apply", NULL), 404);
    /* Another shape of path under the prefix. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1", NULL), 404);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"a preset is applied with "
                                 "PUT /v1/admin/presets/{name}/apply\"}");
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/apply", NULL), 404);
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1/apply/", NULL), 404);
    /* A body is refused: nothing applied. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1/apply", "{}"), 400);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"PUT "
                                 "/v1/admin/presets/{name}/apply takes no body\"}");
    assert_int_equal(rl_service_limit_count(f->service), 0);
    /* Methods. */
    assert_int_equal(call(f, "PUT", "/v1/admin/presets", NULL), 405);
    assert_string_equal(f->res.allow, "GET");
    assert_int_equal(call(f, "GET", "/v1/admin/presets/openai-tier-1/apply", NULL), 405);
    assert_string_equal(f->res.allow, "PUT");
    assert_int_equal(call(f, "POST", "/v1/admin/presets/openai-tier-1/apply", NULL), 405);
    assert_int_equal(call(f, "GET", "/v1/admin/presetsx", NULL), 404);
    assert_int_equal(call(f, "GET", "/v1/admin/presets", NULL), 200);
}

/* No room for the preset's limits: the keys past it are refused, each
 * saying why, and the answer is still a 200. */
static void test_refused_keys(void **state) {
    fixture *f = *state;
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/anthropic-tier-1/apply", NULL), 200);
    assert_true(starts_with(body(f), "{\"ok\":true,\"preset\":\"anthropic-tier-1\",\"limits\":[{\"key\":\"global:llm:"
                                      "anthropic:claude-3-5-haiku:rpm\",\"result\":\"defined\",\"status\":\"active\"},"));
    assert_non_null(strstr(body(f), "{\"key\":\"global:llm:anthropic:claude-opus-4:rpm\",\"result\":\"refused\","
                                    "\"error\":\"invalid_request\",\"detail\":\"the registry is full: it holds 2 "
                                    "limits (max_limits)\"}"));
    assert_int_equal(rl_service_limit_count(f->service), 2);
}

/* The registry cannot be written: the whole apply fails as a PUT does, and
 * nothing is applied. */
static void test_a_registry_failure_fails_the_apply(void **state) {
    fixture *f = *state;
    struct rlimit before, none;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &before), 0);
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
    none = (struct rlimit){0, before.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &none), 0);
    int status = call(f, "PUT", "/v1/admin/presets/openai-tier-1/apply", NULL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &before), 0);
    assert_int_equal(status, 500);
    assert_string_equal(body(f), "{\"ok\":false,\"error\":\"backend_error\"}");
    assert_int_equal(rl_service_limit_count(f->service), 0);
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(rl_service_backend(f->service), "global:llm:openai:gpt-4o:rpm", &usage),
                     RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(call(f, "PUT", "/v1/admin/presets/openai-tier-1/apply", NULL), 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply, setup_writer, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_and_routes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_and_routes, setup_writer, teardown),
        cmocka_unit_test_setup_teardown(test_refused_keys, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_a_registry_failure_fails_the_apply, setup_writer, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
