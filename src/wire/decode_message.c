/* decode_message.c — allocate once, copy the body, walk it once. */
#include "wire/decode_message.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header of the one block; requests, statuses, entries and the text follow. */
typedef struct storage {
    size_t count;       /* slots of item_detail: the requests */
    char **item_detail; /* NULL until an item fails: most batches have none */
} storage;

/* A decode in progress: the block's parts and the scanner over its text. */
typedef struct frame {
    storage *storage;
    char *requests;
    rl_status *status;
    size_t capacity; /* request slots */
    char *entries;   /* the next free entry */
    size_t room;     /* entries left */
    rl__json_scan scan;
} frame;

typedef enum walk { WALK_DONE, WALK_SYNTAX, WALK_NO_MEMORY } walk;

static size_t align_up(size_t offset, size_t alignment) {
    return (offset + alignment - 1) / alignment * alignment;
}

/* Allocates the block for up to `requests` requests and copies the body into
 * it, a NUL after it (the scanner's sentinel). Only valid list elements are
 * stored, each at least min_entry_bytes of the body, so len / that many
 * entries always suffice: no pre-pass counts them. */
static bool frame_new(frame *f, const char *body, size_t len, size_t requests,
                      const rl__item_codec *codec) {
    if (len > SIZE_MAX / 64) return false; /* keeps the sums below from wrapping */
    size_t entries = len / codec->min_entry_bytes;
    if (entries > requests * RL_MAX_REQUIREMENTS) entries = requests * RL_MAX_REQUIREMENTS;
    size_t requests_at = align_up(sizeof(storage), codec->request_align);
    size_t status_at = align_up(requests_at + requests * codec->request_size, alignof(rl_status));
    size_t entries_at = align_up(status_at + requests * sizeof(rl_status), codec->entry_align);
    size_t text_at = entries_at + entries * codec->entry_size;
    char *block = malloc(text_at + len + 1);
    if (block == NULL) return false;
    f->storage = (storage *)block;
    f->storage->count = requests;
    f->storage->item_detail = NULL;
    f->requests = block + requests_at;
    f->status = (rl_status *)(block + status_at);
    f->capacity = requests;
    f->entries = block + entries_at;
    f->room = entries;
    memcpy(block + text_at, body, len);
    block[text_at + len] = '\0';
    rl__scan_init(&f->scan, block + text_at, len);
    return true;
}

void rl__message_free(void *storage_block) {
    storage *s = storage_block;
    if (s == NULL) return;
    if (s->item_detail != NULL) {
        for (size_t i = 0; i < s->count; i++) free(s->item_detail[i]);
        free(s->item_detail);
    }
    free(s);
}

const char *rl__message_item_detail(const void *storage_block, size_t index) {
    const storage *s = storage_block;
    if (s == NULL || index >= s->count || s->item_detail == NULL || s->item_detail[index] == NULL)
        return "";
    return s->item_detail[index];
}

static void publish(frame *f, size_t count, rl__message *out) {
    f->storage->count = count;
    out->requests = f->requests;
    out->item_status = f->status;
    out->count = count;
    out->storage = f->storage;
}

static rl_status refuse(frame *f, rl_status status, rl__message *out) {
    rl__message_free(f->storage);
    memset(out, 0, sizeof *out);
    return status;
}

/* Decodes the request the scanner is at into slot index (zeroed unless it
 * is valid: *rank is then still RL__RANK_NONE). False on a syntax error. */
static bool decode_item(frame *f, const rl__item_codec *codec, size_t index,
                        const char *not_object, uint32_t *rank, const rl__json_path *path) {
    void *request = f->requests + index * codec->request_size;
    memset(request, 0, codec->request_size);
    if (rl__scan_peek(&f->scan) != '{') {
        if (!rl__scan_skip(&f->scan)) return false;
        rl__json_note(rank, RL__RANK_TWICE, path, NULL, "%s", not_object);
        return true;
    }
    rl__lease_fields fields;
    if (!rl__decode_lease_object(&f->scan, codec->list, &fields, rank, path)) return false;
    if (*rank != RL__RANK_NONE) return true;
    if (fields.count > f->room) { /* cannot happen: see frame_new; memory safety first */
        rl__json_note(rank, RL__RANK_LIST, path, codec->list->name,
                      "has more elements than the body can hold");
        return true;
    }
    codec->store(&fields, request, f->entries);
    f->entries += fields.count * codec->entry_size;
    f->room -= fields.count;
    return true;
}

static rl_status empty_body(char *detail) {
    snprintf(detail, RL_WIRE_DETAIL_SIZE, "body is empty");
    return RL_INVALID_REQUEST;
}

static rl_status no_memory(char *detail) {
    snprintf(detail, RL_WIRE_DETAIL_SIZE, "out of memory");
    return RL_NO_MEMORY;
}

rl_status rl__decode_single(const char *body, size_t len, const rl__item_codec *codec,
                            rl__message *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    detail[0] = '\0';
    if (body == NULL || len == 0) return empty_body(detail);
    frame f;
    if (!frame_new(&f, body, len, 1, codec)) return no_memory(detail);
    uint32_t rank = RL__RANK_NONE;
    rl__json_path path = {.detail = detail};
    if (!decode_item(&f, codec, 0, "body must be a JSON object", &rank, &path) ||
        !rl__scan_end(&f.scan)) {
        /* Not JSON wins over a field problem noted before the error. */
        rl__scan_describe(f.scan.error, f.scan.error_at, "body", detail, RL_WIRE_DETAIL_SIZE);
        return refuse(&f, RL_INVALID_REQUEST, out);
    }
    if (rank != RL__RANK_NONE) return refuse(&f, RL_INVALID_REQUEST, out);
    f.status[0] = RL_OK;
    publish(&f, 1, out);
    return RL_OK;
}

/* Remembers why item index failed, for rl__message_item_detail. Error path
 * only: a batch of valid requests allocates nothing here. */
static bool keep_item_detail(storage *s, size_t index, const char *item_detail) {
    if (s->item_detail == NULL) {
        s->item_detail = calloc(s->count, sizeof *s->item_detail);
        if (s->item_detail == NULL) return false;
    }
    s->item_detail[index] = strdup(item_detail);
    return s->item_detail[index] != NULL;
}

/* The payload's problems rank by the order a tree decoder checked them. */
enum { PAYLOAD_TWICE, PAYLOAD_REQUESTS };

/* The value of "requests" (the scanner at it): every item decoded into its
 * slot; detail gets the first invalid item's sentence. */
static walk decode_requests(frame *f, const rl__item_codec *codec, size_t max_batch,
                            size_t *count, uint32_t *payload_rank, const rl__json_path *top,
                            char *detail) {
    rl__json_scan *s = &f->scan;
    size_t i = 0;
    if (rl__scan_peek(s) != '[') {
        if (!rl__scan_skip(s)) return WALK_SYNTAX;
    } else {
        if (!rl__scan_array_open(s)) return WALK_SYNTAX;
        int more;
        for (; (more = rl__scan_element(s, i)) > 0; i++) {
            if (i >= f->capacity) { /* too many: counted, checked, not decoded */
                if (!rl__scan_skip(s)) return WALK_SYNTAX;
                continue;
            }
            char item_detail[RL_WIRE_DETAIL_SIZE];
            rl__json_path path = {.detail = item_detail, .outer = "requests", .outer_index = i};
            uint32_t rank = RL__RANK_NONE;
            if (!decode_item(f, codec, i, "must be an object", &rank, &path)) return WALK_SYNTAX;
            if (rank == RL__RANK_NONE) {
                f->status[i] = RL_OK;
                continue;
            }
            /* The request stays zeroed but must not be used: its status says so. */
            f->status[i] = RL_INVALID_REQUEST;
            if (detail[0] == '\0') snprintf(detail, RL_WIRE_DETAIL_SIZE, "%s", item_detail);
            if (!keep_item_detail(f->storage, i, item_detail)) return WALK_NO_MEMORY;
        }
        if (more < 0) return WALK_SYNTAX;
    }
    *count = i;
    if (i < 1 || i > max_batch || i > f->capacity)
        rl__json_note(payload_rank, PAYLOAD_REQUESTS, top, "requests",
                      "must be an array of 1..%zu requests", max_batch);
    return WALK_DONE;
}

/* The body's object: "requests" once, anything else skipped. */
static walk decode_payload(frame *f, const rl__item_codec *codec, size_t max_batch,
                           size_t *count, uint32_t *payload_rank, const rl__json_path *top,
                           char *detail) {
    rl__json_scan *s = &f->scan;
    if (rl__scan_peek(s) != '{') {
        if (!rl__scan_skip(s)) return WALK_SYNTAX;
        rl__json_note(payload_rank, PAYLOAD_TWICE, top, NULL, "body must be a JSON object");
        return WALK_DONE;
    }
    if (!rl__scan_object_open(s)) return WALK_SYNTAX;
    bool seen = false;
    char *name;
    size_t len;
    int more;
    for (size_t m = 0; (more = rl__scan_member(s, m, &name, &len)) > 0; m++) {
        if (len != 8 || memcmp(name, "requests", 8) != 0) {
            if (!rl__scan_skip(s)) return WALK_SYNTAX;
        } else if (seen) {
            rl__json_note(payload_rank, PAYLOAD_TWICE, top, "requests", "appears twice");
            if (!rl__scan_skip(s)) return WALK_SYNTAX;
        } else {
            seen = true;
            walk w = decode_requests(f, codec, max_batch, count, payload_rank, top, detail);
            if (w != WALK_DONE) return w;
        }
    }
    if (more < 0) return WALK_SYNTAX;
    if (!seen) rl__json_note(payload_rank, PAYLOAD_REQUESTS, top, "requests", "is required");
    return WALK_DONE;
}

rl_status rl__decode_batch(const char *body, size_t len, size_t max_batch,
                           const rl__item_codec *codec, rl__message *out,
                           char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    detail[0] = '\0';
    if (max_batch == 0) max_batch = RL_WIRE_DEFAULT_MAX_BATCH;
    if (body == NULL || len == 0) return empty_body(detail);
    /* An item takes at least a byte and a comma. */
    size_t capacity = len / 2 + 1;
    if (capacity > max_batch) capacity = max_batch;
    frame f;
    if (!frame_new(&f, body, len, capacity, codec)) return no_memory(detail);
    char payload[RL_WIRE_DETAIL_SIZE];
    uint32_t payload_rank = RL__RANK_NONE;
    rl__json_path top = {.detail = payload};
    size_t count = 0;
    walk w = decode_payload(&f, codec, max_batch, &count, &payload_rank, &top, detail);
    if (w == WALK_DONE && !rl__scan_end(&f.scan)) w = WALK_SYNTAX;
    switch (w) {
    case WALK_NO_MEMORY:
        no_memory(detail);
        return refuse(&f, RL_NO_MEMORY, out);
    case WALK_SYNTAX:
        rl__scan_describe(f.scan.error, f.scan.error_at, "body", detail, RL_WIRE_DETAIL_SIZE);
        return refuse(&f, RL_INVALID_REQUEST, out);
    case WALK_DONE:
        break;
    }
    if (payload_rank != RL__RANK_NONE) {
        snprintf(detail, RL_WIRE_DETAIL_SIZE, "%s", payload);
        return refuse(&f, RL_INVALID_REQUEST, out);
    }
    publish(&f, count, out);
    return RL_OK;
}
