/* observe.c — see observe.h. */
#include "server/observe/observe.h"

void rl_observe_answered(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us) {
    const rl_observe *watchers = context;
    (void)latency_us;
    if (watchers->denials != NULL) rl_denial_ring_note(watchers->denials, loop, outcome);
}

rl_http_observer rl_observe_observer(rl_observe *watchers) {
    rl_http_observer observer = {rl_observe_answered, watchers};
    return observer;
}
