/* registry/registry_file.h — private: limits.json, the registry's snapshot,
 * read into a map and atomically rewritten from one.
 *
 * The file is a JSON array of LimitDefinition objects, one per line, in key
 * order (so that diffs of it read well): the limits.json format, as v0.3 wrote it.
 * Its items are read by the decoder of a PUT body (numbers exactly), each
 * into a compact entry (registry_entry.h), so that reading 100,000 limits
 * never holds 100,000 rl_limit_defs. Not thread-safe: the registry's mutex
 * serialises every call.
 */
#ifndef RL_REGISTRY_FILE_H
#define RL_REGISTRY_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"
#include "registry/registry_map.h"
#include "wire/buf.h"

/* Reads path into map (empty; entries with origin ""). A missing file is
 * *missing and no entry. Anything else that is not a valid array of at most
 * max_limits valid, distinct definitions is an error, with err naming the
 * path and the item: RL_IO_ERROR (cannot read), RL_INVALID_REQUEST (corrupt
 * or invalid), RL_NO_MEMORY; map is then emptied. A "<path>.tmp" is never
 * read: it is a write that did not finish. */
rl_status rl__registry_file_load(const char *path, size_t max_limits, rl__reg_map *map, bool *missing, char *err,
                                 size_t err_size);

/* The parsing half of the above: text[0..len) is a file's content, name
 * stands for its path in messages. Same results and messages, an empty text
 * included; no I/O (tests/fuzz/fuzz_registry.c feeds it). */
rl_status rl__registry_parse(const char *text, size_t len, const char *name, size_t max_limits, rl__reg_map *map,
                             char *err, size_t err_size);

/* The file's text for the definitions of map (their origins are not in it),
 * appended to out: what rl__registry_file_save writes. RL_OK or
 * RL_NO_MEMORY. */
rl_status rl__registry_text(const rl__reg_map *map, rl_buf *out);

/* Replaces the file with the definitions of map: write "<path>.tmp", fsync,
 * rename over path, fsync the directory; the directory is created if
 * missing. On failure before the rename the tmp file is removed and path is
 * untouched (*replaced false). If only the final directory fsync fails, the
 * new file is in place but may not survive a crash: *replaced is true and
 * the result RL_IO_ERROR. *bytes gets the file's size. */
rl_status rl__registry_file_save(const char *path, const rl__reg_map *map, bool *replaced, size_t *bytes,
                                 char *err, size_t err_size);

#endif
