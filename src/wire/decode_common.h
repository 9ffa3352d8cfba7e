/* wire/decode_common.h — private: the pieces every decoder is built from.
 *
 * Parsing a length-delimited body strictly, walking an object's members once
 * (case-sensitive, a known member twice is an error), reading integers out
 * of cJSON's doubles, and writing the one-sentence `detail` that names the
 * offending field by its path ("requests[3].requirements[1].amount ...").
 * Everything here is reentrant.
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

/* The request fields shared by reserve and complete. lease_id is required
 * and rewritten in upper case (the canonical ULID form, so that "01j.." and
 * "01J.." are one lease everywhere); job_id is optional (NULL). */
bool rl__decode_lease_id(const cJSON *item, const char **out, const rl__json_path *path);
bool rl__decode_job_id(const cJSON *item, const char **out, const rl__json_path *path);

/* One {key, <amount_name>} element of requirements/actuals: key a valid
 * limit key, amount an integer min_amount..RL_AMOUNT_MAX. */
bool rl__decode_key_amount(const cJSON *element, const char *amount_name, uint64_t min_amount,
                           const char **key, uint64_t *amount, const rl__json_path *path);

#endif
