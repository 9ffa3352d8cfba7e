/* server/service.h — the registry and the backend, glued for the handlers.
 *
 * The registry is the authority on which limits exist; the backend holds
 * their live state. The service keeps the two in step: at open every
 * registry definition is applied to the backend, and an admin put persists
 * the definition first, then applies it, under one admin mutex so that two
 * puts cannot interleave their halves. The hot path (reserve, complete) goes
 * straight to the backend, which has its own lock: no lock here.
 */
#ifndef RL_SERVER_SERVICE_H
#define RL_SERVER_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/types.h"

typedef struct rl_service rl_service;

typedef struct rl_service_options {
    const char *backend_name;  /* "memory" (the only backend built so far) */
    const char *registry_path; /* limits.json; a missing file is an empty registry */
    size_t max_limits;         /* 0: RL_REGISTRY_DEFAULT_MAX_LIMITS */
    rl_memory_options memory;  /* for backend "memory" */
} rl_service_options;

/* A definition with its live usage (the admin API's LimitInfo). */
typedef struct rl_service_limit {
    rl_limit_def def;
    rl_limit_usage usage;
} rl_service_limit;

/* Opens the registry, creates the backend by name and applies every
 * definition. *out is owned by the caller (rl_service_close). On failure
 * nothing is left open, *out is NULL and err (err_size bytes) says why: an
 * unknown backend or an invalid, corrupt or unreadable registry file.
 * Returns RL_OK, RL_INVALID_REQUEST, RL_IO_ERROR, RL_NO_MEMORY or
 * RL_BACKEND_ERROR. Not thread-safe (start-up). */
rl_status rl_service_open(const rl_service_options *options, rl_service **out, char *err,
                          size_t err_size);

/* Destroys the backend, then closes the registry. No other call may be in
 * flight. NULL is allowed. */
void rl_service_close(rl_service *service);

/* The backend, for the hot path. Borrowed: valid until rl_service_close.
 * Thread-safe (the backend is). */
rl_backend *rl_service_backend(rl_service *service);

/* The backend's name ("memory"). Static string. */
const char *rl_service_backend_name(const rl_service *service);

/* Number of defined limits. Thread-safe. */
size_t rl_service_limit_count(rl_service *service);

/* Creates or updates a limit: validates def, persists it (the registry
 * rewrites its file atomically), then applies it to the backend; the state
 * after the call goes to *out_status. If validation or persisting fails
 * nothing changes. Returns RL_OK; RL_INVALID_REQUEST (invalid, or the
 * registry is full) with a sentence in err; RL_IO_ERROR or RL_NO_MEMORY
 * (persisting failed); RL_BACKEND_ERROR if the backend refused a definition
 * already persisted (then the previous definition, if any, is put back).
 * Thread-safe: puts are serialised by the admin mutex. */
rl_status rl_service_put_limit(rl_service *service, const rl_limit_def *def,
                               rl_limit_status *out_status, char *err, size_t err_size);

/* The definition of key and its live usage. Returns false if key is not
 * defined. Thread-safe. */
bool rl_service_get_limit(rl_service *service, const char *key, rl_service_limit *out);

/* Every limit sorted by key, with live usage, in one malloc'd array the
 * caller frees with free(); *count may be 0 (then *out is NULL). Returns
 * RL_OK or RL_NO_MEMORY. Thread-safe. */
rl_status rl_service_list_limits(rl_service *service, rl_service_limit **out, size_t *count);

#endif
