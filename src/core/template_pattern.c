/* template_pattern.c — a limit template's pattern (template_pattern.h). */
#include "core/template_pattern.h"

#include <stdio.h>
#include <string.h>

#include "ratelimiter/keys.h"

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool rl__template_pattern_parse(const char *text, size_t len, rl__template_pattern *out, char *err,
                                size_t err_size) {
#define REFUSE(...) (snprintf(err, err_size, __VA_ARGS__), false)
    if (!rl_key_is_valid(text, len))
        return REFUSE("pattern must be a string of 1..%d printable ASCII characters without spaces", RL_KEY_MAX_LEN);
    rl__template_pattern parsed;
    memset(&parsed, 0, sizeof parsed);
    /* The names seen, to refuse one used twice: each names its own part. */
    const char *names[RL_TEMPLATE_MAX_PLACEHOLDERS];
    size_t name_lens[RL_TEMPLATE_MAX_PLACEHOLDERS];
    bool head_done = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '}') return REFUSE("pattern has a '}' that closes no placeholder at character %zu", i + 1);
        if (c != '{') {
            if (c == ':' && !head_done) {
                head_done = true;
                parsed.head_len = parsed.placeholder_count == 0 ? (uint16_t)i : 0;
            }
            parsed.steps[parsed.step_count++] = c;
            parsed.literal_count++;
            continue;
        }
        size_t name_at = i + 1, name_len = 0;
        while (name_at + name_len < len && is_name_char(text[name_at + name_len])) name_len++;
        if (name_at + name_len >= len || text[name_at + name_len] != '}' || name_len == 0 ||
            name_len > RL_TEMPLATE_NAME_MAX_LEN)
            return REFUSE("pattern has a placeholder at character %zu that is not {name} with a name of "
                          "1..%d letters, digits or '_'",
                          i + 1, RL_TEMPLATE_NAME_MAX_LEN);
        if (parsed.step_count > 0 && parsed.steps[parsed.step_count - 1] == RL__TEMPLATE_ANY)
            return REFUSE("pattern has two placeholders side by side at character %zu: put a literal "
                          "character such as ':' between them",
                          i + 1);
        if (parsed.placeholder_count == RL_TEMPLATE_MAX_PLACEHOLDERS)
            return REFUSE("pattern has more than %d placeholders", RL_TEMPLATE_MAX_PLACEHOLDERS);
        for (size_t n = 0; n < parsed.placeholder_count; n++)
            if (name_lens[n] == name_len && memcmp(names[n], text + name_at, name_len) == 0)
                return REFUSE("pattern names the placeholder {%.*s} twice", (int)name_len, text + name_at);
        names[parsed.placeholder_count] = text + name_at;
        name_lens[parsed.placeholder_count] = name_len;
        parsed.placeholder_count++;
        parsed.steps[parsed.step_count++] = RL__TEMPLATE_ANY;
        i = name_at + name_len; /* at the '}' */
    }
    if (parsed.placeholder_count == 0)
        return REFUSE("pattern must hold at least one placeholder such as {tenant}: a key without one is a "
                      "limit (PUT /v1/admin/limits)");
    if (!head_done) parsed.head_len = 0; /* one segment, holding the placeholder */
    memcpy(parsed.text, text, len);
    parsed.text[len] = '\0';
    *out = parsed;
    return true;
#undef REFUSE
}

/* One segment (no ':' in either): steps[0..n) against key[0..len). The
 * classic wildcard walk, where a placeholder is one character then any
 * run: on a mismatch, the last placeholder takes one character more. */
static bool match_segment(const char *steps, size_t n, const char *key, size_t len) {
    size_t s = 0, k = 0;
    size_t star_s = SIZE_MAX, star_k = 0; /* after the last placeholder, and where its run ends */
    while (k < len) {
        if (s < n && steps[s] == RL__TEMPLATE_ANY) {
            /* Its first character is its own; then a run, empty for now. */
            s++;
            k++;
            star_s = s;
            star_k = k;
        } else if (s < n && steps[s] == key[k]) {
            s++;
            k++;
        } else if (star_s != SIZE_MAX) {
            s = star_s;
            k = ++star_k;
        } else {
            return false;
        }
    }
    return s == n;
}

bool rl__template_pattern_match(const rl__template_pattern *pattern, const char *key, size_t key_len) {
    /* Only a key: a placeholder takes any character but ':', which is a
     * key's only if the text is one (no space, control character or NUL). */
    if (!rl_key_is_valid(key, key_len)) return false;
    /* Segments align one to one: no placeholder takes a ':', so the pattern's
     * n-th ':' can only be the key's n-th. */
    const char *steps = pattern->steps;
    size_t steps_left = pattern->step_count;
    if (pattern->head_len > 0 &&
        (key_len <= pattern->head_len || memcmp(key, steps, pattern->head_len) != 0 || key[pattern->head_len] != ':'))
        return false;
    while (true) {
        const char *step_colon = memchr(steps, ':', steps_left);
        const char *key_colon = memchr(key, ':', key_len);
        if ((step_colon == NULL) != (key_colon == NULL)) return false;
        size_t step_n = step_colon != NULL ? (size_t)(step_colon - steps) : steps_left;
        size_t key_n = key_colon != NULL ? (size_t)(key_colon - key) : key_len;
        if (!match_segment(steps, step_n, key, key_n)) return false;
        if (step_colon == NULL) return true;
        steps += step_n + 1;
        steps_left -= step_n + 1;
        key += key_n + 1;
        key_len -= key_n + 1;
    }
}

int rl__template_pattern_precedence(const rl__template_pattern *a, const rl__template_pattern *b) {
    if (a->literal_count != b->literal_count) return a->literal_count > b->literal_count ? -1 : 1;
    if (a->placeholder_count != b->placeholder_count) return a->placeholder_count < b->placeholder_count ? -1 : 1;
    return strcmp(a->text, b->text);
}
