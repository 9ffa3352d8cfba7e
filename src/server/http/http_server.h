/* server/http/http_server.h — the HTTP/1.1 front of ratelimiterd, on h2o (no h2c:
 * http_server.c says why).
 *
 * Before any handler, request_guard.h decides on the Host and Origin
 * headers: a browser's request from an origin not allowed, or a Host other
 * than a loopback name on a loopback listener, gets 403. Then auth.h on the
 * bearer token, when tokens are configured: 401 without one, 403 with one
 * the path does not take.
 *
 * One listening socket; one h2o event loop per thread, each accepting on its
 * own dup of that socket, so a connection lives on one thread and requests
 * need no lock of ours (the backend has its own). Keep-alive is on; bodies
 * above max_body_bytes are refused by h2o with 413 before they are read
 * (chunked ones as soon as they pass it), and the connection is closed.
 *
 * Bounds under overload (conn_guard.h has the details):
 *   - connections: max_connections, all loops together; past it a new
 *     connection replaces an idle one (never used, or unused for 1 s), or
 *     is reset at once if none is idle: never left waiting in the backlog;
 *   - time: idle_timeout_ms for a connection between requests,
 *     request_timeout_ms for a request to arrive once begun and for its
 *     answer to be taken;
 *   - request line + headers: RL_HTTP_MAX_HEADER_BYTES and
 *     RL_HTTP_MAX_HEADERS, fixed when libh2o was compiled (H2O_MAX_REQLEN,
 *     H2O_MAX_HEADERS; not settable at run time): past either h2o answers
 *     400 (text/plain, not JSON: it writes that answer itself) and closes;
 *   - memory for requests being read: at most about max_connections x
 *     (max(max_body_bytes + headers, RL_HTTP_MAX_HEADER_BYTES) + what one
 *     read takes from the kernel: h2o reads all a socket holds, so each
 *     connection's receive buffer is fixed at 128 KiB instead of being
 *     autotuned to megabytes for a client that pipelines).
 *
 * Lifecycle, all from one controlling thread (not a loop thread):
 *   create (binds) -> start (threads run) -> stop (drains, joins) -> destroy.
 */
#ifndef RL_SERVER_HTTP_SERVER_H
#define RL_SERVER_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/api/outcome.h"
#include "server/auth/auth.h"
#include "server/service.h"

typedef struct rl_http_server rl_http_server;

/* Whoever watches the daemon answer (metrics, the access log, the
 * console's recent denials: server/observe/). answered is called on loop
 * `loop` (0..threads-1) once per request answered, right after its answer
 * is handed to h2o (or dropped: its client went away), with what it was
 * (borrowed for the call) and how long it took from its headers being read
 * to its answer, in microseconds. It must not block: it runs on the event
 * loop, between requests. */
typedef struct rl_http_observer {
    void (*answered)(void *context, uint32_t loop, const rl_api_outcome *outcome, uint64_t latency_us);
    void *context;
} rl_http_observer;

typedef struct rl_http_server_options {
    const char *listen_addr; /* "HOST:PORT" (listen_addr.h); port 0: any free port */
    uint32_t threads;        /* event loops, >= 1 */
    uint64_t max_body_bytes; /* larger request bodies get 413 */
    size_t max_batch;        /* items per batch request, >= 1 */
    /* Open client connections, all loops together, >= 1; lowered to what the
     * file-descriptor limit allows, and shared evenly by the loops. At a
     * loop's share: see "connections" above. */
    uint32_t max_connections;
    /* >= 1 each. A connection with no request under way is closed after
     * idle_timeout_ms; a request must arrive within request_timeout_ms of
     * its first byte being seen, and the client must take its answer within
     * as long. Enforced about every tenth of the shorter one (10 ms..1 s). */
    uint32_t idle_timeout_ms;
    uint32_t request_timeout_ms;
    /* The web origins whose pages may call the API (request_guard.h), each
     * as rl_request_guard_origin_check accepts; borrowed: they must outlive
     * the server. Requests with another Origin get 403. */
    const char *const *allowed_origins;
    size_t allowed_origin_count;
    rl_http_observer observer; /* answered NULL: nobody watches */
    /* Bearer tokens (server/auth/auth.h), checked after the request guard
     * and before any route; NULL: every path is open. Borrowed: it must
     * outlive the server. */
    const rl_auth *auth;
    /* PEM files (server.tls.cert_file, key_file): when both are set the
     * listener speaks HTTPS only (TLS 1.2 and later, HTTP/1.1 inside);
     * both NULL: plain HTTP. Read by create. */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* The recent denials GET /v1/admin/denials answers with (the observer
     * fills it: server/observe/), or NULL: an empty list. Borrowed: it must
     * outlive the server. */
    const rl_denial_ring *denials;
    rl_metrics_page metrics;   /* what GET /metrics answers (handler.h); write NULL: 404 */
} rl_http_server_options;

/* The fixed bounds of libh2o's HTTP/1 parser: H2O_MAX_REQLEN (8192 + 4096 *
 * H2O_MAX_HEADERS bytes of request line and headers) and H2O_MAX_HEADERS,
 * compiled into the library (http_server.c checks they match h2o.h). */
#define RL_HTTP_MAX_HEADER_BYTES 417792u
#define RL_HTTP_MAX_HEADERS 100u

/* Binds and listens (nothing is served until start). service is borrowed and
 * must outlive the server. *out is owned by the caller (destroy). Returns
 * false with err (err_size bytes) if the address is invalid or cannot be
 * bound; then *out is NULL. */
bool rl_http_server_create(const rl_http_server_options *options, rl_service *service,
                           rl_http_server **out, char *err, size_t err_size);

/* The address actually bound, e.g. "127.0.0.1:43117" or "[::1]:8080"; valid
 * until destroy. */
const char *rl_http_server_address(const rl_http_server *server);
uint16_t rl_http_server_port(const rl_http_server *server);

/* Whether the bound address is a loopback one (127.0.0.0/8, ::1): then only
 * this machine can reach it, and Host must name the loopback too. */
bool rl_http_server_is_loopback_only(const rl_http_server *server);

/* Starts the event-loop threads. They inherit the caller's signal mask:
 * block SIGINT/SIGTERM first if another thread is to receive them. Sets
 * SIGPIPE to ignored for the process (a peer closing mid-write must not kill
 * the daemon). Returns false with err if a thread or its memory cannot be
 * had; then no thread runs. */
bool rl_http_server_start(rl_http_server *server, char *err, size_t err_size);

/* Asks the loops to stop. Only an atomic store: safe from a signal handler
 * and from any thread. */
void rl_http_server_request_stop(rl_http_server *server);

/* Requests stop, then waits: each loop stops accepting, lets responses in
 * flight finish, closes its connections (waiting at most about a second for
 * them) and exits. Returns once every thread is joined. Idempotent. */
void rl_http_server_stop(rl_http_server *server);

/* The connections of every loop together, for GET /metrics. */
typedef struct rl_http_connection_stats {
    uint64_t open; /* open now */
    uint64_t max;  /* the bound, after the descriptor limit */
    /* Since start (conn_guard.h): accepted; reset at the bound with none
     * idle; idle ones closed for a newcomer; closed by the timeouts. */
    uint64_t accepted, refused, evicted, idle_closed, request_timeouts, answer_timeouts;
} rl_http_connection_stats;

/* Any thread, between start and stop (all zero before start): adds up the
 * loops' counters without stopping them. */
void rl_http_server_connection_stats(rl_http_server *server, rl_http_connection_stats *out);

/* Stops if needed and frees everything. NULL is allowed. */
void rl_http_server_destroy(rl_http_server *server);

#endif
