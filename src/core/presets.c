/* presets.c — the built-in provider presets as limit definitions
 * (ratelimiter/presets.h; the figures are in preset_tables.c). */
#include "ratelimiter/presets.h"

#include <stdio.h>
#include <string.h>

#include "core/preset_tables.h"

size_t rl_preset_count(void) {
    size_t count;
    (void)rl__preset_tables(&count);
    return count;
}

const rl_preset *rl_preset_at(size_t i) {
    size_t count;
    const rl_preset *presets = rl__preset_tables(&count);
    return i < count ? &presets[i] : NULL;
}

const rl_preset *rl_preset_find(const char *name) {
    size_t count;
    const rl_preset *presets = rl__preset_tables(&count);
    for (size_t i = 0; name != NULL && i < count; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

/* A model's dimensions in key order, with how each is counted. */
typedef struct dimension {
    const char *name;
    uint32_t window_seconds;
    const char *unit;
    const char *what; /* for the description */
} dimension;

static const dimension dimensions[] = {
    {"rpd", 86400, "requests", "requests per day"},
    {"rpm", 60, "requests", "requests per minute"},
    {"tpm", 60, "tokens", "tokens per minute"},
};

static uint64_t quota_of(const rl_preset_model *model, size_t dimension_index) {
    return dimension_index == 0 ? model->rpd : dimension_index == 1 ? model->rpm : model->tpm;
}

size_t rl_preset_limit_count(const rl_preset *preset) {
    size_t count = 0;
    for (size_t m = 0; m < preset->model_count; m++)
        for (size_t d = 0; d < sizeof dimensions / sizeof dimensions[0]; d++) count += quota_of(&preset->models[m], d) > 0;
    return count;
}

void rl_preset_limit(const rl_preset *preset, size_t i, rl_limit_def *out) {
    memset(out, 0, sizeof *out);
    for (size_t m = 0; m < preset->model_count; m++) {
        for (size_t d = 0; d < sizeof dimensions / sizeof dimensions[0]; d++) {
            uint64_t quota = quota_of(&preset->models[m], d);
            if (quota == 0 || i-- > 0) continue;
            const dimension *dim = &dimensions[d];
            snprintf(out->key, sizeof out->key, "global:llm:%s:%s:%s", preset->provider, preset->models[m].model,
                     dim->name);
            out->kind = RL_KIND_ROLLING;
            out->capacity = quota;
            out->window_seconds = dim->window_seconds;
            out->overage = RL_OVERAGE_DEBT;
            snprintf(out->unit, sizeof out->unit, "%s", dim->unit);
            snprintf(out->description, sizeof out->description, "%s %s %s (preset %s, as of %s)", preset->provider,
                     preset->models[m].model, dim->what, preset->name, preset->as_of);
            return;
        }
    }
}

const char *rl_preset_outcome_name(rl_preset_outcome outcome) {
    switch (outcome) {
    case RL_PRESET_DEFINED: return "defined";
    case RL_PRESET_UPDATED: return "updated";
    case RL_PRESET_UNCHANGED: return "unchanged";
    case RL_PRESET_KEPT: return "kept";
    case RL_PRESET_REFUSED: return "refused";
    }
    return "?";
}
