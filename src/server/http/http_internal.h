/* server/http/http_internal.h — private to server/http/http_*.c: the
 * server's and its loops' state, and the parts of http_server.c's road that
 * live in their own files:
 *   http_server.c    lifecycle: create (h2o's configuration), start, stop
 *   http_listener.c  the listening socket, accepting under the connection bound
 *   http_loop.c      one event loop: run, drain, stop
 *   http_request.c   a request: guard, handler (now or later), answer
 *   http_response.c  the answer to h2o
 *   http_tls.c       the listener's TLS context
 * Threading: a loop's state belongs to its thread; the server's is set
 * before the loops start, save stop_requested and threads_in_use.
 */
#ifndef RL_SERVER_HTTP_INTERNAL_H
#define RL_SERVER_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <h2o.h>

#include "server/api/admin_writer.h"
#include "server/api/handler.h"
#include "server/http/conn_guard.h"
#include "server/http/http_server.h"
#include "server/http/listen_addr.h"
#include "server/http/request_guard.h"

typedef struct rl_http_thread {
    rl_http_server *server;
    uint32_t index; /* 0..thread_count-1: which loop (the observer's) */
    pthread_t thread;
    bool running;
    h2o_context_t ctx; /* the request's thread is found from req->conn->ctx */
    h2o_accept_ctx_t accept_ctx;
    h2o_socket_t *listener; /* NULL once draining */
    rl_conn_guard guard;    /* this loop's connections, their share of the bound, timeouts */
    bool accepting; /* false while waiting for room (or for descriptors) */
    rl_handler_ctx handler;
    /* Requests answered later (a backend with async ops, admin puts): their
     * answers come back through this receiver on the loop's queue. */
    h2o_multithread_receiver_t receiver;
    bool receiver_registered;
    uint32_t in_flight; /* started and not yet back on this loop; the loop's only */
    /* Requests' state kept for the next ones (their arrays with them), so
     * that a request allocates none: at most RL_HTTP_SPARE_REQUESTS. */
    struct pending_request *spare;
    uint32_t spare_count;
} rl_http_thread;

/* A request on its way: its rl_api_call, and while it waits for an answer
 * given later the way back to its loop. malloc'd, not in req->pool: the
 * client may go away meanwhile (then h2o frees the pool, and the token's
 * dispose callback sets req to NULL). Back to the loop's spares once
 * answered. */
#define RL_HTTP_SPARE_REQUESTS 64u
typedef struct pending_request {
    rl_api_call call; /* call.done posts `message` */
    h2o_multithread_message_t message;
    rl_http_thread *thread;
    h2o_req_t *req;              /* NULL once h2o has disposed of it */
    rl_http_request request;     /* as the api saw it (into req's memory: read only while req is there) */
    uint64_t started_us;         /* monotonic, when its headers were read */
    struct pending_request **token; /* in req->pool, points back here */
    struct pending_request *next_spare;
} pending_request;

/* http_request.c: frees a loop's spare requests (the loop has stopped). */
void rl__http_free_spares(rl_http_thread *thread);

struct rl_http_server {
    rl_service *service;
    rl_http_server_options options;
    int listen_fd;
    char address[RL_LISTEN_HOST_MAX_LEN + 16];
    uint16_t port;
    uint32_t max_connections; /* after the descriptor limit */
    rl_request_guard guard;   /* Host and Origin, before any handler */
    SSL_CTX *ssl_ctx;         /* NULL: plain HTTP; else every connection's TLS */
    h2o_globalconf_t config;
    rl_http_thread *threads;
    uint32_t thread_count;
    rl_admin_writer *admin_writer; /* admin puts, off the loops; stopped after them */
    atomic_bool stop_requested;
    atomic_bool threads_in_use; /* a loop left with requests in flight: never free threads */
    bool started;
};

static inline uint64_t rl__http_monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t rl__http_monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* http_response.c: the reason phrase of a status; an answer sent (its body
 * copied into the request's pool). */
const char *rl__http_reason_phrase(int status);
void rl__http_send_response(h2o_req_t *req, const rl_http_response *response);

/* http_request.c: h2o's handler for every path; the receiver of the answers
 * given later (on the loop's thread). */
int rl__http_on_request(h2o_handler_t *self, h2o_req_t *req);
void rl__http_on_answers(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages);

/* http_listener.c: binds server->options.listen_addr (server->listen_fd,
 * address, port, guard.loopback_only); a loop's accept callback; accepting
 * again once there may be room; the connection bound the descriptor limit
 * allows. */
bool rl__http_open_listener(rl_http_server *server, char *err, size_t err_size);
void rl__http_on_accept(h2o_socket_t *listener, const char *err);
void rl__http_resume_accepting(rl_http_thread *thread);
void rl__http_on_connection_closed(void *data);
uint32_t rl__http_connection_bound(uint32_t wanted, uint32_t threads);

/* http_tls.c: the TLS context of options.tls_cert_file and tls_key_file
 * into server->ssl_ctx (left NULL when neither is set). False with err
 * naming the file that would not load. close frees it (NULL allowed). */
bool rl__http_tls_open(rl_http_server *server, char *err, size_t err_size);
void rl__http_tls_close(rl_http_server *server);

/* http_loop.c: a loop thread's main (arg: its rl_http_thread). */
void *rl__http_loop_main(void *arg);

#endif
