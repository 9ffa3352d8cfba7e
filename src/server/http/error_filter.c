/* error_filter.c — see error_filter.h. */
#include "server/http/error_filter.h"

#include <stdbool.h>
#include <string.h>

/* Ends with a newline, as every JSON answer does (http_response.c). */
static const char json_error_body[] = "{\"error\":\"invalid_request\"}\n";

static bool is_json(const h2o_req_t *req) {
    ssize_t index = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (index < 0) return false;
    const h2o_iovec_t *value = &req->res.headers.entries[index].value;
    return value->len >= 16 && memcmp(value->base, "application/json", 16) == 0;
}

/* Drops h2o's text and sends the JSON body once, with the final state. */
static void send_json_instead(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs,
                              size_t bufcnt, h2o_send_state_t state) {
    (void)bufs;
    (void)bufcnt;
    if (h2o_send_state_is_in_progress(state)) {
        h2o_ostream_send_next(self, req, NULL, 0, state);
        return;
    }
    h2o_iovec_t body = h2o_iovec_init(json_error_body, sizeof json_error_body - 1);
    h2o_ostream_send_next(self, req, &body, 1, state);
}

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot) {
    (void)self;
    /* The hot path: a status below 400 costs one comparison. */
    if (req->res.status >= 400 && !is_json(req)) {
        ssize_t index = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
        if (index >= 0)
            req->res.headers.entries[index].value = h2o_iovec_init(H2O_STRLIT("application/json"));
        else
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                           H2O_STRLIT("application/json"));
        req->res.content_length = sizeof json_error_body - 1;
        h2o_ostream_t *ostream = h2o_add_ostream(req, sizeof *ostream, slot);
        ostream->do_send = send_json_instead;
        slot = &ostream->next;
    }
    h2o_setup_next_ostream(req, slot);
}

void rl_error_filter_register(h2o_pathconf_t *pathconf) {
    h2o_filter_t *filter = h2o_create_filter(pathconf, sizeof *filter);
    filter->on_setup_ostream = on_setup_ostream;
}
