/* encode_request.c — the request shapes of api.md, for the http limiter.
 *
 * Hand-written appends like encode.c: a reserve is a few hundred bytes and
 * runs once per lease, so no cJSON tree. Strings go through the escaper
 * anyway (job_id is free-form), numbers are written as integers.
 */
#include <string.h>

#include "wire/wire.h"

#define LIT(buf, text) rl__buf_append((buf), (text), sizeof(text) - 1)

static void append_string(rl_buf *buf, const char *text) {
    rl__buf_append_json_string(buf, text, strlen(text));
}

/* "lease_id":..[,"job_id":..] — the fields both requests open with. */
static void append_ids(rl_buf *buf, const char *lease_id, const char *job_id) {
    LIT(buf, "{\"lease_id\":");
    append_string(buf, lease_id);
    if (job_id != NULL) {
        LIT(buf, ",\"job_id\":");
        append_string(buf, job_id);
    }
}

void rl__wire_encode_reserve_request(rl_buf *buf, const rl_reserve_request *request) {
    append_ids(buf, request->lease_id, request->job_id);
    LIT(buf, ",\"requirements\":[");
    for (size_t i = 0; i < request->requirement_count; i++) {
        if (i > 0) LIT(buf, ",");
        LIT(buf, "{\"key\":");
        append_string(buf, request->requirements[i].key);
        LIT(buf, ",\"amount\":");
        rl__buf_append_u64(buf, request->requirements[i].amount);
        if (request->requirements[i].optional) LIT(buf, ",\"optional\":true");
        LIT(buf, "}");
    }
    LIT(buf, "]");
    if (request->dry_run) LIT(buf, ",\"dry_run\":true");
    LIT(buf, "}");
}

void rl__wire_encode_reserve_batch_request(rl_buf *buf, const rl_reserve_request *requests,
                                           size_t count) {
    LIT(buf, "{\"requests\":[");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) LIT(buf, ",");
        rl__wire_encode_reserve_request(buf, &requests[i]);
    }
    LIT(buf, "]}");
}

void rl__wire_encode_complete_request(rl_buf *buf, const rl_complete_request *request) {
    append_ids(buf, request->lease_id, request->job_id);
    LIT(buf, ",\"actuals\":[");
    for (size_t i = 0; i < request->actual_count; i++) {
        if (i > 0) LIT(buf, ",");
        LIT(buf, "{\"key\":");
        append_string(buf, request->actuals[i].key);
        LIT(buf, ",\"actual_amount\":");
        rl__buf_append_u64(buf, request->actuals[i].actual_amount);
        LIT(buf, "}");
    }
    LIT(buf, "]}");
}

void rl__wire_encode_complete_batch_request(rl_buf *buf, const rl_complete_request *requests,
                                            size_t count) {
    LIT(buf, "{\"requests\":[");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) LIT(buf, ",");
        rl__wire_encode_complete_request(buf, &requests[i]);
    }
    LIT(buf, "]}");
}
