/* parse.c — rlctl's small pure parsers: integers, KEY=AMOUNT, URL paths. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/types.h"
#include "wire/wire.h"

bool rlctl_parse_u64(const char *text, uint64_t max, uint64_t *out) {
    if (text == NULL || *text == '\0') return false;
    uint64_t value = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') return false;
        unsigned digit = (unsigned)(*p - '0');
        if (value > (max - digit) / 10) return false;
        value = value * 10 + digit;
    }
    *out = value;
    return true;
}

bool rlctl_parse_key_amount(const char *text, uint64_t min, char *key, size_t key_size, uint64_t *amount,
                            char *err, size_t err_size) {
    const char *eq = strrchr(text, '=');
    if (eq == NULL || eq == text) {
        snprintf(err, err_size, "\"%s\" is not KEY=AMOUNT", text);
        return false;
    }
    size_t key_len = (size_t)(eq - text);
    if (key_len >= key_size || !rl_key_is_valid(text, key_len)) {
        snprintf(err, err_size, "\"%.*s\" is not a valid limit key", (int)key_len, text);
        return false;
    }
    uint64_t value;
    if (!rlctl_parse_u64(eq + 1, RL_AMOUNT_MAX, &value) || value < min) {
        snprintf(err, err_size, "the amount in \"%s\" must be an integer %llu..%llu", text,
                 (unsigned long long)min, (unsigned long long)RL_AMOUNT_MAX);
        return false;
    }
    memcpy(key, text, key_len);
    key[key_len] = '\0';
    *amount = value;
    return true;
}

void rlctl_path_escape(const char *key, char *out, size_t out_size) {
    /* The library's escaping, which the http limiter's audit query uses too. */
    if (out_size > 0) rl__wire_percent_encode(key, out, out_size);
}
