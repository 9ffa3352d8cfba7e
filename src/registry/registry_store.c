/* registry_store.c — see registry_store.h. */
#include "registry/registry_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error_text.h"
#include "core/limit_def.h"
#include "core/path_lock.h"
#include "core/record_file.h"
#include "registry/registry_file.h"
#include "registry/registry_record.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

struct rl__reg_store {
    char *path;                /* limits.json */
    char *log_path;            /* <path>.log */
    rl__record_file *log;      /* NULL until the log exists */
    bool tidied;               /* the tmp files of an interrupted write are gone */
    bool snapshot_missing;     /* no limits.json at open, none written since */
    bool wrote;                /* this store has written a change since open */
    bool snapshot_stale;       /* limits.json lacks changes the log holds */
    uint64_t snapshot_bytes;
    uint64_t log_base_bytes;   /* the log's size after its last rewrite (0 before one) */
    uint64_t compact_at_bytes; /* 0: growth past the threshold; else not before this size */
    uint64_t compact_bytes;    /* 0: max(RL__REG_COMPACT_MIN_BYTES, snapshot_bytes) */
    rl_buf record;             /* one record being encoded */
    rl__path_lock *lock;       /* <path>.lock: one process on these files */
};

static void store_free(rl__reg_store *store) {
    if (store == NULL) return;
    rl__record_file_close(store->log);
    rl__buf_free(&store->record);
    rl__path_lock_release(store->lock);
    free(store->path);
    free(store->log_path);
    free(store);
}

/* ---- opening: limits.json, then the log replayed over it ------------------------- */

typedef struct replay {
    rl__reg_map *limits, *templates;
    bool snapshot_stale;
    bool no_memory;
    uint64_t bad_offset;
    char why[200]; /* a record that does not decode */
} replay;

/* Puts def (with origin) into map, noting whether that changes a definition
 * limits.json holds. */
static bool replay_put(replay *r, rl__reg_map *map, const rl_limit_def *def, const char *origin) {
    rl__reg_entry *entry = rl__reg_entry_new(def, origin);
    if (entry == NULL || !rl__reg_map_reserve(map, map->count + 1)) {
        free(entry);
        r->no_memory = true;
        return false;
    }
    rl__reg_entry *old = rl__reg_map_put(map, entry);
    if (map == r->limits && !r->snapshot_stale) {
        rl_limit_def before;
        if (old != NULL) rl__reg_entry_def(old, &before);
        r->snapshot_stale = old == NULL || !rl__limit_def_equal(&before, def);
    }
    free(old);
    return true;
}

static bool replay_record(const unsigned char *data, size_t len, uint64_t offset, void *context) {
    replay *r = context;
    rl__reg_record record;
    if (!rl__reg_record_decode(data, len, &record, r->why, sizeof r->why)) {
        r->bad_offset = offset;
        return false;
    }
    switch (record.op) {
    case RL_REGISTRY_PUT:
        return replay_put(r, r->limits, &record.def, record.origin);
    case RL_REGISTRY_PUT_TEMPLATE:
        return replay_put(r, r->templates, &record.def, record.origin);
    case RL_REGISTRY_DELETE: {
        /* Absent is fine: a compaction that wrote limits.json and crashed
         * before the new log leaves deletions already done in it. */
        rl__reg_entry *gone = rl__reg_map_remove(r->limits, record.def.key);
        if (gone != NULL) r->snapshot_stale = true;
        free(gone);
        return true;
    }
    case RL_REGISTRY_DELETE_TEMPLATE:
        free(rl__reg_map_remove(r->templates, record.def.key));
        return true;
    }
    return false;
}

static bool exists(const char *path) { return access(path, F_OK) == 0 || errno != ENOENT; }

rl_status rl__reg_store_open(const char *path, size_t max_limits, size_t max_templates, rl__reg_map *limits,
                             rl__reg_map *templates, rl__reg_store **out, char *err, size_t err_size) {
    *out = NULL;
    rl__reg_store *store = calloc(1, sizeof *store);
    size_t path_len = strlen(path);
    if (store == NULL || (store->path = strdup(path)) == NULL ||
        (store->log_path = malloc(path_len + sizeof ".log")) == NULL) {
        store_free(store);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    }
    memcpy(store->log_path, path, path_len);
    memcpy(store->log_path + path_len, ".log", sizeof ".log");
    rl__buf_init(&store->record);

    char *lock_path = rl__path_lock_beside(path);
    rl_status status = lock_path != NULL ? rl__path_lock_acquire(lock_path, path, &store->lock, err, err_size)
                                         : fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    free(lock_path);
    if (status != RL_OK) {
        store_free(store);
        return status;
    }
    bool missing = false;
    status = rl__registry_file_load(path, max_limits, limits, &missing, err, err_size);
    if (status == RL_OK && exists(store->log_path)) {
        replay r = {.limits = limits, .templates = templates};
        status = rl__record_file_open(store->log_path, replay_record, &r, &store->log, err, err_size);
        if (r.no_memory)
            status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", store->log_path);
        else if (status != RL_OK && r.why[0] != '\0')
            status = fail(RL_IO_ERROR, err, err_size,
                          "%s: damaged at offset %llu (a record this version cannot read: %s); the file is left "
                          "as it is: restore it from a backup, or move it away to start without what it held",
                          store->log_path, (unsigned long long)r.bad_offset, r.why);
        store->snapshot_stale = r.snapshot_stale;
        if (status == RL_OK && limits->count > max_limits)
            status = fail(RL_INVALID_REQUEST, err, err_size,
                          "%s: holds more than %zu limit definitions (max_limits) with the changes in %s", path,
                          max_limits, store->log_path);
        if (status == RL_OK && templates->count > max_templates)
            status = fail(RL_INVALID_REQUEST, err, err_size, "%s: holds more than %zu templates", store->log_path,
                          max_templates);
    }
    if (status != RL_OK) {
        rl__reg_map_free(limits);
        rl__reg_map_free(templates);
        store_free(store);
        return status;
    }
    struct stat st;
    store->snapshot_missing = missing;
    if (!missing && stat(path, &st) == 0) store->snapshot_bytes = (uint64_t)st.st_size;
    /* Where the log's compacted part ends is not known after a restart: all
     * of it counts as growth, so that a log that grew across runs is
     * compacted after the first change once it is larger than the rule. */
    store->log_base_bytes = 0;
    *out = store;
    return RL_OK;
}

/* ---- writing a group ------------------------------------------------------------------ */

/* No log yet: limits.json was the whole state at open and nothing has been
 * written since. If it was missing, that state is empty: written first, so
 * that limits.json exists beside the log. */
static rl_status make_log(rl__reg_store *store, char *err, size_t err_size) {
    if (store->snapshot_missing) {
        rl__reg_map empty;
        rl__reg_map_init(&empty);
        bool replaced = false;
        size_t bytes = 0;
        rl_status status = rl__registry_file_save(store->path, &empty, &replaced, &bytes, err, err_size);
        if (status != RL_OK) return status;
        store->snapshot_missing = false;
        store->snapshot_bytes = bytes;
    }
    rl_status status = rl__record_file_open(store->log_path, NULL, NULL, &store->log, err, err_size);
    if (status == RL_OK) store->log_base_bytes = rl__record_file_size(store->log);
    return status;
}

rl_status rl__reg_store_ready(rl__reg_store *store, char *err, size_t err_size) {
    if (store->log == NULL) {
        rl_status status = make_log(store, err, err_size);
        if (status != RL_OK) return status;
    }
    if (!store->tidied) {
        /* What an interrupted atomic write left: never read, removed by the
         * first write after a start (as v0.3 replaced it then). Only a
         * writer does it: a reader of the files leaves them alone. */
        char tmp[2][4096];
        snprintf(tmp[0], sizeof tmp[0], "%s.tmp", store->path);
        snprintf(tmp[1], sizeof tmp[1], "%s.tmp", store->log_path);
        for (int i = 0; i < 2; i++) (void)unlink(tmp[i]);
        store->tidied = true;
    }
    return RL_OK;
}

rl_status rl__reg_store_add(rl__reg_store *store, rl_registry_op op, const rl_limit_def *def, const char *origin) {
    rl__buf_reset(&store->record);
    rl__reg_record_encode(&store->record, op, def, origin);
    if (store->record.failed) {
        rl__buf_free(&store->record);
        rl__buf_init(&store->record);
        return RL_NO_MEMORY;
    }
    rl_status status = rl__record_file_append(store->log, store->record.data, store->record.len);
    if (status == RL_OK && (op == RL_REGISTRY_PUT || op == RL_REGISTRY_DELETE)) store->snapshot_stale = true;
    return status;
}

rl_status rl__reg_store_commit(rl__reg_store *store, bool *written, char *err, size_t err_size) {
    rl_status status = rl__record_file_flush(store->log, true, err, err_size);
    *written = rl__record_file_pending_bytes(store->log) == 0;
    if (!*written) rl__record_file_discard(store->log);
    else store->wrote = true;
    return status;
}

void rl__reg_store_discard(rl__reg_store *store) {
    if (store->log != NULL) rl__record_file_discard(store->log);
}

/* ---- compaction ------------------------------------------------------------------------ */

typedef struct compaction {
    rl__reg_store *store;
    const rl__reg_map *limits, *templates;
} compaction;

/* Adds the record of a put of every entry of map (only those with an
 * origin if origins_only), in key order. */
static bool add_puts(rl__record_sink *sink, rl__reg_store *store, const rl__reg_map *map, rl_registry_op op,
                     bool origins_only) {
    bool no_memory = false;
    rl__reg_entry **sorted = rl__reg_map_sorted(map, &no_memory);
    bool ok = !no_memory;
    for (size_t i = 0; ok && i < map->count; i++) {
        if (origins_only && sorted[i]->origin_len == 0) continue;
        rl_limit_def def;
        rl__reg_entry_def(sorted[i], &def);
        rl__buf_reset(&store->record);
        rl__reg_record_encode(&store->record, op, &def, rl__reg_entry_origin(sorted[i]));
        ok = !store->record.failed && rl__record_sink_add(sink, store->record.data, store->record.len);
    }
    free(sorted);
    return ok;
}

/* The new log's records: what limits.json cannot say. */
static bool compacted_records(rl__record_sink *sink, void *context) {
    compaction *c = context;
    return add_puts(sink, c->store, c->templates, RL_REGISTRY_PUT_TEMPLATE, false) &&
           add_puts(sink, c->store, c->limits, RL_REGISTRY_PUT, true);
}

rl_status rl__reg_store_compact(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates,
                                char *err, size_t err_size) {
    if (store->log == NULL) return RL_OK; /* limits.json is the whole state already */
    /* First limits.json, durably: the old log replays over it unchanged.
     * Only then the log that relies on it. */
    bool replaced = false;
    size_t bytes = 0;
    rl_status status = rl__registry_file_save(store->path, limits, &replaced, &bytes, err, err_size);
    if (status != RL_OK) return status;
    store->snapshot_missing = false;
    store->snapshot_bytes = bytes;
    compaction c = {store, limits, templates};
    status = rl__record_file_rewrite(store->log, compacted_records, &c, err, err_size);
    if (status == RL_OK) {
        store->snapshot_stale = false;
        store->log_base_bytes = rl__record_file_size(store->log);
    }
    return status;
}

static uint64_t compact_growth(const rl__reg_store *store) {
    if (store->compact_bytes > 0) return store->compact_bytes;
    return store->snapshot_bytes > RL__REG_COMPACT_MIN_BYTES ? store->snapshot_bytes : RL__REG_COMPACT_MIN_BYTES;
}

void rl__reg_store_maybe_compact(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates) {
    if (store->log == NULL) return;
    uint64_t size = rl__record_file_size(store->log);
    if (size < store->compact_at_bytes || size - store->log_base_bytes <= compact_growth(store)) return;
    char err[512] = "";
    if (rl__reg_store_compact(store, limits, templates, err, sizeof err) == RL_OK) {
        store->compact_at_bytes = 0;
        return;
    }
    store->compact_at_bytes = size + compact_growth(store);
    fprintf(stderr, "ratelimiter: %s: cannot compact the registry (every change is kept in %s): %s\n",
            store->path, store->log_path, err);
}

void rl__reg_store_close(rl__reg_store *store, const rl__reg_map *limits, const rl__reg_map *templates) {
    if (store == NULL) return;
    char err[512] = "";
    if (store->snapshot_stale && store->wrote &&
        rl__reg_store_compact(store, limits, templates, err, sizeof err) != RL_OK)
        fprintf(stderr, "ratelimiter: %s: cannot compact the registry (every change is kept in %s): %s\n",
                store->path, store->log_path, err);
    store_free(store);
}

void rl__reg_store_set_compact_bytes(rl__reg_store *store, uint64_t bytes) { store->compact_bytes = bytes; }
