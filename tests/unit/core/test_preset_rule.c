/* test_preset_rule.c — "explicit limits win over presets", decided in one
 * place: origins, the outcome of a preset's put against what a key holds,
 * a preset's definition recognised where no origin is kept, and the
 * sentence that lists the presets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/preset_rule.h"

/* The first limit of the named preset. */
static rl_limit_def first_limit(const char *name) {
    rl_limit_def def;
    rl_preset_limit(rl_preset_find(name), 0, &def);
    return def;
}

static void test_origins(void **state) {
    (void)state;
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl__preset_origin(rl_preset_find("openai-tier-1"), origin);
    assert_string_equal(origin, "preset:openai-tier-1");
    assert_ptr_equal(rl__preset_of_origin(origin), rl_preset_find("openai-tier-1"));
    assert_null(rl__preset_of_origin(""));
    assert_null(rl__preset_of_origin(NULL));
    assert_null(rl__preset_of_origin("preset:openai-tier-9")); /* no such preset (now) */
    assert_null(rl__preset_of_origin("openai-tier-1"));
    /* Every name fits an origin. */
    for (size_t i = 0; i < rl_preset_count(); i++) {
        rl__preset_origin(rl_preset_at(i), origin);
        assert_ptr_equal(rl__preset_of_origin(origin), rl_preset_at(i));
    }
}

static void test_outcomes(void **state) {
    (void)state;
    rl_limit_def tier1 = first_limit("openai-tier-1"), tier2 = first_limit("openai-tier-2");
    assert_string_equal(tier1.key, tier2.key);
    const char *o1 = "preset:openai-tier-1", *o2 = "preset:openai-tier-2";
    /* No definition: defined. */
    assert_int_equal(rl__preset_outcome(NULL, "", &tier1, o1), RL_PRESET_DEFINED);
    /* The operator's, whatever it says (even the preset's own words). */
    assert_int_equal(rl__preset_outcome(&tier1, "", &tier1, o1), RL_PRESET_KEPT);
    assert_int_equal(rl__preset_outcome(&tier2, "", &tier1, o1), RL_PRESET_KEPT);
    assert_int_equal(rl__preset_outcome(&tier2, NULL, &tier1, o1), RL_PRESET_KEPT);
    assert_int_equal(rl__preset_outcome(&tier2, "template:x", &tier1, o1), RL_PRESET_KEPT);
    /* Another tier's, or an older table of the same preset: updated. */
    assert_int_equal(rl__preset_outcome(&tier2, o2, &tier1, o1), RL_PRESET_UPDATED);
    rl_limit_def older = tier1;
    older.capacity = 1;
    assert_int_equal(rl__preset_outcome(&older, o1, &tier1, o1), RL_PRESET_UPDATED);
    /* A preset this version no longer ships made it: still a preset's. */
    assert_int_equal(rl__preset_outcome(&older, "preset:retired", &tier1, o1), RL_PRESET_UPDATED);
    /* The same definition of the same preset: nothing to write. */
    assert_int_equal(rl__preset_outcome(&tier1, o1, &tier1, o1), RL_PRESET_UNCHANGED);
}

static void test_a_preset_definition_is_recognised(void **state) {
    (void)state;
    for (size_t p = 0; p < rl_preset_count(); p++) {
        const rl_preset *preset = rl_preset_at(p);
        for (size_t i = 0; i < rl_preset_limit_count(preset); i++) {
            rl_limit_def def;
            rl_preset_limit(preset, i, &def);
            assert_ptr_equal(rl__preset_that_made(&def), preset);
            char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
            rl__preset_origin_of_def(&def, origin);
            assert_ptr_equal(rl__preset_of_origin(origin), preset);
            /* Any change makes it someone else's. */
            def.capacity++;
            assert_null(rl__preset_that_made(&def));
            def.capacity--;
            def.description[0] = '\0';
            assert_null(rl__preset_that_made(&def));
            rl__preset_origin_of_def(&def, origin);
            assert_string_equal(origin, "");
        }
    }
    rl_limit_def other = {.key = "tenant:acme:tpm", .kind = RL_KIND_ROLLING, .capacity = 5, .window_seconds = 60};
    assert_null(rl__preset_that_made(&other));
    rl_limit_def unknown_model = first_limit("openai-tier-1");
    snprintf(unknown_model.key, sizeof unknown_model.key, "global:llm:openai:gpt-9:rpm");
    assert_null(rl__preset_that_made(&unknown_model));
}

static void test_the_unknown_name_sentence_lists_every_preset(void **state) {
    (void)state;
    char err[1024];
    rl__preset_unknown("openai-tier-9", err, sizeof err);
    assert_non_null(strstr(err, "no preset named \"openai-tier-9\""));
    for (size_t i = 0; i < rl_preset_count(); i++) assert_non_null(strstr(err, rl_preset_at(i)->name));
    /* A name that is not one is not repeated. */
    rl__preset_unknown("bad\"name", err, sizeof err);
    assert_non_null(strstr(err, "no preset has that name; the presets are: anthropic-tier-1"));
    rl__preset_unknown(NULL, err, sizeof err);
    assert_non_null(strstr(err, "no preset has that name"));
    /* Cut short where it must be, never overrun. */
    char small[24];
    memset(small, 'x', sizeof small);
    rl__preset_unknown("openai-tier-9", small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origins),
        cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_a_preset_definition_is_recognised),
        cmocka_unit_test(test_the_unknown_name_sentence_lists_every_preset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
