/* conn_guard.c — see conn_guard.h.
 *
 * The connections of a loop sit in one list ordered by their last activity
 * (accepted, or a request arrived: moved to the tail), so the least
 * recently used come first. Each sweep walks the list once: it enforces the
 * timeouts and collects the idle connections that may be evicted at the
 * bound: first those that never sent a request, then those idle for
 * RL_CONN_GUARD_EVICT_IDLE_MS, each group least recently used first. A
 * client that keeps using its connection is never evicted: a flood of new
 * connections cannot push it out (it can only be refused itself).
 *
 * An eviction takes the first collected connection that may still be
 * evicted; when none is left and something changed since the sweep (a
 * connection came, a request arrived), a sweep is run early, at most every
 * RL_CONN_GUARD_MIN_SWEEP_MS: a flood of connections against a loop full of
 * slow requests costs a walk of the list per 10 ms, not one per accept. (A
 * connection that has only aged into being evictable waits for the next
 * regular sweep.)
 */
#include "server/http/conn_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef enum conn_phase {
    PHASE_IDLE,      /* waiting for the first byte of a request */
    PHASE_RECEIVING, /* part of a request has arrived */
    PHASE_ANSWERING, /* an answer is being written */
    PHASE_WORKING,   /* the handler or the backend has the request */
} conn_phase;

typedef struct rl_conn {
    h2o_linklist_t link;      /* guard->conns */
    h2o_linklist_t candidate; /* guard->candidates, when collected as idle */
    rl_conn_guard *guard;
    h2o_socket_t *sock;
    uint64_t last_active_ms; /* accepted, or the last request arrived */
    uint64_t requests;       /* arrived on this connection so far */
    uint64_t phase_requests; /* requests when the current phase was first seen */
    uint64_t phase_since_ms; /* the sweep that first saw the current phase */
    conn_phase phase;
    bool closing; /* shut down by the guard */
} rl_conn;

static void set_room(rl_conn_guard *guard) {
    atomic_store_explicit(&guard->has_room, guard->count < guard->max_connections,
                          memory_order_relaxed);
}

void rl_conn_guard_init(rl_conn_guard *guard, unsigned loop_index, uint32_t max_connections,
                        uint32_t idle_timeout_ms, uint32_t request_timeout_ms, uint64_t now_ms,
                        void (*on_closed)(void *data), void *on_closed_data) {
    memset(guard, 0, sizeof *guard);
    h2o_linklist_init_anchor(&guard->conns);
    h2o_linklist_init_anchor(&guard->candidates);
    guard->max_connections = max_connections > 0 ? max_connections : 1;
    guard->idle_timeout_ms = idle_timeout_ms;
    guard->request_timeout_ms = request_timeout_ms;
    uint64_t shorter = idle_timeout_ms < request_timeout_ms ? idle_timeout_ms : request_timeout_ms;
    uint64_t interval = shorter / 10;
    if (interval < RL_CONN_GUARD_MIN_SWEEP_MS) interval = RL_CONN_GUARD_MIN_SWEEP_MS;
    if (interval > RL_CONN_GUARD_MAX_SWEEP_MS) interval = RL_CONN_GUARD_MAX_SWEEP_MS;
    guard->sweep_interval_ms = interval;
    guard->next_sweep_ms = now_ms + interval;
    guard->next_report_ms = now_ms + RL_CONN_GUARD_REPORT_MS;
    guard->loop_index = loop_index;
    guard->on_closed = on_closed;
    guard->on_closed_data = on_closed_data;
    atomic_init(&guard->has_room, true);
}

static conn_phase phase_of(h2o_socket_t *sock) {
    if (h2o_socket_is_writing(sock)) return PHASE_ANSWERING;
    if (!h2o_socket_is_reading(sock)) return PHASE_WORKING;
    return sock->input->size == 0 ? PHASE_IDLE : PHASE_RECEIVING;
}

/* Resets instead of an orderly close: the kernel drops the connection and
 * whatever it still had to send at once. */
static void set_reset_on_close(int fd) {
    struct linger linger = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, sizeof linger);
}

/* Ends the stream under h2o's feet; h2o frees the connection on its next
 * read or write, which the shutdown makes ready at once. */
static void shut_down(rl_conn *conn, bool reset) {
    int fd = h2o_socket_get_fd(conn->sock);
    if (fd >= 0) {
        if (reset) set_reset_on_close(fd);
        shutdown(fd, SHUT_RDWR);
    }
    conn->closing = true;
    conn->guard->closing++;
    if (h2o_linklist_is_linked(&conn->candidate)) h2o_linklist_unlink(&conn->candidate);
}

/* Idle for h2o may still have bytes of a request waiting in the kernel (a
 * connection accepted a moment ago, not read yet): asked before acting. */
static bool nothing_waiting(h2o_socket_t *sock) {
    int fd = h2o_socket_get_fd(sock), waiting = 0;
    return fd < 0 || ioctl(fd, FIONREAD, &waiting) != 0 || waiting == 0;
}

static bool may_evict(const rl_conn *conn, uint64_t now_ms) {
    return !conn->closing && phase_of(conn->sock) == PHASE_IDLE &&
           (conn->requests == 0 || now_ms - conn->last_active_ms >= RL_CONN_GUARD_EVICT_IDLE_MS);
}

/* The loop is the only writer; a scrape reads from another thread
 * (rl_conn_guard_read): a relaxed load and store, plain moves. */
static void count_up(uint64_t *counter) { __atomic_store_n(counter, *counter + 1, __ATOMIC_RELAXED); }

void rl_conn_guard_read(const rl_conn_guard *guard, rl_conn_guard_stats *sum, uint64_t *open) {
    sum->accepted += __atomic_load_n(&guard->stats.accepted, __ATOMIC_RELAXED);
    sum->refused += __atomic_load_n(&guard->stats.refused, __ATOMIC_RELAXED);
    sum->evicted += __atomic_load_n(&guard->stats.evicted, __ATOMIC_RELAXED);
    sum->idle_closed += __atomic_load_n(&guard->stats.idle_closed, __ATOMIC_RELAXED);
    sum->request_timeouts += __atomic_load_n(&guard->stats.request_timeouts, __ATOMIC_RELAXED);
    sum->answer_timeouts += __atomic_load_n(&guard->stats.answer_timeouts, __ATOMIC_RELAXED);
    *open += __atomic_load_n(&guard->count, __ATOMIC_RELAXED);
}

void rl_conn_guard_refuse(rl_conn_guard *guard, int fd) {
    set_reset_on_close(fd);
    close(fd);
    count_up(&guard->stats.refused);
}

static void on_socket_closed(void *data) {
    rl_conn *conn = data;
    rl_conn_guard *guard = conn->guard;
    h2o_linklist_unlink(&conn->link);
    if (h2o_linklist_is_linked(&conn->candidate)) h2o_linklist_unlink(&conn->candidate);
    if (conn->closing) guard->closing--;
    __atomic_store_n(&guard->count, guard->count - 1, __ATOMIC_RELAXED);
    set_room(guard);
    free(conn);
    if (guard->on_closed != NULL) guard->on_closed(guard->on_closed_data);
}

bool rl_conn_guard_add(rl_conn_guard *guard, h2o_socket_t *sock, uint64_t now_ms) {
    rl_conn *conn = calloc(1, sizeof *conn);
    if (conn == NULL) return false;
    conn->guard = guard;
    conn->sock = sock;
    conn->last_active_ms = now_ms;
    conn->phase = PHASE_IDLE;
    conn->phase_since_ms = now_ms;
    h2o_linklist_insert(&guard->conns, &conn->link);
    sock->on_close.cb = on_socket_closed;
    sock->on_close.data = conn;
    __atomic_store_n(&guard->count, guard->count + 1, __ATOMIC_RELAXED);
    guard->changed = true;
    count_up(&guard->stats.accepted);
    set_room(guard);
    return true;
}

void rl_conn_guard_note_request(h2o_socket_t *sock, uint64_t now_ms) {
    if (sock == NULL || sock->on_close.cb != on_socket_closed) return;
    rl_conn *conn = sock->on_close.data;
    conn->requests++;
    conn->last_active_ms = now_ms;
    conn->guard->changed = true;
    /* To the tail: the list stays in order of last activity. */
    h2o_linklist_unlink(&conn->link);
    h2o_linklist_insert(&conn->guard->conns, &conn->link);
}

/* Enforces the timeouts on conn; true if it was shut down. */
static bool enforce(rl_conn_guard *guard, rl_conn *conn, uint64_t now_ms) {
    conn_phase phase = phase_of(conn->sock);
    if (phase != conn->phase || conn->requests != conn->phase_requests) {
        conn->phase = phase;
        conn->phase_requests = conn->requests;
        conn->phase_since_ms = now_ms;
    }
    switch (phase) {
    case PHASE_IDLE:
        if (now_ms - conn->last_active_ms < guard->idle_timeout_ms || !nothing_waiting(conn->sock))
            return false;
        count_up(&guard->stats.idle_closed);
        shut_down(conn, false);
        return true;
    case PHASE_RECEIVING:
    case PHASE_ANSWERING:
        if (now_ms - conn->phase_since_ms < guard->request_timeout_ms) return false;
        if (phase == PHASE_RECEIVING) count_up(&guard->stats.request_timeouts);
        else count_up(&guard->stats.answer_timeouts);
        shut_down(conn, true);
        return true;
    case PHASE_WORKING:
        return false;
    }
    return false;
}

static void sweep(rl_conn_guard *guard, uint64_t now_ms) {
    /* Rebuilt from scratch: the never used, then the others, each in
     * order of last activity. */
    while (!h2o_linklist_is_empty(&guard->candidates))
        h2o_linklist_unlink(guard->candidates.next);
    h2o_linklist_t used;
    h2o_linklist_init_anchor(&used);
    for (h2o_linklist_t *node = guard->conns.next; node != &guard->conns;) {
        rl_conn *conn = H2O_STRUCT_FROM_MEMBER(rl_conn, link, node);
        node = node->next; /* shut_down leaves conn in the list: no matter */
        if (conn->closing || enforce(guard, conn, now_ms) || !may_evict(conn, now_ms)) continue;
        h2o_linklist_insert(conn->requests == 0 ? &guard->candidates : &used, &conn->candidate);
    }
    h2o_linklist_insert_list(&guard->candidates, &used);
    guard->changed = false;
    guard->last_sweep_ms = now_ms;
    guard->next_sweep_ms = now_ms + guard->sweep_interval_ms;
}

/* Shuts down the first collected connection that may still be evicted. */
static bool evict_candidate(rl_conn_guard *guard, uint64_t now_ms) {
    while (!h2o_linklist_is_empty(&guard->candidates)) {
        rl_conn *conn = H2O_STRUCT_FROM_MEMBER(rl_conn, candidate, guard->candidates.next);
        h2o_linklist_unlink(&conn->candidate);
        if (!may_evict(conn, now_ms) || !nothing_waiting(conn->sock)) continue;
        count_up(&guard->stats.evicted);
        shut_down(conn, false);
        return true;
    }
    return false;
}

rl_conn_room rl_conn_guard_make_room(rl_conn_guard *guard, uint64_t now_ms) {
    if (guard->closing > 0 || evict_candidate(guard, now_ms)) return RL_CONN_ROOM_COMING;
    if (!guard->changed) return RL_CONN_ROOM_NONE;
    if (now_ms - guard->last_sweep_ms < RL_CONN_GUARD_MIN_SWEEP_MS) {
        guard->next_sweep_ms = guard->last_sweep_ms + RL_CONN_GUARD_MIN_SWEEP_MS;
        return RL_CONN_ROOM_RECHECK;
    }
    sweep(guard, now_ms); /* may itself time connections out */
    if (guard->closing > 0 || evict_candidate(guard, now_ms)) return RL_CONN_ROOM_COMING;
    return RL_CONN_ROOM_NONE;
}

int32_t rl_conn_guard_wait_ms(const rl_conn_guard *guard, uint64_t now_ms, int32_t max_wait_ms) {
    if (guard->next_sweep_ms <= now_ms) return 0;
    uint64_t until = guard->next_sweep_ms - now_ms;
    return until < (uint64_t)max_wait_ms ? (int32_t)until : max_wait_ms;
}

static void report(rl_conn_guard *guard) {
    const rl_conn_guard_stats *now = &guard->stats, *then = &guard->reported;
    if (now->refused == then->refused && now->evicted == then->evicted &&
        now->request_timeouts == then->request_timeouts &&
        now->answer_timeouts == then->answer_timeouts)
        return;
    fprintf(stderr,
            "ratelimiterd: loop %u (%u of %u connections open), since its last report: %llu "
            "connections refused at the bound, %llu idle ones closed to make room, %llu requests "
            "too slow to arrive, %llu answers not read\n",
            guard->loop_index, guard->count, guard->max_connections,
            (unsigned long long)(now->refused - then->refused),
            (unsigned long long)(now->evicted - then->evicted),
            (unsigned long long)(now->request_timeouts - then->request_timeouts),
            (unsigned long long)(now->answer_timeouts - then->answer_timeouts));
    guard->reported = *now;
}

bool rl_conn_guard_tick(rl_conn_guard *guard, uint64_t now_ms) {
    if (now_ms < guard->next_sweep_ms) return false;
    sweep(guard, now_ms);
    if (now_ms >= guard->next_report_ms) {
        report(guard);
        guard->next_report_ms = now_ms + RL_CONN_GUARD_REPORT_MS;
    }
    return true;
}
