/* http_server.c — h2o glue: listener, event-loop threads, request -> handler.
 *
 * Everything HTTP-agnostic lives in handler.h; this file only translates an
 * h2o request into an rl_http_request and the answer back.
 */
#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>

#include "server/api/admin_writer.h"
#include "server/http/conn_guard.h"
#include "server/http/error_filter.h"
#include "server/api/handler.h"
#include "server/http/listen_addr.h"
#include "server/http/request_guard.h"
#include "server/api/respond.h"

_Static_assert(RL_HTTP_MAX_HEADERS == H2O_MAX_HEADERS, "h2o.h's H2O_MAX_HEADERS changed");
_Static_assert(RL_HTTP_MAX_HEADER_BYTES == H2O_MAX_REQLEN, "h2o.h's H2O_MAX_REQLEN changed");

/* A loop wakes at least this often to see a stop request: a stop costs at
 * most this much latency, an idle loop 20 wake-ups a second. */
#define LOOP_WAKE_MS 50
/* How long a stopping loop waits for its connections to finish and close. */
#define DRAIN_DEADLINE_MS 1500
/* Connections accepted per readiness event: bounded so that one busy
 * listener cannot starve the requests of connections already open. */
#define ACCEPTS_PER_EVENT 16
/* File descriptors kept free for everything but client connections
 * (listener, epoll, registry writes, the loops' wake-up pipes). */
#define RESERVED_FDS 64
/* Each connection's kernel receive buffer (fixed, not autotuned): enough
 * for ~2 GB/s at 0.1 ms RTT, a 1 MiB body in a few round trips. */
#define RECEIVE_BUFFER_BYTES (128 * 1024)
/* How long a stopping loop waits, after its connections, for the backend to
 * answer the requests it still has in flight (a flush is milliseconds; a
 * store that stopped answering gives up on its own timeouts). */
#define IN_FLIGHT_DEADLINE_MS 5000

typedef struct rl_http_thread {
    rl_http_server *server;
    pthread_t thread;
    bool running;
    h2o_context_t ctx; /* the request's thread is found from req->conn->ctx */
    h2o_accept_ctx_t accept_ctx;
    h2o_socket_t *listener; /* NULL once draining */
    rl_conn_guard guard;    /* this loop's connections, their share of the bound, timeouts */
    bool accepting; /* false while waiting for room (or for descriptors) */
    rl_handler_ctx handler;
    /* Requests answered later (a backend with reserve_batch_async, admin
     * puts): their answers come back through this receiver on the loop's
     * queue. */
    h2o_multithread_receiver_t receiver;
    bool receiver_registered;
    uint32_t in_flight; /* started and not yet back on this loop; the loop's only */
} rl_http_thread;

/* A request waiting for the backend. malloc'd, not in req->pool: the client
 * may go away meanwhile (then h2o frees the pool, and the token's dispose
 * callback sets req to NULL). Freed by the loop when the answer is back. */
typedef struct pending_request {
    rl_async_request areq; /* the handlers' part; areq.done posts `message` */
    h2o_multithread_message_t message;
    rl_http_thread *thread;
    h2o_req_t *req;              /* NULL once h2o has disposed of it */
    struct pending_request **token; /* in req->pool, points back here */
} pending_request;


struct rl_http_server {
    rl_service *service;
    rl_http_server_options options;
    int listen_fd;
    char address[RL_LISTEN_HOST_MAX_LEN + 16];
    uint16_t port;
    uint32_t max_connections; /* after the descriptor limit */
    rl_request_guard guard;   /* Host and Origin, before any handler */
    h2o_globalconf_t config;
    rl_http_thread *threads;
    uint32_t thread_count;
    rl_admin_writer *admin_writer; /* admin puts, off the loops; stopped after them */
    atomic_bool stop_requested;
    atomic_bool threads_in_use; /* a loop left with requests in flight: never free threads */
    bool started;
};

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- responses --------------------------------------------------------- */

static const char *reason_phrase(int status) {
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "";
    }
}

static void send_json(h2o_req_t *req, int status, const char *allow, const char *body, size_t len) {
    static h2o_generator_t generator = {NULL, NULL};
    /* h2o may write after this returns; the handler's buffer is reused by the
     * next request, so the body goes into the request's pool. */
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    req->res.status = status;
    req->res.reason = reason_phrase(status);
    req->res.content_length = copy.len; /* else h2o would answer chunked */
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    if (allow != NULL)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    h2o_start_response(req, &generator);
    h2o_send(req, &copy, 1, H2O_SEND_STATE_FINAL);
}

static void send_response(h2o_req_t *req, const rl_http_response *response) {
    if (response->body == NULL || response->body->failed) {
        static const char out_of_memory[] = "{\"error\":\"backend_error\"}";
        send_json(req, 503, NULL, out_of_memory, sizeof out_of_memory - 1);
    } else {
        send_json(req, response->status, response->allow, response->body->data, response->body->len);
    }
}

/* ---- requests answered later --------------------------------------------- */

/* Any thread (the backend's flusher): hand the request back to its loop.
 * pending may be freed by the loop as soon as the message is sent. */
static void on_backend_answered(rl_async_request *areq) {
    pending_request *pending = H2O_STRUCT_FROM_MEMBER(pending_request, areq, areq);
    h2o_multithread_send_message(&pending->thread->receiver, &pending->message);
}

/* The loop's thread, from h2o's pool dispose: the request is gone. */
static void on_request_disposed(void *token) {
    pending_request *pending = *(pending_request **)token;
    if (pending != NULL) pending->req = NULL;
}

/* The loop's thread: the backend answered these. */
static void on_answers(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages) {
    rl_http_thread *thread = H2O_STRUCT_FROM_MEMBER(rl_http_thread, receiver, receiver);
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *message = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&message->link);
        pending_request *pending = H2O_STRUCT_FROM_MEMBER(pending_request, message, message);
        if (pending->req != NULL) {
            *pending->token = NULL; /* the pool outlives pending: its dispose must not look */
            rl_http_response response = {0, NULL, NULL};
            rl_async_request_finish(&thread->handler, &pending->areq, &response);
            send_response(pending->req, &response);
            rl_handler_ctx_trim(&thread->handler);
        }
        rl_async_request_release(&pending->areq);
        free(pending);
        thread->in_flight--;
    }
}

/* Starts req asynchronously if the backend can; false: answer it now. */
static bool start_async(rl_http_thread *thread, h2o_req_t *req, const rl_http_request *request,
                        rl_http_response *response) {
    pending_request *pending = calloc(1, sizeof *pending);
    if (pending == NULL) return false;
    pending->areq.done = on_backend_answered;
    pending->thread = thread;
    pending->req = req;
    /* Before the start: the answer may be posted before it returns (it is
     * read only on this thread, later, so the token can come after). */
    thread->in_flight++;
    if (!rl_handle_request_async(&thread->handler, request, response, &pending->areq)) {
        thread->in_flight--;
        free(pending);
        send_response(req, response);
        rl_handler_ctx_trim(&thread->handler);
        return true;
    }
    pending->token = h2o_mem_alloc_shared(&req->pool, sizeof *pending->token, on_request_disposed);
    *pending->token = pending;
    return true;
}

/* ---- browsers (request_guard.h) ------------------------------------------ */

static void add_header(h2o_req_t *req, const h2o_token_t *token, const char *value, size_t len) {
    h2o_add_header(&req->pool, &req->res.headers, token, NULL, value, len);
}

/* Answers req now if the guard refuses it or it is a preflight; else adds
 * the CORS headers an allowed origin's answer carries. True: answered. */
static bool guard_answered(rl_http_thread *thread, h2o_req_t *req) {
    /* h2o puts its own default in authority when a request has no Host. */
    bool has_host = req->input.authority.base != NULL && req->hostconf != NULL &&
                    req->input.authority.base != req->hostconf->authority.hostport.base;
    ssize_t origin_at = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
    const h2o_iovec_t *origin = origin_at >= 0 ? &req->headers.entries[origin_at].value : NULL;
    rl_guard_decision decision;
    rl_request_guard_check(&thread->server->guard, req->method.base, req->method.len,
                           has_host ? req->input.authority.base : NULL, req->input.authority.len,
                           origin != NULL ? origin->base : NULL, origin != NULL ? origin->len : 0, &decision);
    if (decision.verdict == RL_GUARD_REFUSE) {
        rl_http_response response = {0, NULL, NULL};
        rl_respond_error(&thread->handler, &response, 403, RL_INVALID_REQUEST, NULL, decision.detail);
        send_response(req, &response);
        rl_handler_ctx_trim(&thread->handler);
        return true;
    }
    if (!decision.cors) return false;
    add_header(req, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, origin->base, origin->len);
    add_header(req, H2O_TOKEN_VARY, H2O_STRLIT("Origin"));
    if (decision.verdict != RL_GUARD_PREFLIGHT) return false;
    static h2o_generator_t generator = {NULL, NULL};
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-methods"), 0, NULL,
                          H2O_STRLIT("GET, POST, PUT"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-headers"), 0, NULL,
                          H2O_STRLIT("content-type"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-max-age"), 0, NULL,
                          H2O_STRLIT("600"));
    req->res.status = 204;
    req->res.reason = reason_phrase(204);
    req->res.content_length = 0;
    h2o_start_response(req, &generator);
    h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    return true;
}

static int on_request(h2o_handler_t *self, h2o_req_t *req) {
    (void)self;
    rl_http_thread *thread = H2O_STRUCT_FROM_MEMBER(rl_http_thread, ctx, req->conn->ctx);
    if (guard_answered(thread, req)) return 0;
    size_t path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    rl_http_request request = {
        .method = req->method.base,
        .method_len = req->method.len,
        .path = req->path.base,
        .path_len = path_len,
        .body = req->entity.base,
        .body_len = req->entity.base != NULL ? req->entity.len : 0,
    };
    rl_http_response response = {0, NULL, NULL};
    /* The guard's clock for idle and slow connections starts again. */
    if (req->conn->callbacks->get_socket != NULL)
        rl_conn_guard_note_request(req->conn->callbacks->get_socket(req->conn), monotonic_ms());
    if (thread->receiver_registered && start_async(thread, req, &request, &response)) return 0;
    rl_handle_request(&thread->handler, &request, &response);
    send_response(req, &response);
    rl_handler_ctx_trim(&thread->handler); /* the answer is copied: big buffers can go */
    return 0;
}

/* ---- listener ---------------------------------------------------------- */

static bool fail(char *err, size_t err_size, const char *format, const char *arg, int errnum) {
    char what[256];
    snprintf(what, sizeof what, format, arg);
    if (errnum != 0)
        snprintf(err, err_size, "%s: %s", what, strerror(errnum));
    else
        snprintf(err, err_size, "%s", what);
    return false;
}

static void format_address(const struct sockaddr_storage *ss, char *out, size_t out_size,
                           uint16_t *port) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
        *port = ntohs(sin6->sin6_port);
        snprintf(out, out_size, "[%s]:%u", host, (unsigned)*port);
    } else {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        *port = ntohs(sin->sin_port);
        snprintf(out, out_size, "%s:%u", host, (unsigned)*port);
    }
}

static bool open_listener(rl_http_server *server, char *err, size_t err_size) {
    rl_listen_addr addr;
    if (!rl_listen_addr_parse(server->options.listen_addr, &addr, err, err_size)) return false;
    char port_text[8];
    snprintf(port_text, sizeof port_text, "%u", (unsigned)addr.port);
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    /* ":PORT" means every IPv4 interface, as spec §11.2's ":8080". */
    hints.ai_family = addr.host[0] == '\0' ? AF_INET : AF_UNSPEC;
    int rc = getaddrinfo(addr.host[0] != '\0' ? addr.host : NULL, port_text, &hints, &found);
    if (rc != 0) {
        snprintf(err, err_size, "cannot resolve \"%s\": %s", server->options.listen_addr,
                 gai_strerror(rc));
        return false;
    }
    int fd = -1, last_errno = 0;
    for (struct addrinfo *ai = found; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        /* Accepted sockets inherit it: answers go out without Nagle's wait. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        /* And this: h2o reads all a socket holds at once, so the kernel's
         * receive buffer (autotuned up to megabytes) bounds what one read
         * of a pipelining client adds to its input buffer. */
        int receive_buffer = RECEIVE_BUFFER_BYTES;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
            last_errno = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) return fail(err, err_size, "cannot listen on %s", server->options.listen_addr, last_errno);

    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &bound_len) != 0) {
        int e = errno;
        close(fd);
        return fail(err, err_size, "cannot read the address of %s", server->options.listen_addr, e);
    }
    format_address(&bound, server->address, sizeof server->address, &server->port);
    server->guard.loopback_only =
        bound.ss_family == AF_INET6
            ? IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&bound)->sin6_addr)
            : (ntohl(((const struct sockaddr_in *)&bound)->sin_addr.s_addr) >> 24) == 127u;
    server->listen_fd = fd;
    return true;
}

/* The connection bound (conn_guard.h): at its share of it, a loop leaves
 * new connections to a loop that has room; if none has, it makes room by
 * closing an idle connection and stops watching the listener until that
 * one is gone, and with nothing idle it resets new connections at once.
 * Accepting is by hand, not h2o_evloop_socket_accept, to tell "nothing to
 * accept" from "out of descriptors": in the latter the listener stays
 * readable, and watching it would spin the loop at 100% CPU. */
static void on_accept(h2o_socket_t *listener, const char *err);

static void pause_accepting(rl_http_thread *thread) {
    if (!thread->accepting || thread->listener == NULL) return;
    thread->accepting = false;
    h2o_socket_read_stop(thread->listener);
}

static void resume_accepting(rl_http_thread *thread) {
    if (thread->accepting || thread->listener == NULL) return;
    thread->accepting = true;
    h2o_socket_read_start(thread->listener, on_accept);
}

/* After a connection is freed: there is room again (on_accept checks). */
static void on_connection_closed(void *data) { resume_accepting(data); }

static bool another_loop_has_room(const rl_http_thread *thread) {
    const rl_http_server *server = thread->server;
    for (uint32_t i = 0; i < server->thread_count; i++) {
        rl_http_thread *other = &server->threads[i];
        if (other != thread && rl_conn_guard_has_room(&other->guard)) return true;
    }
    return false;
}

/* Whether a connection waits in the backlog (the listener is readable). */
static bool connection_waiting(int listen_fd) {
    struct pollfd p = {listen_fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

static void on_accept(h2o_socket_t *listener, const char *err) {
    if (err != NULL) return;
    rl_http_thread *thread = listener->data;
    rl_conn_guard *guard = &thread->guard;
    int listen_fd = h2o_socket_get_fd(listener);
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        uint64_t now_ms = monotonic_ms();
        bool full = rl_conn_guard_is_full(guard);
        /* Room is made only for a connection that is there. */
        if (full && !connection_waiting(listen_fd)) return;
        /* Another loop with room takes it as is; else room is made here. */
        if (full && (another_loop_has_room(thread) ||
                     rl_conn_guard_make_room(guard, now_ms) != RL_CONN_ROOM_NONE)) {
            pause_accepting(thread); /* until a connection closes, or the next sweep */
            return;
        }
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return; /* another loop took it */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                pause_accepting(thread); /* same: a close or the next sweep retries */
                return;
            }
            continue; /* ECONNABORTED and the like: that one is gone */
        }
        if (full) {
            rl_conn_guard_refuse(guard, fd);
            continue;
        }
        /* TCP_NODELAY is inherited from the listener. */
        h2o_socket_t *sock =
            h2o_evloop_socket_create(thread->ctx.loop, fd, H2O_SOCKET_FLAG_IS_ACCEPTED_CONNECTION);
        if (!rl_conn_guard_add(guard, sock, now_ms)) {
            h2o_socket_close(sock);
            continue;
        }
        h2o_accept(&thread->accept_ctx, sock);
    }
}

/* The bound on connections that the descriptor limit allows, after raising
 * the soft limit to the hard one (what a daemon is allowed to have). */
static uint32_t connection_bound(uint32_t wanted, uint32_t threads) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
    if (limit.rlim_cur < limit.rlim_max) {
        struct rlimit raised = {limit.rlim_max, limit.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    if (limit.rlim_cur == RLIM_INFINITY) return wanted;
    rlim_t usable = limit.rlim_cur > RESERVED_FDS + threads ? limit.rlim_cur - RESERVED_FDS - threads : threads;
    return usable < wanted ? (uint32_t)usable : wanted;
}

/* ---- loops ------------------------------------------------------------- */

static bool has_connections(h2o_context_t *ctx) {
    return !h2o_linklist_is_empty(&ctx->http1._conns) || !h2o_linklist_is_empty(&ctx->http2._conns);
}

/* Stops accepting, then closes the connections: h2o 2.2 has no call that
 * closes idle keep-alive connections, so the idle/request timeouts are cut
 * to zero and the loop runs until they fire (a response being written still
 * finishes: shutdown_requested turns keep-alive off for it). */
/* Runs the loop until the backend has answered every request this loop
 * started (their connections may be gone: the answers still come here).
 * True when none is left. */
static bool wait_in_flight(rl_http_thread *thread) {
    uint64_t deadline_ms = monotonic_ms() + IN_FLIGHT_DEADLINE_MS;
    while (thread->in_flight > 0 && monotonic_ms() < deadline_ms) h2o_evloop_run(thread->ctx.loop, 10);
    return thread->in_flight == 0;
}

static bool drain(rl_http_thread *thread, h2o_socket_t *listener) {
    h2o_context_t *ctx = &thread->ctx;
    thread->listener = NULL; /* closing connections must not restart it */
    h2o_socket_read_stop(listener);
    h2o_socket_close(listener);
    h2o_context_request_shutdown(ctx);
    ctx->http1.req_timeout.timeout = 0;
    ctx->http2.idle_timeout.timeout = 0;
    ctx->http2.graceful_shutdown_timeout.timeout = 0;
    uint64_t deadline_ms = monotonic_ms() + DRAIN_DEADLINE_MS;
    while (has_connections(ctx) && monotonic_ms() < deadline_ms) h2o_evloop_run(ctx->loop, 10);
    wait_in_flight(thread);
    /* Sockets are freed on the loop's next turn: give it one. */
    h2o_evloop_run(ctx->loop, 0);
    /* request_shutdown armed a timer to resend HTTP/2 GOAWAYs; with every
     * connection gone it has nothing to do, and h2o_context_dispose asserts
     * that no timer is pending. */
    if (h2o_timeout_is_linked(&ctx->http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&ctx->http2._graceful_shutdown_timeout);
    return !has_connections(ctx) && thread->in_flight == 0;
}

static void *loop_main(void *arg) {
    rl_http_thread *thread = arg;
    rl_http_server *server = thread->server;
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_context_init(&thread->ctx, loop, &server->config);
    thread->accept_ctx.ctx = &thread->ctx;
    thread->accept_ctx.hosts = server->config.hosts;
    h2o_multithread_register_receiver(thread->ctx.queue, &thread->receiver, on_answers);
    thread->receiver_registered = true;

    /* Each loop watches its own dup of the one listening socket (non-blocking,
     * shared by the kernel), so connections spread over the loops. */
    int fd = fcntl(server->listen_fd, F_DUPFD_CLOEXEC, 0);
    h2o_socket_t *listener = NULL;
    if (fd >= 0) {
        listener = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
        listener->data = thread;
        thread->listener = listener;
        thread->accepting = true;
        h2o_socket_read_start(listener, on_accept);
    } else {
        fprintf(stderr, "ratelimiterd: a loop cannot dup the listening socket: %s\n", strerror(errno));
    }

    while (!atomic_load_explicit(&server->stop_requested, memory_order_relaxed)) {
        h2o_evloop_run(loop, rl_conn_guard_wait_ms(&thread->guard, monotonic_ms(), LOOP_WAKE_MS));
        /* A sweep also retries accepting if the loop waited for room
         * elsewhere or for descriptors. */
        if (rl_conn_guard_tick(&thread->guard, monotonic_ms())) resume_accepting(thread);
    }

    bool drained = listener != NULL ? drain(thread, listener)
                                    : wait_in_flight(thread) && !has_connections(&thread->ctx);
    if (drained) {
        h2o_multithread_queue_t *queue = thread->ctx.queue;
        if (thread->receiver_registered) {
            h2o_multithread_unregister_receiver(queue, &thread->receiver);
            thread->receiver_registered = false;
        }
        h2o_context_dispose(&thread->ctx);
#if H2O_VERSION_MAJOR == 2 && H2O_VERSION_MINOR == 2
        /* h2o 2.2's evloop build closes the queue's socket in dispose but
         * never frees the queue itself (its libuv build does); nothing
         * points to it any more. */
        free(queue);
#else
        (void)queue;
#endif
        h2o_evloop_run(loop, 0); /* frees what dispose closed */
        h2o_evloop_destroy(loop);
    } else {
        /* Freeing a context with live connections would free memory they
         * still use; the process is exiting, so leave it to the OS. */
        if (thread->in_flight > 0) {
            /* The backend may still answer into this loop's receiver: the
             * thread's memory must stay (rl_http_server_stop leaks it). */
            fprintf(stderr, "ratelimiterd: %u requests still wait for the backend after %d ms; not waiting longer\n",
                    (unsigned)thread->in_flight, IN_FLIGHT_DEADLINE_MS);
            atomic_store(&server->threads_in_use, true);
        } else {
            fprintf(stderr, "ratelimiterd: connections still open after %d ms; not waiting longer\n",
                    DRAIN_DEADLINE_MS);
        }
    }
    return NULL;
}

/* Under LeakSanitizer (make asan): h2o 2.2 keeps per-thread caches of freed
 * buffers and pool chunks (h2o_mem_alloc_recycle) and never releases them;
 * they become unreachable when an event-loop thread exits. A few KB per
 * thread, once, by design of h2o: not ours to report. Builds without the
 * sanitizer never call this. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:h2o_mem_alloc_recycle\n"; }

/* ---- lifecycle --------------------------------------------------------- */

bool rl_http_server_create(const rl_http_server_options *options, rl_service *service,
                           rl_http_server **out, char *err, size_t err_size) {
    *out = NULL;
    if (options->threads < 1 || options->max_batch < 1 || options->max_body_bytes < 1 ||
        options->max_connections < 1 || options->idle_timeout_ms < 1 ||
        options->request_timeout_ms < 1) {
        snprintf(err, err_size,
                 "threads, max_batch, max_body_bytes, max_connections, idle_timeout_ms and "
                 "request_timeout_ms must be at least 1");
        return false;
    }
    rl_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    server->service = service;
    server->options = *options;
    server->listen_fd = -1;
    atomic_init(&server->stop_requested, false);
    atomic_init(&server->threads_in_use, false);
    if (!open_listener(server, err, err_size)) {
        free(server);
        return false;
    }
    server->max_connections = connection_bound(options->max_connections, options->threads);
    server->guard.allowed_origins = options->allowed_origins;
    server->guard.allowed_origin_count = options->allowed_origin_count;

    h2o_config_init(&server->config);
    server->config.server_name = h2o_iovec_init(H2O_STRLIT("ratelimiterd"));
    server->config.max_request_entity_size = (size_t)options->max_body_bytes;
    /* h2o's own timer runs from when a connection starts waiting for a
     * request until it has arrived: the guard closes idle and slow ones
     * first, this is only the backstop. */
    server->config.http1.req_timeout =
        (uint64_t)options->idle_timeout_ms + (uint64_t)options->request_timeout_ms;
    server->config.http2.idle_timeout = options->idle_timeout_ms;
    /* No h2c (HTTP/2 without TLS, by "Upgrade: h2c" or by its preface):
     * libh2o 2.2 refuses an HTTP/2 body above max_request_entity_size with
     * RST_STREAM(REFUSED_STREAM) and no answer, where HTTP/1.1 gets a 413,
     * and it offers no hook to answer otherwise. An Upgrade header is now
     * ignored (the request is served over HTTP/1.1); the preface gets
     * libh2o's plain 400. */
    server->config.http1.upgrade_to_http2 = 0;
    h2o_hostconf_t *host =
        h2o_config_register_host(&server->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    /* One handler for every path: router.c dispatches on the raw path. */
    h2o_pathconf_t *pathconf = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof *handler);
    handler->on_req = on_request;
    /* h2o's own refusals (413, ...) are sent on whichever path is bound
     * then, often the host's fallback path: JSON them on both. */
    rl_error_filter_register(pathconf);
    rl_error_filter_register(&host->fallback_path);
    *out = server;
    return true;
}

const char *rl_http_server_address(const rl_http_server *server) { return server->address; }

uint16_t rl_http_server_port(const rl_http_server *server) { return server->port; }

bool rl_http_server_is_loopback_only(const rl_http_server *server) { return server->guard.loopback_only; }

bool rl_http_server_start(rl_http_server *server, char *err, size_t err_size) {
    if (server->started) return true;
    signal(SIGPIPE, SIG_IGN);
    uint32_t count = server->options.threads;
    server->threads = calloc(count, sizeof *server->threads);
    if (server->threads == NULL) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    uint32_t share = server->max_connections / count;
    uint64_t now_ms = monotonic_ms();
    server->admin_writer = rl_admin_writer_start(rl_admin_writer_put_limits, server->service);
    if (server->admin_writer == NULL) {
        free(server->threads);
        server->threads = NULL;
        snprintf(err, err_size, "cannot start the admin writer thread");
        return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        rl_http_thread *thread = &server->threads[i];
        thread->server = server;
        /* Before any loop runs: the loops read each other's room. */
        rl_conn_guard_init(&thread->guard, i, share > 0 ? share : 1, server->options.idle_timeout_ms,
                           server->options.request_timeout_ms, now_ms, on_connection_closed, thread);
        if (!rl_handler_ctx_init(&thread->handler, server->service, server->options.max_batch)) {
            for (uint32_t j = 0; j < i; j++) rl_handler_ctx_free(&server->threads[j].handler);
            free(server->threads);
            server->threads = NULL;
            rl_admin_writer_stop(server->admin_writer);
            server->admin_writer = NULL;
            snprintf(err, err_size, "out of memory for %u event loops", count);
            return false;
        }
        thread->handler.admin_writer = server->admin_writer;
    }
    server->thread_count = count;
    server->started = true;
    for (uint32_t i = 0; i < count; i++) {
        int rc = pthread_create(&server->threads[i].thread, NULL, loop_main, &server->threads[i]);
        if (rc != 0) {
            snprintf(err, err_size, "cannot start event loop %u: %s", i, strerror(rc));
            rl_http_server_stop(server);
            return false;
        }
        server->threads[i].running = true;
    }
    return true;
}

void rl_http_server_request_stop(rl_http_server *server) {
    atomic_store(&server->stop_requested, true);
}

void rl_http_server_stop(rl_http_server *server) {
    rl_http_server_request_stop(server);
    if (!server->started) return;
    for (uint32_t i = 0; i < server->thread_count; i++) {
        if (server->threads[i].running) pthread_join(server->threads[i].thread, NULL);
        server->threads[i].running = false;
        if (!atomic_load(&server->threads_in_use)) rl_handler_ctx_free(&server->threads[i].handler);
    }
    if (!atomic_load(&server->threads_in_use)) free(server->threads);
    server->threads = NULL;
    /* After the loops, which waited for the answers of their puts: what is
     * left (a loop that gave up waiting) is still written before the exit. */
    rl_admin_writer_stop(server->admin_writer);
    server->admin_writer = NULL;
    server->thread_count = 0;
    server->started = false;
}

void rl_http_server_destroy(rl_http_server *server) {
    if (server == NULL) return;
    rl_http_server_stop(server);
    h2o_config_dispose(&server->config);
    if (server->listen_fd >= 0) close(server->listen_fd);
    free(server);
}
