/* server/observe/observe.h — everyone who watches the daemon answer (the
 * metrics, the access log, the console's recent denials), behind the one
 * rl_http_observer the HTTP server calls after each answer.
 *
 * Each watcher is optional (NULL: off) and owned by whoever set it
 * (ratelimiterd.c), which must keep it alive until the server is destroyed.
 * Set before the server starts, never changed after. rl_observe_answered
 * calls each set watcher in turn, on the event loop: none of them may
 * block. A new watcher is a field here, one test in
 * rl_observe_http_observer and one call in rl_observe_answered.
 */
#ifndef RL_SERVER_OBSERVE_H
#define RL_SERVER_OBSERVE_H

#include <stdint.h>

#include "server/api/outcome.h"
#include "server/http/http_server.h"
#include "server/observe/access_log.h"
#include "server/observe/denial_ring.h"
#include "server/observe/metrics.h"

typedef struct rl_observe {
    rl_denial_ring *denials;   /* the console's recent denials (denial_ring.h) */
    rl_access_log *access_log; /* log.access; NULL: off */
    rl_metrics *metrics;       /* GET /metrics's counters (metrics.h); NULL: off */
} rl_observe;

/* The observer for the server's options: rl_observe_answered with observe
 * as its context, or answered NULL when no watcher is set (then the server
 * does not even read the clock). observe is borrowed. Controlling thread. */
rl_http_observer rl_observe_http_observer(rl_observe *observe);

/* rl_http_observer's answered: context is the rl_observe. Event loop
 * `loop`'s thread. */
void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us);

#endif
