/* server/api/query_params.h — the strict reading of an admin GET's query
 * string (GET /v1/admin/audit, GET /v1/admin/denials): NAME=VALUE pairs
 * split by '&', names and values percent-decoded (percent_decode.h: '+' is
 * a plus). An unknown parameter, one given twice, one without '=', an empty
 * one (two '&' in a row, or one at an end) are refused with a sentence: a
 * misspelt parameter must not be silently ignored. Pure, thread-safe.
 */
#ifndef RL_SERVER_QUERY_PARAMS_H
#define RL_SERVER_QUERY_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"

typedef struct rl__query_spec {
    const char *const *names; /* the known parameters */
    size_t count;             /* at most RL__QUERY_MAX_PARAMS */
    const char *usage;        /* "GET /v1/admin/audit?key=K[&limit=N]": ends the sentences about form */
    const char *known;        /* "the parameters are key and limit": ends the one about an unknown name */
} rl__query_spec;

#define RL__QUERY_MAX_PARAMS 8u

/* Takes one known parameter: names[which], its raw (still percent-encoded)
 * value. False with a sentence in detail to refuse it. */
typedef bool (*rl__query_take_fn)(void *context, size_t which, const char *value, size_t value_len,
                                  char detail[RL_WIRE_DETAIL_SIZE]);

/* Reads query[0..len) (after the '?', not NUL-terminated; len 0: none),
 * calling take for each parameter from the left, and notes in seen (count
 * of them, cleared first) which came. False with the first problem from
 * the left in detail. */
bool rl__query_read(const char *query, size_t len, const rl__query_spec *spec, bool *seen, rl__query_take_fn take,
                    void *context, char detail[RL_WIRE_DETAIL_SIZE]);

/* A raw value that is decimal digits only once percent-decoded, min..max. */
bool rl__query_number(const char *raw, size_t len, uint64_t min, uint64_t max, uint64_t *out);

/* Writes the sentence into detail (RL_WIRE_DETAIL_SIZE bytes); returns false. */
__attribute__((format(printf, 2, 3))) bool rl__query_fail(char *detail, const char *format, ...);

#endif
