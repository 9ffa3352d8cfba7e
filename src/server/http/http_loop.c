/* http_loop.c — one event loop's life (http_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http_internal.h"

/* A loop wakes at least this often to see a stop request: a stop costs at
 * most this much latency, an idle loop 20 wake-ups a second. */
#define LOOP_WAKE_MS 50
/* How long a stopping loop waits for its connections to finish and close. */
#define DRAIN_DEADLINE_MS 1500
/* How long a stopping loop waits, after its connections, for the backend to
 * answer the requests it still has in flight (a flush is milliseconds; a
 * store that stopped answering gives up on its own timeouts). */
#define IN_FLIGHT_DEADLINE_MS 5000

static bool has_connections(h2o_context_t *ctx) {
    return !h2o_linklist_is_empty(&ctx->http1._conns) || !h2o_linklist_is_empty(&ctx->http2._conns);
}

/* Runs the loop until the backend has answered every request this loop
 * started (their connections may be gone: the answers still come here).
 * True when none is left. */
static bool wait_in_flight(rl_http_thread *thread) {
    uint64_t deadline_ms = rl__http_monotonic_ms() + IN_FLIGHT_DEADLINE_MS;
    while (thread->in_flight > 0 && rl__http_monotonic_ms() < deadline_ms) h2o_evloop_run(thread->ctx.loop, 10);
    return thread->in_flight == 0;
}

/* Stops accepting, then closes the connections: h2o 2.2 has no call that
 * closes idle keep-alive connections, so the idle/request timeouts are cut
 * to zero and the loop runs until they fire (a response being written still
 * finishes: shutdown_requested turns keep-alive off for it). */
static bool drain(rl_http_thread *thread, h2o_socket_t *listener) {
    h2o_context_t *ctx = &thread->ctx;
    thread->listener = NULL; /* closing connections must not restart it */
    h2o_socket_read_stop(listener);
    h2o_socket_close(listener);
    h2o_context_request_shutdown(ctx);
    ctx->http1.req_timeout.timeout = 0;
    ctx->http2.idle_timeout.timeout = 0;
    ctx->http2.graceful_shutdown_timeout.timeout = 0;
    uint64_t deadline_ms = rl__http_monotonic_ms() + DRAIN_DEADLINE_MS;
    while (has_connections(ctx) && rl__http_monotonic_ms() < deadline_ms) h2o_evloop_run(ctx->loop, 10);
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

void *rl__http_loop_main(void *arg) {
    rl_http_thread *thread = arg;
    rl_http_server *server = thread->server;
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_context_init(&thread->ctx, loop, &server->config);
    thread->accept_ctx.ctx = &thread->ctx;
    thread->accept_ctx.hosts = server->config.hosts;
    thread->accept_ctx.ssl_ctx = server->ssl_ctx; /* NULL: plain HTTP */
    h2o_multithread_register_receiver(thread->ctx.queue, &thread->receiver, rl__http_on_answers);
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
        h2o_socket_read_start(listener, rl__http_on_accept);
    } else {
        fprintf(stderr, "ratelimiterd: a loop cannot dup the listening socket: %s\n", strerror(errno));
    }

    while (!atomic_load_explicit(&server->stop_requested, memory_order_relaxed)) {
        h2o_evloop_run(loop, rl_conn_guard_wait_ms(&thread->guard, rl__http_monotonic_ms(), LOOP_WAKE_MS));
        /* A sweep also retries accepting if the loop waited for room
         * elsewhere or for descriptors. */
        if (rl_conn_guard_tick(&thread->guard, rl__http_monotonic_ms())) rl__http_resume_accepting(thread);
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
