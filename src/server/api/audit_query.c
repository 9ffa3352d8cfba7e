/* audit_query.c — see audit_query.h. */
#include "server/api/audit_query.h"

#include <string.h>

#include "ratelimiter/keys.h"
#include "server/api/percent_decode.h"
#include "server/api/query_params.h"

#define USAGE "GET /v1/admin/audit?key=K[&since_unix_ms=T][&limit=N]"

enum { P_KEY, P_SINCE, P_LIMIT, P_COUNT };
static const char *const names[P_COUNT] = {"key", "since_unix_ms", "limit"};
static const rl__query_spec spec = {names, P_COUNT, USAGE, "the parameters are key, since_unix_ms and limit"};

/* One parameter's value (rl__query_take_fn). */
static bool take(void *context, size_t which, const char *value, size_t value_len, char *detail) {
    rl__audit_params *out = context;
    uint64_t number = 0;
    if (which == P_KEY) {
        int key_len = rl_percent_decode(value, value_len, out->key, sizeof out->key);
        if (key_len < 0 || !rl_key_is_valid(out->key, (size_t)key_len))
            return rl__query_fail(detail, "key must be 1..256 printable ASCII characters without spaces, "
                                          "percent-encoded where needed");
    } else if (which == P_SINCE) {
        if (!rl__query_number(value, value_len, 0, RL__AUDIT_SINCE_MAX, &out->since_unix_ms))
            return rl__query_fail(detail, "since_unix_ms must be a decimal integer 0..%llu",
                                  (unsigned long long)RL__AUDIT_SINCE_MAX);
    } else {
        if (!rl__query_number(value, value_len, 1, RL_AUDIT_QUERY_MAX, &number))
            return rl__query_fail(detail, "limit must be a decimal integer 1..%u", RL_AUDIT_QUERY_MAX);
        out->limit = (uint32_t)number;
    }
    return true;
}

bool rl__audit_params_decode(const char *query, size_t len, rl__audit_params *out,
                             char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    out->limit = RL__AUDIT_DEFAULT_LIMIT;
    bool seen[P_COUNT];
    if (!rl__query_read(query, len, &spec, seen, take, out, detail)) return false;
    if (!seen[P_KEY]) return rl__query_fail(detail, "key is required: " USAGE);
    return true;
}
