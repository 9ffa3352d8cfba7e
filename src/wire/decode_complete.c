/* decode_complete.c — POST /v1/complete and /v1/complete/batch bodies. */
#include <stdalign.h>
#include <string.h>

#include "wire/decode_message.h"
#include "wire/wire.h"

/* One complete request: lease_id, job_id, actuals (optional, 0..32, no key
 * twice). An empty or absent list is valid: usage unknown, concurrency is
 * released anyway. */
static bool decode_complete_item(const cJSON *object, void *request_out, void *entries_out,
                                 size_t room, size_t *used, const rl__json_path *path) {
    static const char *const names[3] = {"lease_id", "job_id", "actuals"};
    const cJSON *found[3];
    if (!rl__json_members(object, names, 3, found, path)) return false;
    rl_complete_request *request = request_out;
    if (!rl__decode_lease_id(found[0], &request->lease_id, path)) return false;
    if (!rl__decode_job_id(found[1], &request->job_id, path)) return false;

    const cJSON *list = found[2];
    request->actuals = NULL;
    request->actual_count = 0;
    *used = 0;
    if (rl__json_is_absent(list)) return true;
    size_t count = cJSON_IsArray(list) ? rl__json_array_count(list, RL_MAX_REQUIREMENTS) : SIZE_MAX;
    if (count > RL_MAX_REQUIREMENTS || count > room)
        return rl__json_fail(path, "actuals", "must be null or an array of 0..%d actuals",
                             RL_MAX_REQUIREMENTS);

    rl_actual *actuals = entries_out;
    rl__json_path element_path = *path;
    element_path.inner = "actuals";
    size_t i = 0;
    for (const cJSON *element = list->child; element != NULL; element = element->next, i++) {
        element_path.inner_index = i;
        rl_actual *a = &actuals[i];
        if (!rl__decode_key_amount(element, "actual_amount", 0, &a->key, &a->actual_amount,
                                   &element_path))
            return false;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(actuals[j].key, a->key) == 0)
                return rl__json_fail(&element_path, "key",
                                     "repeats actuals[%zu].key: a lease reports each key once", j);
        }
    }
    request->actuals = count > 0 ? actuals : NULL;
    request->actual_count = count;
    *used = count;
    return true;
}

static const rl__item_codec complete_codec = {
    .list_field = "actuals",
    .request_size = sizeof(rl_complete_request),
    .request_align = alignof(rl_complete_request),
    .entry_size = sizeof(rl_actual),
    .entry_align = alignof(rl_actual),
    .decode = decode_complete_item,
};

static void to_completes(const rl__message *m, rl_wire_completes *out) {
    out->requests = m->requests;
    out->item_status = m->item_status;
    out->count = m->count;
    out->storage_ = m->storage;
}

rl_status rl_wire_decode_complete(const char *body, size_t len, rl_wire_completes *out,
                                  char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_single(body, len, &complete_codec, &m, detail);
    to_completes(&m, out);
    return status;
}

rl_status rl_wire_decode_complete_batch(const char *body, size_t len, size_t max_batch,
                                        rl_wire_completes *out, char detail[RL_WIRE_DETAIL_SIZE]) {
    rl__message m;
    rl_status status = rl__decode_batch(body, len, max_batch, &complete_codec, &m, detail);
    to_completes(&m, out);
    return status;
}

void rl_wire_completes_free(rl_wire_completes *msg) {
    if (msg == NULL) return;
    rl__message_free(msg->storage_);
    memset(msg, 0, sizeof *msg);
}

const char *rl_wire_completes_item_detail(const rl_wire_completes *msg, size_t index) {
    return rl__message_item_detail(msg->storage_, index);
}
