/* backend_table.c — see backend_table.h. */
#include "server/backend_table.h"

#include <stdio.h>
#include <string.h>

#include "ratelimiter/memory.h"
#include "ratelimiter/redis.h"
#include "ratelimiter/submitter.h"
#include "server/service.h"

/* With its journal (replayed here) and its audit log when the options name
 * them; a failure (a damaged journal, a directory it cannot write) stops
 * the daemon with the backend's sentence, which names the file. */
static rl_status create_memory(const rl_service_options *options, rl_backend **out, char *err, size_t err_size) {
    char why[512] = "";
    rl_status status = rl_memory_backend_open(&options->memory, out, why, sizeof why);
    if (status != RL_OK)
        snprintf(err, err_size, "the memory backend failed: %s", why[0] != '\0' ? why : rl_status_name(status));
    return status;
}

static rl_status create_redis(const rl_service_options *options, rl_backend **out, char *err, size_t err_size) {
    const rl_redis_options *redis = &options->redis;
    char why[512] = "";
    /* With allotments the submitter goes in front of the synchronous path
     * only: leases decided locally never wait for a flush. */
    rl_status status = options->allotments ? rl_allotted_backend_create(redis, &options->submitter, &options->allotment,
                                                                         out, why, sizeof why)
                                           : rl_redis_backend_create(redis, out, why, sizeof why);
    if (status != RL_OK) {
        /* Name the address (redis.address, --redis) once, whatever why says. */
        const char *host = redis->host != NULL ? redis->host : "127.0.0.1";
        bool ipv6 = strchr(host, ':') != NULL;
        char address[300];
        snprintf(address, sizeof address, "%s%s%s:%u", ipv6 ? "[" : "", host, ipv6 ? "]" : "",
                 (unsigned)redis->port);
        if (why[0] == '\0') snprintf(why, sizeof why, "%s", rl_status_name(status));
        if (strstr(why, address) != NULL)
            snprintf(err, err_size, "the redis backend failed: %s", why);
        else
            snprintf(err, err_size, "the redis backend failed: Redis at %s: %s", address, why);
        return status;
    }
    /* One script call per flush instead of one per request (micro-batching:
     * the Redis round trip is paid per flush); max_leases 1 keeps the naive
     * path, for comparison. */
    if (!options->allotments && options->submitter.max_leases > 1) {
        rl_backend *batched = NULL;
        status = rl_submitter_create(*out, &options->submitter, &batched);
        if (status != RL_OK) {
            rl_backend_destroy(*out);
            *out = NULL;
            snprintf(err, err_size, "cannot start the submitter: %s", rl_status_name(status));
            return status;
        }
        *out = batched;
    }
    return status;
}

static const rl_backend_kind kinds[] = {
    {"memory", create_memory},
    {"redis", create_redis},
};
enum { KIND_COUNT = sizeof kinds / sizeof kinds[0] };

const rl_backend_kind *rl_backend_kind_find(const char *name) {
    for (size_t i = 0; name != NULL && i < KIND_COUNT; i++)
        if (strcmp(kinds[i].name, name) == 0) return &kinds[i];
    return NULL;
}

void rl_backend_kind_unknown(const char *name, char *err, size_t err_size) {
    char names[128] = "";
    size_t at = 0;
    for (size_t i = 0; i < KIND_COUNT && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", i == 0 ? "" : " or ", kinds[i].name);
    snprintf(err, err_size, "backend \"%.40s\" is not available in this build (use %s)", name != NULL ? name : "",
             names);
}

rl_status rl_backend_abi_check(const rl_backend *backend, char *err, size_t err_size) {
    if (backend->ops->abi_version == RL_BACKEND_ABI_VERSION) return RL_OK;
    snprintf(err, err_size, "the %s backend was built for backend ABI %d, this build speaks %d",
             backend->ops->name != NULL ? backend->ops->name : "given", backend->ops->abi_version,
             RL_BACKEND_ABI_VERSION);
    return RL_INVALID_REQUEST;
}
