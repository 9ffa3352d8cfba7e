/* redis_memory.c — see redis_memory.h. */
#include "backend/redis/redis_memory.h"

#include <stdio.h>
#include <string.h>

#include "backend/redis/redis_decimal.h"
#include "core/error_text.h"

/* The value of "name:" at the start of a line, up to the line's end. */
static const char *field(const char *text, size_t len, const char *name, size_t *value_len) {
    size_t name_len = strlen(name);
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = eol != NULL ? eol : end;
        if ((size_t)(line_end - line) > name_len && memcmp(line, name, name_len) == 0 && line[name_len] == ':') {
            const char *value = line + name_len + 1;
            const char *value_end = line_end;
            if (value_end > value && value_end[-1] == '\r') value_end--;
            *value_len = (size_t)(value_end - value);
            return value;
        }
        line = eol != NULL ? eol + 1 : end;
    }
    return NULL;
}

bool rl_redis_memory_parse(const char *text, size_t len, rl_redis_memory *out) {
    size_t used_len = 0, max_len = 0, policy_len = 0;
    const char *used = field(text, len, "used_memory", &used_len);
    const char *max = field(text, len, "maxmemory", &max_len);
    const char *policy = field(text, len, "maxmemory_policy", &policy_len);
    rl_redis_memory parsed;
    if (!rl__redis_decimal(used, used_len, UINT64_MAX, &parsed.used_bytes) ||
        !rl__redis_decimal(max, max_len, UINT64_MAX, &parsed.max_bytes) ||
        policy == NULL || policy_len == 0 || policy_len > RL_REDIS_POLICY_MAX_LEN)
        return false;
    for (size_t i = 0; i < policy_len; i++)
        if (policy[i] <= ' ' || policy[i] > '~') return false;
    memcpy(parsed.policy, policy, policy_len);
    parsed.policy[policy_len] = '\0';
    *out = parsed;
    return true;
}

bool rl_redis_memory_evicts(const rl_redis_memory *memory) { return strcmp(memory->policy, "noeviction") != 0; }

void rl_redis_memory_eviction_refusal(const rl_redis_memory *memory, const char *address, char *out,
                                      size_t out_size) {
    rl__error_text(out, out_size,
                   "Redis at %s has maxmemory-policy %s, so it may evict lease records and reservations (a "
                   "retried lease admitted twice, usage past capacity); set maxmemory-policy noeviction in "
                   "Redis, or redis.allow_eviction: true to accept that",
                   address, memory->policy);
}

rl_redis_memory_verdict rl_redis_memory_judge(const rl_redis_memory *memory, char *detail, size_t detail_size) {
    if (memory->max_bytes == 0) return RL_REDIS_MEMORY_OK;
    if (memory->used_bytes >= memory->max_bytes) {
        rl__error_text(detail, detail_size,
                       "Redis refuses writes: it uses %llu bytes of its maxmemory %llu (policy %s), so no "
                       "lease can be recorded; give it more memory or shorten redis.lease_memory_ms",
                       (unsigned long long)memory->used_bytes, (unsigned long long)memory->max_bytes,
                       memory->policy);
        return RL_REDIS_MEMORY_FULL;
    }
    /* Per mille of maxmemory, without overflow (used < max here). */
    uint64_t per_mille = memory->max_bytes >= 1000 ? memory->used_bytes / (memory->max_bytes / 1000)
                                                    : memory->used_bytes * 1000 / memory->max_bytes;
    if (per_mille >= RL_REDIS_MEMORY_DEGRADED_PERCENT * 10u) {
        rl__error_text(detail, detail_size,
                       "Redis memory is at %llu.%llu%% of maxmemory (%llu of %llu bytes): at 100%% it refuses "
                       "every reserve",
                       (unsigned long long)(per_mille / 10), (unsigned long long)(per_mille % 10),
                       (unsigned long long)memory->used_bytes, (unsigned long long)memory->max_bytes);
        return RL_REDIS_MEMORY_NEAR;
    }
    return RL_REDIS_MEMORY_OK;
}
