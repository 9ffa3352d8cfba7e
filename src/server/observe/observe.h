/* server/observe/observe.h — everyone who watches the daemon answer, behind
 * the one rl_http_observer the HTTP server calls (http_server.h): the
 * metrics, the access log, the console's recent denials. Each watcher is
 * optional (NULL: not on); the fan-out calls those that are, in turn.
 *
 * Threading: rl_observe_answered runs on the event loop that answered (as
 * rl_http_observer.answered); each watcher's own call must be as cheap and
 * non-blocking as that. The struct is filled before the server starts and
 * read-only after.
 */
#ifndef RL_SERVER_OBSERVE_H
#define RL_SERVER_OBSERVE_H

#include <stdint.h>

#include "server/api/outcome.h"
#include "server/observe/metrics.h"

typedef struct rl_observe {
    rl_metrics *metrics; /* GET /metrics's counters, or NULL; borrowed */
} rl_observe;

/* The rl_http_observer.answered of the daemon: context is an rl_observe. */
void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us);

#endif
