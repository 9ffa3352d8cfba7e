/* support/memory_service.h — a service (server/service.h) on the memory
 * backend, its registry in a fresh temp directory, no sweeper thread: what
 * the server unit tests answer from. Header-only; include it after
 * <cmocka.h>, whose assertions it uses.
 */
#ifndef RL_TEST_MEMORY_SERVICE_H
#define RL_TEST_MEMORY_SERVICE_H

#include <stdio.h>
#include <stdlib.h>

#include "server/service.h"

/* Makes dir from the template /tmp/<name>_XXXXXX (dir: 64 bytes), the
 * registry path in it (path: 128 bytes), and opens the service there. */
static inline rl_service *rl_test_memory_service_open(const char *name, char dir[64], char path[128]) {
    snprintf(dir, 64, "/tmp/%s_XXXXXX", name);
    assert_non_null(mkdtemp(dir));
    snprintf(path, 128, "%s/limits.json", dir);
    rl_service_options options = {.backend_name = "memory", .registry_path = path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    rl_service *service = NULL;
    char err[256];
    if (rl_service_open(&options, &service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    return service;
}

#endif
