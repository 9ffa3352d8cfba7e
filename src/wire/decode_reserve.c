/* decode_reserve.c — POST /v1/reserve and /v1/reserve/batch bodies. */
#include <stdalign.h>
#include <string.h>

#include "wire/decode_message.h"
#include "wire/wire.h"

/* requirements: 1..32 {key, amount 1..2^53, optional}, no key twice; and
 * the lease's dry_run. */
static const rl__list_spec requirements_spec = {
    .name = "requirements",
    .name_len = sizeof("requirements") - 1,
    .amount_name = "amount",
    .amount_name_len = sizeof("amount") - 1,
    .min_amount = RL__REQUIREMENT_AMOUNT_MIN,
    .min_count = RL__REQUIREMENTS_MIN_COUNT,
    .optional = false,
    .repeat_note = "a lease names each key once",
    .flag_name = "dry_run",
    .flag_name_len = sizeof("dry_run") - 1,
    .element_flag_name = "optional",
    .element_flag_name_len = sizeof("optional") - 1,
};

static void store_reserve(const rl__lease_fields *fields, void *request_out, void *entries) {
    rl_requirement *requirements = entries;
    for (size_t i = 0; i < fields->count; i++) {
        requirements[i].key = fields->key[i];
        requirements[i].amount = fields->amount[i];
        requirements[i].optional = fields->element_flag[i];
    }
    rl_reserve_request *request = request_out;
    request->lease_id = fields->lease_id;
    request->job_id = fields->job_id;
    request->requirements = requirements;
    request->requirement_count = fields->count;
    request->dry_run = fields->flag;
}

static const rl__item_codec reserve_codec = {
    .list = &requirements_spec,
    .request_size = sizeof(rl_reserve_request),
    .request_align = alignof(rl_reserve_request),
    .entry_size = sizeof(rl_requirement),
    .entry_align = alignof(rl_requirement),
    .min_entry_bytes = sizeof("{\"key\":\"k\",\"amount\":1}") - 1,
    .store = store_reserve,
};

static void to_reserves(const rl__message *m, rl_wire_reserves *out) {
    out->requests = m->requests;
    out->item_status = m->item_status;
    out->count = m->count;
    out->storage_ = m->storage;
}

rl_status rl__wire_decode_reserve(const char *body, size_t len, rl_wire_reserves *out,
                                  char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_single(body, len, &reserve_codec, &m, detail);
    to_reserves(&m, out);
    return status;
}

rl_status rl__wire_decode_reserve_batch(const char *body, size_t len, size_t max_batch,
                                        rl_wire_reserves *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_batch(body, len, max_batch, &reserve_codec, &m, detail);
    to_reserves(&m, out);
    return status;
}

void rl__wire_reserves_free(rl_wire_reserves *msg) {
    if (msg == NULL) return;
    rl__message_free(msg->storage_);
    memset(msg, 0, sizeof *msg);
}

const char *rl__wire_reserves_item_detail(const rl_wire_reserves *msg, size_t index) {
    return rl__message_item_detail(msg->storage_, index);
}
