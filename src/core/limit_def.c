/* limit_def.c — names of the definition enums and api.md's validation rules. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/types.h"

const char *rl_kind_name(rl_kind kind) { return kind == RL_KIND_CONCURRENCY ? "concurrency" : "rolling"; }

const char *rl_overage_name(rl_overage overage) { return overage == RL_OVERAGE_DENY ? "deny" : "debt"; }

const char *rl_limit_status_name(rl_limit_status status) {
    return status == RL_LIMIT_STATUS_DECREASING ? "decreasing" : "active";
}

bool rl_kind_parse(const char *name, rl_kind *out) {
    if (strcmp(name, "rolling") == 0) {
        *out = RL_KIND_ROLLING;
    } else if (strcmp(name, "concurrency") == 0) {
        *out = RL_KIND_CONCURRENCY;
    } else {
        return false;
    }
    return true;
}

bool rl_overage_parse(const char *name, rl_overage *out) {
    if (strcmp(name, "debt") == 0) {
        *out = RL_OVERAGE_DEBT;
    } else if (strcmp(name, "deny") == 0) {
        *out = RL_OVERAGE_DENY;
    } else {
        return false;
    }
    return true;
}

/* Says why in err and returns false. */
#define fail(err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), false)

bool rl_limit_def_validate(const rl_limit_def *def, char *err, size_t err_size) {
    size_t key_len = strnlen(def->key, sizeof def->key);
    if (key_len == sizeof def->key || !rl_key_is_valid(def->key, key_len))
        return fail(err, err_size, "key must be 1..%d printable ASCII characters without spaces",
                    RL_KEY_MAX_LEN);
    if (def->kind != RL_KIND_ROLLING && def->kind != RL_KIND_CONCURRENCY)
        return fail(err, err_size, "kind must be \"rolling\" or \"concurrency\"");
    if (def->capacity < 1 || def->capacity > RL_AMOUNT_MAX)
        return fail(err, err_size, "capacity must be an integer 1..9007199254740992");
    if (def->kind == RL_KIND_ROLLING) {
        if (def->window_seconds < 1 || def->window_seconds > RL_WINDOW_SECONDS_MAX)
            return fail(err, err_size, "window_seconds must be 1..%u for a rolling limit",
                        RL_WINDOW_SECONDS_MAX);
        if (def->timeout_seconds != 0)
            return fail(err, err_size, "timeout_seconds must be 0 for a rolling limit");
    } else {
        if (def->timeout_seconds < 1 || def->timeout_seconds > RL_TIMEOUT_SECONDS_MAX)
            return fail(err, err_size, "timeout_seconds must be 1..%u for a concurrency limit",
                        RL_TIMEOUT_SECONDS_MAX);
        if (def->window_seconds != 0)
            return fail(err, err_size, "window_seconds must be 0 for a concurrency limit");
    }
    if (def->overage != RL_OVERAGE_DEBT && def->overage != RL_OVERAGE_DENY)
        return fail(err, err_size, "overage must be \"debt\" or \"deny\"");
    if (strnlen(def->unit, sizeof def->unit) == sizeof def->unit)
        return fail(err, err_size, "unit must be at most %d bytes", RL_UNIT_MAX_LEN);
    if (strnlen(def->description, sizeof def->description) == sizeof def->description)
        return fail(err, err_size, "description must be at most %d bytes", RL_DESCRIPTION_MAX_LEN);
    return true;
}
