/* http_response.c — an answer to h2o (http_internal.h). */
#include <string.h>

#include "server/http/http_internal.h"

const char *rl__http_reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "";
    }
}

/* A page a browser renders (rl_http_response.browser_page): its scripts and
 * styles come from the daemon only, no other site may frame it (a form that
 * changes limits must not be clicked through someone else's page), and no
 * file is read as another type than the one it is sent as. */
static void add_page_headers(h2o_req_t *req) {
    static const char policy[] = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("content-security-policy"), 0, NULL,
                          policy, sizeof policy - 1);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0, NULL,
                          H2O_STRLIT("nosniff"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-cache"));
}

static void send_body(h2o_req_t *req, int status, const char *allow, const char *location,
                      const char *content_type, const char *body, size_t len) {
    static h2o_generator_t generator = {NULL, NULL};
    /* h2o may write after this returns; the handler's buffer is reused by the
     * next request, so the body goes into the request's pool. Every JSON
     * answer (content_type NULL) ends with a newline, added here, so that
     * what a shell prints after curl starts on a line of its own; other
     * bodies (the metrics' text, the console's files) go as written. */
    bool json = content_type == NULL;
    h2o_iovec_t copy = h2o_iovec_init(h2o_mem_alloc_pool(&req->pool, len + json), len + json);
    memcpy(copy.base, body, len);
    if (json) copy.base[len] = '\n';
    req->res.status = status;
    req->res.reason = rl__http_reason_phrase(status);
    req->res.content_length = copy.len; /* else h2o would answer chunked */
    if (json) content_type = "application/json";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, strlen(content_type));
    if (allow != NULL)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    if (location != NULL)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, location, strlen(location));
    h2o_start_response(req, &generator);
    /* The answer to a HEAD is the GET's without its body (the router gave it
     * the GET's row): Content-Length still says how long the body would be. */
    bool head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
    h2o_send(req, &copy, head ? 0 : 1, H2O_SEND_STATE_FINAL);
}

void rl__http_send_response(h2o_req_t *req, const rl_http_response *response) {
    if (response->body == NULL || response->body->failed) {
        static const char out_of_memory[] = "{\"error\":\"backend_error\"}";
        send_body(req, 503, NULL, NULL, NULL, out_of_memory, sizeof out_of_memory - 1);
    } else {
        if (response->browser_page) add_page_headers(req);
        send_body(req, response->status, response->allow, response->location, response->content_type,
                  response->body->data, response->body->len);
    }
}
