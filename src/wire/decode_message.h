/* wire/decode_message.h — private: the frame shared by reserve and complete.
 *
 * A decoded message is one malloc'd block (requests, item statuses and the
 * requirement/actual arrays they point to) plus the cJSON tree, which stays
 * alive because the requests' strings point into it. The frame parses the
 * body, sizes that block by counting list elements, and calls a per-kind
 * item decoder for each request object.
 */
#ifndef RL_WIRE_DECODE_MESSAGE_H
#define RL_WIRE_DECODE_MESSAGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "wire/decode_common.h"

typedef struct rl__item_codec {
    const char *list_field; /* "requirements" | "actuals": the per-request list */
    size_t request_size;    /* sizeof(rl_reserve_request) ... */
    size_t request_align;
    size_t entry_size;      /* sizeof(rl_requirement) ... */
    size_t entry_align;
    /* Decodes one request object into *request, its list into entries (room
     * elements available; *used says how many it took). On failure it has
     * written detail through path and returns false. */
    bool (*decode)(const cJSON *object, void *request, void *entries, size_t room, size_t *used,
                   const rl__json_path *path);
} rl__item_codec;

/* The common shape of rl_wire_reserves and rl_wire_completes. */
typedef struct rl__message {
    void *requests;
    rl_status *item_status;
    size_t count;
    void *storage;
} rl__message;

/* One request as the whole body. Any problem: RL_INVALID_REQUEST (or
 * RL_NO_MEMORY), *out zeroed. */
rl_status rl__decode_single(const char *body, size_t len, const rl__item_codec *codec,
                            rl__message *out, char detail[RL_WIRE_DETAIL_SIZE]);

/* {"requests":[...]} with 1..max_batch items (0: RL_WIRE_DEFAULT_MAX_BATCH).
 * A payload problem fails the call; an invalid item only marks its status,
 * and detail then holds the first invalid item's sentence ("" if none). */
rl_status rl__decode_batch(const char *body, size_t len, size_t max_batch,
                           const rl__item_codec *codec, rl__message *out,
                           char detail[RL_WIRE_DETAIL_SIZE]);

/* Frees a storage block and its tree. NULL is allowed. */
void rl__message_free(void *storage);

/* The sentence explaining why item index was invalid, or "" if it was valid. */
const char *rl__message_item_detail(const void *storage, size_t index);

#endif
