/* registry_file.c — loading and atomically saving limits.json (spec §7.1). */
#include "registry/registry_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error_text.h"
#include "wire/buf.h"
#include "wire/decode_limit_def.h"
#include "wire/json_scan.h"
#include "wire/wire.h"

/* Says why in err and returns status: "return fail(RL_IO_ERROR, err, ...)". */
#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* ---- loading ---------------------------------------------------------- */


typedef struct indexed_def {
    rl_limit_def *def;
    size_t index; /* position in the file, for messages */
} indexed_def;

static int compare_indexed(const void *a, const void *b) {
    const indexed_def *x = a, *y = b;
    int c = strcmp(x->def->key, y->def->key);
    if (c != 0) return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void free_defs(rl_limit_def **defs, size_t count) {
    if (defs == NULL) return;
    for (size_t i = 0; i < count; i++) free(defs[i]);
    free(defs);
}

/* The definitions decoded so far, each malloc'd, in file order. */
typedef struct def_list {
    rl_limit_def **defs;
    size_t count, capacity;
} def_list;

/* A new definition at the end of list, or NULL without memory. */
static rl_limit_def *def_list_add(def_list *list) {
    if (list->count == list->capacity) {
        size_t grown = list->capacity > 0 ? list->capacity * 2 : 64;
        rl_limit_def **bigger = realloc(list->defs, grown * sizeof *bigger);
        if (bigger == NULL) return NULL;
        list->defs = bigger;
        list->capacity = grown;
    }
    rl_limit_def *def = malloc(sizeof *def);
    if (def != NULL) list->defs[list->count++] = def;
    return def;
}

/* What a walk over the file found, in the order it is reported: the text is
 * not JSON (the scanner says where), is not an array, holds too many items,
 * holds an invalid item (the first one). */
typedef struct file_walk {
    bool array;
    size_t items;
    bool item_invalid;
    size_t item_index;
    char item_detail[RL_WIRE_DETAIL_SIZE];
} file_walk;

/* Walks the array the scanner is at, decoding items into list up to the
 * first invalid one; the rest are only counted and checked for syntax, so
 * that a syntax error anywhere, or too many items, is what gets reported.
 * False if the text is not JSON; RL_NO_MEMORY through *no_memory. */
static bool walk_items(rl__json_scan *s, size_t max_limits, def_list *list, file_walk *walk,
                       bool *no_memory) {
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
        rl_limit_def *def = def_list_add(list);
        if (def == NULL) {
            *no_memory = true;
            return false;
        }
        uint32_t rank = RL__RANK_NONE;
        rl__json_path path = {.detail = walk->item_detail};
        if (!rl__decode_limit_def(s, "a limit definition must be a JSON object", def, &rank, &path))
            return false;
        if (rank != RL__RANK_NONE) {
            walk->item_invalid = true;
            walk->item_index = i;
        }
    }
    walk->items = i;
    return more == 0;
}

/* Sorts the definitions by key, refusing a key defined twice. */
static rl_status sort_defs(const char *name, rl_limit_def **defs, size_t count, char *err,
                           size_t err_size) {
    indexed_def *items = malloc(count * sizeof *items);
    if (items == NULL) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    for (size_t i = 0; i < count; i++) items[i] = (indexed_def){defs[i], i};
    qsort(items, count, sizeof *items, compare_indexed);
    rl_status status = RL_OK;
    for (size_t i = 1; i < count && status == RL_OK; i++) {
        if (strcmp(items[i - 1].def->key, items[i].def->key) == 0)
            status = fail(RL_INVALID_REQUEST, err, err_size,
                          "%s: item %zu: key \"%s\" is already defined by item %zu", name,
                          items[i].index, items[i].def->key, items[i - 1].index);
    }
    if (status == RL_OK)
        for (size_t i = 0; i < count; i++) defs[i] = items[i].def;
    free(items);
    return status;
}

/* rl__registry_parse on text[0..len) with a NUL at text[len], which it
 * decodes in place. */
static rl_status parse_in_place(char *text, size_t len, const char *name, size_t max_limits,
                                rl_limit_def ***out_defs, size_t *out_count, char *err,
                                size_t err_size) {
    *out_defs = NULL;
    *out_count = 0;
    if (len == 0) {
        /* A crash cannot leave an empty file (we rename complete files), so
         * this is damage or a mistake: refuse rather than start empty. */
        return fail(RL_INVALID_REQUEST, err, err_size,
                    "%s: file is empty; expected a JSON array of limit definitions", name);
    }
    rl__json_scan s;
    rl__scan_init(&s, text, len);
    def_list list = {0};
    file_walk walk = {0};
    bool no_memory = false;
    bool json = walk_items(&s, max_limits, &list, &walk, &no_memory) && rl__scan_end(&s);
    rl_status status = RL_OK;
    if (no_memory) {
        status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    } else if (!json) {
        char detail[RL_WIRE_DETAIL_SIZE];
        rl__scan_describe(s.error, s.error_at, "file", detail, sizeof detail);
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: %s", name, detail);
    } else if (!walk.array) {
        status = fail(RL_INVALID_REQUEST, err, err_size,
                      "%s: expected a JSON array of limit definitions", name);
    } else if (walk.items > max_limits) {
        status = fail(RL_INVALID_REQUEST, err, err_size,
                      "%s: holds more than %zu limit definitions (max_limits)", name, max_limits);
    } else if (walk.item_invalid) {
        status = fail(RL_INVALID_REQUEST, err, err_size, "%s: item %zu: %s", name,
                      walk.item_index, walk.item_detail);
    } else if (list.count > 0) {
        status = sort_defs(name, list.defs, list.count, err, err_size);
    }
    if (status != RL_OK || list.count == 0) {
        free_defs(list.defs, list.count);
        return status;
    }
    *out_defs = list.defs;
    *out_count = list.count;
    return RL_OK;
}

rl_status rl__registry_parse(const char *text, size_t len, const char *name, size_t max_limits,
                             rl_limit_def ***out_defs, size_t *out_count, char *err,
                             size_t err_size) {
    /* A writable copy with its NUL: the scanner decodes strings in place. */
    char *copy = len < SIZE_MAX ? malloc(len + 1) : NULL;
    if (copy == NULL) {
        *out_defs = NULL;
        *out_count = 0;
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", name);
    }
    if (len > 0) memcpy(copy, text, len);
    copy[len] = '\0';
    rl_status status =
        parse_in_place(copy, len, name, max_limits, out_defs, out_count, err, err_size);
    free(copy);
    return status;
}

rl_status rl__registry_file_load(const char *path, size_t max_limits, rl_limit_def ***out_defs,
                                 size_t *out_count, char *err, size_t err_size) {
    *out_defs = NULL;
    *out_count = 0;
    char *data = NULL;
    size_t len = 0;
    bool missing = false;
    rl_status status = rl__read_whole_file(path, &data, &len, &missing, err, err_size);
    if (status != RL_OK || missing) return status;
    status = parse_in_place(data, len, path, max_limits, out_defs, out_count, err, err_size);
    free(data);
    return status;
}

/* ---- saving ----------------------------------------------------------- */

static rl_status encode_file(rl_limit_def *const *defs, size_t count, rl_buf *buf) {
    rl__buf_append_str(buf, "[\n");
    for (size_t i = 0; i < count; i++) {
        rl__buf_append_str(buf, "  ");
        rl__wire_encode_limit_def(buf, defs[i]);
        rl__buf_append_str(buf, i + 1 < count ? ",\n" : "\n");
    }
    rl__buf_append_str(buf, "]\n");
    return buf->failed ? RL_NO_MEMORY : RL_OK;
}

/* The atomic file's writer: the encoded file, whole. */
static bool write_encoded(int fd, void *context) {
    const rl_buf *buf = context;
    return rl__write_all(fd, buf->data, buf->len) == 0;
}

rl_status rl__registry_file_save(const char *path, rl_limit_def *const *defs, size_t count,
                                 bool *replaced, char *err, size_t err_size) {
    *replaced = false;
    rl_buf buf;
    rl__buf_init(&buf);
    rl_status status = encode_file(defs, count, &buf);
    if (status != RL_OK)
        rl__error_text(err, err_size, "%s: out of memory", path);
    else
        status = rl__atomic_file_replace(path, write_encoded, &buf, replaced, err, err_size);
    rl__buf_free(&buf);
    return status;
}
