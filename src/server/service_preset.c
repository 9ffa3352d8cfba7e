/* service_preset.c — provider presets in the service (service.h): the puts
 * that apply them, and who made a definition. The rule itself is
 * core/preset_rule.h's; both modes ask it here, under the admin mutex, so
 * that an operator's put and a preset's of the same key never race. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/preset_rule.h"
#include "server/service_internal.h"

size_t rl_service_preset_puts(const rl_preset *const *presets, size_t count, rl_service_put *puts) {
    size_t n = 0;
    for (size_t p = 0; p < count; p++) {
        char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
        rl__preset_origin(presets[p], origin);
        for (size_t i = 0; i < rl_preset_limit_count(presets[p]) && i < RL_PRESET_MAX_LIMITS; i++) {
            rl_limit_def def;
            rl_preset_limit(presets[p], i, &def);
            /* A key an earlier preset of the list makes: the later one's
             * definition, in the earlier one's place. */
            size_t at = 0;
            while (at < n && strcmp(puts[at].def.key, def.key) != 0) at++;
            if (at == n) n++;
            memset(&puts[at], 0, sizeof puts[at]);
            puts[at].op = RL_SERVICE_PUT;
            puts[at].def = def;
            memcpy(puts[at].origin, origin, sizeof origin);
        }
    }
    return n;
}

bool rl__service_preset_goes(rl_service_put *put, const rl_limit_def *held, const char *held_origin) {
    put->outcome = rl__preset_outcome(held, held_origin, &put->def, put->origin);
    return put->outcome == RL_PRESET_DEFINED || put->outcome == RL_PRESET_UPDATED;
}

bool rl__service_put_skipped(const rl_service_put *put) {
    return put->op == RL_SERVICE_PUT && put->origin[0] != '\0' &&
           (put->outcome == RL_PRESET_KEPT || put->outcome == RL_PRESET_UNCHANGED);
}

void rl__service_limit_source(rl_service_limit *out, const char *origin) {
    static const size_t prefix_len = sizeof RL_PRESET_ORIGIN_PREFIX - 1;
    const char *name = "";
    if (origin == NULL) {
        const rl_preset *preset = rl__preset_that_made(&out->def);
        if (preset != NULL) name = preset->name;
    } else if (strncmp(origin, RL_PRESET_ORIGIN_PREFIX, prefix_len) == 0) {
        name = origin + prefix_len; /* a preset this version no longer ships still made it */
    }
    snprintf(out->preset, sizeof out->preset, "%s", name);
}

/* Appends to report[0..size) at *len, as far as it fits. */
static void report_add(char *report, size_t size, size_t *len, const char *format, const char *a, const char *b) {
    if (*len >= size) return;
    int n = snprintf(report + *len, size - *len, format, a, b);
    if (n > 0) *len += (size_t)n;
}

rl_status rl_service_apply_presets(rl_service *service, const char *const *names, size_t count, char *report,
                                   size_t report_size) {
    report[0] = '\0';
    if (count == 0) return RL_OK;
    const rl_preset **presets = calloc(count, sizeof *presets);
    rl_service_put *puts = calloc(count * RL_PRESET_MAX_LIMITS, sizeof *puts);
    rl_status status = presets != NULL && puts != NULL ? RL_OK : RL_NO_MEMORY;
    if (status != RL_OK) snprintf(report, report_size, "out of memory");
    for (size_t i = 0; i < count && status == RL_OK; i++) {
        if ((presets[i] = rl_preset_find(names[i])) != NULL) continue;
        rl__preset_unknown(names[i], report, report_size);
        status = RL_INVALID_REQUEST;
    }
    size_t n = status == RL_OK ? rl_service_preset_puts(presets, count, puts) : 0;
    if (n > 0) rl_service_put_limits(service, puts, n);
    size_t tally[RL_PRESET_REFUSED + 1] = {0}, len = 0;
    for (size_t i = 0; i < n && status == RL_OK; i++) {
        rl_status put_status = puts[i].status;
        if (put_status == RL_OK) {
            tally[puts[i].outcome]++;
        } else if (put_status == RL_INVALID_REQUEST || put_status == RL_LIMIT_IN_USE) {
            tally[RL_PRESET_REFUSED]++; /* this key's own: said, and the others stand */
        } else {
            snprintf(report, report_size, "limit \"%s\": %s", puts[i].def.key, puts[i].err);
            status = put_status;
        }
    }
    if (status == RL_OK) {
        report_add(report, report_size, &len, "%s%s", "presets ", names[0]);
        for (size_t i = 1; i < count; i++) report_add(report, report_size, &len, "%s%s", ", ", names[i]);
        char counts[160];
        snprintf(counts, sizeof counts, ": %zu defined, %zu updated, %zu unchanged, %zu kept (the operator's), %zu refused",
                 tally[RL_PRESET_DEFINED], tally[RL_PRESET_UPDATED], tally[RL_PRESET_UNCHANGED], tally[RL_PRESET_KEPT],
                 tally[RL_PRESET_REFUSED]);
        report_add(report, report_size, &len, "%s%s", counts, "");
        for (size_t i = 0; i < n; i++)
            if (puts[i].status != RL_OK) report_add(report, report_size, &len, "; \"%s\" refused: %s", puts[i].def.key, puts[i].err);
    }
    free(presets);
    free(puts);
    return status;
}
