/* steady.c — the well-behaved client of bench/overload/run.sh: keep-alive
 * connections sending POST /v1/reserve at a fixed pace, each request timed
 * from when it was due (so a stall shows in the latency of every request it
 * delayed, not only the one that waited).
 *
 *   steady PORT CONNECTIONS RATE_PER_S DURATION_S KEY
 *
 * Prints one line: sent, answered (200), failed (anything else, a timeout
 * of 5 s, a connection cut), then p50/p99/p99.9/max latency in ms of the
 * answered ones. Built by run.sh with cc (not part of the CMake build).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 5000

static uint16_t port;
static int connections;
static double rate;
static int duration_s;
static const char *key;

typedef struct worker {
    pthread_t thread;
    int index;
    double *latencies_ms; /* answered ones */
    long answered, failed, sent, capacity;
    char first_failure[160];
} worker;

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_until_us(uint64_t when) {
    uint64_t now = now_us();
    if (when <= now) return;
    struct timespec ts = {(time_t)((when - now) / 1000000u), (long)((when - now) % 1000000u) * 1000};
    nanosleep(&ts, NULL);
}

static int connect_daemon(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* xorshift64*, one per thread: lease ids need only be fresh. */
static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(2685821657736338717);
}

static void new_ulid(char out[27], uint64_t *random_state) {
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (int i = 9; i >= 0; i--) {
        out[i] = alphabet[ms & 31u];
        ms >>= 5;
    }
    uint64_t r = next_random(random_state), s = next_random(random_state);
    for (int i = 10; i < 26; i++) {
        out[i] = alphabet[r & 31u];
        r = r >> 5 | (s & 31u) << 59;
        s >>= 5;
    }
    out[26] = '\0';
}

/* Reads one answer; returns its status, or -1 (cut, timeout, garbage). */
static int read_answer(int fd, uint64_t deadline_us) {
    char buf[8192];
    size_t len = 0;
    long body_needed = -1;
    size_t head_len = 0;
    for (;;) {
        if (body_needed < 0) {
            char *end = memmem(buf, len, "\r\n\r\n", 4);
            if (end != NULL) {
                head_len = (size_t)(end - buf) + 4;
                body_needed = 0;
                for (char *p = buf; p < end; p++) {
                    if ((p == buf || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0) {
                        body_needed = strtol(p + 15, NULL, 10);
                        break;
                    }
                }
            }
        }
        if (body_needed >= 0 && len >= head_len + (size_t)body_needed) {
            if (len < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0) return -1;
            return atoi(buf + 9);
        }
        if (len == sizeof buf) return -1;
        uint64_t now = now_us();
        if (now >= deadline_us) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)((deadline_us - now) / 1000u) + 1) <= 0) return -1;
        ssize_t n = recv(fd, buf + len, sizeof buf - len, 0);
        if (n <= 0) return -1;
        len += (size_t)n;
    }
}

static void *run(void *arg) {
    worker *w = arg;
    uint64_t random_state = now_us() ^ ((uint64_t)(w->index + 1) * UINT64_C(0x9E3779B97F4A7C15));
    uint64_t interval_us = (uint64_t)(1e6 * connections / rate);
    uint64_t start = now_us();
    uint64_t end = start + (uint64_t)duration_s * 1000000u;
    uint64_t due = start + interval_us * (uint64_t)w->index / (uint64_t)connections;
    int fd = -1;
    while (due < end) {
        sleep_until_us(due);
        if (fd < 0) fd = connect_daemon();
        char id[27], body[512], request[1024];
        new_ulid(id, &random_state);
        int body_len = snprintf(body, sizeof body,
                                "{\"lease_id\":\"%s\",\"job_id\":\"steady\",\"requirements\":"
                                "[{\"key\":\"%s\",\"amount\":1}]}",
                                id, key);
        int len = snprintf(request, sizeof request,
                           "POST /v1/reserve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           "application/json\r\nContent-Length: %d\r\n\r\n%s",
                           body_len, body);
        w->sent++;
        int status = -1;
        if (fd >= 0 && send(fd, request, (size_t)len, MSG_NOSIGNAL) == len)
            status = read_answer(fd, now_us() + TIMEOUT_MS * 1000u);
        uint64_t done = now_us();
        if (status == 200) {
            if (w->answered == w->capacity) {
                w->capacity = w->capacity ? 2 * w->capacity : 4096;
                w->latencies_ms = realloc(w->latencies_ms, (size_t)w->capacity * sizeof *w->latencies_ms);
                if (w->latencies_ms == NULL) abort();
            }
            w->latencies_ms[w->answered++] = (double)(done - due) / 1000.0;
        } else {
            if (w->failed++ == 0)
                snprintf(w->first_failure, sizeof w->first_failure, "%s",
                         fd < 0 ? "cannot connect" : status < 0 ? "cut or timed out" : "not 200");
            if (fd >= 0) close(fd);
            fd = -1; /* a fresh connection for the next request */
        }
        due += interval_us;
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: steady PORT CONNECTIONS RATE_PER_S DURATION_S KEY\n");
        return 2;
    }
    port = (uint16_t)atoi(argv[1]);
    connections = atoi(argv[2]);
    rate = atof(argv[3]);
    duration_s = atoi(argv[4]);
    key = argv[5];
    if (connections < 1 || rate <= 0 || duration_s < 1) return 2;
    worker *workers = calloc((size_t)connections, sizeof *workers);
    for (int i = 0; i < connections; i++) {
        workers[i].index = i;
        pthread_create(&workers[i].thread, NULL, run, &workers[i]);
    }
    long sent = 0, answered = 0, failed = 0;
    const char *first_failure = "";
    for (int i = 0; i < connections; i++) {
        pthread_join(workers[i].thread, NULL);
        sent += workers[i].sent;
        answered += workers[i].answered;
        failed += workers[i].failed;
        if (first_failure[0] == '\0') first_failure = workers[i].first_failure;
    }
    double *all = malloc((size_t)(answered > 0 ? answered : 1) * sizeof *all);
    long at = 0;
    for (int i = 0; i < connections; i++) {
        memcpy(all + at, workers[i].latencies_ms, (size_t)workers[i].answered * sizeof *all);
        at += workers[i].answered;
    }
    qsort(all, (size_t)answered, sizeof *all, by_value);
#define PCT(p) (answered > 0 ? all[(long)((double)(answered - 1) * (p))] : 0.0)
    printf("sent %ld answered %ld failed %ld p50_ms %.3f p99_ms %.3f p999_ms %.3f max_ms %.3f%s%s\n",
           sent, answered, failed, PCT(0.50), PCT(0.99), PCT(0.999), PCT(1.0),
           failed > 0 ? " first_failure " : "", failed > 0 ? first_failure : "");
    return 0;
}
