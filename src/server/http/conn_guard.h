/* server/http/conn_guard.h — one event loop's client connections: how many may be
 * open, how long one may sit idle or take to send a request, and what
 * happens to a new connection at the bound.
 *
 * h2o 2.2 has a single timer per HTTP/1 connection (http1.req_timeout) that
 * runs from when the connection starts waiting for a request until the
 * request has fully arrived: it cannot give an idle keep-alive connection
 * longer than a request that trickles in, and nothing at all watches an
 * answer that the client never reads. So the guard looks at every
 * connection of its loop once per sweep and shuts down:
 *   - an idle connection (not a byte of a next request) idle_timeout_ms
 *     after its last request started (or after it was accepted);
 *   - a connection whose request has been arriving for request_timeout_ms
 *     (headers or body trickled in: slow-loris), counted from the first
 *     sweep that saw it arriving: never early, at most a sweep late;
 *   - a connection whose answer the client has not taken for
 *     request_timeout_ms (it stopped reading: the write cannot finish).
 * A request the backend is still working on is not timed here (the backend
 * has its own timeouts).
 *
 * At its share of the bound a loop leaves a new connection to another loop
 * that has room; if none has, the new connection takes the place of an idle
 * one, which is closed first: one that never sent a request, else one
 * unused for RL_CONN_GUARD_EVICT_IDLE_MS, least recently used first (a
 * client busy on its connection keeps it, whatever the flood of new ones).
 * If nothing is idle it is refused at once (accepted, then reset): a client
 * fails fast rather than waiting in the kernel's backlog behind
 * connections that will not go away.
 *
 * Shutting down is shutdown(2) on the socket: h2o sees the end of the
 * stream on its next read or write and frees the connection itself (then
 * the socket's on_close, set by the guard, forgets it). Connections timed
 * out or refused are reset (SO_LINGER 0), so the kernel keeps no state for
 * them; idle ones get an orderly FIN.
 *
 * Threading: every function runs on the loop's thread, except that
 * rl_conn_guard_has_room and rl_conn_guard_read may be called from any
 * thread (the counters are stored relaxed by the loop, their only writer).
 */
#ifndef RL_SERVER_CONN_GUARD_H
#define RL_SERVER_CONN_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

/* The guard never sweeps more often than this, nor less often than the
 * upper bound (it sweeps every tenth of the shorter timeout in between). */
#define RL_CONN_GUARD_MIN_SWEEP_MS 10u
#define RL_CONN_GUARD_MAX_SWEEP_MS 1000u
/* A connection that served a request is evicted only after this long idle. */
#define RL_CONN_GUARD_EVICT_IDLE_MS 1000u
/* Counters of attacks (refusals, slow requests, unread answers, evictions)
 * are written to stderr at most this often per loop, when they moved. */
#define RL_CONN_GUARD_REPORT_MS 10000u

typedef struct rl_conn_guard_stats {
    uint64_t accepted;
    uint64_t refused;          /* at the bound with nothing to evict */
    uint64_t evicted;          /* idle, closed to make room for a new one */
    uint64_t idle_closed;      /* idle_timeout_ms passed */
    uint64_t request_timeouts; /* a request took longer than request_timeout_ms to arrive */
    uint64_t answer_timeouts;  /* an answer was not taken within request_timeout_ms */
} rl_conn_guard_stats;

typedef struct rl_conn_guard {
    h2o_linklist_t conns;      /* rl_conn (private), least recently active first */
    h2o_linklist_t candidates; /* the idle ones at the last sweep, in the same order */
    uint32_t count;       /* open: accepted and not yet freed by h2o */
    uint32_t closing;     /* of which shut down by the guard */
    uint32_t max_connections;
    atomic_bool has_room; /* count < max_connections, for the other loops */
    uint64_t idle_timeout_ms;
    uint64_t request_timeout_ms;
    uint64_t sweep_interval_ms;
    uint64_t last_sweep_ms;
    bool changed; /* a connection came or a request arrived since the last sweep */
    uint64_t next_sweep_ms;
    uint64_t next_report_ms;
    unsigned loop_index; /* for messages */
    rl_conn_guard_stats stats;
    rl_conn_guard_stats reported;
    /* Called (on the loop's thread) after a connection is freed. */
    void (*on_closed)(void *data);
    void *on_closed_data;
} rl_conn_guard;

void rl_conn_guard_init(rl_conn_guard *guard, unsigned loop_index, uint32_t max_connections,
                        uint32_t idle_timeout_ms, uint32_t request_timeout_ms, uint64_t now_ms,
                        void (*on_closed)(void *data), void *on_closed_data);

/* Whether a connection may be added without making room first. */
static inline bool rl_conn_guard_is_full(const rl_conn_guard *guard) {
    return guard->count >= guard->max_connections;
}

/* Any thread: the loop had room at its last change (a hint for the others). */
static inline bool rl_conn_guard_has_room(rl_conn_guard *guard) {
    return atomic_load_explicit(&guard->has_room, memory_order_relaxed);
}

typedef enum rl_conn_room {
    RL_CONN_ROOM_COMING,  /* a connection is being shut down: wait for on_closed */
    RL_CONN_ROOM_RECHECK, /* none was idle at the last sweep, which is out of date
                           * but too recent to repeat: wait for the next tick */
    RL_CONN_ROOM_NONE,    /* every connection is busy with a request */
} rl_conn_room;

/* At the bound: shuts down the connection idle for longest, if any. */
rl_conn_room rl_conn_guard_make_room(rl_conn_guard *guard, uint64_t now_ms);

/* How long the loop may sleep before it must tick again (<= max_wait_ms). */
int32_t rl_conn_guard_wait_ms(const rl_conn_guard *guard, uint64_t now_ms, int32_t max_wait_ms);

/* Any thread: adds the loop's counters into *sum and its open connections
 * into *open (each exact, read without stopping the loop). */
void rl_conn_guard_read(const rl_conn_guard *guard, rl_conn_guard_stats *sum, uint64_t *open);

/* Refuses an accepted descriptor at once (reset, closed) and counts it. */
void rl_conn_guard_refuse(rl_conn_guard *guard, int fd);

/* Tracks a newly accepted socket (before h2o_accept): sets its on_close.
 * False if out of memory; then the caller closes the socket. */
bool rl_conn_guard_add(rl_conn_guard *guard, h2o_socket_t *sock, uint64_t now_ms);

/* A request has fully arrived on sock (from the request handler). A socket
 * the guard does not track is ignored. */
void rl_conn_guard_note_request(h2o_socket_t *sock, uint64_t now_ms);

/* Enforces the timeouts if a sweep is due (cheap otherwise): call after
 * every turn of the loop. True if a sweep ran. */
bool rl_conn_guard_tick(rl_conn_guard *guard, uint64_t now_ms);

#endif
