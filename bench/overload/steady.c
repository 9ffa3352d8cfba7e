/* steady.c — a well-behaved client: keep-alive connections sending POST
 * /v1/reserve at a fixed pace, each request timed from when it was due (so a
 * stall shows in the latency of every request it delayed, not only the one
 * that waited). The client of bench/overload/run.sh and the latency phase of
 * bench/fleet/run.sh.
 *
 *   steady [--requirements JSON] [--warmup S] [--slow-ms MS] PORT CONNECTIONS RATE_PER_S DURATION_S [KEY]
 *
 * Each connection is a thread sending every CONNECTIONS / RATE_PER_S
 * seconds (staggered), so RATE_PER_S in all. Each lease asks 1 of KEY, or
 * has the requirements given (a JSON array, put in the body as it is:
 * '[{"key":"a","amount":1},{"key":"b","amount":1800}]'). Lease ids are
 * ULIDs, fresh for every request and distinct across processes (each thread
 * seeded from getrandom). --warmup S: the same pace for S seconds first, its
 * requests not counted. S may have decimals. --slow-ms MS: also count the
 * answers that took longer than MS (bench/fleet: longer than a round trip to
 * Redis).
 *
 * Prints one line: sent, answered (200), failed (anything else, a timeout
 * of 5 s, a connection cut), denied (answered "allowed":false), then
 * p50/p99/p99.9/max latency in ms of the answered ones, and with --slow-ms
 * "slow N". Built by the scripts with cc (not part of the CMake build).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 5000

static uint16_t port;
static int connections;
static double rate;
static double duration_s, warmup_s, slow_ms = -1;
static char requirements[2048]; /* the lease's requirements, JSON */

typedef struct worker {
    pthread_t thread;
    int index;
    double *latencies_ms; /* answered ones */
    long answered, failed, denied, slow, sent, capacity;
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

/* Reads one answer; returns its status, or -1 (cut, timeout, garbage);
 * *denied: its body says "allowed":false. */
static int read_answer(int fd, uint64_t deadline_us, bool *denied) {
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
            *denied = memmem(buf + head_len, (size_t)body_needed, "\"allowed\":false", 16) != NULL;
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
    /* Seeded from the kernel: processes started at once (one per daemon in
     * bench/fleet) must not send the same lease ids. */
    uint64_t random_state = 0;
    if (getrandom(&random_state, sizeof random_state, 0) != (ssize_t)sizeof random_state) random_state = 0;
    random_state ^= now_us() ^ ((uint64_t)(w->index + 1) * UINT64_C(0x9E3779B97F4A7C15));
    if (random_state == 0) random_state = 1;
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* wake when due, not up to 50 µs late */
    uint64_t interval_us = (uint64_t)(1e6 * connections / rate);
    uint64_t start = now_us();
    uint64_t measured = start + (uint64_t)(warmup_s * 1e6);
    uint64_t end = measured + (uint64_t)(duration_s * 1e6);
    uint64_t due = start + interval_us * (uint64_t)w->index / (uint64_t)connections;
    int fd = -1;
    while (due < end) {
        sleep_until_us(due);
        if (fd < 0) fd = connect_daemon();
        char id[27], body[2560], request[3072];
        new_ulid(id, &random_state);
        int body_len = snprintf(body, sizeof body, "{\"lease_id\":\"%s\",\"job_id\":\"steady\",\"requirements\":%s}",
                                id, requirements);
        int len = snprintf(request, sizeof request,
                           "POST /v1/reserve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           "application/json\r\nContent-Length: %d\r\n\r\n%s",
                           body_len, body);
        bool counted = due >= measured, denied = false;
        if (counted) w->sent++;
        int status = -1;
        if (fd >= 0 && send(fd, request, (size_t)len, MSG_NOSIGNAL) == len)
            status = read_answer(fd, now_us() + TIMEOUT_MS * 1000u, &denied);
        uint64_t done = now_us();
        if (!counted) {
            if (status != 200 && fd >= 0) {
                close(fd);
                fd = -1;
            }
        } else if (status == 200) {
            if (denied) w->denied++;
            if (w->answered == w->capacity) {
                w->capacity = w->capacity ? 2 * w->capacity : 4096;
                w->latencies_ms = realloc(w->latencies_ms, (size_t)w->capacity * sizeof *w->latencies_ms);
                if (w->latencies_ms == NULL) abort();
            }
            w->latencies_ms[w->answered] = (double)(done - due) / 1000.0;
            if (slow_ms >= 0 && w->latencies_ms[w->answered] > slow_ms) w->slow++;
            w->answered++;
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

static int usage(void) {
    fprintf(stderr, "usage: steady [--requirements JSON] [--warmup S] [--slow-ms MS] PORT CONNECTIONS RATE_PER_S "
                    "DURATION_S [KEY]\n");
    return 2;
}

int main(int argc, char **argv) {
    static const struct option options[] = {
        {"requirements", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},
        {"slow-ms", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *given = NULL;
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'r': given = optarg; break;
        case 'w': warmup_s = atof(optarg); break;
        case 's': slow_ms = atof(optarg); break;
        default: return usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc != (given != NULL ? 4 : 5)) return usage();
    port = (uint16_t)atoi(argv[0]);
    connections = atoi(argv[1]);
    rate = atof(argv[2]);
    duration_s = atof(argv[3]);
    if (connections < 1 || rate <= 0 || duration_s <= 0 || warmup_s < 0) return usage();
    int n = given != NULL ? snprintf(requirements, sizeof requirements, "%s", given)
                          : snprintf(requirements, sizeof requirements, "[{\"key\":\"%s\",\"amount\":1}]", argv[4]);
    if (n < 0 || (size_t)n >= sizeof requirements) {
        fprintf(stderr, "steady: the requirements are too long\n");
        return 2;
    }
    /* A thread a connection: small stacks, so that hundreds fit. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    worker *workers = calloc((size_t)connections, sizeof *workers);
    for (int i = 0; i < connections; i++) {
        workers[i].index = i;
        if (pthread_create(&workers[i].thread, &attr, run, &workers[i]) != 0) {
            fprintf(stderr, "steady: cannot start connection %d's thread\n", i);
            return 1;
        }
    }
    long sent = 0, answered = 0, failed = 0, denied = 0, slow = 0;
    const char *first_failure = "";
    for (int i = 0; i < connections; i++) {
        pthread_join(workers[i].thread, NULL);
        sent += workers[i].sent;
        answered += workers[i].answered;
        failed += workers[i].failed;
        denied += workers[i].denied;
        slow += workers[i].slow;
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
    printf("sent %ld answered %ld failed %ld denied %ld p50_ms %.3f p99_ms %.3f p999_ms %.3f max_ms %.3f", sent,
           answered, failed, denied, PCT(0.50), PCT(0.99), PCT(0.999), PCT(1.0));
    if (slow_ms >= 0) printf(" slow %ld", slow);
    printf("%s%s\n", failed > 0 ? " first_failure " : "", failed > 0 ? first_failure : "");
    return 0;
}
