/* ratelimiter/registry.h — the limit registry and its file (spec §7).
 *
 * The registry is the authority on which limits exist: an in-memory map
 * key -> rl_limit_def, persisted as a JSON array of definitions in one file
 * (limits.json). Every change rewrites the file atomically: write
 * "<path>.tmp", fsync it, rename it over the file, fsync the directory; so a
 * crash at any moment leaves either the old file or the new one.
 *
 * All functions are thread-safe (one internal mutex). A failed call changes
 * nothing, in memory or on disk, with one exception: if only the last step,
 * the fsync of the directory after the rename, fails, the new file is in
 * place and memory follows it, and the call still reports RL_IO_ERROR.
 */
#ifndef RATELIMITER_REGISTRY_H
#define RATELIMITER_REGISTRY_H

#include "ratelimiter/export.h"

#include <stddef.h>

#include "ratelimiter/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_registry rl_registry;

#define RL_REGISTRY_DEFAULT_MAX_LIMITS 100000u

/* Opens the registry stored at path (copied). A missing file is an empty
 * registry (the file is created by the first put); an unreadable, corrupt or
 * invalid file, or one with more than max_limits definitions (0: default), is
 * an error: *out stays NULL and err (err_size bytes) says what and where.
 * Returns RL_OK, RL_IO_ERROR, RL_INVALID_REQUEST or RL_NO_MEMORY. */
RL_API rl_status rl_registry_open(const char *path, size_t max_limits, rl_registry **out, char *err,
                                  size_t err_size);

/* Frees the registry (the file stays). NULL is allowed. */
RL_API void rl_registry_close(rl_registry *registry);

/* Number of definitions. */
RL_API size_t rl_registry_count(rl_registry *registry);

/* Copies the definition of key into *out. Returns false if there is none. */
RL_API bool rl_registry_get(rl_registry *registry, const char *key, rl_limit_def *out);

/* Inserts or replaces def (which must pass rl_limit_def_validate) and
 * rewrites the file before returning. On any failure (full, I/O) nothing
 * changes and err says why. Returns RL_OK, RL_INVALID_REQUEST (full or
 * invalid), RL_IO_ERROR or RL_NO_MEMORY. */
RL_API rl_status rl_registry_put(rl_registry *registry, const rl_limit_def *def, char *err,
                                 size_t err_size);

/* Puts count definitions (each must pass rl_limit_def_validate) and rewrites
 * the file once for all of them: many admin puts, one write. For a key put
 * more than once the last wins. All or nothing: on any failure (one invalid,
 * full, I/O) nothing changes and err says why. Same returns as
 * rl_registry_put. */
RL_API rl_status rl_registry_put_many(rl_registry *registry, const rl_limit_def *defs, size_t count, char *err,
                                      size_t err_size);

/* Removes the definition of key and rewrites the file before returning.
 * Returns RL_OK; RL_UNKNOWN_LIMIT_KEY when there is none (nothing
 * changes); RL_IO_ERROR or RL_NO_MEMORY, with err saying why (nothing
 * changes, but for the directory fsync said above). */
RL_API rl_status rl_registry_delete(rl_registry *registry, const char *key, char *err, size_t err_size);

/* A snapshot of every definition sorted by key, in one malloc'd array that
 * the caller frees with free(). *count may be 0 (then *out is NULL). */
RL_API rl_status rl_registry_list(rl_registry *registry, rl_limit_def **out, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
