/* test_llm.c — the LLM requirement builder and the prompt estimate (spec §5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/llm.h"

static void builds_the_four_requirements(void **state) {
    (void)state;
    rl_llm_call call = {.tenant_id = "tenant_a", .provider = "openai", .model = "gpt-4o",
                        .prompt = "h\xc3\xa9llo", /* 6 bytes of UTF-8 */
                        .max_output_tokens = 1000, .want_daily_budget = true};
    assert_int_equal(rl_estimate_prompt_tokens(call.prompt), 6);
    assert_int_equal(rl_estimate_prompt_tokens(NULL), 0);
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    assert_int_equal(r.count, 4);
    assert_int_equal(r.token_upper_bound, 1006);
    assert_string_equal(r.items[0].key, "global:llm:openai:gpt-4o:rpm");
    assert_int_equal(r.items[0].amount, 1);
    assert_string_equal(r.items[1].key, "global:llm:openai:gpt-4o:tpm");
    assert_int_equal(r.items[1].amount, 1006);
    assert_string_equal(r.items[2].key, "global:llm:openai:gpt-4o:concurrency");
    assert_int_equal(r.items[2].amount, 1);
    assert_string_equal(r.items[3].key, "tenant:tenant_a:llm:daily_tokens");
    assert_int_equal(r.items[3].amount, 1006);

    rl_actual actuals[2];
    assert_int_equal(rl_llm_actuals(&r, 740, actuals), 2);
    assert_string_equal(actuals[0].key, "global:llm:openai:gpt-4o:tpm");
    assert_int_equal(actuals[0].actual_amount, 740);
    assert_string_equal(actuals[1].key, "tenant:tenant_a:llm:daily_tokens");

    rl_llm_requirements copy = r; /* a copy points at the original's keys until fixed */
    rl_llm_requirements_fix(&copy);
    assert_ptr_equal(copy.items[1].key, copy.keys[1]);
}

static void without_budget_and_with_known_prompt_tokens(void **state) {
    (void)state;
    rl_llm_call call = {.provider = "anthropic", .model = "claude", .prompt = "ignored",
                        .prompt_tokens = 50, .max_output_tokens = 10};
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(&call, &r));
    assert_int_equal(r.count, 3);
    assert_int_equal(r.items[1].amount, 60);
    rl_actual actuals[2];
    assert_int_equal(rl_llm_actuals(&r, 5, actuals), 1);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builds_the_four_requirements),
        cmocka_unit_test(without_budget_and_with_known_prompt_tokens),
        cmocka_unit_test(refuses_what_cannot_be_a_key_or_an_amount),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
