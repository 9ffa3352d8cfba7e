/* wire/decode_limit_def.h — private: one LimitDefinition object, read from a
 * json_scan.h scanner.
 *
 * One decoder for every place a definition is read: the body of PUT
 * /v1/admin/limits (rl__wire_decode_limit_def), each item of the registry
 * file (registry_file.c walks the array) and the JSON the redis backend
 * keeps of each limit. Every integer member is read exactly, as the lease
 * decoders read amounts (decode_common.h: rl__read_integer), so a number is
 * never rounded into range.
 *
 * Same convention as decode_fields.h: the call consumes exactly one value
 * and returns false only if the text is not JSON (the scanner then holds
 * the error); a value that is JSON but not a valid definition is noted
 * (rl__json_note, in a fixed order: a member twice, then key, kind,
 * capacity, window_seconds, timeout_seconds, unit, description, overage,
 * then rl_limit_def_validate's rules) and consumed all the same, so that a
 * syntax error later in the text still wins. Unknown members are skipped.
 * Reentrant; the scanner belongs to the calling thread.
 */
#ifndef RL_WIRE_DECODE_LIMIT_DEF_H
#define RL_WIRE_DECODE_LIMIT_DEF_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelimiter/types.h"
#include "wire/decode_common.h"
#include "wire/json_scan.h"

/* The definition the scanner is at, defaults applied (overage debt, unit
 * and description empty, the unused of window/timeout 0). A value that is
 * not an object is noted with the sentence not_object. *out is meaningful
 * only if nothing was noted (*rank still RL__RANK_NONE). */
bool rl__decode_limit_def(rl__json_scan *s, const char *not_object, rl_limit_def *out,
                          uint32_t *rank, const rl__json_path *path);

/* The same for a template (core/template_set.h): a definition whose key is
 * read from the member "pattern", which must be a valid pattern
 * (template_pattern.h); "key" is then an unknown member. */
bool rl__decode_template_def(rl__json_scan *s, const char *not_object, rl_limit_def *out, uint32_t *rank,
                             const rl__json_path *path);

#endif
