/* redis_complete.c — completes through complete.lua (redis_backend_internal.h);
 * one that cannot reach Redis is kept and retried in the background
 * (complete_retry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "ratelimiter/limiter.h"

#define ERR_SIZE 256

static bool complete_ok(const rl_complete_request *r) {
    char why[RL_LIMITER_ERR_SIZE];
    return rl_complete_request_check(r, why);
}

/* Sends the valid Completes of requests in one script call, checking each
 * once: sent (if not NULL) gets RL_OK for the ones sent and
 * RL_INVALID_REQUEST for the ones left out. Arguments are sized for every
 * request (an invalid one counts at most RL_MAX_REQUIREMENTS actuals), and
 * the count of leases is written once they are known. */
static rl_status send_completes(redis_backend *backend, const rl_complete_request *requests, size_t count,
                                uint64_t deadline_ms, rl_status *sent) {
    size_t argc = 4;
    for (size_t i = 0; i < count; i++)
        argc += 2 + 2 * (requests[i].actual_count < RL_MAX_REQUIREMENTS ? requests[i].actual_count
                                                                           : RL_MAX_REQUIREMENTS);
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    if (!rl_redis_args_init(&a, (int)argc)) {
        rl_redis_args_free(&a);
        for (size_t i = 0; sent != NULL && i < count; i++)
            sent[i] = complete_ok(&requests[i]) ? RL_OK : RL_INVALID_REQUEST;
        return status;
    }
    rl_redis_args_push_header(&a, backend->prefix, backend->clock);
    int count_at = a.count;
    rl_redis_args_push(&a, "", 0); /* ARGV[4], the count: below */
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        bool ok = complete_ok(&requests[i]);
        if (sent != NULL) sent[i] = ok ? RL_OK : RL_INVALID_REQUEST;
        if (!ok) continue;
        valid++;
        rl_redis_args_push_lease_id(&a, requests[i].lease_id);
        rl_redis_args_push_u64(&a, requests[i].actual_count);
        for (size_t j = 0; j < requests[i].actual_count; j++) {
            rl_redis_args_push_str(&a, requests[i].actuals[j].key);
            rl_redis_args_push_u64(&a, requests[i].actuals[j].actual_amount);
        }
    }
    status = RL_OK;
    if (valid > 0) {
        int end = a.count;
        a.count = count_at;
        rl_redis_args_push_u64(&a, valid);
        a.count = end;
        char err[ERR_SIZE];
        redisReply *reply = NULL;
        status = rl_redis_eval(backend->pool, deadline_ms, RL_SCRIPT_COMPLETE, a.count, a.argv, a.len, &reply, err,
                               sizeof err);
        if (reply != NULL) freeReplyObject(reply);
    }
    rl_redis_args_free(&a);
    return status;
}

bool rl__redis_retry_send(void *context, const rl_complete_request *requests, size_t count) {
    redis_backend *backend = context;
    return send_completes(backend, requests, count, rl_redis_pool_deadline_ms(backend->pool, 0), NULL) == RL_OK;
}

/* A Complete that cannot reach Redis now is kept and retried in the
 * background: the caller is told it was taken. Only a full retry queue makes
 * it fail. An invalid Complete has nothing to release: ok. */
void rl__redis_complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_status status = send_completes(backend, requests, count, rl_redis_operation_deadline_ms(backend), statuses);
    if (status != RL_OK && rl_complete_retry_add(backend->retry, requests, count)) status = RL_OK;
    for (size_t i = 0; i < count; i++) {
        if (statuses[i] != RL_OK) statuses[i] = RL_OK; /* left out: nothing to release */
        else if (status != RL_OK) statuses[i] = RL_BACKEND_ERROR;
    }
}
