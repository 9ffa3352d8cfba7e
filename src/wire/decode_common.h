/* wire/decode_common.h — private: the pieces every decoder is built from.
 *
 * The one-sentence `detail` that names the offending field by its path
 * ("requests[3].requirements[1].amount ..."), and the two value readers
 * that every decoder walking a json_scan.h scanner shares: a string (or
 * whatever else stands there, skipped), and an integer read exactly; and
 * the strict readers of the answer decoders (a boolean, an integer).
 * Everything here is reentrant.
 */
#ifndef RL_WIRE_DECODE_COMMON_H
#define RL_WIRE_DECODE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/json_scan.h"
#include "wire/wire.h"

/* Where a decoder is, for messages: up to two list levels above the field.
 * A NULL name means the level is absent. */
typedef struct rl__json_path {
    char *detail; /* RL_WIRE_DETAIL_SIZE bytes */
    const char *outer;
    size_t outer_index; /* "requests[3]" */
    const char *inner;
    size_t inner_index; /* "requirements[1]" */
} rl__json_path;

/* Writes "<path>.<field> <message>" (field may be NULL) into path->detail.
 * Always returns false, so that callers can `return rl__json_fail(...)`. */
bool rl__json_fail(const rl__json_path *path, const char *field, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, but only if rank is lower (more important) than *best, which
 * then becomes rank: a decoder that reads fields in the order the sender
 * wrote them still reports the problem a fixed field order would find first
 * (lease_id before requirements, whatever the body's order). *best starts at
 * RL__RANK_NONE. Returns false. */
#define RL__RANK_NONE UINT32_MAX
bool rl__json_note(uint32_t *best, uint32_t rank, const rl__json_path *path, const char *field,
                   const char *format, ...) __attribute__((format(printf, 5, 6)));

/* Both readers consume exactly one value and return false only if the text
 * is not JSON (the scanner then holds the error): a value of the wrong type
 * or out of range is consumed all the same, for the caller to note. */

/* A string, decoded in place (*text NUL-terminated in the scanner's text),
 * or *text NULL after skipping a value of another type. */
bool rl__read_string_or_skip(rl__json_scan *s, char **text, size_t *len);

/* An integer min..max (max <= RL_AMOUNT_MAX), written in any form whose
 * exact value is one: 1800, 1800.0, 1.8e3 and 180000e-2 are 1800, "-0" is
 * 0. Nothing is rounded: 1.5, 2^53 + 1 and 59.99999999999999999 are not in
 * any range, whatever a double would make of them. *valid says whether the
 * value was such an integer (then in *out). */
bool rl__read_integer(rl__json_scan *s, uint64_t min, uint64_t max, uint64_t *out, bool *valid);

/* true or false into *out; *valid says whether it was one of them. */
bool rl__read_bool_or_skip(rl__json_scan *s, bool *out, bool *valid);

/* The answers' readers (the daemon's answers, read by the client): the
 * value must be of the type asked for, else the scanner fails (a syntax
 * error at the value), since an answer of another shape is not one. */

/* true or false. */
bool rl__read_bool(rl__json_scan *s, bool *out);
/* A non-negative integer in any exact form ("-0" is 0), up to 10^19. */
bool rl__read_u64(rl__json_scan *s, uint64_t *out);

#endif
