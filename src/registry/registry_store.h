/* registry/registry_store.h — private: where the registry's changes become
 * durable: limits.json (registry_file.h) and its log (registry_record.h in
 * a core/record_file.h), replayed at open, appended to once per group of
 * changes, compacted (ratelimiter/registry.h says how and why that is
 * crash-safe).
 *
 * A group is written in three steps, all under the registry's mutex:
 * rl__reg_store_ready (makes the files exist), rl__reg_store_add for each
 * change that applied, then rl__reg_store_commit (one write, one
 * fdatasync) or rl__reg_store_discard if the group is given up.
 *
 * Not thread-safe: the registry's mutex serialises every call.
 */
#ifndef RL_REGISTRY_STORE_H
#define RL_REGISTRY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/registry.h"
#include "registry/registry_map.h"

/* The log is compacted when it has grown by more than the snapshot's size,
 * and by at least this much. */
#define RL__REG_COMPACT_MIN_BYTES (1u << 20)

typedef struct rl__reg_store rl__reg_store;

/* Takes "<path>.lock" until close (path_lock.h: another process on the
 * registry fails, naming its PID), reads path (limits.json) into limits,
 * then replays "<path>.log" (if there) over limits and templates, both
 * empty: a torn tail of the log is
 * cut (a line on stderr), damage refused. Refuses more than max_limits
 * definitions or max_templates templates. On failure err names the file
 * and the item or offset, the files are left as they are, and both maps
 * are emptied. RL_OK, RL_IO_ERROR, RL_INVALID_REQUEST, RL_NO_MEMORY. */
rl_status rl__reg_store_open(const char *path, size_t max_limits, size_t max_templates, rl__reg_map *limits,
                             rl__reg_map *templates, rl__reg_store **out, char *err, size_t err_size);

/* Makes sure the log can be appended to: the first time, removes the tmp
 * files an interrupted write left, and makes the log when there is none
 * (and limits.json, "[]", if there was none at open: the state then). It
 * reads no map, so it may come after a group changed them in memory.
 * RL_OK or RL_IO_ERROR / RL_NO_MEMORY with err naming the file. */
rl_status rl__reg_store_ready(rl__reg_store *store, char *err, size_t err_size);

/* Buffers the record of one change (registry_record.h). RL_OK or
 * RL_NO_MEMORY (nothing buffered). */
rl_status rl__reg_store_add(rl__reg_store *store, rl_registry_op op, const rl_limit_def *def, const char *origin);

/* Writes what was added and fdatasyncs. On failure *written says whether
 * the records reached the file anyway (only the sync failed: they count as
 * done) or not (they were dropped: the group did not happen). */
rl_status rl__reg_store_commit(rl__reg_store *store, bool *written, char *err, size_t err_size);

/* Drops what was added and not written. */
void rl__reg_store_discard(rl__reg_store *store);

/* After a commit: compacts if the log has grown enough (a failure is a line
 * on stderr, and the next attempt waits for as much growth again). */
void rl__reg_store_maybe_compact(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates);

/* Compacts now: rewrites limits.json from limits, then the log with a
 * record for each template and each definition that has an origin.
 * RL_OK, or why not in err (the files then still hold the same state). */
rl_status rl__reg_store_compact(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates,
                                char *err, size_t err_size);

/* Compacts if limits.json is behind the definitions and this store wrote
 * since open (one that only read leaves the files to their writer; a
 * failure is a line on stderr), then frees the store. NULL is allowed. */
void rl__reg_store_close(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates);

/* Tests: compact once the log has grown by bytes, whatever the snapshot's
 * size (0: as by default). */
void rl__reg_store_set_compact_bytes(rl__reg_store *store, uint64_t bytes);

#endif
