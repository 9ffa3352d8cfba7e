/* test_lease_fingerprint.c — what makes a retry the same request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/lease_fingerprint.h"

static const rl_requirement call[] = {
    {"global:llm:openai:gpt-4o:rpm", 1, false},
    {"global:llm:openai:gpt-4o:tpm", 1800, false},
    {"global:llm:openai:gpt-4o:concurrency", 1, false},
    {"tenant:acme:llm:daily_tokens", 1800, false},
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
    const rl_requirement moved[] = {{"a", 1, false}, {"b", 10, false}};
    const rl_requirement moved_back[] = {{"a", 10, false}, {"b", 1, false}};
    assert_true(fp(moved, 2) != fp(moved_back, 2));
    /* the reproduction: a then b */
    const rl_requirement a1[] = {{"a", 1, false}}, b10[] = {{"b", 10, false}};
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

/* An optional requirement is another request than the same one without
 * the flag (a retry must say optional where it did), in any order, and the
 * parts a backend sums (rl__lease_fingerprint_term of each key's part and
 * rl__lease_fingerprint_amount) make the same fingerprint. A lease without
 * optional requirements keeps its value: test_the_value_is_stable. */
static void test_an_optional_requirement_is_another_request(void **state) {
    (void)state;
    uint64_t base = fp(call, 4);
    rl_requirement changed[4];
    for (size_t i = 0; i < 4; i++) {
        memcpy(changed, call, sizeof changed);
        changed[i].optional = true;
        uint64_t optional = fp(changed, 4);
        assert_true(optional != base);
        const rl_requirement reversed[] = {changed[3], changed[2], changed[1], changed[0]};
        assert_true(fp(reversed, 4) == optional);
        uint64_t sum = 0;
        for (size_t j = 0; j < 4; j++)
            sum += rl__lease_fingerprint_term(rl__lease_fingerprint_key(changed[j].key),
                                              rl__lease_fingerprint_amount(&changed[j]));
        assert_true(rl__lease_fingerprint_end(sum, 4) == optional);
    }
    /* the flag is not an amount: 2^53 optional is not 2^53 | 2^63 of anything else */
    const rl_requirement big[] = {{"a", RL_AMOUNT_MAX, true}}, plain[] = {{"a", RL_AMOUNT_MAX, false}};
    assert_true(fp(big, 1) != fp(plain, 1));
    char text[RL_LEASE_FINGERPRINT_TEXT_SIZE];
    memcpy(changed, call, sizeof changed);
    changed[0].optional = changed[2].optional = true;
    rl__lease_fingerprint_text(fp(changed, 4), text);
    assert_string_not_equal(text, "TYldSgKsIpD");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order_is_the_same_request),
        cmocka_unit_test(test_other_keys_or_amounts_differ),
        cmocka_unit_test(test_the_value_is_stable),
        cmocka_unit_test(test_an_optional_requirement_is_another_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
