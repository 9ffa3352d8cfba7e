/* decode_reserve.c — POST /v1/reserve and /v1/reserve/batch bodies. */
#include <stdalign.h>
#include <string.h>

#include "wire/decode_message.h"
#include "wire/wire.h"

/* One reserve request: lease_id, job_id, requirements (1..32, no key twice). */
static bool decode_reserve_item(const cJSON *object, void *request_out, void *entries_out,
                                size_t room, size_t *used, const rl__json_path *path) {
    static const char *const names[3] = {"lease_id", "job_id", "requirements"};
    const cJSON *found[3];
    if (!rl__json_members(object, names, 3, found, path)) return false;
    rl_reserve_request *request = request_out;
    if (!rl__decode_lease_id(found[0], &request->lease_id, path)) return false;
    if (!rl__decode_job_id(found[1], &request->job_id, path)) return false;

    const cJSON *list = found[2];
    if (list == NULL) return rl__json_fail(path, "requirements", "is required");
    size_t count = cJSON_IsArray(list) ? rl__json_array_count(list, RL_MAX_REQUIREMENTS) : 0;
    if (count < 1 || count > RL_MAX_REQUIREMENTS || count > room)
        return rl__json_fail(path, "requirements", "must be an array of 1..%d requirements",
                             RL_MAX_REQUIREMENTS);

    rl_requirement *requirements = entries_out;
    rl__json_path element_path = *path;
    element_path.inner = "requirements";
    size_t i = 0;
    for (const cJSON *element = list->child; element != NULL; element = element->next, i++) {
        element_path.inner_index = i;
        rl_requirement *r = &requirements[i];
        if (!rl__decode_key_amount(element, "amount", 1, &r->key, &r->amount, &element_path))
            return false;
        /* An all-or-nothing lease names each limit once; a repeat is most
         * likely a client bug, and summing would hide it. */
        for (size_t j = 0; j < i; j++) {
            if (strcmp(requirements[j].key, r->key) == 0)
                return rl__json_fail(&element_path, "key",
                                     "repeats requirements[%zu].key: a lease names each key once",
                                     j);
        }
    }
    request->requirements = requirements;
    request->requirement_count = count;
    *used = count;
    return true;
}

static const rl__item_codec reserve_codec = {
    .list_field = "requirements",
    .request_size = sizeof(rl_reserve_request),
    .request_align = alignof(rl_reserve_request),
    .entry_size = sizeof(rl_requirement),
    .entry_align = alignof(rl_requirement),
    .decode = decode_reserve_item,
};

static void to_reserves(const rl__message *m, rl_wire_reserves *out) {
    out->requests = m->requests;
    out->item_status = m->item_status;
    out->count = m->count;
    out->storage_ = m->storage;
}

rl_status rl_wire_decode_reserve(const char *body, size_t len, rl_wire_reserves *out,
                                 char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_single(body, len, &reserve_codec, &m, detail);
    to_reserves(&m, out);
    return status;
}

rl_status rl_wire_decode_reserve_batch(const char *body, size_t len, size_t max_batch,
                                       rl_wire_reserves *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_batch(body, len, max_batch, &reserve_codec, &m, detail);
    to_reserves(&m, out);
    return status;
}

void rl_wire_reserves_free(rl_wire_reserves *msg) {
    if (msg == NULL) return;
    rl__message_free(msg->storage_);
    memset(msg, 0, sizeof *msg);
}

const char *rl_wire_reserves_item_detail(const rl_wire_reserves *msg, size_t index) {
    return rl__message_item_detail(msg->storage_, index);
}
