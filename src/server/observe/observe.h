/* server/observe/observe.h — the daemon's one observer (http_server.h's
 * rl_http_observer): after every answer, each watcher that is set is
 * called in turn, on the loop that answered. Each watcher's part is one
 * call; a watcher must not block (it runs on the event loop).
 *
 * The watchers are borrowed and must outlive the HTTP server; NULL: not
 * watching. Set before the server starts, never changed after.
 */
#ifndef RL_SERVER_OBSERVE_H
#define RL_SERVER_OBSERVE_H

#include <stdint.h>

#include "server/api/outcome.h"
#include "server/http/http_server.h"
#include "server/observe/denial_ring.h"

typedef struct rl_observe {
    rl_denial_ring *denials; /* the console's recent denials (denial_ring.h) */
} rl_observe;

/* The fan-out: context is an rl_observe. Thread: loop `loop`. */
void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us);

/* The observer to put in rl_http_server_options: rl_observe_answered on
 * watchers (borrowed). */
rl_http_observer rl_observe_observer(rl_observe *watchers);

#endif
