/* registry_file.c — reading limits.json into a map and atomically saving
 * it (its format: docs/operations.md). */
#include "registry/registry_file.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "core/error_text.h"
#include "core/regular_file.h"
#include "wire/decode_limit_def.h"
#include "wire/json_scan.h"
#include "wire/wire.h"

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* ---- loading ---------------------------------------------------------- */

/* What a walk over the file found, in the order it is reported: the text is
 * not JSON (the scanner says where), is not an array, holds too many items,
 * holds an invalid item (the first one), holds a key twice (the first item
 * that repeats one). */
typedef struct file_walk {
    rl__reg_map *map;
    rl__reg_entry **in_order; /* the entries taken, in file order: names a repeat's first item */
    size_t taken;
    bool array;
    size_t items;
    bool item_invalid;
    size_t item_index;
    char item_detail[RL_WIRE_DETAIL_SIZE];
    bool repeated;
    size_t repeat_index, first_index;
    char repeat_key[RL_KEY_MAX_LEN + 1];
    bool no_memory;
} file_walk;

/* Takes def (item i, valid) into the map, or notes it as a repeat. */
static bool take(file_walk *walk, const rl_limit_def *def, size_t i) {
    rl__reg_entry *before = rl__reg_map_find(walk->map, def->key);
    if (before != NULL) {
        if (!walk->repeated) {
            walk->repeated = true;
            walk->repeat_index = i;
            snprintf(walk->repeat_key, sizeof walk->repeat_key, "%s", def->key);
            for (size_t j = 0; j < walk->taken; j++)
                if (walk->in_order[j] == before) walk->first_index = j;
        }
        walk->in_order[walk->taken++] = NULL;
        return true;
    }
    rl__reg_entry *entry = rl__reg_entry_new(def, "");
    if (entry == NULL || !rl__reg_map_reserve(walk->map, walk->map->count + 1)) {
        free(entry);
        walk->no_memory = true;
        return false;
    }
    (void)rl__reg_map_put(walk->map, entry);
    walk->in_order[walk->taken++] = entry;
    return true;
}

/* Walks the array the scanner is at, taking items into the map up to the
 * first invalid one; the rest are only counted and checked for syntax, so
 * that a syntax error anywhere, or too many items, is what gets reported.
 * False if the text is not JSON, or without memory. */
static bool walk_items(rl__json_scan *s, size_t max_limits, file_walk *walk) {
    if (rl__scan_peek(s) != '[') return rl__scan_skip(s);
    walk->array = true;
    if (!rl__scan_array_open(s)) return false;
    int more;
    size_t i = 0;
    for (; (more = rl__scan_element(s, i)) > 0; i++) {
        if (walk->item_invalid || i >= max_limits) {
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        rl_limit_def def;
        uint32_t rank = RL__RANK_NONE;
        rl__json_path path = {.detail = walk->item_detail};
        if (!rl__decode_limit_def(s, "a limit definition must be a JSON object", &def, &rank, &path))
            return false;
        if (rank != RL__RANK_NONE) {
            walk->item_invalid = true;
            walk->item_index = i;
        } else if (!take(walk, &def, i)) {
            return false;
        }
    }
    walk->items = i;
    return more == 0;
}

/* rl__registry_parse on text[0..len) with a NUL at text[len], which it
 * decodes in place. */
static rl_status parse_in_place(char *text, size_t len, const char *name, size_t max_limits, rl__reg_map *map,
                                char *err, size_t err_size) {
    if (len == 0) {
        /* A crash cannot leave an empty file (we rename complete files), so
         * this is damage or a mistake: refuse rather than start empty. */
        return fail(RL_INVALID_REQUEST, err, err_size,
                    "%s: file is empty; expected a JSON array of limit definitions", name);
    }
    /* Items come one a line at least: len bounds their number. */
    size_t most = max_limits < len ? max_limits : len;
    file_walk walk = {.map = map, .in_order = malloc(most * sizeof *walk.in_order)};
    if (walk.in_order == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    rl__json_scan s;
    rl__scan_init(&s, text, len);
    bool json = walk_items(&s, max_limits, &walk) && rl__scan_end(&s);
    free(walk.in_order);
    rl_status status = RL_OK;
    if (walk.no_memory) {
        status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    } else if (!json) {
        char detail[RL_WIRE_DETAIL_SIZE];
        rl__scan_describe(s.error, s.error_at, "file", detail, sizeof detail);
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: %s", name, detail);
    } else if (!walk.array) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: expected a JSON array of limit definitions", name);
    } else if (walk.items > max_limits) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: holds more than %zu limit definitions (max_limits)",
                      name, max_limits);
    } else if (walk.item_invalid) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: item %zu: %s", name, walk.item_index,
                      walk.item_detail);
    } else if (walk.repeated) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: item %zu: key \"%s\" is already defined by item %zu",
                      name, walk.repeat_index, walk.repeat_key, walk.first_index);
    }
    if (status != RL_OK) rl__reg_map_free(map);
    return status;
}

rl_status rl__registry_parse(const char *text, size_t len, const char *name, size_t max_limits, rl__reg_map *map,
                             char *err, size_t err_size) {
    /* A writable copy with its NUL: the scanner decodes strings in place. */
    char *copy = len < SIZE_MAX ? malloc(len + 1) : NULL;
    if (copy == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    if (len > 0) memcpy(copy, text, len);
    copy[len] = '\0';
    rl_status status = parse_in_place(copy, len, name, max_limits, map, err, err_size);
    free(copy);
    return status;
}

rl_status rl__registry_file_load(const char *path, size_t max_limits, rl__reg_map *map, bool *missing, char *err,
                                 size_t err_size) {
    char *data = NULL;
    size_t len = 0;
    *missing = false;
    rl_status status = rl__read_whole_file(path, SIZE_MAX, &data, &len, missing, err, err_size);
    if (status != RL_OK || *missing) return status;
    status = parse_in_place(data, len, path, max_limits, map, err, err_size);
    free(data);
    return status;
}

/* ---- saving ----------------------------------------------------------- */

/* Item i of count: its line. */
static void encode_item(rl_buf *buf, const rl__reg_entry *entry, size_t i, size_t count) {
    rl_limit_def def;
    rl__reg_entry_def(entry, &def);
    rl__buf_append_str(buf, "  ");
    rl__wire_encode_limit_def(buf, &def);
    rl__buf_append_str(buf, i + 1 < count ? ",\n" : "\n");
}

/* The file, through buf; flush(buf, context) empties it whenever it holds
 * at least flush_bytes (and at the end). False if flush failed or memory
 * ran out (*no_memory). */
static bool encode_file(const rl__reg_map *map, rl_buf *buf, size_t flush_bytes,
                        bool (*flush)(rl_buf *buf, void *context), void *context, bool *no_memory) {
    rl__reg_entry **sorted = rl__reg_map_sorted(map, no_memory);
    if (*no_memory) return false;
    bool ok = true;
    rl__buf_append_str(buf, "[\n");
    for (size_t i = 0; ok && i < map->count; i++) {
        encode_item(buf, sorted[i], i, map->count);
        if (buf->len >= flush_bytes && !buf->failed) ok = flush(buf, context);
    }
    rl__buf_append_str(buf, "]\n");
    free(sorted);
    if (buf->failed) {
        *no_memory = true;
        return false;
    }
    return ok && flush(buf, context);
}

static bool keep_all(rl_buf *buf, void *context) {
    (void)buf;
    (void)context;
    return true;
}

rl_status rl__registry_text(const rl__reg_map *map, rl_buf *out) {
    bool no_memory = false;
    return encode_file(map, out, SIZE_MAX, keep_all, NULL, &no_memory) ? RL_OK : RL_NO_MEMORY;
}

typedef struct file_writer {
    const rl__reg_map *map;
    int fd;
    size_t bytes;
    bool no_memory;
} file_writer;

static bool write_chunk(rl_buf *buf, void *context) {
    file_writer *writer = context;
    if (rl__write_all(writer->fd, buf->data, buf->len) != 0) return false;
    writer->bytes += buf->len;
    rl__buf_reset(buf);
    return true;
}

/* The atomic file's writer: the file, 64 KiB at a time. */
static bool write_file(int fd, void *context) {
    file_writer *writer = context;
    writer->fd = fd;
    rl_buf buf;
    rl__buf_init(&buf);
    bool ok = encode_file(writer->map, &buf, 64 * 1024, write_chunk, writer, &writer->no_memory);
    rl__buf_free(&buf);
    return ok;
}

rl_status rl__registry_file_save(const char *path, const rl__reg_map *map, bool *replaced, size_t *bytes,
                                 char *err, size_t err_size) {
    file_writer writer = {.map = map};
    rl_status status = rl__atomic_file_replace(path, write_file, &writer, replaced, err, err_size);
    if (writer.no_memory) status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    *bytes = writer.bytes;
    return status;
}
