/* fuzz_token_set.c — any bytes as a tokens file (admin.tokens_file,
 * data.tokens_file: server/auth/token_set.h), and as an Authorization
 * header's value (server/auth/auth.h).
 *
 * Checked: a file is taken if and only if the harness's own reading takes
 * it (every line blank, a '#' comment or one token of 16..512 characters of
 * the b64token alphabet, no token twice, at least one, at most 1024, no
 * NUL); then the set holds exactly those tokens (each found, each with a
 * byte changed not, unless that is a token too); a refusal names the file,
 * says why in printable ASCII and quotes no token. The header: a bearer
 * token found lies inside the value, holds no space, and is the value's
 * only word after "Bearer".
 */
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "fuzz.h"
#include "server/auth/auth.h"
#include "server/auth/token_set.h"

typedef struct span {
    const char *at;
    size_t len;
} span;

static int is_token_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~' || c == '+' || c == '/';
}

/* The harness's own reading: the tokens, or -1 when the file is refused. */
static long reference(const char *text, size_t len, span *tokens) {
    if (memchr(text, '\0', len) != NULL) return -1;
    long count = 0;
    for (size_t at = 0; at < len;) {
        size_t end = at;
        while (end < len && text[end] != '\n') end++;
        size_t first = at, last = end;
        at = end < len ? end + 1 : end;
        if (last > first && text[last - 1] == '\r') last--;
        while (first < last && (text[first] == ' ' || text[first] == '\t')) first++;
        while (last > first && (text[last - 1] == ' ' || text[last - 1] == '\t')) last--;
        if (first == last || text[first] == '#') continue;
        size_t n = last - first, i = 0;
        if (n < RL_TOKEN_MIN_LEN || n > RL_TOKEN_MAX_LEN) return -1;
        while (i < n && is_token_char(text[first + i])) i++;
        if (i == 0) return -1;
        while (i < n && text[first + i] == '=') i++;
        if (i < n || count == RL_TOKEN_SET_MAX) return -1;
        for (long j = 0; j < count; j++)
            if (tokens[j].len == n && memcmp(tokens[j].at, text + first, n) == 0) return -1;
        tokens[count++] = (span){text + first, n};
    }
    return count > 0 ? count : -1;
}

static int has(const rl_token_set *set, const char *token, size_t len) {
    uint8_t digest[RL_TOKEN_DIGEST_BYTES];
    rl_token_digest(token, len, digest);
    return rl_token_set_has_digest(set, digest);
}

static void check_header(const char *value, size_t len) {
    const char *token = NULL;
    size_t token_len = 0;
    if (!rl_auth_bearer_token(value, len, &token, &token_len)) return;
    FUZZ_CHECK(len > 7 && strncasecmp(value, "bearer ", 7) == 0);
    FUZZ_CHECK(token >= value + 7 && token + token_len <= value + len && token_len > 0);
    FUZZ_CHECK(memchr(token, ' ', token_len) == NULL);
    for (const char *c = value + 6; c < token; c++) FUZZ_CHECK(*c == ' ');
    for (const char *c = token + token_len; c < value + len; c++) FUZZ_CHECK(*c == ' ');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > RL_TOKEN_FILE_MAX_BYTES) return 0;
    char *text = fuzz_copy(data, size);
    static span tokens[RL_TOKEN_SET_MAX];
    long expected = reference(text, size, tokens);
    rl_token_set *set = NULL;
    char err[512];
    err[0] = '\0';
    int ok = rl_token_set_parse(text, size, "f.tokens", &set, err, sizeof err);
    FUZZ_CHECK(ok == (expected > 0));
    if (ok) {
        FUZZ_CHECK(rl_token_set_count(set) == (size_t)expected);
        for (long i = 0; i < expected; i++) {
            FUZZ_CHECK(has(set, tokens[i].at, tokens[i].len));
            char changed[RL_TOKEN_MAX_LEN];
            memcpy(changed, tokens[i].at, tokens[i].len);
            changed[tokens[i].len - 1] ^= 1;
            int is_another = 0;
            for (long j = 0; j < expected; j++)
                is_another |= tokens[j].len == tokens[i].len && memcmp(tokens[j].at, changed, tokens[i].len) == 0;
            FUZZ_CHECK(has(set, changed, tokens[i].len) == is_another);
            int prefix_is_another = 0;
            for (long j = 0; j < expected; j++)
                prefix_is_another |= tokens[j].len == tokens[i].len - 1 && memcmp(tokens[j].at, tokens[i].at, tokens[j].len) == 0;
            FUZZ_CHECK(has(set, tokens[i].at, tokens[i].len - 1) == prefix_is_another);
        }
        rl_token_set_free(set);
    } else {
        FUZZ_CHECK(set == NULL);
        FUZZ_CHECK_TEXT(err);
        FUZZ_CHECK(strncmp(err, "f.tokens", 8) == 0);
        for (const char *c = err; *c != '\0'; c++) FUZZ_CHECK(*c >= ' ' && *c <= '~');
    }
    check_header(text, size);
    free(text);
    return 0;
}
