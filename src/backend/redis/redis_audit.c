/* redis_audit.c — the audit log's query (ratelimiter/backend.h
 * audit_query) through audit_page.lua: one XRANGE of the limit's stream,
 * in Redis's time for the retention (lua/audit.lua), read by audit_page.h. */
#include <stdio.h>

#include "backend/redis/audit_page.h"
#include "backend/redis/redis_args.h"
#include "backend/redis/redis_backend_internal.h"

#define ERR_SIZE 256

rl_status rl__redis_audit_query(rl_backend *base, const rl_audit_query *query, rl_audit_page *page) {
    redis_backend *backend = rl_redis_backend_of(base);
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    if (query->limit == 0 || query->limit > RL_AUDIT_QUERY_MAX) return RL_INVALID_REQUEST;
    if (query->since_unix_ms > RL_AMOUNT_MAX) return RL_OK; /* past any instant an entry can have (and any stream id Lua writes) */
    rl_redis_args a;
    if (!rl_redis_args_init(&a, 7)) {
        rl_redis_args_free(&a);
        return RL_NO_MEMORY;
    }
    rl__redis_push_header(&a, backend, backend->clock);
    rl_redis_args_push_str(&a, query->key);
    rl_redis_args_push_u64(&a, query->since_unix_ms);
    rl_redis_args_push_u64(&a, (uint64_t)query->limit + 1); /* one more: a page cut inside a millisecond shows */
    char err[ERR_SIZE];
    redisReply *reply = NULL;
    rl_status status = rl_redis_eval(backend->pool, rl_redis_operation_deadline_ms(backend), RL_SCRIPT_AUDIT_PAGE,
                                     a.count, a.argv, a.len, &reply, err, sizeof err);
    rl_redis_args_free(&a);
    if (status == RL_OK && !rl__redis_audit_page_read(reply, query->key, query->since_unix_ms, query->limit, page)) {
        fprintf(stderr, "ratelimiterd: the audit log of \"%s\" in Redis holds an entry this build cannot read\n",
                query->key);
        status = RL_BACKEND_ERROR;
    }
    if (reply != NULL) freeReplyObject(reply);
    return status;
}
