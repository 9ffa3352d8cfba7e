/* call_check.c — see call_check.h. */
#include "client/call_check.h"

#include "client/last_error.h"

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
