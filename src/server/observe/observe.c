/* observe.c — the fan-out to every watcher (observe.h). One line each. */
#include "server/observe/observe.h"

void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us) {
    const rl_observe *observe = context;
    if (observe->metrics != NULL) rl_metrics_answered(observe->metrics, loop, outcome, latency_us);
}
