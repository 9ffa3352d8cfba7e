/* call_check.c — see call_check.h. */
#include "client/call_check.h"

#include <string.h>

#include "client/last_error.h"
#include "ratelimiter/keys.h"

static rl_status check_count(const void *requests, size_t count, const void *out) {
    if (requests == NULL || out == NULL)
        return rl__last_error_set(RL_INVALID_REQUEST, "requests and results must not be NULL");
    if (count == 0 || count > RL_LIMITER_MAX_BATCH)
        return rl__last_error_set(RL_INVALID_REQUEST, "a call holds 1..%u leases, not %zu", RL_LIMITER_MAX_BATCH, count);
    return RL_OK;
}

rl_status rl__check_reserve_call(const rl_reserve_request *requests, size_t count, const void *results) {
    rl__last_error_clear();
    rl_status status = check_count(requests, count, results);
    char err[RL_LIMITER_ERR_SIZE];
    for (size_t i = 0; status == RL_OK && i < count; i++)
        if (!rl_reserve_request_check(&requests[i], err))
            status = count == 1 ? rl__last_error_set(RL_INVALID_REQUEST, "%s", err)
                                : rl__last_error_set(RL_INVALID_REQUEST, "requests[%zu].%s", i, err);
    return status;
}

rl_status rl__check_complete_call(const rl_complete_request *requests, size_t count, const void *statuses) {
    rl__last_error_clear();
    rl_status status = check_count(requests, count, statuses);
    char err[RL_LIMITER_ERR_SIZE];
    for (size_t i = 0; status == RL_OK && i < count; i++)
        if (!rl_complete_request_check(&requests[i], err))
            status = count == 1 ? rl__last_error_set(RL_INVALID_REQUEST, "%s", err)
                                : rl__last_error_set(RL_INVALID_REQUEST, "requests[%zu].%s", i, err);
    return status;
}

rl_status rl__check_audit_call(const rl_audit_query *query, const rl_audit_page *page) {
    rl__last_error_clear();
    if (query == NULL || page == NULL || page->entries == NULL)
        return rl__last_error_set(RL_INVALID_REQUEST, "query, page and page->entries must not be NULL");
    if (query->key == NULL || !rl_key_is_valid(query->key, strnlen(query->key, RL_KEY_MAX_LEN + 1)))
        return rl__last_error_set(RL_INVALID_REQUEST,
                                  "key must be 1..256 printable ASCII characters without spaces");
    if (query->limit < 1 || query->limit > RL_AUDIT_QUERY_MAX)
        return rl__last_error_set(RL_INVALID_REQUEST, "limit must be 1..%u, not %u", RL_AUDIT_QUERY_MAX,
                                  query->limit);
    if (query->since_unix_ms > RL_AMOUNT_MAX)
        return rl__last_error_set(RL_INVALID_REQUEST, "since_unix_ms must be 0..%llu",
                                  (unsigned long long)RL_AMOUNT_MAX);
    return RL_OK;
}
