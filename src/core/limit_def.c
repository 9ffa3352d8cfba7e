/* limit_def.c — names of the definition enums and api.md's validation rules. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/calendar.h"
#include "core/limit_def.h"
#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/types.h"

static const char *const kind_names[] = {
    [RL_KIND_ROLLING] = "rolling", [RL_KIND_CONCURRENCY] = "concurrency", [RL_KIND_BUDGET] = "budget"};
static const char *const period_names[] = {
    [RL_PERIOD_NONE] = "", [RL_PERIOD_HOUR] = "hour", [RL_PERIOD_DAY] = "day", [RL_PERIOD_WEEK] = "week",
    [RL_PERIOD_MONTH] = "month"};

const char *rl_kind_name(rl_kind kind) {
    return (unsigned)kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : "rolling";
}

const char *rl_period_name(rl_period period) {
    return (unsigned)period < sizeof period_names / sizeof period_names[0] ? period_names[period] : "";
}

bool rl_period_parse(const char *name, rl_period *out) {
    for (size_t i = RL_PERIOD_HOUR; i < sizeof period_names / sizeof period_names[0]; i++) {
        if (strcmp(name, period_names[i]) == 0) {
            *out = (rl_period)i;
            return true;
        }
    }
    return false;
}

const char *rl_overage_name(rl_overage overage) { return overage == RL_OVERAGE_DENY ? "deny" : "debt"; }

const char *rl_limit_status_name(rl_limit_status status) {
    return status == RL_LIMIT_STATUS_DECREASING ? "decreasing" : "active";
}

bool rl_kind_parse(const char *name, rl_kind *out) {
    for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *out = (rl_kind)i;
            return true;
        }
    }
    return false;
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
    if (def->kind != RL_KIND_ROLLING && def->kind != RL_KIND_CONCURRENCY && def->kind != RL_KIND_BUDGET)
        return fail(err, err_size, "kind must be \"rolling\", \"concurrency\" or \"budget\"");
    if (def->capacity < 1 || def->capacity > RL_AMOUNT_MAX)
        return fail(err, err_size, "capacity must be an integer 1..9007199254740992");
    if (def->kind == RL_KIND_ROLLING) {
        if (def->window_seconds < 1 || def->window_seconds > RL_WINDOW_SECONDS_MAX)
            return fail(err, err_size, "window_seconds must be 1..%u for a rolling limit",
                        RL_WINDOW_SECONDS_MAX);
        if (def->timeout_seconds != 0)
            return fail(err, err_size, "timeout_seconds must be 0 for a rolling limit");
    } else {
        const char *what = def->kind == RL_KIND_BUDGET ? "budget" : "concurrency limit";
        if (def->timeout_seconds < 1 || def->timeout_seconds > RL_TIMEOUT_SECONDS_MAX)
            return fail(err, err_size, "timeout_seconds must be 1..%u for a %s", RL_TIMEOUT_SECONDS_MAX, what);
        if (def->window_seconds != 0)
            return def->kind == RL_KIND_BUDGET
                       ? fail(err, err_size, "window_seconds is not for a budget: a budget counts over its period")
                       : fail(err, err_size, "window_seconds must be 0 for a concurrency limit");
    }
    if (def->kind == RL_KIND_BUDGET) {
        if (def->period < RL_PERIOD_HOUR || def->period > RL_PERIOD_MONTH)
            return fail(err, err_size, "period must be \"hour\", \"day\", \"week\" or \"month\" for a budget");
        rl__calendar *calendar = NULL;
        char why[160];
        if (strnlen(def->timezone, sizeof def->timezone) == sizeof def->timezone ||
            rl__calendar_open(def->timezone, &calendar, why, sizeof why) != RL_OK)
            return fail(err, err_size, "timezone must be an IANA time zone name (\"UTC\", \"America/New_York\"): \"%.*s\" is not one this system's tzdata knows",
                        RL_TIMEZONE_MAX_LEN, def->timezone);
        rl__calendar_close(calendar);
    } else if (def->period != RL_PERIOD_NONE || def->timezone[0] != '\0') {
        return fail(err, err_size, "period and timezone are for budgets only");
    }
    if (def->overage != RL_OVERAGE_DEBT && def->overage != RL_OVERAGE_DENY)
        return fail(err, err_size, "overage must be \"debt\" or \"deny\"");
    if (strnlen(def->unit, sizeof def->unit) == sizeof def->unit)
        return fail(err, err_size, "unit must be at most %d bytes", RL_UNIT_MAX_LEN);
    if (strnlen(def->description, sizeof def->description) == sizeof def->description)
        return fail(err, err_size, "description must be at most %d bytes", RL_DESCRIPTION_MAX_LEN);
    return true;
}

void rl__limit_def_copy(rl_limit_def *out, const rl_limit_def *def) {
    memset(out, 0, sizeof *out);
    snprintf(out->key, sizeof out->key, "%s", def->key);
    out->kind = def->kind;
    out->capacity = def->capacity;
    out->window_seconds = def->window_seconds;
    out->timeout_seconds = def->timeout_seconds;
    snprintf(out->unit, sizeof out->unit, "%s", def->unit);
    snprintf(out->description, sizeof out->description, "%s", def->description);
    out->overage = def->overage;
    out->period = def->period;
    snprintf(out->timezone, sizeof out->timezone, "%s", def->timezone);
}

bool rl__limit_def_equal(const rl_limit_def *a, const rl_limit_def *b) {
    return strcmp(a->key, b->key) == 0 && a->kind == b->kind && a->capacity == b->capacity &&
           a->window_seconds == b->window_seconds && a->timeout_seconds == b->timeout_seconds &&
           a->overage == b->overage && strcmp(a->unit, b->unit) == 0 &&
           strcmp(a->description, b->description) == 0 && a->period == b->period &&
           strcmp(a->timezone, b->timezone) == 0;
}
