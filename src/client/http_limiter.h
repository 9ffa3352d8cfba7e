/* client/http_limiter.h — private: what the http limiter shows tests beyond
 * limiter.h, and the pieces its files share. */
#ifndef RL_CLIENT_HTTP_LIMITER_H
#define RL_CLIENT_HTTP_LIMITER_H

#include <stdint.h>

#include "client/http_transport.h"
#include "ratelimiter/limiter.h"

typedef struct rl__http_limiter {
    rl_limiter base;
    rl_http_limiter_options options; /* defaults applied; base_url NULL (the transport holds it) */
    rl__http_transport *transport;
} rl__http_limiter;

/* reserve_batch, complete_batch, destroy (http_limiter_ops.c), audit
 * (http_limiter_audit.c). */
extern const rl_limiter_ops rl__http_limiter_ops;
rl_status rl__http_limiter_audit(rl_limiter *limiter, const rl_audit_query *query, rl_audit_page *page);

/* How an answer reads, decided by the op that sent the request. */
typedef enum rl__http_verdict {
    RL__HTTP_DONE,  /* a definitive answer: *status is the call's */
    RL__HTTP_RETRY, /* not a whole answer (e.g. an unreadable body): send again */
} rl__http_verdict;

typedef rl__http_verdict (*rl__http_reader)(void *ctx, long http_status, rl_buf *body,
                                            rl_status *status);

/* Sends request to path (a GET when request is NULL) until read() calls an
 * answer definitive or deadline_mono_ms passes (RL_TIMEOUT): transport
 * failures and RETRY verdicts are retried with the same body after a
 * jittered exponential backoff. response is the caller's scratch.
 * Thread-safe. */
rl_status rl__http_call(rl__http_limiter *limiter, const char *path, const rl_buf *request,
                        uint64_t deadline_mono_ms, rl_buf *response, rl__http_reader read,
                        void *ctx);

/* The verdict on a status that is not the op's success (200, or 404 for a
 * single reserve): 400/413 invalid request, 502/504 retry (a proxy got no
 * answer), anything else the server's failure. */
rl__http_verdict rl__http_verdict_of_failure(long http_status, rl_status *status);

/* The TCP connections the limiter has opened so far; limiter must come
 * from rl_limiter_http_open. For tests of keep-alive reuse. */
uint64_t rl__http_limiter_connects_total(rl_limiter *limiter);

#endif
