/* registry/registry_file.h — private: limits.json, read and atomically
 * rewritten.
 *
 * The file is a JSON array of LimitDefinition objects, one per line, in key
 * order (so that diffs of it read well). Not thread-safe: the registry's
 * mutex serialises every call.
 */
#ifndef RL_REGISTRY_FILE_H
#define RL_REGISTRY_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"

/* Reads path into a malloc'd array of malloc'd definitions sorted by key.
 * A missing file gives 0 definitions (*out_defs NULL). Anything else that is
 * not a valid array of at most max_limits valid, distinct definitions is an
 * error, with err naming the path and the item: RL_IO_ERROR (cannot read),
 * RL_INVALID_REQUEST (corrupt or invalid), RL_NO_MEMORY. A "<path>.tmp" is
 * never read: it is a write that did not finish. */
rl_status rl__registry_file_load(const char *path, size_t max_limits, rl_limit_def ***out_defs,
                                 size_t *out_count, char *err, size_t err_size);

/* The parsing half of the above: text[0..len) is a file's content, name
 * stands for its path in messages. Same results and messages, an empty text
 * included; no I/O (tests/fuzz/fuzz_registry.c feeds it). */
rl_status rl__registry_parse(const char *text, size_t len, const char *name, size_t max_limits,
                             rl_limit_def ***out_defs, size_t *out_count, char *err,
                             size_t err_size);

/* Replaces the file with defs[0..count) (in that order): write "<path>.tmp",
 * fsync, rename over path, fsync the directory; the directory is created if
 * missing. On failure before the rename the tmp file is removed and path is
 * untouched (*replaced false). If only the final directory fsync fails, the
 * new file is in place but may not survive a crash: *replaced is true and
 * the result RL_IO_ERROR. */
rl_status rl__registry_file_save(const char *path, rl_limit_def *const *defs, size_t count,
                                 bool *replaced, char *err, size_t err_size);

#endif
