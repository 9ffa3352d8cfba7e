/* access_log.c — the access log's buffers and its writer thread
 * (access_log.h). */
/* pthread_timedjoin_np: a GNU extension (_GNU_SOURCE comes from CMakeLists.txt) */
#include "server/observe/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_LINE 64

/* One event loop's lines. The loop fills `filling`; the writer swaps it for
 * `taken` (empty) and writes it. */
typedef struct loop_buffer {
    _Alignas(CACHE_LINE) pthread_mutex_t lock;
    char *filling;      /* under lock */
    size_t used;        /* bytes in filling, under lock */
    uint64_t lines;     /* lines in filling, under lock */
    bool writer_called; /* under lock: the writer was woken for this filling */
    char *taken;        /* the writer's: empty, or being written */
    /* The loop's thread only: the time of its last line, whose second is
     * formatted once a second, not once a line. */
    int64_t time_second;
    char time_text[RL_ACCESS_LOG_TIME_SIZE];
} loop_buffer;

struct rl_access_log {
    rl_access_log_format format;
    char *path;
    int fd; /* the writer's (and open's and close's, around it) */
    size_t piece_bytes; /* the most one write(2) is given: piece_bytes_for(fd) */
    uint32_t loop_count;
    loop_buffer *loops;

    _Atomic uint64_t dropped_lines;
    _Atomic uint64_t written_lines;
    atomic_bool reopen_asked;

    pthread_mutex_t wake_lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC */
    bool stopping;       /* under wake_lock */
    pthread_t writer;
    bool writer_started;

    /* Set by close: past this instant (monotonic ms; 0: never) the writer
     * stops waiting for a sink that takes nothing and drops what it holds. */
    _Atomic uint64_t give_up_at_ms;

    /* The writer's: its reports, and the lines it gave up at stop. */
    uint64_t lost_at_stop;
    uint64_t reported_dropped;
    uint64_t reported_at_ms;
    int write_errno; /* the last failed write's, 0 once said */
};

static uint64_t monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t count_lines(const char *bytes, size_t len) {
    uint64_t lines = 0;
    for (const char *p = bytes, *end = bytes + len; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) lines++;
    return lines;
}

/* ---- the sink ---------------------------------------------------------------- */

/* The descriptor for path, or -1 with err. Non-blocking: a FIFO is opened
 * without waiting for a reader (none: ENXIO), and a pipe that is full
 * makes write_out wait in poll, where it can give up at stop (a regular
 * file ignores the flag: a write to a disk that stalls waits in the
 * kernel). Stdout is left as it is: its flags belong to whoever shares it. */
static int open_sink(const char *path, char *err, size_t err_size) {
    if (strcmp(path, "-") == 0) return STDOUT_FILENO;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd < 0) {
        int error = errno;
        snprintf(err, err_size, "access log \"%s\": cannot open: %s%s", path, strerror(error),
                 error == ENXIO ? " (a FIFO with no reader)" : "");
        return -1;
    }
    return fd;
}

/* A pipe or FIFO gets PIPE_BUF bytes a write, which it takes whole or not
 * at all, so that the count of lines that got through stays exact when the
 * writer gives up at stop; a regular file, 64 KiB (a disk write is a
 * write, however small: a 4 KiB piece cost a third of a microsecond a line). */
static size_t piece_bytes_for(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? 64u * 1024u : PIPE_BUF;
}

static void close_sink(int fd) {
    if (fd >= 0 && fd != STDOUT_FILENO) close(fd);
}

/* ---- the event loops' side ----------------------------------------------------- */

/* "2026-11-28T07:48:03.123Z" for now, on the loop's thread. */
static const char *time_text(loop_buffer *b) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if ((int64_t)now.tv_sec != b->time_second) {
        b->time_second = (int64_t)now.tv_sec;
        rl_access_log_time_format(b->time_second * 1000, b->time_text);
    }
    unsigned ms = (unsigned)(now.tv_nsec / 1000000);
    b->time_text[20] = (char)('0' + ms / 100u);
    b->time_text[21] = (char)('0' + ms / 10u % 10u);
    b->time_text[22] = (char)('0' + ms % 10u);
    return b->time_text;
}

void rl_access_log_answered(rl_access_log *log, uint32_t loop, const rl_api_outcome *outcome,
                            uint64_t latency_us) {
    if (loop >= log->loop_count) return;
    loop_buffer *b = &log->loops[loop];
    /* Formatted outside the lock, so the writer never waits on a format. */
    char line[RL_ACCESS_LOG_LINE_MAX];
    size_t len = rl_access_log_line_format(log->format, time_text(b), outcome, latency_us, line);
    bool fits, wake = false;
    pthread_mutex_lock(&b->lock);
    fits = len <= RL_ACCESS_LOG_LOOP_BUFFER_BYTES - b->used;
    if (fits) {
        memcpy(b->filling + b->used, line, len);
        b->used += len;
        b->lines++;
        if (!b->writer_called && b->used >= RL_ACCESS_LOG_LOOP_BUFFER_BYTES / 2) wake = b->writer_called = true;
    }
    pthread_mutex_unlock(&b->lock);
    if (!fits) atomic_fetch_add_explicit(&log->dropped_lines, 1, memory_order_relaxed);
    /* Without wake_lock: a wake-up lost to the writer being busy only means
     * it comes at its next RL_ACCESS_LOG_FLUSH_MS. */
    if (wake) pthread_cond_signal(&log->wake);
}

/* ---- the writer thread -------------------------------------------------------- */

/* Says on stderr, at most every RL_ACCESS_LOG_REPORT_MS, that lines were
 * dropped since the last time, and why if a write failed. */
static void report(rl_access_log *log, uint64_t now_ms) {
    if (now_ms - log->reported_at_ms < RL_ACCESS_LOG_REPORT_MS) return;
    uint64_t dropped = atomic_load_explicit(&log->dropped_lines, memory_order_relaxed);
    if (dropped == log->reported_dropped) return;
    fprintf(stderr, "ratelimiterd: access log: %llu lines dropped in the last %u s, %llu in all (%s %s%s)\n",
            (unsigned long long)(dropped - log->reported_dropped), RL_ACCESS_LOG_REPORT_MS / 1000u,
            (unsigned long long)dropped, log->path, log->write_errno != 0 ? "failed: " : "was too slow",
            log->write_errno != 0 ? strerror(log->write_errno) : "");
    log->reported_dropped = dropped;
    log->reported_at_ms = now_ms;
    log->write_errno = 0;
}

/* Whether close's wait for the sink is over. */
static bool giving_up(rl_access_log *log) {
    uint64_t at = atomic_load_explicit(&log->give_up_at_ms, memory_order_relaxed);
    return at != 0 && monotonic_ms() >= at;
}

/* Writes bytes (holding `lines` lines) whole, in pieces of piece_bytes, or
 * counts what it could not write as dropped: on a failed write, or at stop
 * past close's wait. A pipe that is full is waited for in poll, 100 ms at a
 * time. */
static void write_out(rl_access_log *log, const char *bytes, size_t len, uint64_t lines) {
    size_t done = 0;
    uint64_t lost = 0;
    while (done < len) {
        size_t piece = len - done < log->piece_bytes ? len - done : log->piece_bytes;
        ssize_t n = write(log->fd, bytes + done, piece);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        int error = n < 0 ? errno : EIO;
        if (error == EINTR) continue;
        if ((error == EAGAIN || error == EWOULDBLOCK) && !giving_up(log)) {
            struct pollfd p = {log->fd, POLLOUT, 0};
            (void)poll(&p, 1, 100);
            report(log, monotonic_ms()); /* what the loops drop meanwhile */
            continue;
        }
        lost = count_lines(bytes + done, len - done);
        if (error == EAGAIN || error == EWOULDBLOCK) log->lost_at_stop += lost;
        else log->write_errno = error;
        break;
    }
    if (lost > 0) atomic_fetch_add_explicit(&log->dropped_lines, lost, memory_order_relaxed);
    atomic_fetch_add_explicit(&log->written_lines, lines - lost, memory_order_relaxed);
}

/* Takes loop b's lines, giving it the empty buffer, and writes them. */
static void take_and_write(rl_access_log *log, loop_buffer *b) {
    pthread_mutex_lock(&b->lock);
    char *full = b->filling;
    size_t used = b->used;
    uint64_t lines = b->lines;
    if (used > 0) {
        b->filling = b->taken;
        b->taken = full;
        b->used = 0;
        b->lines = 0;
        b->writer_called = false;
    }
    pthread_mutex_unlock(&b->lock);
    if (used > 0) write_out(log, full, used, lines);
}

static void reopen_now(rl_access_log *log) {
    if (strcmp(log->path, "-") == 0) return;
    char err[512];
    int fd = open_sink(log->path, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "ratelimiterd: %s; writing on to the file already open\n", err);
        return;
    }
    close_sink(log->fd);
    log->fd = fd;
    log->piece_bytes = piece_bytes_for(fd);
    fprintf(stderr, "ratelimiterd: access log: reopened %s\n", log->path);
}

static void round_of_writes(rl_access_log *log) {
    if (atomic_exchange(&log->reopen_asked, false)) reopen_now(log);
    for (uint32_t i = 0; i < log->loop_count; i++) take_and_write(log, &log->loops[i]);
    report(log, monotonic_ms());
}

static void *writer_main(void *arg) {
    rl_access_log *log = arg;
    pthread_mutex_lock(&log->wake_lock);
    while (!log->stopping) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += (long)RL_ACCESS_LOG_FLUSH_MS * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&log->wake, &log->wake_lock, &deadline);
        bool stopping = log->stopping;
        pthread_mutex_unlock(&log->wake_lock);
        if (!stopping) round_of_writes(log);
        pthread_mutex_lock(&log->wake_lock);
    }
    pthread_mutex_unlock(&log->wake_lock);
    round_of_writes(log); /* what the loops left: they have stopped */
    return NULL;
}

/* ---- life ----------------------------------------------------------------------- */

static void free_log(rl_access_log *log) {
    for (uint32_t i = 0; log->loops != NULL && i < log->loop_count; i++) {
        pthread_mutex_destroy(&log->loops[i].lock);
        free(log->loops[i].filling);
        free(log->loops[i].taken);
    }
    free(log->loops);
    pthread_cond_destroy(&log->wake);
    pthread_mutex_destroy(&log->wake_lock);
    close_sink(log->fd);
    free(log->path);
    free(log);
}

bool rl_access_log_open(const rl_access_log_options *options, rl_access_log **out, char *err, size_t err_size) {
    *out = NULL;
    rl_access_log *log = calloc(1, sizeof *log);
    if (log == NULL) {
        snprintf(err, err_size, "access log: out of memory");
        return false;
    }
    log->fd = -1;
    log->format = options->format;
    log->loop_count = options->loops > 0 ? options->loops : 1;
    pthread_mutex_init(&log->wake_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&log->wake, &attr);
    pthread_condattr_destroy(&attr);
    log->path = strdup(options->path);
    void *loops = NULL;
    if (log->path == NULL || posix_memalign(&loops, CACHE_LINE, log->loop_count * sizeof *log->loops) != 0) {
        free_log(log);
        snprintf(err, err_size, "access log: out of memory");
        return false;
    }
    memset(loops, 0, log->loop_count * sizeof *log->loops);
    log->loops = loops;
    bool memory = true;
    for (uint32_t i = 0; i < log->loop_count; i++) {
        loop_buffer *b = &log->loops[i];
        pthread_mutex_init(&b->lock, NULL);
        b->time_second = -1;
        b->filling = malloc(RL_ACCESS_LOG_LOOP_BUFFER_BYTES);
        b->taken = malloc(RL_ACCESS_LOG_LOOP_BUFFER_BYTES);
        memory = memory && b->filling != NULL && b->taken != NULL;
    }
    if (!memory) {
        free_log(log);
        snprintf(err, err_size, "access log: out of memory");
        return false;
    }
    log->fd = open_sink(log->path, err, err_size);
    if (log->fd < 0) {
        free_log(log);
        return false;
    }
    log->piece_bytes = piece_bytes_for(log->fd);
    log->reported_at_ms = monotonic_ms();
    int error = pthread_create(&log->writer, NULL, writer_main, log);
    if (error != 0) {
        snprintf(err, err_size, "access log: cannot start its writer thread: %s", strerror(error));
        free_log(log);
        return false;
    }
    log->writer_started = true;
    *out = log;
    return true;
}

void rl_access_log_reopen(rl_access_log *log) {
    if (log == NULL) return;
    atomic_store(&log->reopen_asked, true);
    pthread_cond_signal(&log->wake);
}

uint64_t rl_access_log_dropped_lines(const rl_access_log *log) {
    return atomic_load_explicit(&((rl_access_log *)log)->dropped_lines, memory_order_relaxed);
}

uint64_t rl_access_log_written_lines(const rl_access_log *log) {
    return atomic_load_explicit(&((rl_access_log *)log)->written_lines, memory_order_relaxed);
}

/* Stops the writer and waits for it: it writes what the loops left,
 * giving a full pipe RL_ACCESS_LOG_CLOSE_WAIT_MS. False if it is still in
 * a write a second after that: a disk that does not answer holds it in the
 * kernel, where nothing can reach it; it is then left to its write. */
static bool stop_writer(rl_access_log *log) {
    atomic_store(&log->give_up_at_ms, monotonic_ms() + RL_ACCESS_LOG_CLOSE_WAIT_MS);
    pthread_mutex_lock(&log->wake_lock);
    log->stopping = true;
    pthread_cond_signal(&log->wake);
    pthread_mutex_unlock(&log->wake_lock);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline); /* pthread_timedjoin_np's clock */
    deadline.tv_sec += RL_ACCESS_LOG_CLOSE_WAIT_MS / 1000u + 1;
    if (pthread_timedjoin_np(log->writer, NULL, &deadline) == 0) return true;
    pthread_detach(log->writer);
    return false;
}

rl_access_log_totals rl_access_log_close(rl_access_log *log) {
    rl_access_log_totals totals = {0, 0};
    if (log == NULL) return totals;
    if (log->writer_started && !stop_writer(log)) {
        /* Its memory and descriptor stay its own: the process is ending. */
        fprintf(stderr, "ratelimiterd: access log: %s has not answered a write for %u ms: the lines it was "
                "given are lost\n", log->path, RL_ACCESS_LOG_CLOSE_WAIT_MS + 1000u);
        totals.written_lines = rl_access_log_written_lines(log);
        totals.dropped_lines = rl_access_log_dropped_lines(log);
        return totals;
    }
    if (log->writer_started) {
        if (log->lost_at_stop > 0)
            fprintf(stderr, "ratelimiterd: access log: %s took nothing for %u ms at stop: its last %llu lines are lost\n",
                    log->path, RL_ACCESS_LOG_CLOSE_WAIT_MS, (unsigned long long)log->lost_at_stop);
        fprintf(stderr, "ratelimiterd: access log: %llu lines written to %s, %llu dropped\n",
                (unsigned long long)rl_access_log_written_lines(log), log->path,
                (unsigned long long)rl_access_log_dropped_lines(log));
    }
    totals.written_lines = rl_access_log_written_lines(log);
    totals.dropped_lines = rl_access_log_dropped_lines(log);
    free_log(log);
    return totals;
}
