/* decode_complete.c — POST /v1/complete and /v1/complete/batch bodies. */
#include <stdalign.h>
#include <string.h>

#include "wire/decode_message.h"
#include "wire/wire.h"

/* actuals: optional, 0..32 {key, actual_amount 0..2^53}, no key twice. An
 * empty or absent list is valid: usage unknown, concurrency is released
 * anyway. */
static const rl__list_spec actuals_spec = {
    .name = "actuals",
    .name_len = sizeof("actuals") - 1,
    .amount_name = "actual_amount",
    .amount_name_len = sizeof("actual_amount") - 1,
    .min_amount = RL__ACTUAL_AMOUNT_MIN,
    .min_count = RL__ACTUALS_MIN_COUNT,
    .optional = true,
    .repeat_note = "a lease reports each key once",
};

static void store_complete(const rl__lease_fields *fields, void *request_out, void *entries) {
    rl_actual *actuals = entries;
    for (size_t i = 0; i < fields->count; i++) {
        actuals[i].key = fields->key[i];
        actuals[i].actual_amount = fields->amount[i];
    }
    rl_complete_request *request = request_out;
    request->lease_id = fields->lease_id;
    request->job_id = fields->job_id;
    request->actuals = fields->count > 0 ? actuals : NULL;
    request->actual_count = fields->count;
}

static const rl__item_codec complete_codec = {
    .list = &actuals_spec,
    .request_size = sizeof(rl_complete_request),
    .request_align = alignof(rl_complete_request),
    .entry_size = sizeof(rl_actual),
    .entry_align = alignof(rl_actual),
    .min_entry_bytes = sizeof("{\"key\":\"k\",\"actual_amount\":0}") - 1,
    .store = store_complete,
};

static void to_completes(const rl__message *m, rl_wire_completes *out) {
    out->requests = m->requests;
    out->item_status = m->item_status;
    out->count = m->count;
    out->storage_ = m->storage;
}

rl_status rl__wire_decode_complete(const char *body, size_t len, rl_wire_completes *out,
                                   char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_single(body, len, &complete_codec, &m, detail);
    to_completes(&m, out);
    return status;
}

rl_status rl__wire_decode_complete_batch(const char *body, size_t len, size_t max_batch,
                                         rl_wire_completes *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_batch(body, len, max_batch, &complete_codec, &m, detail);
    to_completes(&m, out);
    return status;
}

void rl__wire_completes_free(rl_wire_completes *msg) {
    if (msg == NULL) return;
    rl__message_free(msg->storage_);
    memset(msg, 0, sizeof *msg);
}

const char *rl__wire_completes_item_detail(const rl_wire_completes *msg, size_t index) {
    return rl__message_item_detail(msg->storage_, index);
}
