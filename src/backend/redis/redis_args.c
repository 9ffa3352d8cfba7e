/* redis_args.c — see redis_args.h. */
#include "backend/redis/redis_args.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool rl_redis_args_init(rl_redis_args *a, int capacity) {
    memset(a, 0, sizeof *a);
    a->argv = malloc((size_t)capacity * sizeof *a->argv);
    a->len = malloc((size_t)capacity * sizeof *a->len);
    a->numbers = malloc((size_t)capacity * sizeof *a->numbers);
    a->ids = malloc((size_t)capacity * sizeof *a->ids);
    a->capacity = capacity;
    return a->argv != NULL && a->len != NULL && a->numbers != NULL && a->ids != NULL;
}

void rl_redis_args_free(rl_redis_args *a) {
    free(a->argv);
    free(a->len);
    free(a->numbers);
    free(a->ids);
    memset(a, 0, sizeof *a);
}

void rl_redis_args_push(rl_redis_args *a, const char *text, size_t len) {
    a->argv[a->count] = text;
    a->len[a->count++] = len;
}

void rl_redis_args_push_str(rl_redis_args *a, const char *text) { rl_redis_args_push(a, text, strlen(text)); }

void rl_redis_args_push_u64(rl_redis_args *a, uint64_t value) {
    char *slot = a->numbers[a->number_count++];
    int n = snprintf(slot, RL_REDIS_NUMBER_SIZE, "%llu", (unsigned long long)value);
    rl_redis_args_push(a, slot, (size_t)n);
}

void rl_redis_args_push_lease_id(rl_redis_args *a, const char *lease_id) {
    char *slot = a->ids[a->id_count++];
    for (int i = 0; i < RL_ULID_LEN; i++) slot[i] = (char)toupper((unsigned char)lease_id[i]);
    slot[RL_ULID_LEN] = '\0';
    rl_redis_args_push(a, slot, RL_ULID_LEN);
}

void rl_redis_args_push_fingerprint(rl_redis_args *a, uint64_t fingerprint) {
    _Static_assert(RL_LEASE_FINGERPRINT_TEXT_SIZE <= RL_ULID_TEXT_SIZE, "a fingerprint fits a lease id's slot");
    char *slot = a->ids[a->id_count++];
    rl__lease_fingerprint_text(fingerprint, slot);
    rl_redis_args_push(a, slot, RL_LEASE_FINGERPRINT_TEXT_SIZE - 1);
}

void rl_redis_args_push_lease_flags(rl_redis_args *a, const rl_reserve_request *request) {
    _Static_assert(RL_MAX_REQUIREMENTS + 1 < 53, "the flags are exact in a Lua number");
    uint64_t flags = request->dry_run ? 1u : 0u;
    for (size_t i = 0; i < request->requirement_count; i++)
        if (request->requirements[i].optional) flags |= UINT64_C(1) << (i + 1);
    if (flags == 0) rl_redis_args_push(a, "", 0); /* most leases: nothing to format */
    else rl_redis_args_push_u64(a, flags);
}

void rl_redis_args_push_header(rl_redis_args *a, const char *prefix, const rl_clock *clock,
                               uint64_t audit_retention_ms) {
    rl_redis_args_push_str(a, prefix);
    if (clock != NULL) {
        rl_redis_args_push_u64(a, clock->monotonic_ms(clock));
        rl_redis_args_push_u64(a, clock->unix_ms(clock));
    } else {
        rl_redis_args_push(a, "", 0);
        rl_redis_args_push(a, "", 0);
    }
    rl_redis_args_push_u64(a, audit_retention_ms);
}

void rl_redis_args_push_bounds(rl_redis_args *a, const char *key, const rl_budget_bounds *bounds) {
    rl_redis_args_push_str(a, key);
    rl_redis_args_push_str(a, bounds->cal);
    for (int i = 0; i < 4; i++) rl_redis_args_push_u64(a, bounds->at_unix_ms[i]);
}
