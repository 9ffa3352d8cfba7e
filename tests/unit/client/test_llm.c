/* test_llm.c — the LLM requirement builder and the prompt estimate,
 * and its requirements against a local limiter: a model needs only the
 * limits it has, but a misspelt one (no rpm) is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "ratelimiter/llm.h"
#include "ratelimiter/ulid.h"
#include "support/llm_reserve.h"

static void builds_the_five_requirements(void **state) {
    (void)state;
    rl_llm_call call = {.tenant_id = "tenant_a", .provider = "openai", .model = "gpt-4o",
                        .prompt = "h\xc3\xa9llo", /* 6 bytes of UTF-8 */
                        .max_output_tokens = 1000, .want_daily_budget = true};
    assert_int_equal(rl_estimate_prompt_tokens(call.prompt), 6);
    assert_int_equal(rl_estimate_prompt_tokens(NULL), 0);
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    assert_int_equal(r.count, 5);
    assert_int_equal(r.token_upper_bound, 1006);
    /* the model's dimensions: its rpm required (every provider has one), the
     * others optional (a model needs only the limits it has) */
    static const struct {
        const char *key;
        uint64_t amount;
        bool optional;
    } model[] = {{"global:llm:openai:gpt-4o:rpm", 1, false},
                 {"global:llm:openai:gpt-4o:tpm", 1006, true},
                 {"global:llm:openai:gpt-4o:concurrency", 1, true},
                 {"global:llm:openai:gpt-4o:rpd", 1, true}};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(r.items[i].key, model[i].key);
        assert_int_equal(r.items[i].amount, model[i].amount);
        assert_int_equal(r.items[i].optional, model[i].optional);
    }
    /* the tenant's budget is required */
    assert_string_equal(r.items[4].key, "tenant:tenant_a:llm:daily_tokens");
    assert_int_equal(r.items[4].amount, 1006);
    assert_false(r.items[4].optional);

    rl_actual actuals[2];
    assert_int_equal(rl_llm_actuals(&r, 740, actuals), 2);
    assert_string_equal(actuals[0].key, "global:llm:openai:gpt-4o:tpm");
    assert_int_equal(actuals[0].actual_amount, 740);
    assert_string_equal(actuals[1].key, "tenant:tenant_a:llm:daily_tokens");
    assert_int_equal(actuals[1].actual_amount, 740);

    rl_llm_requirements copy = r; /* a copy points at the original's keys until fixed */
    rl_llm_requirements_fix(&copy);
    for (size_t i = 0; i < copy.count; i++) assert_ptr_equal(copy.items[i].key, copy.keys[i]);
    assert_true(copy.items[3].optional);
}

static void without_budget_and_with_known_prompt_tokens(void **state) {
    (void)state;
    rl_llm_call call = {.provider = "anthropic", .model = "claude", .prompt = "ignored",
                        .prompt_tokens = 50, .max_output_tokens = 10};
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    assert_int_equal(r.count, 4);
    assert_int_equal(r.items[1].amount, 60);
    assert_string_equal(r.items[3].key, "global:llm:anthropic:claude:rpd");
    rl_actual actuals[2];
    assert_int_equal(rl_llm_actuals(&r, 5, actuals), 1);
    assert_string_equal(actuals[0].key, "global:llm:anthropic:claude:tpm");
}

/* A model with no limits of its own (model_limits_optional): each of its
 * dimensions optional, the tenant's budget still required. */
static void a_model_without_limits_of_its_own(void **state) {
    (void)state;
    rl_llm_call call = {.tenant_id = "t", .provider = "local", .model = "llama", .max_output_tokens = 10,
                        .want_daily_budget = true, .model_limits_optional = true};
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    assert_int_equal(r.count, 5);
    assert_string_equal(r.items[0].key, "global:llm:local:llama:rpm");
    for (size_t i = 0; i < 4; i++) assert_true(r.items[i].optional);
    assert_false(r.items[4].optional);
}

static void refuses_what_cannot_be_a_key_or_an_amount(void **state) {
    (void)state;
    rl_llm_requirements r;
    rl_llm_call colon = {.provider = "open:ai", .model = "m", .max_output_tokens = 1};
    assert_false(rl_llm_requirements_build(&colon, &r));
    rl_llm_call no_tenant = {.provider = "p", .model = "m", .max_output_tokens = 1, .want_daily_budget = true};
    assert_false(rl_llm_requirements_build(&no_tenant, &r));
    rl_llm_call nothing = {.provider = "p", .model = "m", .prompt = ""};
    assert_false(rl_llm_requirements_build(&nothing, &r));
    rl_llm_call huge = {.provider = "p", .model = "m", .prompt_tokens = RL_AMOUNT_MAX, .max_output_tokens = 1};
    assert_false(rl_llm_requirements_build(&huge, &r));
}

/* A local limiter (the memory backend) on limits, written to a file. */
static rl_limiter *limiter_on(const char *limits_json, char path[64]) {
    char dir[] = "/tmp/rl_llm_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(path, 64, "%s/limits.json", dir);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(limits_json, file);
    fclose(file);
    rl_limiter *limiter;
    char err[RL_LIMITER_ERR_SIZE];
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    return limiter;
}

static void limiter_off(rl_limiter *limiter, char path[64]) {
    rl_limiter_destroy(limiter);
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
}

/* Against a limiter: a model with only an rpm and a tpm limit is served
 * (its concurrency and rpd skipped) and denied by its tpm; a tenant without
 * a daily budget is refused. */
static void a_model_needs_only_the_limits_it_has(void **state) {
    (void)state;
    char path[64];
    rl_limiter *limiter = limiter_on(
        "[{\"key\":\"global:llm:p:m:rpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":60},"
        "{\"key\":\"global:llm:p:m:tpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60},"
        "{\"key\":\"tenant:t:llm:daily_tokens\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":86400}]",
        path);
    rl_llm_call call = {.tenant_id = "t", .provider = "p", .model = "m", .prompt_tokens = 50,
                        .max_output_tokens = 10, .want_daily_budget = true};
    rl_reserve_result result = rl_test_reserve_llm_call(limiter, &call);
    assert_true(result.allowed);
    result = rl_test_reserve_llm_call(limiter, &call);
    assert_false(result.allowed); /* 60 + 60 tokens of 100 */
    assert_string_equal(result.denied_by.key, "global:llm:p:m:tpm");
    call.tenant_id = "ghost";
    result = rl_test_reserve_llm_call(limiter, &call);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(result.status_key, "tenant:ghost:llm:daily_tokens");
    limiter_off(limiter, path);
}

/* A misspelt model has no rpm: refused, naming the key, and nothing held;
 * the model that is meant still gets all of its limit. A model said to have
 * no limits of its own is admitted without any. */
static void a_misspelt_model_is_refused(void **state) {
    (void)state;
    char path[64];
    rl_limiter *limiter = limiter_on(
        "[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":60},"
        "{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}]",
        path);
    static const char *const typos[] = {"gpt-4o-typo", "gpt4o", "GPT-4o"};
    for (size_t i = 0; i < sizeof typos / sizeof typos[0]; i++) {
        rl_llm_call typo = {.provider = "openai", .model = typos[i], .prompt_tokens = 50, .max_output_tokens = 50};
        rl_reserve_result result = rl_test_reserve_llm_call(limiter, &typo);
        assert_false(result.allowed);
        assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
        char key[RL_KEY_MAX_LEN + 1];
        snprintf(key, sizeof key, "global:llm:openai:%s:rpm", typos[i]);
        assert_string_equal(result.status_key, key);
    }
    rl_llm_call meant = {.provider = "openai", .model = "gpt-4o", .prompt_tokens = 50, .max_output_tokens = 50};
    assert_true(rl_test_reserve_llm_call(limiter, &meant).allowed); /* the whole rpm of 1 and tpm of 100 were free */
    rl_llm_call local = {.provider = "local", .model = "llama", .max_output_tokens = 10, .model_limits_optional = true};
    assert_true(rl_test_reserve_llm_call(limiter, &local).allowed);
    limiter_off(limiter, path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builds_the_five_requirements),
        cmocka_unit_test(without_budget_and_with_known_prompt_tokens),
        cmocka_unit_test(a_model_without_limits_of_its_own),
        cmocka_unit_test(refuses_what_cannot_be_a_key_or_an_amount),
        cmocka_unit_test(a_model_needs_only_the_limits_it_has),
        cmocka_unit_test(a_misspelt_model_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
