/* test_llm.c — the LLM requirement builder and the prompt estimate (spec §5),
 * and its requirements against a local limiter. */
#include <setjmp.h>
#include <stdarg.h>
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
    /* the model's dimensions, each optional: a model needs only the limits it has */
    static const struct {
        const char *key;
        uint64_t amount;
    } model[] = {{"global:llm:openai:gpt-4o:rpm", 1},
                 {"global:llm:openai:gpt-4o:tpm", 1006},
                 {"global:llm:openai:gpt-4o:concurrency", 1},
                 {"global:llm:openai:gpt-4o:rpd", 1}};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(r.items[i].key, model[i].key);
        assert_int_equal(r.items[i].amount, model[i].amount);
        assert_true(r.items[i].optional);
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

/* Against a limiter: a model with only a tpm limit is served (its rpm,
 * concurrency and rpd skipped) and denied by that limit alone; a tenant
 * without a daily budget is refused. */
static void a_model_needs_only_the_limits_it_has(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_llm_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/limits.json", dir);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs("[{\"key\":\"global:llm:p:m:tpm\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60},"
          "{\"key\":\"tenant:t:llm:daily_tokens\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":86400}]",
          file);
    fclose(file);
    rl_limiter *limiter;
    char err[RL_LIMITER_ERR_SIZE];
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    rl_llm_call call = {.tenant_id = "t", .provider = "p", .model = "m", .prompt_tokens = 50,
                        .max_output_tokens = 10, .want_daily_budget = true};
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    char ids[3][RL_ULID_TEXT_SIZE];
    rl_reserve_request request = {rl_ulid_new(ids[0]), NULL, r.items, r.count, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_true(result.allowed);
    request.lease_id = rl_ulid_new(ids[1]);
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_false(result.allowed); /* 60 + 60 tokens of 100 */
    assert_string_equal(result.denied_by.key, "global:llm:p:m:tpm");
    call.tenant_id = "ghost";
    assert_true(rl_llm_requirements_build(&call, &r));
    request = (rl_reserve_request){rl_ulid_new(ids[2]), NULL, r.items, r.count, false};
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(result.status_key, "tenant:ghost:llm:daily_tokens");
    rl_limiter_destroy(limiter);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builds_the_five_requirements),
        cmocka_unit_test(without_budget_and_with_known_prompt_tokens),
        cmocka_unit_test(refuses_what_cannot_be_a_key_or_an_amount),
        cmocka_unit_test(a_model_needs_only_the_limits_it_has),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
