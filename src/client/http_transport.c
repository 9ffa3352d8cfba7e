/* http_transport.c — the libcurl side of the http limiter: a bounded pool of
 * easy handles, one keep-alive connection each (see http_transport.h). */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "client/http_transport.h"

struct rl__http_transport {
    char base_url[RL__HTTP_BASE_URL_MAX_LEN + 1];
    char *ca_file; /* NULL: the system's authorities */
    uint32_t call_timeout_ms;
    struct curl_slist *headers; /* shared read-only by every handle */

    pthread_mutex_t lock;
    pthread_cond_t handle_returned; /* on CLOCK_MONOTONIC, like the deadlines */
    CURL **idle;       /* a stack: the last returned is taken first */
    size_t idle_count;
    size_t in_use;     /* borrowed now; idle_count + in_use <= max_connections */
    size_t max_connections;
    uint64_t connects_total;
};

uint64_t rl__http_monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static size_t on_body(char *data, size_t size, size_t count, void *user) {
    rl_buf *buf = user;
    size_t n = size * count;
    if (buf->len + n > RL__HTTP_MAX_RESPONSE_BYTES) return 0; /* curl aborts: CURLE_WRITE_ERROR */
    rl__buf_append(buf, data, n);
    return buf->failed ? 0 : n;
}

/* A handle with everything that does not change between exchanges. */
static CURL *new_handle(rl__http_transport *t) {
    CURL *curl = curl_easy_init();
    if (curl == NULL) return NULL;
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);   /* no SIGALRM in a threaded program */
    curl_easy_setopt(curl, CURLOPT_MAXCONNECTS, 1L); /* one connection per handle: the pool bounds them */
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    /* The daemon sits on a trusted network; an http_proxy set for the
     * application's own traffic must not capture the limiter's. */
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    if (t->ca_file != NULL) curl_easy_setopt(curl, CURLOPT_CAINFO, t->ca_file);
    return curl;
}

/* Whether token can go in a header as it is: no space, no CR or LF that
 * would end the header and start another. */
static bool token_is_sendable(const char *token) {
    size_t len = strlen(token);
    if (len == 0 || len > RL__HTTP_BEARER_TOKEN_MAX_LEN) return false;
    for (size_t i = 0; i < len; i++)
        if (token[i] <= ' ' || token[i] > '~') return false;
    return true;
}

/* The headers every exchange sends. "Expect:" stops curl from waiting for
 * a 100-continue before sending a large batch body, which would add up to
 * a second per call. NULL when out of memory. */
static struct curl_slist *fixed_headers(const char *bearer_token) {
    char authorization[sizeof "Authorization: Bearer " + RL__HTTP_BEARER_TOKEN_MAX_LEN];
    const char *lines[3] = {"Content-Type: application/json", "Expect:", NULL};
    if (bearer_token != NULL) {
        snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", bearer_token);
        lines[2] = authorization;
    }
    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < 3 && lines[i] != NULL; i++) {
        struct curl_slist *longer = curl_slist_append(headers, lines[i]); /* copies the line */
        if (longer == NULL) {
            curl_slist_free_all(headers);
            return NULL;
        }
        headers = longer;
    }
    return headers;
}

rl_status rl__http_transport_create(const rl__http_transport_options *options, rl__http_transport **out, char *err,
                                    size_t err_size) {
    *out = NULL;
    const char *base_url = options->base_url;
    size_t url_len = strlen(base_url);
    while (url_len > 0 && base_url[url_len - 1] == '/') url_len--;
    if (url_len > RL__HTTP_BASE_URL_MAX_LEN) {
        snprintf(err, err_size, "base_url must be at most %d bytes", RL__HTTP_BASE_URL_MAX_LEN);
        return RL_INVALID_REQUEST;
    }
    if (options->bearer_token != NULL && !token_is_sendable(options->bearer_token)) {
        snprintf(err, err_size, "bearer_token must be 1..%d printable characters without spaces",
                 RL__HTTP_BEARER_TOKEN_MAX_LEN);
        return RL_INVALID_REQUEST;
    }
    rl__http_transport *t = calloc(1, sizeof *t);
    CURL **idle = calloc(options->max_connections, sizeof *idle);
    char *ca_file = options->ca_file != NULL ? strdup(options->ca_file) : NULL;
    struct curl_slist *headers = fixed_headers(options->bearer_token);
    if (t == NULL || idle == NULL || (options->ca_file != NULL && ca_file == NULL) || headers == NULL) {
        free(t);
        free(idle);
        free(ca_file);
        curl_slist_free_all(headers);
        snprintf(err, err_size, "out of memory");
        return RL_NO_MEMORY;
    }
    memcpy(t->base_url, base_url, url_len);
    t->base_url[url_len] = '\0';
    t->ca_file = ca_file;
    t->call_timeout_ms = options->call_timeout_ms;
    t->idle = idle;
    t->max_connections = options->max_connections;
    t->headers = headers;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->handle_returned, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return RL_OK;
}

void rl__http_transport_destroy(rl__http_transport *t) {
    if (t == NULL) return;
    for (size_t i = 0; i < t->idle_count; i++) curl_easy_cleanup(t->idle[i]);
    free(t->idle);
    curl_slist_free_all(t->headers);
    free(t->ca_file);
    pthread_cond_destroy(&t->handle_returned);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Borrows a handle, waiting until deadline_mono_ms if all are busy. NULL
 * with *no_memory false: the deadline passed. */
static CURL *borrow(rl__http_transport *t, uint64_t deadline_mono_ms, bool *no_memory) {
    *no_memory = false;
    struct timespec until = {.tv_sec = (time_t)(deadline_mono_ms / 1000u),
                             .tv_nsec = (long)(deadline_mono_ms % 1000u) * 1000000L};
    pthread_mutex_lock(&t->lock);
    while (t->idle_count == 0 && t->in_use >= t->max_connections) {
        if (pthread_cond_timedwait(&t->handle_returned, &t->lock, &until) == ETIMEDOUT &&
            t->idle_count == 0 && t->in_use >= t->max_connections) {
            pthread_mutex_unlock(&t->lock);
            return NULL;
        }
    }
    CURL *curl = t->idle_count > 0 ? t->idle[--t->idle_count] : NULL;
    t->in_use++;
    pthread_mutex_unlock(&t->lock);
    if (curl != NULL) return curl;
    curl = new_handle(t); /* outside the lock: it allocates */
    if (curl == NULL) {
        pthread_mutex_lock(&t->lock);
        t->in_use--;
        pthread_cond_signal(&t->handle_returned);
        pthread_mutex_unlock(&t->lock);
        *no_memory = true;
    }
    return curl;
}

static void give_back(rl__http_transport *t, CURL *curl, long new_connects) {
    pthread_mutex_lock(&t->lock);
    t->in_use--;
    t->idle[t->idle_count++] = curl; /* fits: idle + in_use never exceeds max */
    if (new_connects > 0) t->connects_total += (uint64_t)new_connects;
    pthread_cond_signal(&t->handle_returned);
    pthread_mutex_unlock(&t->lock);
}

rl__http_outcome rl__http_exchange(rl__http_transport *t, const char *path, const char *body,
                                   size_t body_len, uint64_t deadline_mono_ms, rl_buf *response,
                                   long *http_status) {
    *http_status = 0;
    rl__buf_reset(response);
    uint64_t now_ms = rl__http_monotonic_ms();
    if (now_ms >= deadline_mono_ms) return RL__HTTP_NO_HANDLE;
    bool no_memory;
    CURL *curl = borrow(t, deadline_mono_ms, &no_memory);
    if (curl == NULL) return no_memory ? RL__HTTP_NO_MEMORY : RL__HTTP_NO_HANDLE;

    char url[RL__HTTP_BASE_URL_MAX_LEN + RL__HTTP_PATH_MAX_LEN + 1];
    snprintf(url, sizeof url, "%s%s", t->base_url, path);
    /* The exchange may not outlive the call's deadline; 0 would mean "no
     * timeout" to curl, so at least 1 ms. */
    now_ms = rl__http_monotonic_ms();
    uint64_t left_ms = deadline_mono_ms > now_ms ? deadline_mono_ms - now_ms : 1;
    long timeout_ms = (long)(left_ms < t->call_timeout_ms ? left_ms : t->call_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    /* Set on every exchange: a handle goes from POSTs to a GET and back. */
    if (body != NULL) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, response);
    CURLcode code = curl_easy_perform(curl);
    long connects = 0;
    curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &connects);
    if (code == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, http_status);
    /* The handle goes back even after a failure: curl has already dropped
     * a broken connection and will open a new one next time. */
    give_back(t, curl, connects);
    if (response->failed) return RL__HTTP_NO_MEMORY;
    if (code != CURLE_OK || *http_status == 0) return RL__HTTP_FAILED;
    return RL__HTTP_ANSWERED;
}

uint64_t rl__http_transport_connects_total(rl__http_transport *t) {
    pthread_mutex_lock(&t->lock);
    uint64_t total = t->connects_total;
    pthread_mutex_unlock(&t->lock);
    return total;
}
