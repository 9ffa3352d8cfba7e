/* preset_rule.c — explicit limits win over presets (core/preset_rule.h). */
#include "core/preset_rule.h"

#include <stdio.h>
#include <string.h>

#include "core/limit_def.h"

#define PREFIX_LEN (sizeof RL_PRESET_ORIGIN_PREFIX - 1)

void rl__preset_origin(const rl_preset *preset, char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]) {
    snprintf(origin, RL_REGISTRY_ORIGIN_MAX_LEN + 1, RL_PRESET_ORIGIN_PREFIX "%s", preset->name);
}

const rl_preset *rl__preset_of_origin(const char *origin) {
    if (origin == NULL || strncmp(origin, RL_PRESET_ORIGIN_PREFIX, PREFIX_LEN) != 0) return NULL;
    return rl_preset_find(origin + PREFIX_LEN);
}

rl_preset_outcome rl__preset_outcome(const rl_limit_def *held, const char *held_origin, const rl_limit_def *def,
                                     const char *origin) {
    if (held == NULL) return RL_PRESET_DEFINED;
    /* Made by a preset, even one this version no longer ships (a name
     * retired): it was never the operator's. */
    if (held_origin == NULL || strncmp(held_origin, RL_PRESET_ORIGIN_PREFIX, PREFIX_LEN) != 0) return RL_PRESET_KEPT;
    if (strcmp(held_origin, origin) == 0 && rl__limit_def_equal(held, def)) return RL_PRESET_UNCHANGED;
    return RL_PRESET_UPDATED;
}

const rl_preset *rl__preset_that_made(const rl_limit_def *def) {
    /* Every preset key starts so; most keys are not a preset's. */
    if (strncmp(def->key, "global:llm:", 11) != 0) return NULL;
    for (size_t p = 0; p < rl_preset_count(); p++) {
        const rl_preset *preset = rl_preset_at(p);
        size_t provider_len = strlen(preset->provider);
        if (strncmp(def->key + 11, preset->provider, provider_len) != 0 || def->key[11 + provider_len] != ':')
            continue;
        for (size_t i = 0; i < rl_preset_limit_count(preset); i++) {
            rl_limit_def made;
            rl_preset_limit(preset, i, &made);
            if (strcmp(made.key, def->key) == 0) {
                if (rl__limit_def_equal(&made, def)) return preset;
                break; /* each key once in a preset */
            }
        }
    }
    return NULL;
}

void rl__preset_origin_of_def(const rl_limit_def *def, char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]) {
    const rl_preset *preset = rl__preset_that_made(def);
    if (preset != NULL) rl__preset_origin(preset, origin);
    else origin[0] = '\0';
}

static bool is_printable_name(const char *name) {
    size_t len = name != NULL ? strnlen(name, RL_PRESET_NAME_MAX_LEN + 1) : 0;
    if (len == 0 || len > RL_PRESET_NAME_MAX_LEN) return false;
    for (size_t i = 0; i < len; i++)
        if (name[i] < 0x20 || name[i] > 0x7e || name[i] == '"' || name[i] == '\\') return false;
    return true;
}

void rl__preset_unknown(const char *name, char *err, size_t err_size) {
    if (err == NULL || err_size == 0) return;
    int n = is_printable_name(name) ? snprintf(err, err_size, "no preset named \"%s\"; the presets are: ", name)
                                    : snprintf(err, err_size, "no preset has that name; the presets are: ");
    size_t len = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < rl_preset_count() && len < err_size; i++) {
        n = snprintf(err + len, err_size - len, "%s%s", i > 0 ? ", " : "", rl_preset_at(i)->name);
        if (n < 0) break;
        len += (size_t)n;
    }
}
