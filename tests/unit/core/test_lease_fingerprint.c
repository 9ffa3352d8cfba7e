/* test_lease_fingerprint.c — what makes a retry the same request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/lease_fingerprint.h"

static const rl_requirement call[] = {
    {"global:llm:openai:gpt-4o:rpm", 1},
    {"global:llm:openai:gpt-4o:tpm", 1800},
    {"global:llm:openai:gpt-4o:concurrency", 1},
    {"tenant:acme:llm:daily_tokens", 1800},
};

static uint64_t fp(const rl_requirement *requirements, size_t count) {
    return rl__lease_fingerprint(requirements, count);
}

static void test_any_order_is_the_same_request(void **state) {
    (void)state;
    const rl_requirement reversed[] = {call[3], call[2], call[1], call[0]};
    const rl_requirement swapped[] = {call[1], call[0], call[3], call[2]};
    assert_true(fp(call, 4) == fp(reversed, 4));
    assert_true(fp(call, 4) == fp(swapped, 4));
}

static void test_other_keys_or_amounts_differ(void **state) {
    (void)state;
    uint64_t base = fp(call, 4);
    rl_requirement changed[4];
    for (size_t i = 0; i < 4; i++) {
        memcpy(changed, call, sizeof changed);
        changed[i].amount++;
        assert_true(fp(changed, 4) != base);
        memcpy(changed, call, sizeof changed);
        changed[i].key = "global:llm:openai:gpt-4o-mini:tpm";
        assert_true(fp(changed, 4) != base);
    }
    /* fewer requirements, or the same amounts moved to other keys */
    assert_true(fp(call, 3) != base);
    const rl_requirement moved[] = {{"a", 1}, {"b", 10}};
    const rl_requirement moved_back[] = {{"a", 10}, {"b", 1}};
    assert_true(fp(moved, 2) != fp(moved_back, 2));
    /* the reproduction: a then b */
    const rl_requirement a1[] = {{"a", 1}}, b10[] = {{"b", 10}};
    assert_true(fp(a1, 1) != fp(b10, 1));
}

/* Redis keeps the text with every lease for lease_memory_ms, and daemons of
 * two versions may share one Redis during an upgrade: the function must not
 * change, or retries across the upgrade would be refused as conflicts. */
static void test_the_value_is_stable(void **state) {
    (void)state;
    char text[RL_LEASE_FINGERPRINT_TEXT_SIZE];
    rl__lease_fingerprint_text(fp(call, 4), text);
    assert_int_equal(strlen(text), 11);
    assert_string_equal(text, "TYldSgKsIpD");
    rl__lease_fingerprint_text(0, text);
    assert_string_equal(text, "AAAAAAAAAAA");
    rl__lease_fingerprint_text(UINT64_MAX, text);
    assert_string_equal(text, "__________P");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order_is_the_same_request),
        cmocka_unit_test(test_other_keys_or_amounts_differ),
        cmocka_unit_test(test_the_value_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
