/* decode_message.c — parse, size, allocate once, decode every item. */
#include "wire/decode_message.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header of the one block; requests, statuses and entries follow it. */
typedef struct storage {
    cJSON *root;
    size_t count;
    char **item_detail; /* NULL until an item fails: most batches have none */
    void *entries;      /* where the requirement/actual arrays go */
} storage;

static size_t align_up(size_t offset, size_t alignment) {
    return (offset + alignment - 1) / alignment * alignment;
}

/* Elements the item's list will need: decoders refuse longer lists before
 * writing, so counting up to the limit is enough. */
static size_t list_room(const cJSON *item, const char *list_field) {
    if (!cJSON_IsObject(item)) return 0;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(item, list_field);
    if (!cJSON_IsArray(list)) return 0;
    size_t count = rl__json_array_count(list, RL_MAX_REQUIREMENTS);
    return count > RL_MAX_REQUIREMENTS ? 0 : count;
}

static rl_status no_memory(cJSON *root, char *detail) {
    cJSON_Delete(root);
    snprintf(detail, RL_WIRE_DETAIL_SIZE, "out of memory");
    return RL_NO_MEMORY;
}

/* Allocates the block for count items whose lists need entries elements. */
static storage *storage_new(cJSON *root, size_t count, size_t entries, const rl__item_codec *codec,
                            rl__message *out) {
    size_t requests_at = align_up(sizeof(storage), codec->request_align);
    size_t status_at = align_up(requests_at + count * codec->request_size, alignof(rl_status));
    size_t entries_at = align_up(status_at + count * sizeof(rl_status), codec->entry_align);
    size_t total = entries_at + entries * codec->entry_size;
    char *block = malloc(total);
    if (block == NULL) return NULL;
    storage *s = (storage *)block;
    s->root = root;
    s->count = count;
    s->item_detail = NULL;
    s->entries = block + entries_at;
    memset(block + requests_at, 0, count * codec->request_size);
    out->requests = block + requests_at;
    out->item_status = (rl_status *)(block + status_at);
    out->count = count;
    out->storage = s;
    return s;
}

void rl__message_free(void *storage_block) {
    storage *s = storage_block;
    if (s == NULL) return;
    if (s->item_detail != NULL) {
        for (size_t i = 0; i < s->count; i++) free(s->item_detail[i]);
        free(s->item_detail);
    }
    cJSON_Delete(s->root);
    free(s);
}

const char *rl__message_item_detail(const void *storage_block, size_t index) {
    const storage *s = storage_block;
    if (s == NULL || index >= s->count || s->item_detail == NULL || s->item_detail[index] == NULL)
        return "";
    return s->item_detail[index];
}

rl_status rl__decode_single(const char *body, size_t len, const rl__item_codec *codec,
                            rl__message *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    detail[0] = '\0';
    cJSON *root = rl__json_parse_object(body, len, detail);
    if (root == NULL) return RL_INVALID_REQUEST;
    size_t room = list_room(root, codec->list_field);
    storage *s = storage_new(root, 1, room, codec, out);
    if (s == NULL) return no_memory(root, detail);
    rl__json_path path = {.detail = detail};
    size_t used = 0;
    if (!codec->decode(root, out->requests, s->entries, room, &used, &path)) {
        rl__message_free(s);
        memset(out, 0, sizeof *out);
        return RL_INVALID_REQUEST;
    }
    out->item_status[0] = RL_OK;
    return RL_OK;
}

/* Remembers why item index failed, for rl__message_item_detail. */
static bool keep_item_detail(storage *s, size_t index, const char *item_detail) {
    if (s->item_detail == NULL) {
        s->item_detail = calloc(s->count, sizeof *s->item_detail);
        if (s->item_detail == NULL) return false;
    }
    s->item_detail[index] = strdup(item_detail);
    return s->item_detail[index] != NULL;
}

rl_status rl__decode_batch(const char *body, size_t len, size_t max_batch,
                           const rl__item_codec *codec, rl__message *out,
                           char detail[RL_WIRE_DETAIL_SIZE]) {
    memset(out, 0, sizeof *out);
    detail[0] = '\0';
    if (max_batch == 0) max_batch = RL_WIRE_DEFAULT_MAX_BATCH;
    cJSON *root = rl__json_parse_object(body, len, detail);
    if (root == NULL) return RL_INVALID_REQUEST;

    rl__json_path top = {.detail = detail};
    static const char *const names[1] = {"requests"};
    const cJSON *requests = NULL;
    size_t count = 0;
    if (!rl__json_members(root, names, 1, &requests, &top)) goto invalid;
    if (requests == NULL) {
        rl__json_fail(&top, "requests", "is required");
        goto invalid;
    }
    count = cJSON_IsArray(requests) ? rl__json_array_count(requests, max_batch) : 0;
    if (count < 1 || count > max_batch) {
        rl__json_fail(&top, "requests", "must be an array of 1..%zu requests", max_batch);
        goto invalid;
    }

    size_t entries = 0;
    for (const cJSON *item = requests->child; item != NULL; item = item->next)
        entries += list_room(item, codec->list_field);
    storage *s = storage_new(root, count, entries, codec, out);
    if (s == NULL) return no_memory(root, detail);

    char *cursor = s->entries;
    size_t room = entries;
    size_t index = 0;
    char item_detail[RL_WIRE_DETAIL_SIZE];
    for (const cJSON *item = requests->child; item != NULL; item = item->next, index++) {
        rl__json_path path = {.detail = item_detail, .outer = "requests", .outer_index = index};
        void *request = (char *)out->requests + index * codec->request_size;
        size_t used = 0;
        bool ok = cJSON_IsObject(item)
                      ? codec->decode(item, request, cursor, room, &used, &path)
                      : rl__json_fail(&path, NULL, "must be an object");
        if (ok) {
            out->item_status[index] = RL_OK;
            cursor += used * codec->entry_size;
            room -= used;
            continue;
        }
        /* The request stays zeroed but must not be used: its status says so. */
        memset(request, 0, codec->request_size);
        out->item_status[index] = RL_INVALID_REQUEST;
        if (detail[0] == '\0') snprintf(detail, RL_WIRE_DETAIL_SIZE, "%s", item_detail);
        if (!keep_item_detail(s, index, item_detail)) {
            rl__message_free(s);
            memset(out, 0, sizeof *out);
            snprintf(detail, RL_WIRE_DETAIL_SIZE, "out of memory");
            return RL_NO_MEMORY;
        }
    }
    return RL_OK;

invalid:
    cJSON_Delete(root);
    return RL_INVALID_REQUEST;
}
