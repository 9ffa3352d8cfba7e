/* fuzz_redis_info.c — the text of Redis's INFO memory into
 * rl_redis_memory_parse, then the verdicts drawn from it.
 *
 * Redis is not a stranger, but its answer crosses the network and a proxy
 * or another server may stand where Redis should: parsing must never read
 * past the text, and what it accepts must be what the text says: a policy
 * of printable characters, NUL-terminated in its array; a refusal leaves
 * the output untouched; the verdict's sentence is NUL-terminated.
 */
#include <stddef.h>
#include <stdint.h>

#include "backend/redis/redis_memory.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_copy(data, size);
    rl_redis_memory memory, before;
    memset(&memory, 0x5a, sizeof memory);
    before = memory;
    bool parsed = rl_redis_memory_parse(text, size, &memory);
    free(text);
    if (!parsed) {
        FUZZ_CHECK(memcmp(&memory, &before, sizeof memory) == 0);
        return 0;
    }
    FUZZ_CHECK_TEXT(memory.policy);
    FUZZ_CHECK(memory.policy[0] != '\0');
    for (const char *c = memory.policy; *c != '\0'; c++) FUZZ_CHECK(*c > ' ' && *c <= '~');
    char detail[512];
    detail[0] = '\0';
    rl_redis_memory_verdict verdict = rl_redis_memory_judge(&memory, detail, sizeof detail);
    FUZZ_CHECK_TEXT(detail);
    FUZZ_CHECK(verdict == RL_REDIS_MEMORY_OK || detail[0] != '\0');
    FUZZ_CHECK(verdict != RL_REDIS_MEMORY_FULL || (memory.max_bytes != 0 && memory.used_bytes >= memory.max_bytes));
    rl_redis_memory_eviction_refusal(&memory, "127.0.0.1:6379", detail, sizeof detail);
    FUZZ_CHECK_TEXT(detail);
    return 0;
}
