/* server/api/audit_query.h — the query string of GET /v1/admin/audit:
 * key=K[&since_unix_ms=T][&limit=N], read strictly (api.md "GET
 * /v1/admin/audit").
 *
 * Names and values are percent-decoded as the key of GET
 * /v1/admin/limits/{key} is (percent_decode.h: '+' is a plus). The key
 * must be a limit key; since_unix_ms (0 if absent) and limit (100 if
 * absent) decimal integers 0..2^53 and 1..RL_AUDIT_QUERY_MAX. An unknown
 * parameter, one given twice, one without '=', an empty one (two '&' in a
 * row, or one at an end) are refused: a misspelt since_unix_ms must not
 * silently read the log from its start. The first problem from the left is
 * named, then a missing key. Pure, thread-safe.
 */
#ifndef RL_SERVER_AUDIT_QUERY_H
#define RL_SERVER_AUDIT_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"
#include "wire/wire.h"

#define RL__AUDIT_DEFAULT_LIMIT 100u
#define RL__AUDIT_SINCE_MAX RL_AMOUNT_MAX /* 2^53: every JSON reader holds it exactly */

typedef struct rl__audit_params {
    char key[RL_KEY_MAX_LEN + 1];
    uint64_t since_unix_ms;
    uint32_t limit;
} rl__audit_params;

/* Reads query[0..len) (after the '?', not NUL-terminated; len 0 for none)
 * into *out. False with a sentence naming the parameter in detail, *out
 * then meaningless. */
bool rl__audit_params_decode(const char *query, size_t len, rl__audit_params *out,
                             char detail[RL_WIRE_DETAIL_SIZE]);

/* The backend's query of params: its key points into params. */
static inline rl_audit_query rl__audit_params_query(const rl__audit_params *params) {
    rl_audit_query query = {params->key, params->since_unix_ms, params->limit};
    return query;
}

#endif
