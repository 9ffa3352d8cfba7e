/* wire/decode_fields.h — private: one reserve or complete request object,
 * read from a json_scan.h scanner.
 *
 * Both requests are {lease_id, job_id, <list>} where the list holds
 * {key, <amount>} objects ("requirements"/"amount" for reserve,
 * "actuals"/"actual_amount" for complete); a spec says which, and which
 * boolean flags the request and its elements may carry ("dry_run" and
 * "optional" for reserve, none for complete).
 *
 * Convention: every function consumes exactly one value and returns false
 * only if the text is not JSON (the scanner then holds the error). A value
 * that is JSON but not what its field allows is noted (rl__json_note) and
 * consumed all the same, so that the caller reads on: the next item of a
 * batch must still be decoded, and a syntax error later in the body must
 * still win over a field problem, as it did when a tree was parsed first.
 */
#ifndef RL_WIRE_DECODE_FIELDS_H
#define RL_WIRE_DECODE_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lease_rules.h"
#include "ratelimiter/types.h"
#include "wire/decode_common.h"
#include "wire/json_scan.h"

/* Which problem of one request is reported when it has several: a known
 * field twice, then the fields in api.md's order, the list itself before
 * its elements; within an element the same again. Only the first element
 * with a problem is decoded (the rest are only counted and checked for
 * syntax), so elements never compete. */
enum {
    RL__RANK_TWICE,
    RL__RANK_LEASE_ID,
    RL__RANK_JOB_ID,
    RL__RANK_LIST,
    RL__RANK_ELEMENT_SHAPE, /* not an object, or a field twice */
    RL__RANK_ELEMENT_KEY,
    RL__RANK_ELEMENT_AMOUNT,
    RL__RANK_ELEMENT_FLAG,   /* "optional" not a boolean */
    RL__RANK_ELEMENT_REPEAT, /* a key named by an earlier element */
    RL__RANK_FLAG,           /* "dry_run" not a boolean */
};

typedef struct rl__list_spec {
    const char *name;        /* "requirements" | "actuals" */
    size_t name_len;         /* strlen(name): names are matched by length first */
    const char *amount_name; /* "amount" | "actual_amount" */
    size_t amount_name_len;
    uint64_t min_amount;     /* 1 | 0 */
    size_t min_count;        /* 1 | 0 */
    bool optional;           /* absent or null means empty */
    const char *repeat_note; /* why a key may not repeat */
    /* A boolean member of the request ("dry_run") and of each element
     * ("optional"), false when absent; NULL: the request has none (it is
     * then an unknown member, skipped). */
    const char *flag_name;
    size_t flag_name_len;
    const char *element_flag_name;
    size_t element_flag_name_len;
} rl__list_spec;

typedef struct rl__lease_fields {
    const char *lease_id; /* as written: any case (lease_rules.h) */
    const char *job_id;   /* NULL if absent or null */
    size_t count;         /* list elements */
    const char *key[RL_MAX_REQUIREMENTS];
    uint64_t amount[RL_MAX_REQUIREMENTS];
    bool flag;                              /* the field spec's flag_name */
    bool element_flag[RL_MAX_REQUIREMENTS]; /* the field spec's element_flag_name */
} rl__lease_fields;

/* The request object the scanner is at (its '{' next). Strings point into
 * the scanner's text. *out is meaningful only if nothing was noted; unknown
 * fields are skipped. */
bool rl__decode_lease_object(rl__json_scan *s, const rl__list_spec *spec, rl__lease_fields *out,
                             uint32_t *rank, const rl__json_path *path);

#endif
