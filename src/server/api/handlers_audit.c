/* handlers_audit.c — GET /v1/admin/audit?key=K&since_unix_ms=T&limit=N: a
 * page of the audit log of spend (api.md "GET /v1/admin/audit").
 *
 * Answered on the request's thread, like the other admin GETs: the
 * backend's audit_query is synchronous (the memory backend reads its audit
 * files, redis one XRANGE) and rare. No admin mutex: the op is thread-safe
 * and concurrent with everything (backend.h). The key need not be defined:
 * the log outlives a definition. A bad query is a 400 that names the
 * parameter (audit_query.h) and reaches no backend.
 */
#include <stdio.h>
#include <stdlib.h>

#include "server/api/audit_query.h"
#include "server/api/endpoints.h"
#include "server/api/respond.h"
#include "wire/wire.h"

void rl__admin_audit(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                     rl_http_response *res) {
    (void)route;
    rl__audit_params params;
    char detail[RL_WIRE_DETAIL_SIZE];
    if (!rl__audit_params_decode(req->query, req->query_len, &params, detail)) {
        rl_respond_error(ctx, res, 400, RL_INVALID_REQUEST, NULL, detail);
        return;
    }
    rl_audit_query query = rl__audit_params_query(&params);
    /* The caller's array of the page: up to 1000 entries of ~450 bytes,
     * for a rare call, so from the heap and given back at once. */
    rl_audit_page page = {calloc(query.limit, sizeof *page.entries), 0, 0};
    rl_status status = page.entries != NULL ? rl_backend_audit_query(ctx->backend, &query, &page) : RL_NO_MEMORY;
    if (status != RL_OK) {
        /* The client only learns backend_error; the operator needs why. */
        fprintf(stderr, "ratelimiterd: GET /v1/admin/audit \"%s\" failed: %s\n", params.key,
                rl_status_name(status));
        free(page.entries);
        rl_respond_error(ctx, res, rl_respond_admin_failure_status(status), RL_BACKEND_ERROR, NULL, NULL);
        return;
    }
    if (page.count > query.limit) page.count = query.limit; /* a backend past its array: never encode beyond */
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__wire_encode_audit_page(buf, &page);
    free(page.entries);
    res->status = 200;
    res->body = buf;
}
