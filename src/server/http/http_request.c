/* http_request.c — one request through the loop (http_internal.h): the
 * request guard first, then the api's one road (handler.h), whose answer is
 * sent now or, for a request answered later (a backend with async ops, an
 * admin put), when it comes back through the loop's receiver. */
#include <stdlib.h>
#include <string.h>

#include "server/api/respond.h"
#include "server/http/http_internal.h"
#include "server/http/request_head.h"

/* ---- a request's state, recycled ------------------------------------------ */

static pending_request *take_pending(rl_http_thread *thread) {
    pending_request *pending = thread->spare;
    if (pending != NULL) {
        thread->spare = pending->next_spare;
        thread->spare_count--;
        return pending;
    }
    pending = calloc(1, sizeof *pending); /* message.link zeroed: not linked */
    if (pending != NULL) rl_api_call_init(&pending->call);
    return pending;
}

/* After rl_api_call_end. */
static void give_back_pending(rl_http_thread *thread, pending_request *pending) {
    if (thread->spare_count >= RL_HTTP_SPARE_REQUESTS) {
        rl_api_call_free(&pending->call);
        free(pending);
        return;
    }
    pending->next_spare = thread->spare;
    thread->spare = pending;
    thread->spare_count++;
}

void rl__http_free_spares(rl_http_thread *thread) {
    while (thread->spare != NULL) {
        pending_request *pending = thread->spare;
        thread->spare = pending->next_spare;
        rl_api_call_free(&pending->call);
        free(pending);
    }
    thread->spare_count = 0;
}

/* ---- requests answered later --------------------------------------------- */

/* Any thread (the backend's flusher, the admin writer): hand the request
 * back to its loop. pending may be reused by the loop as soon as the
 * message is sent. */
static void on_answered(rl_api_call *call) {
    pending_request *pending = H2O_STRUCT_FROM_MEMBER(pending_request, call, call);
    h2o_multithread_send_message(&pending->thread->receiver, &pending->message);
}

/* The loop's thread, from h2o's pool dispose: the request is gone. */
static void rl__http_on_request_disposed(void *token) {
    pending_request *pending = *(pending_request **)token;
    if (pending != NULL) pending->req = NULL;
}

/* ---- the observer (http_server.h) ---------------------------------------- */

/* The loop's thread: an answer given (call NULL: before the api's road). */
static void observe(rl_http_thread *thread, const rl_api_call *call, const rl_http_request *request,
                    const rl_http_response *response, uint64_t started_us) {
    const rl_http_observer *observer = &thread->server->options.observer;
    if (observer->answered == NULL) return;
    rl_api_outcome outcome;
    rl_api_outcome_of(call, request, response, &outcome);
    uint64_t now_us = rl__http_monotonic_us();
    observer->answered(observer->context, thread->index, &outcome, now_us > started_us ? now_us - started_us : 0);
}

/* The loop's thread: sends an answer (if its client is still there), lets
 * go of the request's state and keeps it for the next. */
static void answer_and_recycle(rl_http_thread *thread, pending_request *pending, h2o_req_t *req,
                               const rl_http_response *response) {
    if (req != NULL) rl__http_send_response(req, response);
    /* Before the call ends: the outcome reads its items. The request's
     * path is h2o's: not read once the client has gone. */
    observe(thread, &pending->call, req != NULL ? &pending->request : NULL, response, pending->started_us);
    if (req != NULL) rl_handler_ctx_trim(&thread->handler); /* the answer is copied: big buffers can go */
    rl_api_call_end(&pending->call);
    give_back_pending(thread, pending);
}

/* The loop's thread: these requests have their answers. */
void rl__http_on_answers(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages) {
    rl_http_thread *thread = H2O_STRUCT_FROM_MEMBER(rl_http_thread, receiver, receiver);
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *message = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&message->link);
        pending_request *pending = H2O_STRUCT_FROM_MEMBER(pending_request, message, message);
        rl_http_response response = {0, NULL, NULL, NULL, NULL, false};
        if (pending->req != NULL) {
            *pending->token = NULL; /* the pool outlives pending: its dispose must not look */
            rl_api_finish(&thread->handler, &pending->call, &response);
        }
        answer_and_recycle(thread, pending, pending->req, &response);
        thread->in_flight--;
    }
}

/* Every request: answered now (a synchronous backend, an admin GET, a
 * refused body), or later through rl__http_on_answers. */
static void run_request(rl_http_thread *thread, h2o_req_t *req, const rl_http_request *request,
                        uint64_t started_us) {
    rl_http_response response = {0, NULL, NULL, NULL, NULL, false};
    pending_request *pending = take_pending(thread);
    if (pending == NULL) {
        rl_respond_error(&thread->handler, &response, 503, RL_BACKEND_ERROR, NULL, NULL);
        rl__http_send_response(req, &response);
        observe(thread, NULL, request, &response, started_us);
        return;
    }
    pending->call.done = on_answered;
    pending->thread = thread;
    pending->req = req;
    pending->request = *request;
    pending->started_us = started_us;
    /* Before the start: the answer may be posted before it returns (it is
     * read only on this thread, later, so the token can come after). */
    thread->in_flight++;
    if (rl_api_begin(&thread->handler, request, &pending->call, &response)) {
        thread->in_flight--;
        answer_and_recycle(thread, pending, req, &response);
        return;
    }
    pending->token = h2o_mem_alloc_shared(&req->pool, sizeof *pending->token, rl__http_on_request_disposed);
    *pending->token = pending;
}

/* ---- browsers (request_guard.h) ------------------------------------------ */

static void add_header(h2o_req_t *req, const h2o_token_t *token, const char *value, size_t len) {
    h2o_add_header(&req->pool, &req->res.headers, token, NULL, value, len);
}

/* The answer to a request refused before any route (the guard, a token):
 * sent, watched, and the handler's buffer trimmed. */
static void answer_refusal(rl_http_thread *thread, h2o_req_t *req, const rl_http_request *request,
                           const rl_http_response *response, uint64_t started_us) {
    rl__http_send_response(req, response);
    observe(thread, NULL, request, response, started_us);
    rl_handler_ctx_trim(&thread->handler);
}

/* How many Host lines req had: h2o kept the last one only, but the
 * request's bytes are still at the start of its connection's input
 * (request_head.h). has_host's answer when those bytes are not there. */
static size_t host_count_of(h2o_req_t *req, bool has_host) {
    h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    long count = sock != NULL && sock->input != NULL
                     ? rl_request_head_field_count(sock->input->bytes, sock->input->size, req->method.base,
                                                   req->method.len, H2O_STRLIT("host"))
                     : -1;
    return count >= 0 ? (size_t)count : has_host ? 1 : 0;
}

/* Answers req now if the guard refuses it or it is a preflight; else adds
 * the CORS headers an allowed origin's answer carries. True: answered. */
static bool guard_answered(rl_http_thread *thread, h2o_req_t *req, const rl_http_request *request,
                           uint64_t started_us) {
    /* h2o puts its own default in authority when a request has no Host. */
    bool has_host = req->input.authority.base != NULL && req->hostconf != NULL &&
                    req->input.authority.base != req->hostconf->authority.hostport.base;
    ssize_t origin_at = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
    const h2o_iovec_t *origin = origin_at >= 0 ? &req->headers.entries[origin_at].value : NULL;
    size_t origin_count = 0;
    for (ssize_t at = origin_at; at >= 0; at = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), at))
        origin_count++;
    rl_guard_request seen = {
        .method = req->method.base,
        .method_len = req->method.len,
        .host = has_host ? req->input.authority.base : NULL,
        .host_len = req->input.authority.len,
        .host_count = host_count_of(req, has_host),
        .origin = origin != NULL ? origin->base : NULL,
        .origin_len = origin != NULL ? origin->len : 0,
        .origin_count = origin_count,
    };
    rl_guard_decision decision;
    rl_request_guard_check(&thread->server->guard, &seen, &decision);
    if (decision.verdict == RL_GUARD_REFUSE || decision.verdict == RL_GUARD_MALFORMED) {
        rl_http_response response = {0, NULL, NULL, NULL, NULL, false};
        rl_respond_error(&thread->handler, &response, decision.verdict == RL_GUARD_REFUSE ? 403 : 400,
                         RL_INVALID_REQUEST, NULL, decision.detail);
        answer_refusal(thread, req, request, &response, started_us);
        return true;
    }
    if (!decision.cors) return false;
    add_header(req, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, origin->base, origin->len);
    add_header(req, H2O_TOKEN_VARY, H2O_STRLIT("Origin"));
    if (decision.verdict != RL_GUARD_PREFLIGHT) return false;
    static h2o_generator_t generator = {NULL, NULL};
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-methods"), 0, NULL,
                          H2O_STRLIT("GET, POST, PUT, DELETE"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-headers"), 0, NULL,
                          H2O_STRLIT("content-type, authorization"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-max-age"), 0, NULL,
                          H2O_STRLIT("600"));
    req->res.status = 204;
    req->res.reason = rl__http_reason_phrase(204);
    req->res.content_length = 0;
    h2o_start_response(req, &generator);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    return true;
}

/* ---- bearer tokens (auth.h) --------------------------------------------- */

/* Answers req now with 401 or 403 if its path needs a token it does not
 * carry. True: answered. */
static bool auth_refused(rl_http_thread *thread, h2o_req_t *req, const rl_http_request *request,
                         uint64_t started_us) {
    const rl_auth *auth = thread->server->options.auth;
    if (auth == NULL) return false;
    ssize_t at = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    const h2o_iovec_t *authorization = at >= 0 ? &req->headers.entries[at].value : NULL;
    rl_auth_decision decision;
    rl_auth_check(auth, request->path, request->path_len, authorization != NULL ? authorization->base : NULL,
                  authorization != NULL ? authorization->len : 0, &decision);
    if (decision.verdict == RL_AUTH_PASS) return false;
    bool unauthorized = decision.verdict == RL_AUTH_UNAUTHORIZED;
    rl_http_response response = {0, NULL, NULL, NULL, NULL, false};
    rl_respond_error_named(&thread->handler, &response, unauthorized ? 401 : 403,
                           unauthorized ? RL_AUTH_ERROR_UNAUTHORIZED : RL_AUTH_ERROR_FORBIDDEN, decision.detail);
    if (unauthorized) add_header(req, H2O_TOKEN_WWW_AUTHENTICATE, H2O_STRLIT(RL_AUTH_CHALLENGE));
    answer_refusal(thread, req, request, &response, started_us);
    return true;
}

int rl__http_on_request(h2o_handler_t *self, h2o_req_t *req) {
    (void)self;
    rl_http_thread *thread = H2O_STRUCT_FROM_MEMBER(rl_http_thread, ctx, req->conn->ctx);
    uint64_t started_us = thread->server->options.observer.answered != NULL ? rl__http_monotonic_us() : 0;
    size_t path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    rl_http_request request = {
        .method = req->method.base,
        .method_len = req->method.len,
        .path = req->path.base,
        .path_len = path_len,
        .body = req->entity.base,
        .body_len = req->entity.base != NULL ? req->entity.len : 0,
        .query = req->query_at != SIZE_MAX ? req->path.base + req->query_at + 1 : NULL,
        .query_len = req->query_at != SIZE_MAX ? req->path.len - req->query_at - 1 : 0,
    };
    if (guard_answered(thread, req, &request, started_us)) return 0;
    if (auth_refused(thread, req, &request, started_us)) return 0;
    /* The guard's clock for idle and slow connections starts again. */
    if (req->conn->callbacks->get_socket != NULL)
        rl_conn_guard_note_request(req->conn->callbacks->get_socket(req->conn), rl__http_monotonic_ms());
    run_request(thread, req, &request, started_us);
    return 0;
}
