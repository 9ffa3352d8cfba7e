/* bench_fork_fault.c — what a fork costs the process that goes on writing:
 * the price of the journal's compaction (a child forked to write the
 * snapshot) to the event loop that keeps answering.
 *
 *   build/bench_fork_fault [megabytes]     (64 by default)
 *
 * Fills a block of that size, then writes one byte of every 4 KiB page of
 * it three times, each timed: with no child (a page already ours), while a
 * forked child that only waits shares the pages (each first write copies
 * the page), and after that child has exited (each page is still
 * write-protected until written once). Prints the time per page of each,
 * and what the fork itself took. On a machine where a page fault is cheap
 * the last two are a microsecond or two; on the VMs this project measures
 * on, they are what the answers pay for each page the loop writes after a
 * compaction's fork (docs/benchmarks.md).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE_BYTES 4096u

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes a byte of every page of block; the time it took, in µs a page. */
static double touch_every_page_us(volatile unsigned char *block, size_t size) {
    double started = seconds_now();
    for (size_t at = 0; at < size; at += PAGE_BYTES) block[at]++;
    return (seconds_now() - started) * 1e6 / (double)(size / PAGE_BYTES);
}

int main(int argc, char **argv) {
    size_t megabytes = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    if (megabytes == 0 || megabytes > 65536) {
        fprintf(stderr, "usage: bench_fork_fault [megabytes, 1..65536]\n");
        return 2;
    }
    size_t size = megabytes << 20;
    unsigned char *block = malloc(size);
    if (block == NULL) {
        fprintf(stderr, "bench_fork_fault: cannot allocate %zu MB\n", megabytes);
        return 1;
    }
    memset(block, 1, size);
    double own_us = touch_every_page_us(block, size);

    double fork_started = seconds_now();
    pid_t child = fork();
    if (child == 0) {
        pause(); /* shares the pages until killed */
        _exit(0);
    }
    double fork_ms = (seconds_now() - fork_started) * 1e3;
    if (child < 0) {
        perror("bench_fork_fault: fork");
        return 1;
    }
    double shared_us = touch_every_page_us(block, size);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);

    /* Forked again, the child gone at once: no page is shared any more,
     * but every one is still write-protected. */
    child = fork();
    if (child == 0) _exit(0);
    if (child < 0) {
        perror("bench_fork_fault: fork");
        return 1;
    }
    waitpid(child, NULL, 0);
    double after_us = touch_every_page_us(block, size);

    size_t pages = size / PAGE_BYTES;
    printf("%zu MB (%zu pages); fork: %.2f ms\n", megabytes, pages, fork_ms);
    printf("first write of a page, no child:              %6.2f us (%7.1f ms in all)\n", own_us,
           own_us * (double)pages / 1e3);
    printf("first write of a page, a child shares it:     %6.2f us (%7.1f ms in all)\n", shared_us,
           shared_us * (double)pages / 1e3);
    printf("first write of a page, after the child exited: %5.2f us (%7.1f ms in all)\n", after_us,
           after_us * (double)pages / 1e3);
    free(block);
    return 0;
}
