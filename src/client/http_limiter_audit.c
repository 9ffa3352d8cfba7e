/* http_limiter_audit.c — the audit op over HTTP: GET /v1/admin/audit with
 * the query in the URL, through the same retry loop as reserve and
 * complete (http_limiter.c), the answer read strictly (wire.h:
 * rl__wire_decode_audit_answer).
 *
 * A GET changes nothing, so anything short of a whole answer (a transport
 * failure, a 502/504, a 200 whose body does not read as the page asked
 * for) is asked again until the deadline. A 400 is the query's fault (the
 * daemon's detail becomes the last error); any other status is the
 * server's failure, RL_BACKEND_ERROR (also the 404 of a daemon older than
 * the endpoint).
 */
#include <string.h>

#include "client/call_check.h"
#include "client/http_limiter.h"
#include "wire/wire.h"

typedef struct audit_call {
    const rl_audit_query *query;
    rl_audit_page *page;
} audit_call;

static rl__http_verdict read_audit(void *ctx, long http_status, rl_buf *body, rl_status *status) {
    audit_call *c = ctx;
    if (http_status != 200) return rl__http_verdict_of_failure(http_status, status);
    if (body->len == 0 || rl__wire_decode_audit_answer(body->data, body->len, c->query, c->page) != RL_OK)
        return RL__HTTP_RETRY; /* cut short or garbled on the way */
    *status = RL_OK;
    return RL__HTTP_DONE;
}

rl_status rl__http_limiter_audit(rl_limiter *base, const rl_audit_query *query, rl_audit_page *page) {
    rl__http_limiter *limiter = (rl__http_limiter *)base;
    rl_status checked = rl__check_audit_call(query, page);
    if (checked != RL_OK) return checked;
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;

    uint64_t deadline_ms = rl__http_monotonic_ms() + limiter->options.deadline_ms;
    rl_buf path, response;
    rl__buf_init(&path);
    rl__buf_init(&response);
    rl__wire_encode_audit_path(&path, query);
    rl_status status = RL_NO_MEMORY;
    if (!path.failed) {
        audit_call call = {query, page};
        status = rl__http_call(limiter, path.data, NULL, deadline_ms, &response, read_audit, &call);
    }
    if (status != RL_OK) page->count = 0;
    rl__buf_free(&path);
    rl__buf_free(&response);
    return status;
}
