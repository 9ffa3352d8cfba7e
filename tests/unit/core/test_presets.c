/* test_presets.c — the built-in provider presets: every one findable, dated
 * and sourced, every limit it makes valid, on the LLM helper's keys, once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/keys.h"
#include "ratelimiter/presets.h"

static void test_every_preset_is_found_by_name_in_order(void **state) {
    (void)state;
    assert_true(rl_preset_count() >= 15);
    for (size_t i = 0; i < rl_preset_count(); i++) {
        const rl_preset *p = rl_preset_at(i);
        assert_non_null(p);
        assert_ptr_equal(rl_preset_find(p->name), p);
        assert_true(strlen(p->name) <= RL_PRESET_NAME_MAX_LEN);
        if (i > 0) assert_true(strcmp(rl_preset_at(i - 1)->name, p->name) < 0);
        if (strcmp(p->name, "local") == 0) continue;
        /* Dated and sourced: "YYYY-MM-DD" and a URL. */
        assert_int_equal(strlen(p->as_of), 10);
        assert_true(p->as_of[4] == '-' && p->as_of[7] == '-');
        assert_true(strncmp(p->source, "https://", 8) == 0);
        assert_true(strncmp(p->name, p->provider, strlen(p->provider)) == 0);
    }
    assert_null(rl_preset_at(rl_preset_count()));
    assert_null(rl_preset_find("openai-tier-9"));
    assert_null(rl_preset_find(NULL));
    const char *expected[] = {"openai-free", "openai-tier-1", "openai-tier-5", "anthropic-tier-1", "anthropic-tier-4",
                              "gemini-free", "gemini-tier-1", "gemini-tier-3", "local"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) assert_non_null(rl_preset_find(expected[i]));
}

static void test_limits_are_valid_and_on_the_helpers_keys(void **state) {
    (void)state;
    for (size_t i = 0; i < rl_preset_count(); i++) {
        const rl_preset *p = rl_preset_at(i);
        size_t count = rl_preset_limit_count(p);
        if (strcmp(p->name, "local") == 0) {
            assert_int_equal(count, 0);
            continue;
        }
        assert_true(count >= 2 * p->model_count); /* rpm and tpm at least */
        /* every model an rpm: the LLM helper requires it (llm.h) */
        for (size_t m = 0; m < p->model_count; m++)
            if (p->models[m].rpm == 0) fail_msg("%s %s has no rpm", p->name, p->models[m].model);
        for (size_t j = 0; j < count; j++) {
            rl_limit_def def;
            rl_preset_limit(p, j, &def);
            char err[200];
            if (!rl_limit_def_validate(&def, err, sizeof err)) fail_msg("%s %s: %s", p->name, def.key, err);
            assert_int_equal(def.kind, RL_KIND_ROLLING);
            assert_non_null(strstr(def.description, p->name));
            /* Each key once in a preset. */
            for (size_t k = 0; k < j; k++) {
                rl_limit_def other;
                rl_preset_limit(p, k, &other);
                assert_string_not_equal(other.key, def.key);
            }
            /* rpm and tpm keys are the LLM helper's (keys.h). */
            const char *dim = strrchr(def.key, ':') + 1;
            char model[128], helper_key[RL_KEY_MAX_LEN + 1];
            size_t prefix = strlen("global:llm:") + strlen(p->provider) + 1;
            snprintf(model, sizeof model, "%.*s", (int)(dim - 1 - def.key - prefix), def.key + prefix);
            if (strcmp(dim, "rpm") == 0 || strcmp(dim, "tpm") == 0) {
                assert_true(rl_key_llm_global(helper_key, sizeof helper_key, p->provider, model,
                                              strcmp(dim, "rpm") == 0 ? RL_LLM_RPM : RL_LLM_TPM) > 0);
                assert_string_equal(helper_key, def.key);
                assert_int_equal(def.window_seconds, 60);
            } else {
                assert_string_equal(dim, "rpd");
                assert_int_equal(def.window_seconds, 86400);
            }
        }
    }
}

static void test_a_known_figure(void **state) {
    (void)state;
    const rl_preset *p = rl_preset_find("openai-tier-1");
    rl_limit_def def;
    bool seen_rpm = false, seen_rpd = false;
    for (size_t j = 0; j < rl_preset_limit_count(p); j++) {
        rl_preset_limit(p, j, &def);
        if (strcmp(def.key, "global:llm:openai:gpt-4o:rpm") == 0) {
            assert_int_equal(def.capacity, 500);
            assert_string_equal(def.unit, "requests");
            seen_rpm = true;
        }
        if (strcmp(def.key, "global:llm:openai:gpt-4o-mini:rpd") == 0) {
            assert_int_equal(def.capacity, 10000);
            seen_rpd = true;
        }
        assert_string_not_equal(def.key, "global:llm:openai:gpt-4o:rpd"); /* not published: not made */
    }
    assert_true(seen_rpm && seen_rpd);
}

/* Every preset fits the room callers give one apply, and every outcome has
 * its name on the wire. */
static void test_bounds_and_outcome_names(void **state) {
    (void)state;
    for (size_t i = 0; i < rl_preset_count(); i++) assert_true(rl_preset_limit_count(rl_preset_at(i)) <= RL_PRESET_MAX_LIMITS);
    assert_string_equal(rl_preset_outcome_name(RL_PRESET_DEFINED), "defined");
    assert_string_equal(rl_preset_outcome_name(RL_PRESET_UPDATED), "updated");
    assert_string_equal(rl_preset_outcome_name(RL_PRESET_UNCHANGED), "unchanged");
    assert_string_equal(rl_preset_outcome_name(RL_PRESET_KEPT), "kept");
    assert_string_equal(rl_preset_outcome_name(RL_PRESET_REFUSED), "refused");
    assert_string_equal(rl_preset_outcome_name((rl_preset_outcome)99), "?");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_preset_is_found_by_name_in_order),
        cmocka_unit_test(test_limits_are_valid_and_on_the_helpers_keys),
        cmocka_unit_test(test_a_known_figure),
        cmocka_unit_test(test_bounds_and_outcome_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
