/* http_server.c — h2o glue, its lifecycle: the listener and h2o's
 * configuration made, the loops started and stopped (http_internal.h says
 * where the rest of the road lives).
 *
 * Everything HTTP-agnostic lives in handler.h; this glue only translates an
 * h2o request into an rl_http_request and the answer back.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/http/error_filter.h"
#include "server/http/http_internal.h"

_Static_assert(RL_HTTP_MAX_HEADERS == H2O_MAX_HEADERS, "h2o.h's H2O_MAX_HEADERS changed");
_Static_assert(RL_HTTP_MAX_HEADER_BYTES == H2O_MAX_REQLEN, "h2o.h's H2O_MAX_REQLEN changed");

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
    if (!rl__http_tls_open(server, err, err_size)) {
        free(server);
        return false;
    }
    if (!rl__http_open_listener(server, err, err_size)) {
        rl__http_tls_close(server);
        free(server);
        return false;
    }
    server->max_connections = rl__http_connection_bound(options->max_connections, options->threads);
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
    /* A TLS handshake must end as soon as a request must arrive. */
    server->config.handshake_timeout = options->request_timeout_ms;
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
    handler->on_req = rl__http_on_request;
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
    uint64_t now_ms = rl__http_monotonic_ms();
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
        thread->index = i;
        /* Before any loop runs: the loops read each other's room. */
        rl_conn_guard_init(&thread->guard, i, share > 0 ? share : 1, server->options.idle_timeout_ms,
                           server->options.request_timeout_ms, now_ms, rl__http_on_connection_closed, thread);
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
        thread->handler.denials = server->options.denials;
        thread->handler.metrics = server->options.metrics;
    }
    server->thread_count = count;
    server->started = true;
    for (uint32_t i = 0; i < count; i++) {
        int rc = pthread_create(&server->threads[i].thread, NULL, rl__http_loop_main, &server->threads[i]);
        if (rc != 0) {
            snprintf(err, err_size, "cannot start event loop %u: %s", i, strerror(rc));
            rl_http_server_stop(server);
            return false;
        }
        server->threads[i].running = true;
    }
    return true;
}

void rl_http_server_connection_stats(rl_http_server *server, rl_http_connection_stats *out) {
    memset(out, 0, sizeof *out);
    if (!server->started) return;
    rl_conn_guard_stats sum = {0};
    for (uint32_t i = 0; i < server->thread_count; i++) rl_conn_guard_read(&server->threads[i].guard, &sum, &out->open);
    out->max = server->max_connections;
    out->accepted = sum.accepted;
    out->refused = sum.refused;
    out->evicted = sum.evicted;
    out->idle_closed = sum.idle_closed;
    out->request_timeouts = sum.request_timeouts;
    out->answer_timeouts = sum.answer_timeouts;
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
        if (!atomic_load(&server->threads_in_use)) {
            rl__http_free_spares(&server->threads[i]);
            rl_handler_ctx_free(&server->threads[i].handler);
        }
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
    rl__http_tls_close(server);
    free(server);
}
