/* token_set.c — a tokens file parsed into digests, and the constant-time
 * check (token_set.h). */
#include "server/auth/token_set.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "core/regular_file.h"

struct rl_token_set {
    size_t count;
    uint8_t digests[][RL_TOKEN_DIGEST_BYTES];
};

static bool fail(char *err, size_t err_size, const char *name, size_t line, const char *format, ...) {
    if (err == NULL || err_size == 0) return false;
    int prefix = line > 0 ? snprintf(err, err_size, "%s:%zu: ", name, line) : snprintf(err, err_size, "%s: ", name);
    if (prefix < 0 || (size_t)prefix >= err_size) return false;
    va_list args;
    va_start(args, format);
    vsnprintf(err + prefix, err_size - (size_t)prefix, format, args);
    va_end(args);
    return false;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* RFC 6750's b64token before its trailing '='s. */
static bool is_token_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~' || c == '+' || c == '/';
}

/* Why token[0..len) is not a token, or NULL when it is one. */
static const char *token_problem(const char *token, size_t len) {
    if (len < RL_TOKEN_MIN_LEN || len > RL_TOKEN_MAX_LEN)
        return "a token must be 16..512 characters (make one with: openssl rand -hex 32)";
    size_t i = 0;
    while (i < len && is_token_char(token[i])) i++;
    if (i == 0) return "a token must start with a letter, a digit or one of - . _ ~ + /";
    while (i < len && token[i] == '=') i++;
    if (i < len)
        return "a token holds only letters, digits and - . _ ~ + / (then '=' at its end), "
               "one token per line";
    return NULL;
}

void rl_token_digest(const char *token, size_t len, uint8_t digest[RL_TOKEN_DIGEST_BYTES]) {
    SHA256((const unsigned char *)token, len, digest);
}

/* The tokens of text, in order: the line of each (for messages) and where
 * it is. Returns how many, or -1 after fail(). */
typedef struct token_at {
    const char *text;
    size_t len, line;
} token_at;

static long collect(const char *text, size_t len, const char *name, token_at *found, char *err, size_t err_size) {
    long count = 0;
    size_t line = 0;
    for (size_t at = 0; at < len;) {
        line++;
        const char *newline = memchr(text + at, '\n', len - at);
        size_t end = newline != NULL ? (size_t)(newline - text) : len;
        size_t next = newline != NULL ? end + 1 : len;
        size_t first = at, last = end;
        if (last > first && text[last - 1] == '\r') last--;
        while (first < last && is_blank(text[first])) first++;
        while (last > first && is_blank(text[last - 1])) last--;
        at = next;
        if (first == last || text[first] == '#') continue;
        const char *why = token_problem(text + first, last - first);
        if (why != NULL) return fail(err, err_size, name, line, "%s", why), -1;
        if (count == RL_TOKEN_SET_MAX) return fail(err, err_size, name, line, "more than %d tokens", RL_TOKEN_SET_MAX), -1;
        found[count++] = (token_at){text + first, last - first, line};
    }
    return count;
}

bool rl_token_set_parse(const char *text, size_t len, const char *name, rl_token_set **out, char *err,
                        size_t err_size) {
    *out = NULL;
    if (name == NULL) name = "tokens file";
    if (len > RL_TOKEN_FILE_MAX_BYTES) return fail(err, err_size, name, 0, "larger than %u bytes", RL_TOKEN_FILE_MAX_BYTES);
    if (memchr(text, '\0', len) != NULL) return fail(err, err_size, name, 0, "holds a NUL byte: not a text file");
    token_at *found = malloc(sizeof *found * RL_TOKEN_SET_MAX);
    if (found == NULL) return fail(err, err_size, name, 0, "out of memory");
    long count = collect(text, len, name, found, err, err_size);
    if (count == 0) fail(err, err_size, name, 0, "holds no token: every request would be refused (one token a line)");
    rl_token_set *set = count > 0 ? malloc(sizeof *set + (size_t)count * RL_TOKEN_DIGEST_BYTES) : NULL;
    if (count > 0 && set == NULL) fail(err, err_size, name, 0, "out of memory");
    if (set == NULL) {
        free(found);
        return false;
    }
    set->count = (size_t)count;
    for (long i = 0; i < count; i++) {
        rl_token_digest(found[i].text, found[i].len, set->digests[i]);
        for (long j = 0; j < i; j++) {
            if (memcmp(set->digests[j], set->digests[i], RL_TOKEN_DIGEST_BYTES) != 0) continue;
            fail(err, err_size, name, found[i].line, "the same token as line %zu", found[j].line);
            free(found);
            free(set);
            return false;
        }
    }
    free(found);
    *out = set;
    return true;
}

bool rl_token_set_load_file(const char *path, rl_token_set **out, char *err, size_t err_size) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    if (rl__read_whole_file(path, RL_TOKEN_FILE_MAX_BYTES, &text, &len, NULL, err, err_size) != RL_OK) return false;
    bool ok = rl_token_set_parse(text, len, path, out, err, err_size);
    /* The tokens were in this buffer: do not leave them in freed memory. */
    OPENSSL_cleanse(text, len);
    free(text);
    return ok;
}

size_t rl_token_set_count(const rl_token_set *set) { return set->count; }

bool rl_token_set_has_digest(const rl_token_set *set, const uint8_t digest[RL_TOKEN_DIGEST_BYTES]) {
    if (set == NULL) return false;
    int matched = 0;
    for (size_t i = 0; i < set->count; i++)
        matched |= CRYPTO_memcmp(set->digests[i], digest, RL_TOKEN_DIGEST_BYTES) == 0;
    return matched != 0;
}

void rl_token_set_free(rl_token_set *set) { free(set); }
