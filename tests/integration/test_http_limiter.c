/* test_http_limiter.c — what only the http limiter has: its transport.
 *
 * No daemon: a call retries until deadline_ms and returns RL_TIMEOUT. The
 * daemon restarted on the same port while a call retries: the same lease id
 * gets through and is reserved once. Keep-alive: many calls ride one
 * connection. 16 threads share one limiter. Invalid requests send nothing.
 * The HTTP statuses the memory daemon does not easily produce (503, 502, a
 * garbled 200) come from a canned server in this file: 503 is answered at
 * once without a retry, the others are retried until the deadline.
 * limit_decreasing (which needs the admin API) is mapped like the other
 * keyed statuses. The audit op: a GET of its path and query, the daemon's
 * page read back, a 400's detail kept, a page of another key retried.
 *
 * Timing: only "it returned, and not before the deadline".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "client/http_limiter.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/ulid.h"
#include "support/daemon.h"

static const char limits_json[] =
    "[{\"key\":\"http:tpm\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":60,"
    "\"timeout_seconds\":0,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"},"
    "{\"key\":\"http:conc\",\"kind\":\"concurrency\",\"capacity\":1000,\"window_seconds\":0,"
    "\"timeout_seconds\":300,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"},"
    "{\"key\":\"http:shrink\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60,"
    "\"timeout_seconds\":0,\"unit\":\"\",\"description\":\"\",\"overage\":\"debt\"}]\n";

static rl_limiter *open_limiter(uint16_t port, uint32_t deadline_ms) {
    char url[64], err[RL_LIMITER_ERR_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)port);
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = url;
    options.deadline_ms = deadline_ms;
    options.call_timeout_ms = 1000;
    options.backoff_initial_ms = 5;
    options.backoff_max_ms = 100;
    rl_limiter *limiter = NULL;
    assert_int_equal(rl_limiter_http_open(&options, &limiter, err), RL_OK);
    return limiter;
}

/* A port nothing listens on: bound by us, then released. */
static uint16_t dead_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    close(fd);
    return ntohs(addr.sin_port);
}

static rl_status reserve_one(rl_limiter *l, const char *lease, const char *key, uint64_t amount,
                             rl_reserve_result *result) {
    rl_requirement requirement = {key, amount, false};
    rl_reserve_request request = {lease, NULL, &requirement, 1, false};
    return rl_limiter_reserve(l, &request, result);
}

/* The admin view of a limit's usage field, e.g. "used". */
static uint64_t usage_of(rl_test_daemon *d, const char *key, const char *field) {
    char path[256];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(d, "GET", path, NULL, &r), 200);
    cJSON *root = cJSON_Parse(r.body);
    const cJSON *usage = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "limit"), "usage");
    const cJSON *value = cJSON_GetObjectItem(usage, field);
    assert_true(cJSON_IsNumber(value));
    uint64_t result = (uint64_t)value->valuedouble;
    cJSON_Delete(root);
    rl_test_response_free(&r);
    return result;
}

static void start_daemon(rl_test_daemon *d, const char *const *args) {
    rl_test_daemon_init(d);
    rl_test_daemon_write_registry(d, limits_json);
    assert_true(rl_test_daemon_start(d, args));
}

static void stop_daemon(rl_test_daemon *d) {
    assert_int_equal(rl_test_daemon_stop(d), 0);
    rl_test_daemon_cleanup(d);
}

/* ---- no daemon ------------------------------------------------------------ */

static void no_daemon_times_out_after_the_deadline(void **state) {
    (void)state;
    rl_limiter *l = open_limiter(dead_port(), 300); /* opening connects nothing */
    char lease[RL_ULID_TEXT_SIZE];
    rl_reserve_result result;
    uint64_t start_ms = rl_test_now_ms();
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:tpm", 1, &result), RL_TIMEOUT);
    assert_true(rl_test_now_ms() - start_ms >= 300);
    rl_complete_request complete = {lease, NULL, NULL, 0};
    start_ms = rl_test_now_ms();
    assert_int_equal(rl_limiter_complete(l, &complete), RL_TIMEOUT);
    if (strstr(rl_limiter_last_error(), "the outcome is unknown, retry with the same lease id") == NULL)
        fail_msg("last error: \"%s\"", rl_limiter_last_error());
    assert_true(rl_test_now_ms() - start_ms >= 300);
    assert_int_equal(rl__http_limiter_connects_total(l), 0);
    rl_limiter_destroy(l);
}

static void open_refuses_a_bad_base_url(void **state) {
    (void)state;
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *l = (rl_limiter *)&options; /* must come back NULL */
    assert_int_equal(rl_limiter_http_open(&options, &l, err), RL_INVALID_REQUEST);
    assert_null(l);
    assert_non_null(strstr(err, "base_url"));
    options.base_url = "127.0.0.1:8080";
    assert_int_equal(rl_limiter_http_open(&options, &l, err), RL_INVALID_REQUEST);
}

/* ---- against a daemon ------------------------------------------------------ */

static void invalid_requests_send_nothing(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    rl_limiter *l = open_limiter(d.port, 5000);
    rl_reserve_result result;
    assert_int_equal(reserve_one(l, "not-a-ulid", "http:tpm", 1, &result), RL_INVALID_REQUEST);
    rl_complete_request complete = {"not-a-ulid", NULL, NULL, 0};
    assert_int_equal(rl_limiter_complete(l, &complete), RL_INVALID_REQUEST);
    assert_int_equal(rl__http_limiter_connects_total(l), 0); /* never connected */
    char lease[RL_ULID_TEXT_SIZE];
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:tpm", 1, &result), RL_OK);
    assert_int_equal(rl__http_limiter_connects_total(l), 1);
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

static void keep_alive_reuses_one_connection(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    rl_limiter *l = open_limiter(d.port, 5000);
    for (int i = 0; i < 300; i++) {
        char lease[RL_ULID_TEXT_SIZE];
        rl_reserve_result result;
        assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:conc", 1, &result), RL_OK);
        assert_true(result.allowed);
        rl_complete_request complete = {lease, NULL, NULL, 0};
        assert_int_equal(rl_limiter_complete(l, &complete), RL_OK);
    }
    assert_int_equal(rl__http_limiter_connects_total(l), 1);
    assert_int_equal(usage_of(&d, "http:conc", "active"), 0);
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

static void limit_decreasing_names_the_request_key(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    rl_limiter *l = open_limiter(d.port, 5000);
    char lease[RL_ULID_TEXT_SIZE];
    rl_reserve_result result;
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:shrink", 10, &result), RL_OK);
    assert_true(result.allowed);
    /* 10 used of 10: a decrease to 5 cannot apply yet, the limit is decreasing. */
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(&d, "PUT", "/v1/admin/limits",
                                         "{\"key\":\"http:shrink\",\"kind\":\"rolling\",\"capacity\":5,"
                                         "\"window_seconds\":60}",
                                         &r),
                     200);
    assert_non_null(strstr(r.body, "decreasing"));
    rl_test_response_free(&r);
    char key[] = "http:shrink";
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), key, 1, &result), RL_OK);
    assert_false(result.allowed);
    assert_int_equal(result.status, RL_LIMIT_DECREASING);
    assert_ptr_equal(result.status_key, key);
    assert_int_equal(result.retry_after_ms, RL_DECREASING_RETRY_AFTER_MS);
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

typedef struct reserve_job {
    rl_limiter *limiter;
    const char *lease;
    rl_status status;
    rl_reserve_result result;
} reserve_job;

static void *reserve_in_thread(void *arg) {
    reserve_job *job = arg;
    job->status = reserve_one(job->limiter, job->lease, "http:tpm", 7, &job->result);
    return NULL;
}

static void restarted_daemon_gets_the_same_lease_once(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    uint16_t port = d.port;
    rl_limiter *l = open_limiter(port, 60000);
    char lease[RL_ULID_TEXT_SIZE];
    rl_reserve_result result;
    /* A keep-alive connection that the stop will break. */
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:conc", 1, &result), RL_OK);
    assert_int_equal(rl_test_daemon_stop(&d), 0);

    /* The call starts while nothing listens: its first attempts must fail. */
    reserve_job job = {l, rl_ulid_new(lease), RL_IO_ERROR, {0}};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, reserve_in_thread, &job), 0);
    rl_test_sleep_ms(300);
    char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned)port);
    const char *args[] = {"--listen", listen, NULL};
    assert_true(rl_test_daemon_start(&d, args));
    assert_int_equal(d.port, port);
    pthread_join(thread, NULL);

    assert_int_equal(job.status, RL_OK);
    assert_true(job.result.allowed);
    assert_true(rl__http_limiter_connects_total(l) >= 2);
    assert_int_equal(usage_of(&d, "http:tpm", "used"), 7);
    assert_int_equal(usage_of(&d, "http:tpm", "active"), 1);
    /* Once more, as a client unsure of the outcome would: the same answer, nothing more held. */
    assert_int_equal(reserve_one(l, lease, "http:tpm", 7, &result), RL_OK);
    assert_true(result.allowed);
    assert_int_equal(result.reserved_at_unix_ms, job.result.reserved_at_unix_ms);
    assert_int_equal(usage_of(&d, "http:tpm", "used"), 7);
    assert_int_equal(usage_of(&d, "http:tpm", "active"), 1);
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

enum { THREADS = 16, CALLS_PER_THREAD = 50 };

static atomic_int thread_failures;

static void *reserve_and_complete(void *arg) {
    rl_limiter *l = arg;
    for (int i = 0; i < CALLS_PER_THREAD; i++) {
        char lease[RL_ULID_TEXT_SIZE];
        rl_requirement requirements[] = {{"http:tpm", 3, false}, {"http:conc", 1, false}};
        rl_reserve_request request = {rl_ulid_new(lease), NULL, requirements, 2, false};
        rl_reserve_result result;
        if (rl_limiter_reserve(l, &request, &result) != RL_OK || !result.allowed) {
            atomic_fetch_add(&thread_failures, 1);
            continue;
        }
        rl_actual actual = {"http:tpm", 2};
        rl_complete_request complete = {lease, NULL, &actual, 1};
        if (rl_limiter_complete(l, &complete) != RL_OK) atomic_fetch_add(&thread_failures, 1);
    }
    return NULL;
}

static void sixteen_threads_share_one_limiter(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    rl_limiter *l = open_limiter(d.port, 30000);
    atomic_store(&thread_failures, 0);
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, reserve_and_complete, l), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&thread_failures), 0);
    assert_int_equal(usage_of(&d, "http:tpm", "used"), 2 * THREADS * CALLS_PER_THREAD);
    assert_int_equal(usage_of(&d, "http:conc", "active"), 0);
    assert_true(rl__http_limiter_connects_total(l) <= 16); /* max_connections */
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

/* ---- a canned server: answers every request with one fixed response ----- */

typedef struct canned_server {
    int listen_fd;
    uint16_t port;
    const char *response; /* written whole, then the connection is closed */
    atomic_int requests;
    atomic_bool stop;
    pthread_t thread;
    char request_line[1024]; /* of the first request; read after canned_stop */
} canned_server;

/* Reads one request: the headers, then Content-Length bytes of body; its
 * request line into line (size bytes) if line is not NULL. */
static bool read_request(int fd, char *line, size_t size) {
    char buf[65536];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0) return false;
        len += (size_t)n;
        buf[len] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (end == NULL) continue;
        if (line != NULL) snprintf(line, size, "%.*s", (int)strcspn(buf, "\r\n"), buf);
        const char *length = strcasestr(buf, "content-length:");
        size_t body_len = length != NULL ? strtoul(length + 15, NULL, 10) : 0;
        if (len >= (size_t)(end - buf) + 4 + body_len) return true;
    }
    return false;
}

static void *serve_canned(void *arg) {
    canned_server *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {s->listen_fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) continue;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        if (read_request(fd, atomic_load(&s->requests) == 0 ? s->request_line : NULL, sizeof s->request_line)) {
            atomic_fetch_add(&s->requests, 1);
            ssize_t ignored = write(fd, s->response, strlen(s->response));
            (void)ignored;
        }
        close(fd);
    }
    return NULL;
}

static void canned_start(canned_server *s, const char *response) {
    memset(s, 0, sizeof *s);
    s->response = response;
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(s->listen_fd, 16), 0);
    assert_int_equal(getsockname(s->listen_fd, (struct sockaddr *)&addr, &len), 0);
    s->port = ntohs(addr.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve_canned, s), 0);
}

static int canned_stop(canned_server *s) {
    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    return atomic_load(&s->requests);
}

static void service_unavailable_is_answered_without_retry(void **state) {
    (void)state;
    static const char body[] = "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,\"error\":\"backend_error\"}";
    char response[512];
    snprintf(response, sizeof response,
             "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
             "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
    canned_server s;
    canned_start(&s, response);
    rl_limiter *l = open_limiter(s.port, 5000);
    char lease[RL_ULID_TEXT_SIZE];
    rl_reserve_result result;
    assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:tpm", 1, &result), RL_BACKEND_ERROR);
    assert_string_equal(rl_limiter_last_error(), "HTTP 503 backend_error"); /* the server's own words */
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);
}

static void garbled_or_proxy_answers_are_retried_until_the_deadline(void **state) {
    (void)state;
    static const char *const responses[] = {
        /* 200 whose body is cut short: not an answer */
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        "Content-Length: 13\r\n\r\n{\"allowed\":tr",
        /* a proxy that got nothing from the daemon */
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof responses / sizeof responses[0]; i++) {
        canned_server s;
        canned_start(&s, responses[i]);
        rl_limiter *l = open_limiter(s.port, 300);
        char lease[RL_ULID_TEXT_SIZE];
        rl_reserve_result result;
        uint64_t start_ms = rl_test_now_ms();
        assert_int_equal(reserve_one(l, rl_ulid_new(lease), "http:tpm", 1, &result), RL_TIMEOUT);
        assert_true(rl_test_now_ms() - start_ms >= 300);
        rl_limiter_destroy(l);
        assert_true(canned_stop(&s) >= 2);
    }
}

/* ---- the audit op --------------------------------------------------------- */

static rl_status audit(rl_limiter *l, const char *key, uint64_t since_unix_ms, uint32_t limit, rl_audit_page *page) {
    static rl_audit_entry entries[8];
    page->entries = entries;
    rl_audit_query query = {key, since_unix_ms, limit};
    return rl_limiter_audit(l, &query, page);
}

static void audit_without_a_daemon_times_out(void **state) {
    (void)state;
    rl_limiter *l = open_limiter(dead_port(), 300);
    rl_audit_page page;
    assert_int_equal(audit(l, "http:tpm", 0, 8, &page), RL_TIMEOUT);
    assert_int_equal(page.count, 0);
    /* A GET changes nothing: no talk of unknown outcomes or lease ids. */
    if (strstr(rl_limiter_last_error(), "no answer from /v1/admin/audit?key=http:tpm") == NULL ||
        strstr(rl_limiter_last_error(), "lease id") != NULL)
        fail_msg("last error: \"%s\"", rl_limiter_last_error());
    rl_limiter_destroy(l);
}

/* The daemon's audit log through the limiter: what was charged, and a key
 * that needs percent-encoding on its way. The entries need the memory
 * backend's audit log. */
static void audit_reads_the_daemons_log(void **state) {
    (void)state;
    rl_test_daemon d;
    start_daemon(&d, NULL);
    rl_limiter *l = open_limiter(d.port, 5000);
    rl_audit_page page;
    assert_int_equal(audit(l, "bad key", 0, 8, &page), RL_INVALID_REQUEST); /* sends nothing */
    assert_int_equal(audit(l, "http:tpm", 0, 0, &page), RL_INVALID_REQUEST);
    assert_int_equal(rl__http_limiter_connects_total(l), 0);

    /* Undefined, and every byte that means something in a URL: asked for
     * exactly, an empty page. */
    assert_int_equal(audit(l, "http:a&b=c+d%e/f?g#h", 42, 8, &page), RL_OK);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.next_since_unix_ms, 42);

    char lease[RL_ULID_TEXT_SIZE];
    rl_requirement requirement = {"http:tpm", 500, false};
    rl_reserve_request request = {rl_ulid_new(lease), "job-audit", &requirement, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    rl_actual actual = {"http:tpm", 321};
    rl_complete_request complete = {lease, NULL, &actual, 1};
    assert_int_equal(rl_limiter_complete(l, &complete), RL_OK);
    rl_test_sleep_ms(2); /* entries are listed once their millisecond is over */
    assert_int_equal(audit(l, "http:tpm", result.reserved_at_unix_ms, 8, &page), RL_OK);
    assert_int_equal(page.count, 1);
    assert_string_equal(page.entries[0].lease_id, lease);
    assert_string_equal(page.entries[0].job_id, "job-audit");
    assert_string_equal(page.entries[0].key, "http:tpm");
    assert_int_equal(page.entries[0].reserved, 500);
    assert_int_equal(page.entries[0].actual, 321);
    assert_int_equal(page.entries[0].period_start_unix_ms, 0);
    assert_false(page.entries[0].expired);
    assert_true(page.next_since_unix_ms > page.entries[0].at_unix_ms);
    rl_limiter_destroy(l);
    stop_daemon(&d);
}

/* An HTTP/1.1 response with status (e.g. "400 Bad Request") and body, in a
 * static buffer of its own (slot 0..2). */
static const char *response_of(int slot, const char *status, const char *body) {
    static char responses[3][1024];
    snprintf(responses[slot], sizeof responses[slot],
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
             status, strlen(body), body);
    return responses[slot];
}

/* What a canned server answers to an audit: its request is a GET of the
 * path and query; a 400 is the query's fault, with the daemon's detail; a
 * 404 (a daemon older than the endpoint) the server's; a page that is not
 * the one asked for is asked again until the deadline. */
static void audit_answers_from_a_canned_server(void **state) {
    (void)state;
    canned_server s;
    canned_start(&s, response_of(0, "400 Bad Request",
                                 "{\"error\":\"invalid_request\",\"detail\":\"limit must be a decimal integer 1..1000\"}"));
    rl_limiter *l = open_limiter(s.port, 5000);
    rl_audit_page page;
    assert_int_equal(audit(l, "t:spend/x", 1764058800123u, 7, &page), RL_INVALID_REQUEST);
    assert_string_equal(rl_limiter_last_error(), "HTTP 400 invalid_request: limit must be a decimal integer 1..1000");
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);
    assert_string_equal(s.request_line,
                        "GET /v1/admin/audit?key=t:spend%2Fx&since_unix_ms=1764058800123&limit=7 HTTP/1.1");

    canned_start(&s, response_of(1, "404 Not Found", "{\"error\":\"invalid_request\"}"));
    l = open_limiter(s.port, 5000);
    assert_int_equal(audit(l, "t:spend", 0, 8, &page), RL_BACKEND_ERROR);
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);

    canned_start(&s, response_of(2, "200 OK",
                                 "{\"entries\":[{\"at_unix_ms\":5,\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\","
                                 "\"job_id\":\"\",\"key\":\"t:other\",\"reserved\":1,\"actual\":1,"
                                 "\"period_start_unix_ms\":0,\"expired\":false}],\"next_since_unix_ms\":6}"));
    l = open_limiter(s.port, 300);
    assert_int_equal(audit(l, "t:spend", 0, 8, &page), RL_TIMEOUT);
    assert_int_equal(page.count, 0);
    rl_limiter_destroy(l);
    assert_true(canned_stop(&s) >= 2);
}

/* A daemon from before dry runs ignores "dry_run" and reserves: its answer
 * lacks "dry_run":true, and the limiter says so rather than pass a real
 * reservation off as a dry run's answer. The request carried the flag. */
static void a_dry_run_answered_as_a_reserve_is_an_error(void **state) {
    (void)state;
    canned_server s;
    canned_start(&s, response_of(0, "200 OK",
                                 "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":5,\"error\":\"\"}"));
    rl_limiter *l = open_limiter(s.port, 5000);
    char lease[RL_ULID_TEXT_SIZE];
    rl_requirement req = {"http:tpm", 1, true};
    rl_reserve_request request = {rl_ulid_new(lease), NULL, &req, 1, true};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_BACKEND_ERROR);
    assert_non_null(strstr(rl_limiter_last_error(), "does not know dry runs"));
    assert_non_null(strstr(rl_limiter_last_error(), lease));
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);

    /* the same answer to a plain reserve is a plain allow */
    canned_start(&s, response_of(1, "200 OK",
                                 "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":5,\"error\":\"\"}"));
    l = open_limiter(s.port, 5000);
    request.dry_run = false;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_true(result.allowed);
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);

    /* and a dry run's answer, a dry run's result */
    canned_start(&s, response_of(2, "200 OK",
                                 "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":5,\"error\":\"\","
                                 "\"dry_run\":true}"));
    l = open_limiter(s.port, 5000);
    request.dry_run = true;
    assert_int_equal(rl_limiter_reserve(l, &request, &result), RL_OK);
    assert_true(result.allowed);
    assert_int_equal(result.reserved_at_unix_ms, 5);
    rl_limiter_destroy(l);
    assert_int_equal(canned_stop(&s), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_daemon_times_out_after_the_deadline),
        cmocka_unit_test(open_refuses_a_bad_base_url),
        cmocka_unit_test(invalid_requests_send_nothing),
        cmocka_unit_test(keep_alive_reuses_one_connection),
        cmocka_unit_test(limit_decreasing_names_the_request_key),
        cmocka_unit_test(restarted_daemon_gets_the_same_lease_once),
        cmocka_unit_test(sixteen_threads_share_one_limiter),
        cmocka_unit_test(service_unavailable_is_answered_without_retry),
        cmocka_unit_test(garbled_or_proxy_answers_are_retried_until_the_deadline),
        cmocka_unit_test(audit_without_a_daemon_times_out),
        cmocka_unit_test(audit_reads_the_daemons_log),
        cmocka_unit_test(audit_answers_from_a_canned_server),
        cmocka_unit_test(a_dry_run_answered_as_a_reserve_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
