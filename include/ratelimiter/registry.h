/* ratelimiter/registry.h — the limit registry and its files (limits.json and its log).
 *
 * The registry is the authority on which limits exist: an in-memory map
 * key -> rl_limit_def, each definition with its origin (who made it: "" for
 * an explicit PUT), and beside them the templates (definitions whose key is
 * a pattern, api.md "Templates"). It is kept durable in two files:
 *
 *   limits.json      the definitions as a JSON array in key order (the
 *                    format v0.3 wrote): the snapshot;
 *   limits.json.log  every change since that snapshot, appended: a record
 *                    file (CRC-32C records) of puts and deletes of
 *                    definitions and templates, and the origins and
 *                    templates, which limits.json does not hold.
 *
 * A change is appended to the log and fdatasynced before the call returns:
 * its cost does not grow with the number of limits, and a group of changes
 * (rl_registry_apply, rl_registry_put_many) costs one sync. Opening reads
 * limits.json, then replays the log over it. When the log has grown past
 * the snapshot's size (and 1 MiB), the registry compacts: it rewrites
 * limits.json atomically (write limits.json.tmp, fsync, rename, fsync the
 * directory), then replaces the log by one holding only the templates and
 * the origins. Every record states a whole definition or a deletion, so
 * replaying a log over a snapshot that already holds it changes nothing: a
 * crash between the two steps is harmless. Closing a registry that changed
 * compacts too, so that limits.json is whole after a clean stop.
 *
 * A crash at any moment leaves each change either done or not done, never
 * half done: a record the crash cut (a torn tail) was never acknowledged and
 * is cut at the next open, with a line on stderr. Damage anywhere else (a
 * record whose checksum fails with records after it, a record this version
 * cannot read, an invalid limits.json) stops opening with a sentence naming
 * the file and the item or offset, and leaves the files as they are. An
 * existing limits.json without a log (v0.3) opens as before.
 *
 * All functions are thread-safe (one internal mutex; a change holds it
 * through its write, as reads of the registry wait for it). One process at
 * a time may change a registry's files; another may open them to read
 * (a registry that makes no change never writes, and never compacts), but
 * only between that process's writes: opening cuts what looks like a torn
 * tail, which a write in progress is. A failed call
 * changes nothing, in memory or on disk, with one exception: if the records
 * were written but the fdatasync after them (or a compaction's directory
 * fsync) failed, the changes are in the file and memory follows them, and
 * the call still reports RL_IO_ERROR.
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
#define RL_REGISTRY_MAX_TEMPLATES 10000u /* templates are counted apart from limits */
#define RL_REGISTRY_ORIGIN_MAX_LEN 63    /* bytes of printable ASCII (0x20..0x7e) */
/* Bytes of a change's err: the longest sentence about one change quotes
 * its key (or pattern) whole, in at most 255 bytes of its own words. */
#define RL_REGISTRY_ERR_SIZE (RL_KEY_MAX_LEN + 256)

/* Opens the registry stored at path (copied) and "<path>.log". A missing
 * file is an empty registry (the files are made by the first change); an
 * unreadable, corrupt or invalid file, or more than max_limits definitions
 * (0: default) or RL_REGISTRY_MAX_TEMPLATES templates, is an error: *out
 * stays NULL and err (err_size bytes) says what and where. Returns RL_OK,
 * RL_IO_ERROR (cannot read, or the log is damaged), RL_INVALID_REQUEST
 * (limits.json is corrupt or invalid, or too many) or RL_NO_MEMORY. */
RL_API rl_status rl_registry_open(const char *path, size_t max_limits, rl_registry **out, char *err,
                                  size_t err_size);

/* Compacts if this registry changed a definition since it was opened (see
 * above; a failure is only a line on stderr: the log still holds every
 * change), then frees the registry. NULL is allowed. No other call may be
 * in progress or follow. */
RL_API void rl_registry_close(rl_registry *registry);

/* Number of definitions (templates not counted). */
RL_API size_t rl_registry_count(rl_registry *registry);

/* Copies the definition of key into *out. Returns false if there is none. */
RL_API bool rl_registry_get(rl_registry *registry, const char *key, rl_limit_def *out);

/* The same, and its origin into origin ("" for an explicit put). */
RL_API bool rl_registry_get_origin(rl_registry *registry, const char *key, rl_limit_def *out,
                                   char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]);

/* Inserts or replaces def (which must pass rl_limit_def_validate), with
 * origin "", durable before it returns. On any failure (full, I/O) nothing
 * changes and err says why. Returns RL_OK, RL_INVALID_REQUEST (full or
 * invalid), RL_IO_ERROR or RL_NO_MEMORY. */
RL_API rl_status rl_registry_put(rl_registry *registry, const rl_limit_def *def, char *err,
                                 size_t err_size);

/* Puts count definitions (each must pass rl_limit_def_validate), origin "",
 * with one durable write for all of them: many admin puts, one sync. For a
 * key put more than once the last wins. All or nothing: on any failure (one
 * invalid, full, I/O) nothing changes and err says why. Same returns as
 * rl_registry_put. */
RL_API rl_status rl_registry_put_many(rl_registry *registry, const rl_limit_def *defs, size_t count, char *err,
                                      size_t err_size);

/* Removes key's definition, durable before it returns. RL_OK;
 * RL_UNKNOWN_LIMIT_KEY when the registry holds no such key (nothing
 * changes); RL_IO_ERROR / RL_NO_MEMORY (nothing changes), err says why. */
RL_API rl_status rl_registry_delete(rl_registry *registry, const char *key, char *err, size_t err_size);

/* A snapshot of every definition sorted by key, in one malloc'd array that
 * the caller frees with free(). *count may be 0 (then *out is NULL).
 * RL_OK or RL_NO_MEMORY. */
RL_API rl_status rl_registry_list(rl_registry *registry, rl_limit_def **out, size_t *count);

/* ---- groups of changes ------------------------------------------------------ */

typedef enum rl_registry_op {
    RL_REGISTRY_PUT = 0,          /* a definition: inserted or replaced */
    RL_REGISTRY_DELETE,           /* a definition, named by def.key */
    RL_REGISTRY_PUT_TEMPLATE,     /* a template, def.key its pattern */
    RL_REGISTRY_DELETE_TEMPLATE,  /* a template, named by def.key */
} rl_registry_op;

typedef struct rl_registry_change {
    rl_registry_op op;
    /* PUT*: the definition (must pass rl_limit_def_validate; a template's
     * key is its pattern, any valid key: its syntax as a pattern is the
     * caller's business). DELETE*: def.key names it, the rest is unread. */
    rl_limit_def def;
    /* PUT*: "" or who made it ("preset:openai-tier-1"): at most
     * RL_REGISTRY_ORIGIN_MAX_LEN printable ASCII bytes, kept with it. */
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl_status status; /* out: this change's outcome */
    char err[RL_REGISTRY_ERR_SIZE]; /* out: why, when status is not RL_OK */
} rl_registry_change;

/* Applies changes[0..count) in order, each seeing those before it, with one
 * durable write for the group; each gets its own status:
 *   RL_OK                 applied;
 *   RL_INVALID_REQUEST    an invalid definition or origin, an unknown op,
 *                         or a put of a new key into a full registry
 *                         (max_limits, or RL_REGISTRY_MAX_TEMPLATES): this
 *                         change only, the others still apply;
 *   RL_UNKNOWN_LIMIT_KEY  a delete of a key (pattern) the registry does not
 *                         hold at that point: this change only;
 *   RL_IO_ERROR, RL_NO_MEMORY  the group could not be written: no change
 *                         applied, each that would have gets this status.
 * Returns RL_OK when the group was written (whatever each change's status),
 * else the RL_IO_ERROR or RL_NO_MEMORY that every applicable change got, with
 * err saying why. A crash during the write may keep a first part of the
 * group's changes (none of them acknowledged yet), never part of one. */
RL_API rl_status rl_registry_apply(rl_registry *registry, rl_registry_change *changes, size_t count, char *err,
                                   size_t err_size);

/* ---- templates ---------------------------------------------------------------- */

/* One template put or deleted: rl_registry_apply of one change, with its
 * status returned (and its err copied into err). origin may be NULL (""). */
RL_API rl_status rl_registry_put_template(rl_registry *registry, const rl_limit_def *def, const char *origin,
                                          char *err, size_t err_size);
RL_API rl_status rl_registry_delete_template(rl_registry *registry, const char *pattern, char *err,
                                             size_t err_size);

/* Copies the template of pattern into *out (its key is the pattern) and, if
 * origin is not NULL, its origin. Returns false if there is none. */
RL_API bool rl_registry_get_template(rl_registry *registry, const char *pattern, rl_limit_def *out,
                                     char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]);

/* Number of templates. */
RL_API size_t rl_registry_template_count(rl_registry *registry);

/* Every template sorted by pattern, as rl_registry_list. */
RL_API rl_status rl_registry_list_templates(rl_registry *registry, rl_limit_def **out, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
