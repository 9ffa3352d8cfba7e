/* test_provider_presets.c — provider presets through the built daemon: GET
 * /v1/admin/presets, PUT /v1/admin/presets/{name}/apply, --preset and the
 * config's presets: at start.
 *
 * Explicit limits win: an operator's PUT before or after an apply keeps its
 * definition; a newer table of a preset (simulated: the registry holds what
 * an older one made, with its origin) updates the preset's keys at the next
 * start; a restart with the same presets writes nothing; a DELETE frees a
 * preset's key; a name no preset has stops start-up with the list of them.
 * Through the HTTP limiter, the LLM helper's requirements for a model a
 * preset knows are served, and a misspelt model is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/presets.h"
#include "ratelimiter/registry.h"
#include "support/daemon.h"
#include "support/file_bytes.h"
#include "support/llm_reserve.h"

#define RPM_4O "global:llm:openai:gpt-4o:rpm"
#define TPM_4O "global:llm:openai:gpt-4o:tpm"

static char body[65536];

static long call(rl_test_daemon *d, const char *method, const char *path, const char *json) {
    rl_test_response r;
    long status = rl_test_daemon_http(d, method, path, json, &r);
    if (status == 0) fail_msg("%s %s failed: %s", method, path, r.error);
    snprintf(body, sizeof body, "%s", r.body);
    rl_test_response_free(&r);
    return status;
}

static void expect_in_body(const char *fragment) {
    if (strstr(body, fragment) == NULL) fail_msg("\"%s\" not in %s", fragment, body);
}

static void expect_in_stderr(rl_test_daemon *d, const char *fragment) {
    static char text[16384];
    rl_test_daemon_read_stderr(d, text, sizeof text);
    if (strstr(text, fragment) == NULL) fail_msg("\"%s\" not in the daemon's stderr: %s", fragment, text);
}

/* The registry file's and its log's bytes, as one string (sizes and bytes). */
static char *registry_bytes(rl_test_daemon *d, size_t *len) {
    char log_path[320];
    snprintf(log_path, sizeof log_path, "%s.log", d->registry_path);
    size_t a = 0, b = 0;
    unsigned char *file = rl_test_file_bytes(d->registry_path, &a);
    unsigned char *log = access(log_path, F_OK) == 0 ? rl_test_file_bytes(log_path, &b) : NULL;
    char *all = malloc(a + b + 1);
    memcpy(all, file, a);
    if (b > 0) memcpy(all + a, log, b);
    *len = a + b;
    free(file);
    free(log);
    return all;
}

/* Puts a definition with an origin into a stopped daemon's registry. */
static void seed(rl_test_daemon *d, const char *key, uint64_t capacity, const char *description, const char *origin) {
    rl_registry *registry;
    char err[256];
    assert_int_equal(rl_registry_open(d->registry_path, 0, &registry, err, sizeof err), RL_OK);
    rl_registry_change change = {.op = RL_REGISTRY_PUT,
                                 .def = {.kind = RL_KIND_ROLLING, .capacity = capacity, .window_seconds = 60}};
    snprintf(change.def.key, sizeof change.def.key, "%s", key);
    snprintf(change.def.description, sizeof change.def.description, "%s", description);
    snprintf(change.origin, sizeof change.origin, "%s", origin);
    assert_int_equal(rl_registry_apply(registry, &change, 1, err, sizeof err), RL_OK);
    assert_int_equal(change.status, RL_OK);
    rl_registry_close(registry);
}

/* Over HTTP: explicit wins before and after, LimitInfo says the preset, the
 * limits are in force, a DELETE frees a preset's key, and a restart keeps
 * who made what. */
static void test_apply_over_http(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    assert_true(rl_test_daemon_start(&d, NULL));
    assert_int_equal(call(&d, "GET", "/v1/admin/presets", NULL), 200);
    expect_in_body("{\"name\":\"openai-tier-1\",\"provider\":\"openai\",\"tier\":\"Tier 1\",\"as_of\":\"2025-06-30\"");
    expect_in_body("{\"name\":\"local\",\"provider\":\"local\",\"tier\":\"\",\"as_of\":\"\",\"source\":\"\"");

    assert_int_equal(call(&d, "PUT", "/v1/admin/limits",
                          "{\"key\":\"" RPM_4O "\",\"kind\":\"rolling\",\"capacity\":7,\"window_seconds\":60}"),
                     200);
    assert_int_equal(call(&d, "PUT", "/v1/admin/presets/openai-tier-1/apply", NULL), 200);
    expect_in_body("{\"ok\":true,\"preset\":\"openai-tier-1\",\"limits\":[");
    expect_in_body("{\"key\":\"" RPM_4O "\",\"result\":\"kept\"}");
    expect_in_body("{\"key\":\"" TPM_4O "\",\"result\":\"defined\",\"status\":\"active\"}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" RPM_4O, NULL), 200);
    expect_in_body("\"capacity\":7,");
    assert_null(strstr(body, "\"preset\""));
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" TPM_4O, NULL), 200);
    expect_in_body("\"capacity\":30000,");
    expect_in_body(",\"preset\":\"openai-tier-1\"}}");

    /* In force for the LLM helper's keys. */
    assert_int_equal(call(&d, "POST", "/v1/reserve",
                          "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\",\"requirements\":[{\"key\":\"" TPM_4O
                          "\",\"amount\":30001}]}"),
                     200);
    expect_in_body("\"error\":\"exceeds_capacity:" TPM_4O "\"");

    /* An explicit PUT after the apply takes the key over. */
    assert_int_equal(call(&d, "PUT", "/v1/admin/limits",
                          "{\"key\":\"" TPM_4O "\",\"kind\":\"rolling\",\"capacity\":40000,\"window_seconds\":60}"),
                     200);
    assert_int_equal(call(&d, "PUT", "/v1/admin/presets/openai-tier-2/apply", NULL), 200);
    expect_in_body("{\"key\":\"" TPM_4O "\",\"result\":\"kept\"}");
    expect_in_body("{\"key\":\"global:llm:openai:gpt-4.1:tpm\",\"result\":\"updated\",\"status\":\"active\"}");

    /* DELETE of a preset's key: gone, and the next apply defines it. */
    assert_int_equal(call(&d, "DELETE", "/v1/admin/limits/global:llm:openai:gpt-4.1:tpm", NULL), 200);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4.1:tpm", NULL), 404);
    assert_int_equal(call(&d, "PUT", "/v1/admin/presets/openai-tier-2/apply", NULL), 200);
    expect_in_body("{\"key\":\"global:llm:openai:gpt-4.1:tpm\",\"result\":\"defined\",\"status\":\"active\"}");
    expect_in_body("{\"key\":\"global:llm:openai:gpt-4.1:rpm\",\"result\":\"unchanged\"}");

    /* Refusals. */
    assert_int_equal(call(&d, "PUT", "/v1/admin/presets/openai-tier-9/apply", NULL), 404);
    expect_in_body("\"detail\":\"no preset named \\\"openai-tier-9\\\"; the presets are: anthropic-tier-1,");
    assert_int_equal(call(&d, "PUT", "/v1/admin/presets/openai-tier-1/apply", "{}"), 400);

    /* A restart keeps who made what. */
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    assert_true(rl_test_daemon_start(&d, NULL));
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:openai:gpt-4.1:tpm", NULL), 200);
    expect_in_body(",\"preset\":\"openai-tier-2\"}}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" TPM_4O, NULL), 200);
    assert_null(strstr(body, "\"preset\""));
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

/* --preset at every start: the first defines, the next writes nothing. */
static void test_restart_with_presets_is_idempotent(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    const char *const args[] = {"--preset", "openai-tier-1", "--preset", "anthropic-tier-1", NULL};
    assert_true(rl_test_daemon_start(&d, args));
    expect_in_stderr(&d, "ratelimiterd: presets openai-tier-1, anthropic-tier-1: 16 defined, 0 updated, 0 unchanged, "
                         "0 kept (the operator's), 0 refused");
    expect_in_stderr(&d, "(backend memory, 16 limits, 2 threads)");
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    size_t before_len, after_len;
    char *before = registry_bytes(&d, &before_len);

    assert_true(rl_test_daemon_start(&d, args));
    expect_in_stderr(&d, ": 0 defined, 0 updated, 16 unchanged, 0 kept (the operator's), 0 refused");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:anthropic:claude-sonnet-4:tpm", NULL), 200);
    expect_in_body(",\"preset\":\"anthropic-tier-1\"}}");
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    char *after = registry_bytes(&d, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);
    rl_test_daemon_cleanup(&d);
}

/* A newer table of a preset (the registry holds what an older one made)
 * updates its keys at start; the operator's keys stay; the config's
 * presets: and --preset both apply, the flag's last. */
static void test_a_newer_table_at_start(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    seed(&d, RPM_4O, 800, "older table", "preset:openai-tier-1");
    seed(&d, TPM_4O, 5, "mine", "");
    rl_test_daemon_write_config(&d, "presets: [gemini-free]\n");
    const char *const args[] = {"-c", d.config_path, "--preset", "openai-tier-1", NULL};
    assert_true(rl_test_daemon_start(&d, args));
    size_t defined = rl_preset_limit_count(rl_preset_find("gemini-free")) +
                     rl_preset_limit_count(rl_preset_find("openai-tier-1")) - 2;
    char wanted[256];
    snprintf(wanted, sizeof wanted,
             "presets gemini-free, openai-tier-1: %zu defined, 1 updated, 0 unchanged, 1 kept (the operator's)",
             defined);
    expect_in_stderr(&d, wanted);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" RPM_4O, NULL), 200);
    expect_in_body("\"capacity\":500,");
    expect_in_body(",\"preset\":\"openai-tier-1\"}}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" TPM_4O, NULL), 200);
    expect_in_body("\"capacity\":5,");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/global:llm:gemini:gemini-2.5-pro:rpd", NULL), 200);
    expect_in_body(",\"preset\":\"gemini-free\"}}");
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

/* A daemon with openai-tier-1, called by the LLM helper over the HTTP
 * limiter: gpt-4o is served; a misspelt gpt-4o has no rpm and is refused
 * with the key it lacks, holding nothing; a local model said to have no
 * limits of its own is served without any. */
static void test_a_misspelt_model_is_refused_over_http(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    const char *const args[] = {"--preset", "openai-tier-1", NULL};
    assert_true(rl_test_daemon_start(&d, args));
    char url[64], err[RL_LIMITER_ERR_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)d.port);
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = url;
    rl_limiter *limiter = NULL;
    if (rl_limiter_http_open(&options, &limiter, err) != RL_OK) fail_msg("http limiter: %s", err);

    rl_llm_call model = {.provider = "openai", .model = "gpt-4o", .prompt_tokens = 100, .max_output_tokens = 100};
    assert_true(rl_test_reserve_llm_call(limiter, &model).allowed);
    model.model = "gpt-4o-typo";
    rl_reserve_result refused = rl_test_reserve_llm_call(limiter, &model);
    assert_false(refused.allowed);
    assert_int_equal(refused.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(refused.status_key, "global:llm:openai:gpt-4o-typo:rpm");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/" RPM_4O, NULL), 200);
    expect_in_body("\"used\":1,"); /* gpt-4o's own call, nothing of the misspelt one */
    rl_llm_call local = {.provider = "local", .model = "llama", .max_output_tokens = 10, .model_limits_optional = true};
    assert_true(rl_test_reserve_llm_call(limiter, &local).allowed);

    rl_limiter_destroy(limiter);
    assert_int_equal(rl_test_daemon_stop(&d), 0);
    rl_test_daemon_cleanup(&d);
}

/* A name no preset has stops start-up, from a flag or from the file, with
 * the names there are. */
static void test_an_unknown_preset_stops_start_up(void **state) {
    (void)state;
    rl_test_daemon d;
    rl_test_daemon_init(&d);
    char err[8192];
    const char *const flag[] = {"--preset", "openai-tier-9", NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, flag, 20000, err, sizeof err), 1);
    assert_non_null(strstr(err, "ratelimiterd: --preset: no preset named \"openai-tier-9\"; the presets are: "
                                "anthropic-tier-1, anthropic-tier-2"));
    assert_non_null(strstr(err, "openai-tier-5"));
    rl_test_daemon_write_config(&d, "presets:\n  - openai-tier-1\n  - openai-tire-2\n");
    const char *const file[] = {"-c", d.config_path, NULL};
    assert_int_equal(rl_test_daemon_run_to_exit(&d, file, 20000, err, sizeof err), 1);
    assert_non_null(strstr(err, ":3: 'presets': no preset named \"openai-tire-2\"; the presets are: "));
    assert_int_equal(access(d.registry_path, F_OK), -1); /* nothing was written */
    rl_test_daemon_cleanup(&d);
}

int main(void) {
    rl_test_http_global_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_over_http),
        cmocka_unit_test(test_restart_with_presets_is_idempotent),
        cmocka_unit_test(test_a_newer_table_at_start),
        cmocka_unit_test(test_an_unknown_preset_stops_start_up),
        cmocka_unit_test(test_a_misspelt_model_is_refused_over_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
