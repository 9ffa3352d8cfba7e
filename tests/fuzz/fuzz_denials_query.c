/* fuzz_denials_query.c — any query string of GET /v1/admin/denials into the
 * daemon's decoder (server/api/denials_query.h: rl__denials_params_decode).
 *
 * Input: the query, after the '?'. Checked: a refusal says why in a
 * printable-ASCII sentence (it goes into a JSON detail as is) and keeps
 * nothing; what is taken is a limit 1..RL_DENIAL_RING_CAPACITY, a key that
 * is "" or valid, a lease id that is "" or an upper-case ULID; and the same
 * parameters written back as a query (the key percent-encoded) read back
 * the same.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/ulid.h"
#include "server/api/denials_query.h"
#include "server/observe/denial_ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *query = fuzz_copy(data, size);
    rl__denials_params params;
    char detail[RL_WIRE_DETAIL_SIZE];
    if (!rl__denials_params_decode(query, size, &params, detail)) {
        FUZZ_CHECK_SENTENCE(detail, RL_WIRE_DETAIL_SIZE);
        FUZZ_CHECK(params.limit == 0 && params.key[0] == '\0' && params.lease_id[0] == '\0');
        free(query);
        return 0;
    }
    FUZZ_CHECK(params.limit >= 1 && params.limit <= RL_DENIAL_RING_CAPACITY);
    FUZZ_CHECK(memchr(params.key, '\0', sizeof params.key) != NULL);
    FUZZ_CHECK(params.key[0] == '\0' || rl_key_is_valid(params.key, strlen(params.key)));
    FUZZ_CHECK(memchr(params.lease_id, '\0', sizeof params.lease_id) != NULL);
    size_t id_len = strlen(params.lease_id);
    FUZZ_CHECK(id_len == 0 || (id_len == RL_ULID_LEN && rl_ulid_is_valid(params.lease_id, id_len)));
    for (size_t i = 0; i < id_len; i++) FUZZ_CHECK(params.lease_id[i] < 'a' || params.lease_id[i] > 'z');

    /* Written back, every byte of the key escaped: read the same. */
    char again_query[64 + 3 * RL_KEY_MAX_LEN + RL_ULID_LEN];
    int n = snprintf(again_query, sizeof again_query, "limit=%u", params.limit);
    if (params.key[0] != '\0') {
        n += snprintf(again_query + n, sizeof again_query - (size_t)n, "&key=");
        for (const char *c = params.key; *c != '\0'; c++)
            n += snprintf(again_query + n, sizeof again_query - (size_t)n, "%%%02X", (unsigned char)*c);
    }
    if (id_len > 0) n += snprintf(again_query + n, sizeof again_query - (size_t)n, "&lease_id=%s", params.lease_id);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof again_query);
    rl__denials_params again;
    FUZZ_CHECK(rl__denials_params_decode(again_query, (size_t)n, &again, detail));
    FUZZ_CHECK(again.limit == params.limit && strcmp(again.key, params.key) == 0 &&
               strcmp(again.lease_id, params.lease_id) == 0);
    free(query);
    return 0;
}
