/* http_listener.c — the listening socket and accepting (http_internal.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http/http_internal.h"

/* Connections accepted per readiness event: bounded so that one busy
 * listener cannot starve the requests of connections already open. */
#define ACCEPTS_PER_EVENT 16
/* File descriptors kept free for everything but client connections
 * (listener, epoll, registry writes, the loops' wake-up pipes). */
#define RESERVED_FDS 64
/* Each connection's kernel receive buffer (fixed, not autotuned): enough
 * for ~2 GB/s at 0.1 ms RTT, a 1 MiB body in a few round trips. */
#define RECEIVE_BUFFER_BYTES (128 * 1024)

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

bool rl__http_open_listener(rl_http_server *server, char *err, size_t err_size) {
    rl_listen_addr addr;
    if (!rl_listen_addr_parse(server->options.listen_addr, &addr, err, err_size)) return false;
    char port_text[8];
    snprintf(port_text, sizeof port_text, "%u", (unsigned)addr.port);
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    /* ":PORT" means every IPv4 interface, as in listen: ":8080" (docs/operations.md). */
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

static void pause_accepting(rl_http_thread *thread) {
    if (!thread->accepting || thread->listener == NULL) return;
    thread->accepting = false;
    h2o_socket_read_stop(thread->listener);
}

void rl__http_resume_accepting(rl_http_thread *thread) {
    if (thread->accepting || thread->listener == NULL) return;
    thread->accepting = true;
    h2o_socket_read_start(thread->listener, rl__http_on_accept);
}

/* After a connection is freed: there is room again (rl__http_on_accept checks). */
void rl__http_on_connection_closed(void *data) { rl__http_resume_accepting(data); }

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

void rl__http_on_accept(h2o_socket_t *listener, const char *err) {
    if (err != NULL) return;
    rl_http_thread *thread = listener->data;
    rl_conn_guard *guard = &thread->guard;
    int listen_fd = h2o_socket_get_fd(listener);
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        uint64_t now_ms = rl__http_monotonic_ms();
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
uint32_t rl__http_connection_bound(uint32_t wanted, uint32_t threads) {
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
