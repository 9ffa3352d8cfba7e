/* bench/registry/sqlite_registry.h — the alternative the registry did not
 * take, prototyped far enough to measure it (docs/benchmarks.md "The registry"):
 * definitions in an SQLite database (Debian's libsqlite3), one row each,
 * with the durability the registry promises (WAL, synchronous=FULL: a
 * change is on disk when its transaction commits), a group of changes in
 * one transaction. Nothing of it is in the library.
 *
 * Single-threaded; every call reports failure as false with a sentence in
 * err (256 bytes).
 */
#ifndef RL_BENCH_SQLITE_REGISTRY_H
#define RL_BENCH_SQLITE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"

typedef struct sq_registry sq_registry;

/* Opens (or makes) the database at path; NULL on failure. */
sq_registry *sq_open(const char *path, char err[256]);
void sq_close(sq_registry *registry);

/* Puts defs[0..count) (origin "") in one transaction. */
bool sq_put_many(sq_registry *registry, const rl_limit_def *defs, size_t count, char err[256]);
/* Deletes key in one transaction; *found says whether it was there. */
bool sq_delete(sq_registry *registry, const char *key, bool *found, char err[256]);
/* Every definition sorted by key, read and checked (rl_limit_def_validate)
 * as the registry checks its file: a malloc'd array. */
bool sq_list(sq_registry *registry, rl_limit_def **out, size_t *count, char err[256]);

#endif
