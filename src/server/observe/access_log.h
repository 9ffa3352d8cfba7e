/* server/observe/access_log.h — the access log: one line per answered
 * request (access_log_line.h says what a line holds), written to a file or
 * to stdout by a thread of its own, so that an event loop never waits for
 * a disk.
 *
 * Each event loop formats its lines into a buffer of its own
 * (RL_ACCESS_LOG_LOOP_BUFFER_BYTES). The writer thread takes a loop's
 * buffer when it fills past half, and every RL_ACCESS_LOG_FLUSH_MS anyway,
 * giving the loop back the empty one it holds, and writes what it took.
 * The loop and the writer share one lock per loop, held only to copy a line
 * in or to swap the two buffers, never across a write. If the sink stalls
 * (a disk that stops answering, a pipe nobody reads), the writer stays in
 * its write with the buffer it took, the loop's buffer fills up, and the
 * lines that do not fit are dropped and counted: the loop goes on
 * answering. A write that fails (disk full, the pipe closed) drops the
 * lines it held, counted the same way, and says so on stderr.
 *
 * The sink: path "-" is the daemon's stdout; any other path is a file
 * opened for appending (created 0644 if missing). rl_access_log_reopen
 * opens the path anew, for logrotate (the daemon calls it on SIGHUP):
 * rotate by renaming the file, then send SIGHUP; lines answered before the
 * writer reopens go to the renamed file. A path that cannot be opened again
 * keeps the old file, said on stderr.
 *
 * Threading is written on each function.
 */
#ifndef RL_SERVER_ACCESS_LOG_H
#define RL_SERVER_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/api/outcome.h"
#include "server/observe/access_log_line.h"

/* Each loop has two buffers of this size (2 MiB a loop): at 50,000 lines
 * of 300 bytes a second, one holds 70 ms of a loop's lines, so a writer
 * that the scheduler or the page cache holds up for tens of milliseconds
 * loses nothing (256 KiB dropped lines at 50,000 a second on a busy
 * 2-core machine: bench/observe/bench_access_log.c). */
#define RL_ACCESS_LOG_LOOP_BUFFER_BYTES (1024u * 1024u)
/* The writer takes what the loops hold at least this often. */
#define RL_ACCESS_LOG_FLUSH_MS 10u
/* Dropped lines are said on stderr at most this often (and at close). */
#define RL_ACCESS_LOG_REPORT_MS 10000u
/* At close, the writer gets this long to write the last lines to a pipe or
 * FIFO that takes nothing; then they are lost (counted as dropped). */
#define RL_ACCESS_LOG_CLOSE_WAIT_MS 2000u

typedef struct rl_access_log rl_access_log;

typedef struct rl_access_log_options {
    rl_access_log_format format; /* text or json */
    const char *path;            /* "-": stdout; else a file, appended to; copied */
    uint32_t loops;              /* the event loops that will call answered, >= 1 */
} rl_access_log_options;

/* Opens the sink and starts the writer thread (which inherits the caller's
 * signal mask). *out is the caller's (close). False with err (err_size
 * bytes, naming the path) if the file cannot be opened or memory or the
 * thread cannot be had; then *out is NULL. Controlling thread. */
bool rl_access_log_open(const rl_access_log_options *options, rl_access_log **out, char *err, size_t err_size);

/* One line for outcome, into loop `loop`'s buffer, or dropped and counted
 * if it is full. Never blocks: the loop's lock is only ever held for a
 * copy or a swap. Event loop `loop`'s thread only (the rl_http_observer's
 * answered). */
void rl_access_log_answered(rl_access_log *log, uint32_t loop, const rl_api_outcome *outcome,
                            uint64_t latency_us);

/* Asks the writer to open the path anew (logrotate) and returns at once;
 * "-" stays stdout. NULL (no access log) does nothing. Any thread. */
void rl_access_log_reopen(rl_access_log *log);

/* Lines dropped since open because the sink was slow or failing, and lines
 * written. Any thread (atomics, relaxed: a figure for metrics). */
uint64_t rl_access_log_dropped_lines(const rl_access_log *log);
uint64_t rl_access_log_written_lines(const rl_access_log *log);

typedef struct rl_access_log_totals {
    uint64_t written_lines;
    uint64_t dropped_lines;
} rl_access_log_totals;

/* After the loops have stopped: writes what they left (waiting at most
 * RL_ACCESS_LOG_CLOSE_WAIT_MS for a pipe that takes nothing), stops the
 * writer, says on stderr how many lines were written and dropped, closes
 * the file, frees everything. Returns those totals: every line answered is
 * in one of the two. A writer held in the kernel by a disk that does not
 * answer (or by a stdout nobody reads) a second longer is left there, with
 * its memory: the daemon is ending (then the totals miss what it held).
 * NULL is allowed (totals 0). Controlling thread. */
rl_access_log_totals rl_access_log_close(rl_access_log *log);

#endif
