/* bench_access_log — what the access log costs a line, in-process:
 *
 *   taskset -c 0 build/bench_access_log [DIR] [LINES_PER_SECOND]
 *
 * For json and text, into DIR/access-<format>.log (default: the current
 * directory; removed after), one event loop's lines of a denied single
 * reserve with a job_id:
 *   1. as fast as the loop can: its CPU per line (format, lock, copy), and
 *      how many the writer could not keep up with (dropped, counted);
 *   2. at LINES_PER_SECOND (default 50,000, a loop's share of a busy daemon):
 *      the writer thread's CPU per line (the process's CPU less the loop's),
 *      and that none was dropped.
 * Pin it to one core, as the daemon's loop and writer share one in
 * bench/http/run.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "server/observe/access_log.h"

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double process_cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* Lines of one loop, `lines_per_second` a second (0: as fast as it can);
 * prints the loop's CPU per line, the writer's (paced only) and the totals. */
static int run(rl_access_log_format format, const char *dir, long lines, long lines_per_second) {
    char path[1024];
    snprintf(path, sizeof path, "%s/access-%s.log", dir, rl_access_log_format_name(format));
    rl_access_log_options options = {format, path, 1};
    rl_access_log *log;
    char err[512];
    if (!rl_access_log_open(&options, &log, err, sizeof err)) {
        fprintf(stderr, "bench_access_log: %s\n", err);
        return 1;
    }
    rl_api_outcome o;
    memset(&o, 0, sizeof o);
    o.endpoint = RL_API_RESERVE;
    o.http_status = 200;
    o.items = 1;
    o.results[RL_API_RESULT_DENIED_CAPACITY] = 1;
    o.first_result = RL_API_RESULT_DENIED_CAPACITY;
    o.lease_id = "01JH3Q8Z5N6T0W2X4Y7A9B1C3D";
    o.job_id = "summarize \"Q3\" report 4711";
    snprintf(o.denied_by_key, sizeof o.denied_by_key, "global:llm:openai:gpt-4o:tpm");

    double process0 = process_cpu_seconds(), loop0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    const long batch = 100; /* lines between sleeps when paced */
    for (long i = 0; i < lines; i++) {
        rl_access_log_answered(log, 0, &o, (uint64_t)(i % 500));
        if (lines_per_second > 0 && i % batch == batch - 1) {
            next.tv_nsec += (long)(1e9 * (double)batch / (double)lines_per_second);
            while (next.tv_nsec >= 1000000000L) {
                next.tv_sec++;
                next.tv_nsec -= 1000000000L;
            }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
    }
    double loop_cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - loop0;
    rl_access_log_totals totals = rl_access_log_close(log);
    double process_cpu = process_cpu_seconds() - process0;
    remove(path);
    if (lines_per_second == 0)
        printf("  %-4s as fast as it goes: loop %5.0f ns a line; %llu written, %llu dropped\n",
               rl_access_log_format_name(format), 1e9 * loop_cpu / (double)lines,
               (unsigned long long)totals.written_lines, (unsigned long long)totals.dropped_lines);
    else
        printf("  %-4s at %ld lines/s:     writer %5.0f ns a line; %llu written, %llu dropped\n",
               rl_access_log_format_name(format), lines_per_second, 1e9 * (process_cpu - loop_cpu) / (double)lines,
               (unsigned long long)totals.written_lines, (unsigned long long)totals.dropped_lines);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    long lines_per_second = argc > 2 ? strtol(argv[2], NULL, 10) : 50000;
    if (lines_per_second <= 0) {
        fprintf(stderr, "usage: bench_access_log [DIR] [LINES_PER_SECOND > 0]\n");
        return 2;
    }
    printf("access log, one loop, a denied reserve's line (~300 bytes), into %s:\n", dir);
    int failed = 0;
    for (rl_access_log_format f = RL_ACCESS_LOG_TEXT; f <= RL_ACCESS_LOG_JSON; f++) {
        failed |= run(f, dir, 2000000, 0);
        failed |= run(f, dir, 5 * lines_per_second, lines_per_second);
    }
    return failed;
}
