/* fuzz_audit_query.c — any query string of GET /v1/admin/audit into the
 * daemon's decoder (server/api/audit_query.h: rl__audit_params_decode).
 *
 * Input: the query, after the '?'. Checked: a refusal says why in a
 * printable-ASCII sentence (it goes into a JSON detail as is); what is
 * taken is a valid key, since_unix_ms 0..2^53 and a limit 1..1000; and the
 * http limiter's own path for what was taken (wire.h:
 * rl__wire_encode_audit_path) reads back as the same parameters.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "server/api/audit_query.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *query = fuzz_copy(data, size);
    rl__audit_params params;
    char detail[RL_WIRE_DETAIL_SIZE];
    if (!rl__audit_params_decode(query, size, &params, detail)) {
        FUZZ_CHECK_SENTENCE(detail, RL_WIRE_DETAIL_SIZE);
        free(query);
        return 0;
    }
    FUZZ_CHECK(memchr(params.key, '\0', sizeof params.key) != NULL);
    FUZZ_CHECK(rl_key_is_valid(params.key, strlen(params.key)));
    FUZZ_CHECK(params.since_unix_ms <= RL__AUDIT_SINCE_MAX);
    FUZZ_CHECK(params.limit >= 1 && params.limit <= RL_AUDIT_QUERY_MAX);

    /* The limiter's path for the same query is read the same way. */
    rl_audit_query asked = rl__audit_params_query(&params);
    rl_buf path;
    rl__buf_init(&path);
    rl__wire_encode_audit_path(&path, &asked);
    FUZZ_CHECK(!path.failed);
    const char *mark = strchr(path.data, '?');
    FUZZ_CHECK(mark != NULL);
    rl__audit_params again;
    FUZZ_CHECK(rl__audit_params_decode(mark + 1, strlen(mark + 1), &again, detail));
    FUZZ_CHECK(strcmp(again.key, params.key) == 0);
    FUZZ_CHECK(again.since_unix_ms == params.since_unix_ms && again.limit == params.limit);
    rl__buf_free(&path);
    free(query);
    return 0;
}
