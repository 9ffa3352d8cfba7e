/* core/template_pattern.h — private: the pattern of a limit template, which
 * keys it names, and which of several matching templates wins.
 *
 * A pattern is a key (1..256 printable ASCII characters without spaces) in
 * which 1..RL_TEMPLATE_MAX_PLACEHOLDERS parts are placeholders:
 *
 *     tenant:{tenant}:llm:daily_tokens
 *     global:llm:{provider}:{model}:rpm
 *
 * A placeholder is "{name}", name 1..32 of [A-Za-z0-9_], each name once. It
 * stands for one or more characters of a key, none of them ':', so it never
 * reaches into another segment (a tenant id cannot smuggle a ':' in, as the
 * key builders of keys.h promise). Braces appear only around a name, and two
 * placeholders never touch ("{a}{b}" could split a part anywhere). The rest
 * of the pattern is literal.
 *
 * When several templates match a key, the most specific wins: the one with
 * more literal characters, then the one with fewer placeholders, then the
 * pattern first in byte order. So "tenant:{t}:llm:daily_tokens" beats
 * "{scope}:{t}:llm:daily_tokens", and the choice never depends on the order
 * in which templates were defined.
 *
 * Pure and thread-safe: a parsed pattern is a value, read-only once made.
 */
#ifndef RL_CORE_TEMPLATE_PATTERN_H
#define RL_CORE_TEMPLATE_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

#define RL_TEMPLATE_MAX_PLACEHOLDERS 8
#define RL_TEMPLATE_NAME_MAX_LEN 32
#define RL__TEMPLATE_ANY '\0' /* never a key character */

typedef struct rl__template_pattern {
    char text[RL_KEY_MAX_LEN + 1]; /* the pattern as written */
    /* What each step matches: its literal character, or RL__TEMPLATE_ANY
     * (a placeholder: one or more characters other than ':'). */
    char steps[RL_KEY_MAX_LEN];
    uint16_t step_count;
    uint16_t literal_count;     /* literal characters: the first order of precedence */
    uint8_t placeholder_count;  /* 1..RL_TEMPLATE_MAX_PLACEHOLDERS */
    /* The literal first segment (before the first ':'), or length 0 when the
     * first segment holds a placeholder: a set of templates indexes by it. */
    uint16_t head_len;
} rl__template_pattern;

/* Parses text[0..len) into *out. False, *out untouched, with a sentence in
 * err (err_size bytes; e.g. "pattern must hold at least one placeholder
 * such as {tenant}") if it is not a valid pattern. */
bool rl__template_pattern_parse(const char *text, size_t len, rl__template_pattern *out, char *err,
                                size_t err_size);

/* True if key[0..key_len) is a valid key (keys.h) the pattern names.
 * Linear in the key's length times the pattern's steps at worst; no
 * allocation. */
bool rl__template_pattern_match(const rl__template_pattern *pattern, const char *key, size_t key_len);

/* < 0 when a takes precedence over b, > 0 when b does, 0 only for the same
 * pattern text (the order described above). */
int rl__template_pattern_precedence(const rl__template_pattern *a, const rl__template_pattern *b);

#endif
