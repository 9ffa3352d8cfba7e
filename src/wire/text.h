/* wire/text.h — private: UTF-8 checks for JSON bodies and decoded strings.
 *
 * The sequence check serves the scanner (json_scan.h); the clean-text check
 * the decoded job_id, unit and description. The body pre-scan is for texts
 * still parsed with cJSON (limit definitions, the registry file): cJSON
 * copies string bytes without checking them, and decodes "\u0000" into a
 * NUL that silently truncates the string; the pre-scan closes both holes.
 * All functions are pure and thread-safe.
 */
#ifndef RL_WIRE_TEXT_H
#define RL_WIRE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if the bytes
 * s[0..avail) do not start one (overlong forms, surrogates, > U+10FFFF and
 * truncated sequences are invalid). avail must be >= 1. */
size_t rl__utf8_sequence_len(const unsigned char *s, size_t avail);

/* True if text[0..len) is valid UTF-8 without control characters (C0 or
 * DEL): what a job_id, unit or description may hold. */
bool rl__text_is_clean(const char *text, size_t len);

typedef enum rl__body_problem {
    RL__BODY_OK = 0,
    RL__BODY_BAD_UTF8,    /* not UTF-8 (RFC 8259 requires it) */
    RL__BODY_CONTROL,     /* a raw control character other than tab, LF, CR */
    RL__BODY_NUL_ESCAPE,  /* "\u0000": cJSON would cut the string there */
} rl__body_problem;

/* Scans a whole JSON body before cJSON sees it. Returns RL__BODY_OK, or the
 * first problem with its byte offset in *at. Fast on plain ASCII (8 bytes a
 * step). */
rl__body_problem rl__body_scan(const char *body, size_t len, size_t *at);

#endif
