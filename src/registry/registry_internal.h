/* registry/registry_internal.h — private: what tests (and benchmarks) reach
 * beyond ratelimiter/registry.h. Thread-safe like the rest. */
#ifndef RL_REGISTRY_INTERNAL_H
#define RL_REGISTRY_INTERNAL_H

#include <stdint.h>

#include "ratelimiter/registry.h"

/* Compacts now (registry_store.h). RL_OK, or RL_IO_ERROR / RL_NO_MEMORY
 * with err saying why (the files then still hold the same state). */
rl_status rl__registry_compact(rl_registry *registry, char *err, size_t err_size);

/* Compacts whenever the log has grown by bytes since its last rewrite,
 * whatever limits.json's size (0: the default rule). */
void rl__registry_set_compact_bytes(rl_registry *registry, uint64_t bytes);

#endif
