/* redis/redis_memory.h — what Redis says of its memory (INFO memory), and
 * what that means for a store of leases.
 *
 * Two dangers, both invisible to a script call that succeeds:
 *   - eviction: under any maxmemory-policy but noeviction, Redis drops keys
 *     when memory is short. Every key of ours has a TTL, so the volatile-*
 *     policies pick ours too. A dropped lease record lets a retried lease id
 *     be admitted twice, a dropped bucket frees capacity that is still in
 *     use: over-admission. So the backend refuses such a Redis unless the
 *     operator says otherwise (redis.allow_eviction).
 *   - a full Redis (noeviction at maxmemory): every write is refused with an
 *     OOM error, so every reserve fails; /healthz must say so.
 * Pure functions; thread-safe.
 */
#ifndef RL_REDIS_MEMORY_H
#define RL_REDIS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RL_REDIS_POLICY_MAX_LEN 31

typedef struct rl_redis_memory {
    uint64_t used_bytes;                       /* used_memory */
    uint64_t max_bytes;                        /* maxmemory; 0: no limit */
    char policy[RL_REDIS_POLICY_MAX_LEN + 1];  /* maxmemory_policy, e.g. "noeviction" */
} rl_redis_memory;

/* At or above this share of maxmemory, /healthz reports degraded. */
#define RL_REDIS_MEMORY_DEGRADED_PERCENT 90u

/* Reads used_memory, maxmemory and maxmemory_policy out of the text of
 * INFO memory (text[0..len), "field:value" lines ending in CRLF). False
 * (out untouched) if one is missing or malformed. */
bool rl_redis_memory_parse(const char *text, size_t len, rl_redis_memory *out);

/* True if the policy lets Redis drop keys: anything but "noeviction". */
bool rl_redis_memory_evicts(const rl_redis_memory *memory);

/* The sentence that refuses an evicting Redis (address, e.g. "127.0.0.1:6379"),
 * naming the policy and both ways out, into out (out_size bytes). */
void rl_redis_memory_eviction_refusal(const rl_redis_memory *memory, const char *address, char *out,
                                      size_t out_size);

typedef enum rl_redis_memory_verdict {
    RL_REDIS_MEMORY_OK,       /* room to spare, or no maxmemory */
    RL_REDIS_MEMORY_NEAR,     /* at RL_REDIS_MEMORY_DEGRADED_PERCENT of maxmemory or more */
    RL_REDIS_MEMORY_FULL,     /* at maxmemory: writes are refused (noeviction) */
} rl_redis_memory_verdict;

/* How close Redis is to refusing writes; a sentence for /healthz in detail
 * (detail_size bytes) unless OK. */
rl_redis_memory_verdict rl_redis_memory_judge(const rl_redis_memory *memory, char *detail,
                                              size_t detail_size);

#endif
