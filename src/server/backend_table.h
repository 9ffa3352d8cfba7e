/* server/backend_table.h — the backends this daemon can run, by name.
 *
 * One table: the config checks a name against it, the service creates the
 * backend from it, and an unknown name is answered with the names it holds.
 * A backend is taken only if it speaks this build's backend ABI
 * (ratelimiter/backend.h: RL_BACKEND_ABI_VERSION): one built for another
 * would call through a vtable of another shape. Pure lookups, thread-safe.
 */
#ifndef RL_SERVER_BACKEND_TABLE_H
#define RL_SERVER_BACKEND_TABLE_H

#include <stddef.h>

#include "ratelimiter/backend.h"

struct rl_service_options;

/* Creates the backend from options; on failure err (err_size bytes) says
 * why, naming what the operator set (a store's address). */
typedef rl_status (*rl_backend_create_fn)(const struct rl_service_options *options, rl_backend **out, char *err,
                                          size_t err_size);

typedef struct rl_backend_kind {
    const char *name; /* as in server.backend, --backend */
    rl_backend_create_fn create;
} rl_backend_kind;

/* The kind named name, or NULL. */
const rl_backend_kind *rl_backend_kind_find(const char *name);

/* "backend "<name>" is not available in this build (use "memory" or "redis")". */
void rl_backend_kind_unknown(const char *name, char *err, size_t err_size);

/* RL_OK if backend speaks this build's ABI; else RL_INVALID_REQUEST with
 * a sentence naming both versions. */
rl_status rl_backend_abi_check(const rl_backend *backend, char *err, size_t err_size);

#endif
