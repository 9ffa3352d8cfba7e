/* parse.c — rlctl's small pure parsers: integers, KEY=AMOUNT, URL paths,
 * and the token of a tokens file. */
#include <errno.h>
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

bool rlctl_token_is_valid(const char *token, size_t len) {
    if (len == 0 || len > RLCTL_TOKEN_MAX_LEN) return false;
    for (size_t i = 0; i < len; i++)
        if (token[i] <= ' ' || token[i] > '~') return false;
    return true;
}

bool rlctl_first_token(const char *text, char *out, size_t out_size, const char **why) {
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        if (end == NULL) end = line + strlen(line);
        const char *first = line, *last = end;
        line = *end != '\0' ? end + 1 : end;
        while (first < last && (*first == ' ' || *first == '\t')) first++;
        while (last > first && (last[-1] == ' ' || last[-1] == '\t' || last[-1] == '\r')) last--;
        if (first == last || *first == '#') continue;
        size_t len = (size_t)(last - first);
        if (!rlctl_token_is_valid(first, len) || len >= out_size) {
            *why = "its token must be 1..512 printable characters without spaces";
            return false;
        }
        memcpy(out, first, len);
        out[len] = '\0';
        return true;
    }
    *why = "it holds no token (the first line that is not empty or a # comment)";
    return false;
}

bool rlctl_read_token_file(const char *path, char *out, size_t out_size, char *err, size_t err_size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return false;
    }
    char text[4 * RLCTL_TOKEN_MAX_LEN + 1]; /* enough for a few comment lines before the token */
    size_t len = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[len] = '\0';
    const char *why = NULL;
    bool ok = strlen(text) == len && rlctl_first_token(text, out, out_size, &why);
    if (!ok) snprintf(err, err_size, "%s: %s", path, why != NULL ? why : "holds a NUL byte: not a text file");
    memset(text, 0, sizeof text);
    return ok;
}
