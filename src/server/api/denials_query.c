/* denials_query.c — see denials_query.h. */
#include "server/api/denials_query.h"

#include <ctype.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "ratelimiter/ulid.h"
#include "server/api/percent_decode.h"
#include "server/api/query_params.h"
#include "server/observe/denial_ring.h"

#define USAGE "GET /v1/admin/denials[?limit=N][&key=K][&lease_id=L]"

enum { P_LIMIT, P_KEY, P_LEASE_ID, P_COUNT };
static const char *const names[P_COUNT] = {"limit", "key", "lease_id"};
static const rl__query_spec spec = {names, P_COUNT, USAGE, "the parameters are limit, key and lease_id"};

/* One parameter's value (rl__query_take_fn). */
static bool take(void *context, size_t which, const char *value, size_t value_len, char *detail) {
    rl__denials_params *out = context;
    if (which == P_LIMIT) {
        uint64_t number = 0;
        if (!rl__query_number(value, value_len, 1, RL_DENIAL_RING_CAPACITY, &number))
            return rl__query_fail(detail, "limit must be a decimal integer 1..%u", RL_DENIAL_RING_CAPACITY);
        out->limit = (uint32_t)number;
    } else if (which == P_KEY) {
        int key_len = rl_percent_decode(value, value_len, out->key, sizeof out->key);
        if (key_len < 0 || !rl_key_is_valid(out->key, (size_t)key_len))
            return rl__query_fail(detail, "key must be 1..256 printable ASCII characters without spaces, "
                                          "percent-encoded where needed");
    } else {
        int id_len = rl_percent_decode(value, value_len, out->lease_id, sizeof out->lease_id);
        if (id_len < 0 || !rl_ulid_is_valid(out->lease_id, (size_t)id_len))
            return rl__query_fail(detail, "lease_id must be a ULID (26 Crockford base32 characters)");
        for (int i = 0; i < id_len; i++) out->lease_id[i] = (char)toupper((unsigned char)out->lease_id[i]);
    }
    return true;
}

bool rl__denials_params_decode(const char *query, size_t len, rl__denials_params *out,
                               char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    out->limit = RL__DENIALS_DEFAULT_LIMIT;
    bool seen[P_COUNT];
    if (!rl__query_read(query, len, &spec, seen, take, out, detail)) {
        memset(out, 0, sizeof *out); /* a refusal keeps nothing half-read */
        return false;
    }
    return true;
}
