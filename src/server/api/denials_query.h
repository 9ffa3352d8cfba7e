/* server/api/denials_query.h — the query string of GET /v1/admin/denials:
 * [limit=N][&key=K][&lease_id=L], read strictly as every admin query is
 * (query_params.h; api.md "GET /v1/admin/denials"). limit is 1..
 * RL_DENIAL_RING_CAPACITY (100 if absent); key a limit key; lease_id a
 * ULID, kept upper case. The first problem from the left is named. Pure,
 * thread-safe.
 */
#ifndef RL_SERVER_DENIALS_QUERY_H
#define RL_SERVER_DENIALS_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"
#include "wire/wire.h"

#define RL__DENIALS_DEFAULT_LIMIT 100u

typedef struct rl__denials_params {
    uint32_t limit;
    char key[RL_KEY_MAX_LEN + 1];      /* "" for any */
    char lease_id[RL_ULID_LEN + 1];    /* "" for any, else upper case */
} rl__denials_params;

/* Reads query[0..len) (after the '?', not NUL-terminated; len 0 for none)
 * into *out. False with a sentence naming the parameter in detail, *out
 * then meaningless. */
bool rl__denials_params_decode(const char *query, size_t len, rl__denials_params *out,
                               char detail[RL_WIRE_DETAIL_SIZE]);

#endif
