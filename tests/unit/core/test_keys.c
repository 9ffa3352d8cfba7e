/* test_keys.c — limit key validation and the standard key builders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/keys.h"
#include "ratelimiter/types.h"

static bool valid(const char *key) { return rl_key_is_valid(key, strlen(key)); }

static void test_valid_keys(void **state) {
    (void)state;
    assert_true(valid("global:llm:openai:gpt-4o:rpm"));
    assert_true(valid("tenant:tenant_a:llm:daily_tokens"));
    assert_true(valid("x"));
    assert_true(valid("!"));
    assert_true(valid("~"));
    assert_true(valid("a\"b\\c")); /* printable, so allowed: encoders must escape */
}

static void test_length_boundaries(void **state) {
    (void)state;
    char key[RL_KEY_MAX_LEN + 2];
    memset(key, 'k', sizeof key);
    assert_false(rl_key_is_valid(key, 0));
    assert_true(rl_key_is_valid(key, 1));
    assert_true(rl_key_is_valid(key, RL_KEY_MAX_LEN));      /* 256 */
    assert_false(rl_key_is_valid(key, RL_KEY_MAX_LEN + 1)); /* 257 */
    assert_false(rl_key_is_valid(NULL, 0));
    assert_false(rl_key_is_valid(NULL, 5));
}

static void test_forbidden_characters(void **state) {
    (void)state;
    assert_false(valid("a b"));
    assert_false(valid(" ab"));
    assert_false(valid("ab "));
    assert_false(valid("a\tb"));
    assert_false(valid("a\nb"));
    assert_false(valid("a\x7f" "b")); /* DEL */
    assert_false(valid("a\x01" "b"));
    assert_false(valid("caf\xc3\xa9")); /* non-ASCII */
    assert_false(rl_key_is_valid("a\0b", 3)); /* embedded NUL */
    /* Every byte outside 0x21..0x7e is refused, every byte inside accepted. */
    for (int c = 0; c < 256; c++) {
        char key[3] = {'a', (char)c, 'b'};
        assert_int_equal(rl_key_is_valid(key, 3), c >= 0x21 && c <= 0x7e);
    }
    /* ...at every position of a word-at-a-time check, and in the tail, with
     * valid bytes on both sides at the edges of the range. */
    for (size_t len = 1; len <= 19; len++) {
        for (size_t at = 0; at < len; at++) {
            for (int c = 0; c < 256; c++) {
                char key[19];
                for (size_t i = 0; i < len; i++) key[i] = (char)(i % 2 ? 0x7e : 0x21);
                key[at] = (char)c;
                assert_int_equal(rl_key_is_valid(key, len), c >= 0x21 && c <= 0x7e);
            }
        }
    }
}

static void test_llm_global_builder(void **state) {
    (void)state;
    char out[RL_KEY_MAX_LEN + 1];
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "gpt-4o", RL_LLM_RPM), 28);
    assert_string_equal(out, "global:llm:openai:gpt-4o:rpm");
    assert_true(rl_key_llm_global(out, sizeof out, "openai", "gpt-4o", RL_LLM_TPM) > 0);
    assert_string_equal(out, "global:llm:openai:gpt-4o:tpm");
    assert_true(rl_key_llm_global(out, sizeof out, "anthropic", "claude", RL_LLM_CONCURRENCY) > 0);
    assert_string_equal(out, "global:llm:anthropic:claude:concurrency");
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "gpt-4o", RL_LLM_RPD), 28);
    assert_string_equal(out, "global:llm:openai:gpt-4o:rpd");
}

static void test_llm_global_builder_refuses(void **state) {
    (void)state;
    char out[RL_KEY_MAX_LEN + 1];
    /* A ':' in a part would reach into another segment. */
    assert_int_equal(rl_key_llm_global(out, sizeof out, "open:ai", "gpt", RL_LLM_RPM), -1);
    assert_string_equal(out, "");
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "gpt:4o", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, "", "gpt", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, NULL, "gpt", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, "open ai", "gpt", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "gpt\n", RL_LLM_RPM), -1);
    assert_int_equal(rl_key_llm_global(out, sizeof out, "openai", "gpt", (rl_llm_dimension)(RL_LLM_RPD + 1)), -1);
    assert_string_equal(out, "");
    /* Too small an output buffer. */
    char small[10];
    assert_int_equal(rl_key_llm_global(small, sizeof small, "openai", "gpt-4o", RL_LLM_RPM), -1);
    assert_string_equal(small, "");
    assert_int_equal(rl_key_llm_global(NULL, 0, "openai", "gpt-4o", RL_LLM_RPM), -1);
}

static void test_llm_global_builder_too_long(void **state) {
    (void)state;
    char big[RL_KEY_MAX_LEN * 2 + 1];
    char model[RL_KEY_MAX_LEN + 1];
    memset(model, 'm', sizeof model - 1);
    model[sizeof model - 1] = '\0';
    /* Fits the buffer but exceeds RL_KEY_MAX_LEN: still refused. */
    assert_int_equal(rl_key_llm_global(big, sizeof big, "openai", model, RL_LLM_RPM), -1);
    assert_string_equal(big, "");
    /* "global:llm:p:" (13) + model + ":rpm" (4) == 256 exactly. */
    model[RL_KEY_MAX_LEN - 17] = '\0';
    assert_int_equal(rl_key_llm_global(big, sizeof big, "p", model, RL_LLM_RPM), RL_KEY_MAX_LEN);
    /* One more byte and it does not. */
    model[RL_KEY_MAX_LEN - 17] = 'm';
    model[RL_KEY_MAX_LEN - 16] = '\0';
    assert_int_equal(rl_key_llm_global(big, sizeof big, "p", model, RL_LLM_RPM), -1);
}

static void test_tenant_builder(void **state) {
    (void)state;
    char out[RL_KEY_MAX_LEN + 1];
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, "tenant_a"), 32);
    assert_string_equal(out, "tenant:tenant_a:llm:daily_tokens");
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, "a:b"), -1);
    assert_string_equal(out, "");
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, ""), -1);
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, NULL), -1);
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, "a b"), -1);
    char tenant[RL_KEY_MAX_LEN];
    memset(tenant, 't', sizeof tenant - 1);
    tenant[sizeof tenant - 1] = '\0';
    assert_int_equal(rl_key_tenant_daily_tokens(out, sizeof out, tenant), -1);
    char small[8];
    assert_int_equal(rl_key_tenant_daily_tokens(small, sizeof small, "a"), -1);
    assert_string_equal(small, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_keys),
        cmocka_unit_test(test_length_boundaries),
        cmocka_unit_test(test_forbidden_characters),
        cmocka_unit_test(test_llm_global_builder),
        cmocka_unit_test(test_llm_global_builder_refuses),
        cmocka_unit_test(test_llm_global_builder_too_long),
        cmocka_unit_test(test_tenant_builder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
