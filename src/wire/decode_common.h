/* wire/decode_common.h — private: the pieces every decoder is built from.
 *
 * The one-sentence `detail` that names the offending field by its path
 * ("requests[3].requirements[1].amount ..."), and, for the limit
 * definitions that are still parsed with cJSON (admin PUT, the registry
 * file: not on the hot path), parsing a length-delimited body strictly,
 * walking an object's members once (case-sensitive, a known member twice is
 * an error) and reading integers out of cJSON's doubles. The reserve and
 * complete decoders use json_scan.h instead. Everything here is reentrant.
 */
#ifndef RL_WIRE_DECODE_COMMON_H
#define RL_WIRE_DECODE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

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

/* Parses body[0..len) (not NUL-terminated) as one JSON value: valid UTF-8,
 * no raw control characters or "\u0000", only whitespace after the value.
 * Returns the tree (free with cJSON_Delete) or NULL with a sentence in
 * detail (detail_size bytes). `what` names the text in messages ("body"). */
cJSON *rl__json_parse(const char *body, size_t len, const char *what, char *detail,
                      size_t detail_size);

/* The same, and the value must be an object. */
cJSON *rl__json_parse_object(const char *body, size_t len, char detail[RL_WIRE_DETAIL_SIZE]);

/* One walk over object's members: found[i] is the member named names[i]
 * (exact, case-sensitive) or NULL. Unknown members are ignored; a known name
 * present twice fails with "<name> appears twice". count <= 16. */
bool rl__json_members(const cJSON *object, const char *const names[], size_t count,
                      const cJSON *found[], const rl__json_path *path);

/* True if item is absent or JSON null (how optional fields are omitted). */
static inline bool rl__json_is_absent(const cJSON *item) {
    return item == NULL || cJSON_IsNull(item);
}

/* True if item is a number holding an integer in min..max (NaN, infinities
 * and fractions are not). */
bool rl__json_u64(const cJSON *item, uint64_t min, uint64_t max, uint64_t *out);

/* The string of item and its length, or NULL if item is not a string. */
const char *rl__json_string(const cJSON *item, size_t *len);

/* Counts array elements, stopping once past limit (so huge arrays are not
 * walked): the result is min(size, limit + 1). */
size_t rl__json_array_count(const cJSON *array, size_t limit);

#endif
