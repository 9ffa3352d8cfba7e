/* wire/decode_message.h — private: the frame shared by reserve and complete.
 *
 * A decoded message is one malloc'd block: a small header, the requests,
 * their statuses, the requirement/actual arrays they point to, and a copy
 * of the body, which the scanner (json_scan.h) decodes in place so that
 * every string of the message points into it. The frame sizes the block
 * from the body's length (no pre-pass), walks the body once, and hands each
 * request object to decode_fields.h; a per-kind codec stores what it read.
 */
#ifndef RL_WIRE_DECODE_MESSAGE_H
#define RL_WIRE_DECODE_MESSAGE_H

#include <stddef.h>

#include "wire/decode_fields.h"

typedef struct rl__item_codec {
    const rl__list_spec *list;
    size_t request_size; /* sizeof(rl_reserve_request) ... */
    size_t request_align;
    size_t entry_size;   /* sizeof(rl_requirement) ... */
    size_t entry_align;
    /* The length of the shortest valid list element, e.g.
     * {"key":"k","amount":1}: a body of n bytes holds at most n / this many,
     * which bounds the entries the block must have room for. */
    size_t min_entry_bytes;
    /* Stores a valid request: its fields into *request, its list
     * (fields->count elements) into entries. */
    void (*store)(const rl__lease_fields *fields, void *request, void *entries);
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

/* Frees a storage block. NULL is allowed. */
void rl__message_free(void *storage);

/* The sentence explaining why item index was invalid, or "" if it was valid. */
const char *rl__message_item_detail(const void *storage, size_t index);

#endif
