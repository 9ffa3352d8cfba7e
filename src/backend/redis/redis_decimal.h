/* redis/redis_decimal.h — a number as Redis writes it in text (INFO fields,
 * stream fields and ids): what the backend reads of Redis's answers, which
 * cross the network like any input. Pure; thread-safe. */
#ifndef RL_REDIS_DECIMAL_H
#define RL_REDIS_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* text[0..len) as a decimal of 1..20 digits, no sign, at most max, into
 * *out; false (out untouched) otherwise. */
static inline bool rl__redis_decimal(const char *text, size_t len, uint64_t max, uint64_t *out) {
    if (text == NULL || len == 0 || len > 20) return false;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return false;
        uint64_t digit = (uint64_t)(text[i] - '0');
        if (value > (max - digit) / 10) return false;
        value = value * 10 + digit;
    }
    *out = value;
    return true;
}

#endif
