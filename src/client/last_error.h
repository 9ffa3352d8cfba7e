/* client/last_error.h — why the last failed Limiter call on this thread
 * failed, in words (rl_limiter_last_error). Private to src/client. */
#ifndef RL_CLIENT_LAST_ERROR_H
#define RL_CLIENT_LAST_ERROR_H

#include <stddef.h>

#include "ratelimiter/status.h"

/* Every Limiter call starts with this: a call that succeeds leaves "". */
void rl__last_error_clear(void);

/* Records a sentence for this thread; returns status so that a refusal
 * reads "return rl__last_error_set(RL_INVALID_REQUEST, ...)". */
rl_status rl__last_error_set(rl_status status, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Records what a server answered with a failure: "HTTP 400 invalid_request:
 * <detail>", from the JSON body's "error" and "detail" when it has them. */
void rl__last_error_from_answer(long http_status, const char *body, size_t body_len);

#endif
