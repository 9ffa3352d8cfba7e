/* status.c — wire strings of rl_status, from the one table in status.h. */
#include "ratelimiter/status.h"

#include <stddef.h>

const char *rl_status_wire(rl_status status) {
    switch (status) {
#define RL_STATUS_WIRE_CASE(name, wire) \
    case RL_##name:                     \
        return wire;
        RL_STATUS_MAP(RL_STATUS_WIRE_CASE)
#undef RL_STATUS_WIRE_CASE
    }
    return "backend_error";
}

const char *rl_status_name(rl_status status) {
    switch (status) {
#define RL_STATUS_NAME_CASE(name, wire) \
    case RL_##name:                     \
        return #name;
        RL_STATUS_MAP(RL_STATUS_NAME_CASE)
#undef RL_STATUS_NAME_CASE
    }
    return "UNKNOWN";
}
