/* observe.c — the fan-out to the watchers (observe.h). */
#include "server/observe/observe.h"

#include <stdbool.h>
#include <stddef.h>

rl_http_observer rl_observe_http_observer(rl_observe *observe) {
    bool any = observe->denials != NULL || observe->access_log != NULL || observe->metrics != NULL;
    return (rl_http_observer){any ? rl_observe_answered : NULL, any ? observe : NULL};
}

void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us) {
    rl_observe *observe = context;
    if (observe->denials != NULL) rl_denial_ring_note(observe->denials, loop, outcome);
    if (observe->access_log != NULL) rl_access_log_answered(observe->access_log, loop, outcome, latency_us);
    if (observe->metrics != NULL) rl_metrics_answered(observe->metrics, loop, outcome, latency_us);
}
