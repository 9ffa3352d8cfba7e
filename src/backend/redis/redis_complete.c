/* redis_complete.c — completes through complete.lua (redis_backend_internal.h);
 * one that cannot reach Redis is kept and retried in the background
 * (complete_retry.h). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"
#include "core/lease_rules.h"

#define ERR_SIZE 256

/* Sends requests (valid: backend.h; asserted in debug builds) in one script call. */
static rl_status send_completes(redis_backend *backend, const rl_complete_request *requests, size_t count,
                                uint64_t deadline_ms) {
    if (count == 0) return RL_OK;
    size_t argc = 6; /* the header, the relay flag and the count */
    for (size_t i = 0; i < count; i++) {
        RL__ASSERT_REQUEST_VALID(rl__complete_request_is_valid(&requests[i]));
        argc += 2 + 2 * requests[i].actual_count;
    }
    rl_redis_args a;
    rl_status status = RL_NO_MEMORY;
    if (rl_redis_args_init(&a, (int)argc)) {
        rl__redis_push_header(&a, backend, backend->clock);
        rl_redis_args_push_u64(&a, atomic_load(&backend->relay_completes) ? 1 : 0);
        rl_redis_args_push_u64(&a, count);
        for (size_t i = 0; i < count; i++) {
            rl_redis_args_push_lease_id(&a, requests[i].lease_id);
            rl_redis_args_push_u64(&a, requests[i].actual_count);
            for (size_t j = 0; j < requests[i].actual_count; j++) {
                rl_redis_args_push_str(&a, requests[i].actuals[j].key);
                rl_redis_args_push_u64(&a, requests[i].actuals[j].actual_amount);
            }
        }
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
    return send_completes(backend, requests, count, rl_redis_pool_deadline_ms(backend->pool, 0)) == RL_OK;
}

/* A Complete that cannot reach Redis now is kept and retried in the
 * background: the caller is told it was taken. Only a full retry queue makes
 * it fail. */
void rl__redis_complete_batch(rl_backend *base, const rl_complete_request *requests, size_t count,
                           rl_status *statuses) {
    redis_backend *backend = rl_redis_backend_of(base);
    rl_status status = send_completes(backend, requests, count, rl_redis_operation_deadline_ms(backend));
    if (status != RL_OK && rl_complete_retry_add(backend->retry, requests, count)) status = RL_OK;
    for (size_t i = 0; i < count; i++) statuses[i] = status == RL_OK ? RL_OK : RL_BACKEND_ERROR;
}
