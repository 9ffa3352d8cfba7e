/* denial.c — the names of a denial's reasons (ratelimiter/types.h). */
#include <string.h>

#include "ratelimiter/types.h"

static const char *const reason_names[] = {
    [RL_DENIAL_NONE] = "",
    [RL_DENIAL_CAPACITY] = "capacity",
    [RL_DENIAL_DECREASING] = "decreasing",
    [RL_DENIAL_EXCEEDS_CAPACITY] = "exceeds_capacity",
};

const char *rl_denial_reason_name(rl_denial_reason reason) {
    return (unsigned)reason < sizeof reason_names / sizeof reason_names[0] ? reason_names[reason] : "";
}

bool rl_denial_reason_parse(const char *name, rl_denial_reason *out) {
    for (size_t i = 1; i < sizeof reason_names / sizeof reason_names[0]; i++) {
        if (strcmp(name, reason_names[i]) == 0) {
            *out = (rl_denial_reason)i;
            return true;
        }
    }
    return false;
}
