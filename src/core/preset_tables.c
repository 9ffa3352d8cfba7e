/* preset_tables.c — the figures of the built-in presets (presets.h).
 *
 * Each table is one provider tier as its documentation published it on the
 * date given; a quota it did not publish is 0 (no limit made). When a
 * provider changes its figures, a new dated table goes here and the old
 * one goes: a preset's name stays, its as_of tells which figures it holds.
 */
#include "core/preset_tables.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* ---- OpenAI: per-model limits of each usage tier, from the models pages ---- */
#define OPENAI_AS_OF "2025-06-30"
#define OPENAI_SOURCE "https://platform.openai.com/docs/models (each model's Rate limits, by usage tier)"
#define OPENAI_NOTE ""

static const rl_preset_model openai_free[] = {
    {"gpt-4o-mini", 3, 40000, 200},
    {"gpt-4.1-mini", 3, 40000, 200},
};
static const rl_preset_model openai_tier_1[] = {
    {"gpt-4.1", 500, 30000, 0},         {"gpt-4.1-mini", 500, 200000, 10000},
    {"gpt-4o", 500, 30000, 0},          {"gpt-4o-mini", 500, 200000, 10000},
};
static const rl_preset_model openai_tier_2[] = {
    {"gpt-4.1", 5000, 450000, 0},       {"gpt-4.1-mini", 5000, 2000000, 0},
    {"gpt-4o", 5000, 450000, 0},        {"gpt-4o-mini", 5000, 2000000, 0},
};
static const rl_preset_model openai_tier_3[] = {
    {"gpt-4.1", 5000, 800000, 0},       {"gpt-4.1-mini", 5000, 4000000, 0},
    {"gpt-4o", 5000, 800000, 0},        {"gpt-4o-mini", 5000, 4000000, 0},
};
static const rl_preset_model openai_tier_4[] = {
    {"gpt-4.1", 10000, 2000000, 0},     {"gpt-4.1-mini", 10000, 10000000, 0},
    {"gpt-4o", 10000, 2000000, 0},      {"gpt-4o-mini", 10000, 10000000, 0},
};
static const rl_preset_model openai_tier_5[] = {
    {"gpt-4.1", 10000, 30000000, 0},    {"gpt-4.1-mini", 30000, 150000000, 0},
    {"gpt-4o", 10000, 30000000, 0},     {"gpt-4o-mini", 30000, 150000000, 0},
};

/* ---- Anthropic: per model class of each usage tier; tpm is the input limit ---- */
#define ANTHROPIC_AS_OF "2025-06-30"
#define ANTHROPIC_SOURCE "https://docs.anthropic.com/en/api/rate-limits (Rate limits, by usage tier)"
#define ANTHROPIC_NOTE                                                                                        \
    "Anthropic counts input and output tokens per minute apart (ITPM, OTPM); a reservation here holds prompt " \
    "and output together, so tpm is the ITPM: input never exceeds it, OTPM is not enforced"

static const rl_preset_model anthropic_tier_1[] = {
    {"claude-3-5-haiku", 50, 50000, 0},
    {"claude-opus-4", 50, 20000, 0},
    {"claude-sonnet-4", 50, 30000, 0},
};
static const rl_preset_model anthropic_tier_2[] = {
    {"claude-3-5-haiku", 1000, 100000, 0},
    {"claude-opus-4", 1000, 40000, 0},
    {"claude-sonnet-4", 1000, 450000, 0},
};
static const rl_preset_model anthropic_tier_3[] = {
    {"claude-3-5-haiku", 2000, 200000, 0},
    {"claude-opus-4", 2000, 80000, 0},
    {"claude-sonnet-4", 2000, 800000, 0},
};
static const rl_preset_model anthropic_tier_4[] = {
    {"claude-3-5-haiku", 4000, 400000, 0},
    {"claude-opus-4", 4000, 200000, 0},
    {"claude-sonnet-4", 4000, 2000000, 0},
};

/* ---- Google Gemini API (AI Studio): per model of each tier ---- */
#define GEMINI_AS_OF "2025-07-15"
#define GEMINI_SOURCE "https://ai.google.dev/gemini-api/docs/rate-limits (Current rate limits, by tier)"
#define GEMINI_NOTE                                                                                          \
    "Google resets requests per day at midnight Pacific time; rpd here is a rolling 24 h window, which never " \
    "admits more within a day than the calendar reset would"

static const rl_preset_model gemini_free[] = {
    {"gemini-2.0-flash", 15, 1000000, 200},
    {"gemini-2.5-flash", 10, 250000, 250},
    {"gemini-2.5-flash-lite", 15, 250000, 1000},
    {"gemini-2.5-pro", 5, 250000, 100},
};
static const rl_preset_model gemini_tier_1[] = {
    {"gemini-2.0-flash", 2000, 4000000, 0},
    {"gemini-2.5-flash", 1000, 1000000, 10000},
    {"gemini-2.5-flash-lite", 4000, 4000000, 0},
    {"gemini-2.5-pro", 150, 2000000, 10000},
};
static const rl_preset_model gemini_tier_2[] = {
    {"gemini-2.0-flash", 10000, 10000000, 0},
    {"gemini-2.5-flash", 2000, 3000000, 100000},
    {"gemini-2.5-flash-lite", 10000, 10000000, 0},
    {"gemini-2.5-pro", 1000, 5000000, 50000},
};
static const rl_preset_model gemini_tier_3[] = {
    {"gemini-2.0-flash", 30000, 30000000, 0},
    {"gemini-2.5-flash", 10000, 8000000, 0},
    {"gemini-2.5-flash-lite", 30000, 30000000, 0},
    {"gemini-2.5-pro", 2000, 8000000, 0},
};

#define PRESET(name, provider, tier, vendor, models) \
    {name, provider, tier, vendor##_AS_OF, vendor##_SOURCE, vendor##_NOTE, models, COUNT(models)}

/* In name order (rl_preset_find searches it in order). */
static const rl_preset presets[] = {
    PRESET("anthropic-tier-1", "anthropic", "Tier 1", ANTHROPIC, anthropic_tier_1),
    PRESET("anthropic-tier-2", "anthropic", "Tier 2", ANTHROPIC, anthropic_tier_2),
    PRESET("anthropic-tier-3", "anthropic", "Tier 3", ANTHROPIC, anthropic_tier_3),
    PRESET("anthropic-tier-4", "anthropic", "Tier 4", ANTHROPIC, anthropic_tier_4),
    PRESET("gemini-free", "gemini", "Free", GEMINI, gemini_free),
    PRESET("gemini-tier-1", "gemini", "Tier 1", GEMINI, gemini_tier_1),
    PRESET("gemini-tier-2", "gemini", "Tier 2", GEMINI, gemini_tier_2),
    PRESET("gemini-tier-3", "gemini", "Tier 3", GEMINI, gemini_tier_3),
    /* Local inference (Ollama, vLLM, llama.cpp): the limit is the hardware,
     * which no one publishes; define a concurrency limit of your own. */
    {"local", "local", "", "", "", "local inference has no API quota: define your own limits (concurrency first)",
     NULL, 0},
    PRESET("openai-free", "openai", "Free", OPENAI, openai_free),
    PRESET("openai-tier-1", "openai", "Tier 1", OPENAI, openai_tier_1),
    PRESET("openai-tier-2", "openai", "Tier 2", OPENAI, openai_tier_2),
    PRESET("openai-tier-3", "openai", "Tier 3", OPENAI, openai_tier_3),
    PRESET("openai-tier-4", "openai", "Tier 4", OPENAI, openai_tier_4),
    PRESET("openai-tier-5", "openai", "Tier 5", OPENAI, openai_tier_5),
};

const rl_preset *rl__preset_tables(size_t *count) {
    *count = COUNT(presets);
    return presets;
}
