/* handlers_denials.c — GET /v1/admin/denials?limit=N&key=K&lease_id=L: the
 * most recent denials, newest first (api.md "GET /v1/admin/denials"), from
 * the ring the observer fills (server/observe/denial_ring.h).
 *
 * Answered on the request's thread: a copy of at most the ring's capacity,
 * each loop's part under its own mutex for its copy only. A bad query is a
 * 400 that names the parameter (denials_query.h). A handler context without
 * a ring (a tool, a test) answers an empty list.
 */
#include <stdlib.h>
#include <string.h>

#include "server/api/denials_query.h"
#include "server/api/endpoints.h"
#include "server/api/respond.h"
#include "server/observe/denial_ring.h"
#include "wire/wire.h"

#define LIT(buf, text) rl__buf_append((buf), (text), sizeof(text) - 1)

static void encode_entry(rl_buf *buf, const rl_denial_entry *e) {
    LIT(buf, "{\"at_unix_ms\":");
    rl__buf_append_u64(buf, e->at_unix_ms);
    LIT(buf, ",\"lease_id\":");
    rl__buf_append_json_string(buf, e->lease_id, strnlen(e->lease_id, sizeof e->lease_id - 1));
    LIT(buf, ",\"job_id\":");
    rl__buf_append_json_string(buf, e->job_id, strnlen(e->job_id, sizeof e->job_id - 1));
    LIT(buf, ",\"endpoint\":\"");
    rl__buf_append_str(buf, rl_api_endpoint_name(e->endpoint));
    LIT(buf, "\",\"retry_after_ms\":");
    rl__buf_append_u64(buf, e->retry_after_ms);
    LIT(buf, ",\"items\":");
    rl__buf_append_u64(buf, e->items);
    LIT(buf, ",\"denied_items\":");
    rl__buf_append_u64(buf, e->denied_items);
    if (e->dry_run) LIT(buf, ",\"dry_run\":true,");
    else LIT(buf, ",\"dry_run\":false,");
    rl__wire_encode_denied_by(buf, e->key, &e->denied_by);
    LIT(buf, "}");
}

void rl__admin_denials(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                       rl_http_response *res) {
    (void)route;
    rl__denials_params params;
    char detail[RL_WIRE_DETAIL_SIZE];
    if (!rl__denials_params_decode(req->query, req->query_len, &params, detail)) {
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, detail);
        return;
    }
    const rl_denial_ring *ring = ctx->denials;
    rl_denial_filter filter = {params.key, params.lease_id};
    /* At most the ring's capacity of ~500 bytes each, for a rare call: from
     * the heap and given back at once. */
    rl_denial_entry *entries = ring != NULL ? calloc(params.limit, sizeof *entries) : NULL;
    if (ring != NULL && entries == NULL) {
        rl_respond_error(ctx, res, 503, RL_BACKEND_ERROR, NULL, NULL);
        return;
    }
    size_t count = ring != NULL ? rl_denial_ring_read(ring, &filter, entries, params.limit) : 0;
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    LIT(buf, "{\"denials\":[");
    for (size_t i = 0; i < count; i++) {
        if (i > 0) LIT(buf, ",");
        encode_entry(buf, &entries[i]);
    }
    LIT(buf, "],\"kept\":");
    rl__buf_append_u64(buf, ring != NULL ? rl_denial_ring_capacity(ring) : 0);
    LIT(buf, ",\"noted_total\":");
    rl__buf_append_u64(buf, ring != NULL ? rl_denial_ring_noted_total(ring) : 0);
    LIT(buf, "}");
    free(entries);
    res->status = 200;
    res->body = buf;
}
