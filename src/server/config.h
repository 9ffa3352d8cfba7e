/* server/config.h — the daemon's settings: defaults, config.yaml (spec §11.2).
 *
 *   server:   listen_addr, backend, threads, max_body_bytes, max_batch,
 *             max_connections
 *   registry: path, max_limits
 *   memory:   sweep_interval_ms, lease_memory_ms, max_leases
 *   tigerbeetle, redis: accepted and ignored (their backends are not built yet)
 *
 * A key this file does not know inside a known section, a value of the wrong
 * type or out of range, a duplicate key or an unknown section is an error
 * that names the file, the line and the key: a typo must not silently fall
 * back to a default. Command-line flags override the file (ratelimiterd.c).
 *
 * Not thread-safe: the config is filled once at start-up, then read-only.
 */
#ifndef RL_SERVER_CONFIG_H
#define RL_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/memory.h"

#define RL_CONFIG_DEFAULT_LISTEN_ADDR "127.0.0.1:8080"
#define RL_CONFIG_DEFAULT_BACKEND "memory"
#define RL_CONFIG_DEFAULT_REGISTRY_PATH "./data/limits.json"
#define RL_CONFIG_DEFAULT_MAX_BODY_BYTES (1024u * 1024u)
#define RL_CONFIG_DEFAULT_MAX_BATCH 256u
#define RL_CONFIG_DEFAULT_MAX_CONNECTIONS 10000u

/* Bounds (DESIGN.md: "every size, count and connection is bounded"). */
#define RL_CONFIG_MAX_THREADS 256u
#define RL_CONFIG_MIN_BODY_BYTES 256u                   /* a reserve needs ~300 bytes */
#define RL_CONFIG_MAX_BODY_BYTES (1024u * 1024u * 1024u) /* 1 GiB */
#define RL_CONFIG_MAX_BATCH 65536u
#define RL_CONFIG_MAX_MAX_CONNECTIONS 1000000u
#define RL_CONFIG_MAX_SWEEP_INTERVAL_MS 3600000u
#define RL_CONFIG_MAX_LEASE_MEMORY_MS (7u * 24u * 3600u * 1000u)
#define RL_CONFIG_MAX_MAX_LEASES UINT64_C(1000000000)
#define RL_CONFIG_MAX_MAX_LIMITS UINT64_C(10000000)

#define RL_CONFIG_STRING_MAX 1024 /* listen_addr, backend, paths */
#define RL_CONFIG_ERR_SIZE 512

typedef struct rl_server_config {
    char listen_addr[RL_CONFIG_STRING_MAX];
    char backend[RL_CONFIG_STRING_MAX];
    uint32_t threads;        /* 0: one event loop per online core */
    uint64_t max_body_bytes; /* larger request bodies get 413 */
    uint32_t max_batch;      /* items per batch request */
    uint32_t max_connections; /* open client connections, all loops together */

    char registry_path[RL_CONFIG_STRING_MAX];
    uint64_t max_limits; /* 0: the registry's default */

    rl_memory_options memory; /* clock is always NULL (system clock) here */
} rl_server_config;

/* Fills config with the defaults above and rl_memory_options_default. */
void rl_server_config_default(rl_server_config *config);

/* Reads the YAML file at path over the values already in config (so that
 * defaults stay for what the file does not set). On error returns false, err
 * (err_size bytes) says "<path>:<line>: <what>", and config may be partly
 * overwritten: the caller must not use it. */
bool rl_server_config_load_file(rl_server_config *config, const char *path, char *err,
                                size_t err_size);

/* The same from text[0..len); name stands for the file name in messages. */
bool rl_server_config_load_string(rl_server_config *config, const char *text, size_t len,
                                  const char *name, char *err, size_t err_size);

/* Checks the values that flags can also set (listen address syntax, backend
 * name, thread count): call after applying flags. False with err on error. */
bool rl_server_config_validate(const rl_server_config *config, char *err, size_t err_size);

/* The event loops to run: config->threads, or the online cores if 0. */
uint32_t rl_server_config_thread_count(const rl_server_config *config);

#endif
