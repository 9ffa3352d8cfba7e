/* delay_proxy.c — a TCP proxy on loopback that delays every byte by a fixed
 * one-way time in each direction: the "region" of bench/fleet/run.sh, a
 * daemon that is RTT = 2 x delay_ms away from its Redis.
 *
 *   build/delay_proxy --listen 127.0.0.1:PORT --upstream 127.0.0.1:6379 --delay-ms N
 *       [--max-connections 1024] [--max-queued-bytes 67108864]
 *
 * Each accepted connection gets its own connection to the upstream; bytes read
 * from either side are queued with the time they arrived and written to the
 * other side when arrival + delay_ms has passed, in order. The delay does not
 * limit throughput: everything that arrives during the delay is queued and sent
 * when due (a per-direction bound, --max-queued-bytes, only stops reading from a
 * side whose peer cannot keep up, as TCP itself would). A side's end of stream
 * (FIN) is delayed like its bytes; a reset or error on either side closes both
 * at once. --delay-ms 0 forwards at once, with no timer in the path.
 *
 * PORT 0 listens on any free port; the proxy prints
 *   "delay_proxy listening on 127.0.0.1:PORT delay_ms N upstream HOST:PORT"
 * on stderr once it accepts connections, and its counts on SIGTERM/SIGINT.
 * A connection takes two descriptors: --max-connections is lowered to what
 * the descriptor limit allows (raised to its hard limit first), so that
 * accept never fails for want of one.
 *
 * One thread, epoll (level-triggered) and one timerfd. Since every chunk is
 * delayed by the same amount, chunks fall due in the order they arrived, across
 * all connections: one global FIFO of pending chunks is already sorted by due
 * time, and the timer is armed for its head.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE_BYTES 65536
#define WRITEV_CHUNKS_MAX 64
#define EVENTS_MAX 256

typedef struct proxy_conn proxy_conn;
typedef struct direction direction;

/* Bytes read from one side, due on the other at due_ns. A chunk of length 0
 * with eof set is the source's end of stream. */
typedef struct chunk {
    struct chunk *next;                      /* in its direction, arrival order */
    struct chunk *global_prev, *global_next; /* in the pending FIFO until due */
    bool pending;                            /* linked in the pending FIFO */
    bool eof;
    direction *dir;
    int64_t due_ns;
    size_t len, sent;
    unsigned char data[];
} chunk;

/* One way of a connection: read from src_fd, written to dst_fd. */
struct direction {
    proxy_conn *conn;
    int src_fd, dst_fd;
    chunk *head, *tail;
    size_t queued_bytes;
    bool src_eof;       /* read 0 from src: nothing more to read */
    bool write_blocked; /* dst said EAGAIN: wait for EPOLLOUT */
    bool done;          /* eof forwarded (dst shut down for writing) */
};

/* What an epoll event points at: a side of a connection (or the listener,
 * the timer). */
typedef struct endpoint {
    enum { EP_LISTEN, EP_TIMER, EP_CLIENT, EP_UPSTREAM } kind;
    proxy_conn *conn;
    int fd;
    uint32_t interest; /* the events registered (0: not in the epoll set) */
} endpoint;

struct proxy_conn {
    int client_fd, upstream_fd;
    bool connecting; /* the upstream connect has not completed */
    bool closed;     /* waiting to be freed after this round of events */
    endpoint client_ep, upstream_ep;
    direction to_upstream, to_client;
    proxy_conn *prev, *next; /* the live connections, to close them at exit */
    proxy_conn *next_free;
};

static struct {
    int epoll_fd, timer_fd, listen_fd;
    int64_t delay_ns;
    size_t max_queued_bytes;
    size_t max_connections, connections;
    struct sockaddr_storage upstream_addr;
    socklen_t upstream_addr_len;
    chunk *pending_head, *pending_tail;
    proxy_conn *live;
    int64_t timer_armed_ns; /* 0: disarmed */
    proxy_conn *to_free;
    uint64_t accepted, refused, bytes_up, bytes_down;
} g;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the pending FIFO and its timer ------------------------------------ */

static void arm_timer(int64_t at_ns) {
    if (g.timer_armed_ns == at_ns) return;
    struct itimerspec its = {0};
    if (at_ns > 0) {
        its.it_value.tv_sec = at_ns / 1000000000;
        its.it_value.tv_nsec = at_ns % 1000000000;
    }
    if (timerfd_settime(g.timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
        perror("delay_proxy: timerfd_settime");
        exit(1);
    }
    g.timer_armed_ns = at_ns;
}

static void pending_push(chunk *c) {
    c->pending = true;
    c->global_next = NULL;
    c->global_prev = g.pending_tail;
    if (g.pending_tail) g.pending_tail->global_next = c;
    else g.pending_head = c;
    g.pending_tail = c;
    /* Appending never moves the head unless the FIFO was empty. */
    if (g.pending_head == c) arm_timer(c->due_ns);
}

static void pending_unlink(chunk *c) {
    if (!c->pending) return;
    if (c->global_prev) c->global_prev->global_next = c->global_next;
    else g.pending_head = c->global_next;
    if (c->global_next) c->global_next->global_prev = c->global_prev;
    else g.pending_tail = c->global_prev;
    c->pending = false;
    c->global_prev = c->global_next = NULL;
}

/* ---- epoll interest ------------------------------------------------------ */

/* A side with nothing to wait for leaves the epoll set: epoll reports
 * EPOLLHUP whatever the interest, and a side whose peer has closed while its
 * end of stream waits out the delay would otherwise wake the loop until then. */
static void set_interest(endpoint *ep, uint32_t events) {
    if (ep->interest == events) return;
    struct epoll_event ev = {.events = events, .data.ptr = ep};
    int op = events == 0 ? EPOLL_CTL_DEL : ep->interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(g.epoll_fd, op, ep->fd, &ev) != 0) {
        perror("delay_proxy: epoll_ctl");
        exit(1);
    }
    ep->interest = events;
}

/* A side reads while its direction is open and under the queue bound, and
 * waits for writability while the other direction's writes are blocked
 * (or, for the upstream, while the connect is in progress). */
static void update_interest(proxy_conn *c) {
    if (c->closed) return;
    direction *up = &c->to_upstream, *down = &c->to_client;
    uint32_t client = 0, upstream = 0;
    if (!up->src_eof && up->queued_bytes < g.max_queued_bytes) client |= EPOLLIN;
    if (down->write_blocked) client |= EPOLLOUT;
    if (c->connecting) {
        upstream = EPOLLOUT;
    } else {
        if (!down->src_eof && down->queued_bytes < g.max_queued_bytes) upstream |= EPOLLIN;
        if (up->write_blocked) upstream |= EPOLLOUT;
    }
    set_interest(&c->client_ep, client);
    set_interest(&c->upstream_ep, upstream);
}

/* ---- connections ------------------------------------------------------- */

/* Memory a chunk holds, counted against --max-queued-bytes (the header too:
 * a peer sending one byte at a time must not get around the bound). */
static size_t chunk_cost(const chunk *ch) { return sizeof *ch + ch->len; }

static void free_chunks(direction *d) {
    chunk *ch = d->head;
    while (ch) {
        chunk *next = ch->next;
        pending_unlink(ch);
        free(ch);
        ch = next;
    }
    d->head = d->tail = NULL;
    d->queued_bytes = 0;
}

/* Closes both sides at once (queued bytes are dropped: one side is gone or
 * broken); the struct is freed after the current round of events, which may
 * still point at it. */
static void conn_close(proxy_conn *c) {
    if (c->closed) return;
    c->closed = true;
    free_chunks(&c->to_upstream);
    free_chunks(&c->to_client);
    close(c->client_fd); /* close removes the fds from the epoll set */
    close(c->upstream_fd);
    if (c->prev) c->prev->next = c->next;
    else g.live = c->next;
    if (c->next) c->next->prev = c->prev;
    g.connections--;
    c->next_free = g.to_free;
    g.to_free = c;
}

static void conn_close_if_finished(proxy_conn *c) {
    if (!c->closed && c->to_upstream.done && c->to_client.done) conn_close(c);
}

/* Writes what is due of a direction, in order, several chunks a writev. */
static void flush(direction *d, int64_t now) {
    proxy_conn *c = d->conn;
    if (c->closed || c->connecting || d->done) return;
    d->write_blocked = false;
    while (d->head && d->head->due_ns <= now) {
        if (d->head->eof) {
            chunk *ch = d->head;
            d->head = ch->next;
            if (!d->head) d->tail = NULL;
            d->queued_bytes -= chunk_cost(ch);
            pending_unlink(ch);
            free(ch);
            shutdown(d->dst_fd, SHUT_WR);
            d->done = true;
            conn_close_if_finished(c);
            return;
        }
        struct iovec iov[WRITEV_CHUNKS_MAX];
        int n = 0;
        for (chunk *ch = d->head; ch && n < WRITEV_CHUNKS_MAX && !ch->eof && ch->due_ns <= now;
             ch = ch->next) {
            iov[n].iov_base = ch->data + ch->sent;
            iov[n].iov_len = ch->len - ch->sent;
            n++;
        }
        ssize_t w = writev(d->dst_fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                d->write_blocked = true;
                break;
            }
            conn_close(c); /* EPIPE, ECONNRESET: the destination is gone */
            return;
        }
        if (d == &c->to_upstream) g.bytes_up += (uint64_t)w;
        else g.bytes_down += (uint64_t)w;
        size_t left = (size_t)w;
        while (left > 0) {
            chunk *ch = d->head;
            size_t rest = ch->len - ch->sent;
            if (left < rest) {
                ch->sent += left;
                left = 0;
                break;
            }
            left -= rest;
            d->queued_bytes -= chunk_cost(ch);
            d->head = ch->next;
            if (!d->head) d->tail = NULL;
            pending_unlink(ch);
            free(ch);
        }
    }
    update_interest(c);
}

/* Queues what src has to say (bytes or its end of stream) for now + delay. */
static void read_side(direction *d, int64_t now) {
    static unsigned char buf[READ_SIZE_BYTES];
    proxy_conn *c = d->conn;
    if (c->closed || d->src_eof) return;
    ssize_t r = read(d->src_fd, buf, sizeof buf);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        conn_close(c); /* ECONNRESET: tell the other side at once, as a reset does */
        return;
    }
    chunk *ch = malloc(sizeof *ch + (size_t)r);
    if (!ch) {
        fprintf(stderr, "delay_proxy: out of memory, dropping a connection\n");
        conn_close(c);
        return;
    }
    memset(ch, 0, sizeof *ch);
    ch->dir = d;
    ch->due_ns = now + g.delay_ns;
    ch->len = (size_t)r;
    ch->eof = r == 0;
    memcpy(ch->data, buf, (size_t)r);
    if (d->tail) d->tail->next = ch;
    else d->head = ch;
    d->tail = ch;
    d->queued_bytes += chunk_cost(ch);
    if (r == 0) d->src_eof = true;
    if (g.delay_ns == 0) flush(d, now); /* due already: no timer in the path */
    else pending_push(ch);
    update_interest(c);
}

static bool make_socket_fast(int fd) {
    int one = 1;
    /* Nagle would hold small writes back for an ACK: a delay of its own. */
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0;
}

static void accept_all(void) {
    for (;;) {
        int fd = accept4(g.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) perror("delay_proxy: accept");
            return;
        }
        if (g.connections >= g.max_connections) {
            g.refused++;
            close(fd);
            continue;
        }
        int up = socket(g.upstream_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        proxy_conn *c = up >= 0 ? calloc(1, sizeof *c) : NULL;
        if (!c) {
            perror("delay_proxy: upstream socket");
            if (up >= 0) close(up);
            close(fd);
            continue;
        }
        make_socket_fast(fd);
        make_socket_fast(up);
        c->client_fd = fd;
        c->upstream_fd = up;
        c->client_ep = (endpoint){.kind = EP_CLIENT, .conn = c, .fd = fd};
        c->upstream_ep = (endpoint){.kind = EP_UPSTREAM, .conn = c, .fd = up};
        c->to_upstream = (direction){.conn = c, .src_fd = fd, .dst_fd = up};
        c->to_client = (direction){.conn = c, .src_fd = up, .dst_fd = fd};
        g.connections++;
        g.accepted++;
        if (connect(up, (struct sockaddr *)&g.upstream_addr, g.upstream_addr_len) != 0) {
            if (errno != EINPROGRESS) {
                perror("delay_proxy: connect to upstream");
                close(fd);
                close(up);
                g.connections--;
                free(c);
                continue;
            }
            c->connecting = true;
        }
        c->next = g.live;
        if (g.live) g.live->prev = c;
        g.live = c;
        update_interest(c);
    }
}

static void on_upstream_connected(proxy_conn *c, int64_t now) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->upstream_fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        fprintf(stderr, "delay_proxy: connect to upstream: %s\n", strerror(err ? err : errno));
        conn_close(c); /* the client sees its connection closed */
        return;
    }
    c->connecting = false;
    flush(&c->to_upstream, now); /* what the client sent meanwhile, if due */
    update_interest(c);
}

static void on_timer(int64_t now) {
    uint64_t expirations;
    while (read(g.timer_fd, &expirations, sizeof expirations) > 0) {
    }
    g.timer_armed_ns = 0;
    while (g.pending_head && g.pending_head->due_ns <= now) {
        chunk *ch = g.pending_head;
        pending_unlink(ch); /* due now: its direction writes it, or waits for EPOLLOUT */
        flush(ch->dir, now);
    }
    if (g.pending_head) arm_timer(g.pending_head->due_ns);
}

static void on_event(endpoint *ep, uint32_t events, int64_t now) {
    proxy_conn *c = ep->conn;
    if (c->closed) return;
    if (ep->kind == EP_UPSTREAM && c->connecting) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_upstream_connected(c, now);
        return;
    }
    if (events & EPOLLERR) {
        conn_close(c); /* a reset: the other side learns it at once, as it would */
        return;
    }
    direction *reads = ep->kind == EP_CLIENT ? &c->to_upstream : &c->to_client;
    direction *writes = ep->kind == EP_CLIENT ? &c->to_client : &c->to_upstream;
    if (events & EPOLLOUT) flush(writes, now);
    if ((events & (EPOLLIN | EPOLLHUP)) && (ep->interest & EPOLLIN)) read_side(reads, now);
    if (!c->closed) update_interest(c);
}

/* ---- set-up -------------------------------------------------------------- */

static bool resolve(const char *hostport, struct sockaddr_storage *out, socklen_t *out_len) {
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host || colon[1] == '\0') return false;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) return false;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *out_len = res->ai_addrlen;
    freeaddrinfo(res);
    return true;
}

static void usage(FILE *out) {
    fprintf(out, "usage: delay_proxy --listen HOST:PORT --upstream HOST:PORT --delay-ms N\n"
                 "         [--max-connections N (1024)] [--max-queued-bytes N (67108864)]\n"
                 "  every byte is delayed N ms one way (RTT = 2N);"
                 " PORT 0 listens on any free port\n");
}

static bool parse_size(const char *s, unsigned long long max, unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v > max || s[0] == '-') return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    const char *listen_at = NULL, *upstream = NULL;
    unsigned long long delay_ms = ULLONG_MAX, max_connections = 1024, max_queued_bytes = 64u << 20;
    static const struct option options[] = {
        {"listen", required_argument, NULL, 'l'},
        {"upstream", required_argument, NULL, 'u'},
        {"delay-ms", required_argument, NULL, 'd'},
        {"max-connections", required_argument, NULL, 'c'},
        {"max-queued-bytes", required_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, index = 0;
    while ((opt = getopt_long(argc, argv, "h", options, &index)) != -1) {
        bool ok = true;
        switch (opt) {
        case 'l': listen_at = optarg; break;
        case 'u': upstream = optarg; break;
        case 'd': ok = parse_size(optarg, 3600000, &delay_ms); break;
        case 'c': ok = parse_size(optarg, 1000000, &max_connections) && max_connections > 0; break;
        case 'q':
            ok = parse_size(optarg, 1ull << 40, &max_queued_bytes) && max_queued_bytes > 0;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (!ok) {
            fprintf(stderr, "delay_proxy: bad value for --%s: %s\n", options[index].name, optarg);
            usage(stderr);
            return 2;
        }
    }
    if (!listen_at || !upstream || delay_ms == ULLONG_MAX || optind < argc) {
        usage(stderr);
        return 2;
    }
    g.delay_ns = (int64_t)delay_ms * 1000000;
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
        getrlimit(RLIMIT_NOFILE, &files);
        /* 2 a connection, plus the listener, the timer, epoll, stdio and spare. */
        if (files.rlim_cur != RLIM_INFINITY && max_connections > (files.rlim_cur - 16) / 2) {
            max_connections = files.rlim_cur > 18 ? (files.rlim_cur - 16) / 2 : 1;
            fprintf(stderr, "delay_proxy: --max-connections lowered to %llu (descriptor limit)\n",
                    max_connections);
        }
    }
    g.max_connections = (size_t)max_connections;
    g.max_queued_bytes = (size_t)max_queued_bytes;
    if (!resolve(upstream, &g.upstream_addr, &g.upstream_addr_len)) {
        fprintf(stderr, "delay_proxy: cannot resolve --upstream %s\n", upstream);
        return 2;
    }
    struct sockaddr_storage listen_addr;
    socklen_t listen_len;
    if (!resolve(listen_at, &listen_addr, &listen_len)) {
        fprintf(stderr, "delay_proxy: cannot resolve --listen %s\n", listen_at);
        return 2;
    }

    /* A write to a closed peer is an EPIPE to handle, not a death. */
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    g.listen_fd = socket(listen_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (g.listen_fd < 0 ||
        setsockopt(g.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(g.listen_fd, (struct sockaddr *)&listen_addr, listen_len) != 0 ||
        listen(g.listen_fd, 1024) != 0) {
        fprintf(stderr, "delay_proxy: cannot listen on %s: %s\n", listen_at, strerror(errno));
        return 1;
    }
    g.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    g.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (g.epoll_fd < 0 || g.timer_fd < 0) {
        perror("delay_proxy: epoll/timerfd");
        return 1;
    }
    static endpoint listen_ep = {.kind = EP_LISTEN}, timer_ep = {.kind = EP_TIMER};
    struct epoll_event ev_listen = {.events = EPOLLIN, .data.ptr = &listen_ep};
    struct epoll_event ev_timer = {.events = EPOLLIN, .data.ptr = &timer_ep};
    if (epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, g.listen_fd, &ev_listen) != 0 ||
        epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, g.timer_fd, &ev_timer) != 0) {
        perror("delay_proxy: epoll_ctl");
        return 1;
    }

    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof bound;
    getsockname(g.listen_fd, (struct sockaddr *)&bound, &bound_len);
    char host[NI_MAXHOST], port[NI_MAXSERV];
    getnameinfo((struct sockaddr *)&bound, bound_len, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
    fprintf(stderr, "delay_proxy listening on %s:%s delay_ms %llu upstream %s\n", host, port,
            delay_ms, upstream);

    struct epoll_event events[EVENTS_MAX];
    while (!g_stop) {
        int n = epoll_wait(g.epoll_fd, events, EVENTS_MAX, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("delay_proxy: epoll_wait");
            return 1;
        }
        int64_t now = now_ns();
        for (int i = 0; i < n; i++) {
            endpoint *ep = events[i].data.ptr;
            if (ep->kind == EP_LISTEN) accept_all();
            else if (ep->kind == EP_TIMER) on_timer(now);
            else on_event(ep, events[i].events, now);
        }
        /* Chunks that fell due while we handled the events (a timer
         * expiration may sit in the next epoll_wait). */
        if (g.pending_head && g.pending_head->due_ns <= now_ns()) on_timer(now_ns());
        while (g.to_free) {
            proxy_conn *c = g.to_free;
            g.to_free = c->next_free;
            free(c);
        }
    }
    while (g.live) conn_close(g.live);
    while (g.to_free) {
        proxy_conn *c = g.to_free;
        g.to_free = c->next_free;
        free(c);
    }
    fprintf(stderr,
            "delay_proxy: %llu connections accepted, %llu refused, "
            "%llu bytes up, %llu bytes down\n",
            (unsigned long long)g.accepted, (unsigned long long)g.refused,
            (unsigned long long)g.bytes_up, (unsigned long long)g.bytes_down);
    return 0;
}
