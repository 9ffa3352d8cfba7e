/* keys.c — limit key validation and the standard key builders (ratelimiter/keys.h). */
#include "ratelimiter/keys.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ratelimiter/types.h"

/* Bytes of a word below 0x21 or above 0x7e set their top bit in the result
 * (the classic "has less / has more" tricks): keys are checked on every
 * requirement of every request, 8 bytes at a time. */
static inline uint64_t outside_printable(uint64_t word) {
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t below = (word - ones * 0x21) & ~word & highs;
    uint64_t above = ((word + ones * (127 - 0x7e)) | word) & highs;
    return below | above;
}

bool rl_key_is_valid(const char *key, size_t len) {
    if (key == NULL || len == 0 || len > RL_KEY_MAX_LEN) return false;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, key + i, 8);
        if (outside_printable(word) != 0) return false;
    }
    for (; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x21 || c > 0x7e) return false;
    }
    return true;
}

/* A part of a key: non-empty, valid key characters, and no ':' so that it
 * cannot reach into another segment. */
static bool key_part_is_valid(const char *part) {
    if (part == NULL) return false;
    size_t len = strlen(part);
    return len > 0 && rl_key_is_valid(part, len) && memchr(part, ':', len) == NULL;
}

static int finish(char *out, size_t out_size, int written) {
    if (written < 0 || (size_t)written >= out_size || !rl_key_is_valid(out, (size_t)written)) {
        if (out_size > 0) out[0] = '\0';
        return -1;
    }
    return written;
}

int rl_key_llm_global(char *out, size_t out_size, const char *provider, const char *model,
                      rl_llm_dimension dimension) {
    static const char *const dimension_names[] = {"rpm", "tpm", "concurrency", "rpd"};
    if (out == NULL || out_size == 0) return -1;
    if (!key_part_is_valid(provider) || !key_part_is_valid(model) || (unsigned)dimension > RL_LLM_RPD) {
        out[0] = '\0';
        return -1;
    }
    int written = snprintf(out, out_size, "global:llm:%s:%s:%s", provider, model,
                           dimension_names[dimension]);
    return finish(out, out_size, written);
}

int rl_key_tenant_daily_tokens(char *out, size_t out_size, const char *tenant_id) {
    if (out == NULL || out_size == 0) return -1;
    if (!key_part_is_valid(tenant_id)) {
        out[0] = '\0';
        return -1;
    }
    int written = snprintf(out, out_size, "tenant:%s:llm:daily_tokens", tenant_id);
    return finish(out, out_size, written);
}
