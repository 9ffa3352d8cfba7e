/* core/text.h — private: UTF-8 checks for JSON bodies and decoded strings.
 *
 * The sequence check serves the wire layer's scanner (json_scan.h); the
 * clean-text check a job_id (lease_rules.h), a unit and a description. All functions are pure and
 * thread-safe.
 */
#ifndef RL_CORE_TEXT_H
#define RL_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if the bytes
 * s[0..avail) do not start one (overlong forms, surrogates, > U+10FFFF and
 * truncated sequences are invalid). avail must be >= 1. */
size_t rl__utf8_sequence_len(const unsigned char *s, size_t avail);

/* True if text[0..len) is valid UTF-8 without control characters (C0 or
 * DEL): what a job_id, unit or description may hold. */
bool rl__text_is_clean(const char *text, size_t len);

#endif
