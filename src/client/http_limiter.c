/* http_limiter.c — opening an http limiter, and the retry loop every call
 * goes through (on a transport failure or timeout, send the SAME
 * lease ids again, with backoff, until the deadline; never guess an outcome).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "client/http_limiter.h"
#include "client/last_error.h"

#define DEFAULT_CALL_TIMEOUT_MS 1000u
#define DEFAULT_DEADLINE_MS 10000u
#define DEFAULT_BACKOFF_INITIAL_MS 10u
#define DEFAULT_BACKOFF_MAX_MS 1000u
#define DEFAULT_MAX_CONNECTIONS 16u
#define MAX_CONNECTIONS_LIMIT 1024u /* a limit on everything: fds are not free */

void rl_http_limiter_options_default(rl_http_limiter_options *options) {
    memset(options, 0, sizeof *options);
    options->call_timeout_ms = DEFAULT_CALL_TIMEOUT_MS;
    options->deadline_ms = DEFAULT_DEADLINE_MS;
    options->backoff_initial_ms = DEFAULT_BACKOFF_INITIAL_MS;
    options->backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    options->max_connections = DEFAULT_MAX_CONNECTIONS;
}

/* curl_global_init is not thread-safe and must run once per process. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_code;
static void init_curl(void) { curl_init_code = curl_global_init(CURL_GLOBAL_DEFAULT); }

static uint32_t or_default(uint32_t value, uint32_t fallback) { return value != 0 ? value : fallback; }

rl_status rl_limiter_http_open(const rl_http_limiter_options *options, rl_limiter **out,
                               char err[RL_LIMITER_ERR_SIZE]) {
    *out = NULL;
    err[0] = '\0';
    if (options == NULL || options->base_url == NULL ||
        (strncmp(options->base_url, "http://", 7) != 0 && strncmp(options->base_url, "https://", 8) != 0)) {
        snprintf(err, RL_LIMITER_ERR_SIZE, "base_url must start with http:// or https://");
        return RL_INVALID_REQUEST;
    }
    pthread_once(&curl_once, init_curl);
    if (curl_init_code != CURLE_OK) {
        snprintf(err, RL_LIMITER_ERR_SIZE, "libcurl did not start: %s", curl_easy_strerror(curl_init_code));
        return RL_IO_ERROR;
    }
    rl__http_limiter *limiter = calloc(1, sizeof *limiter);
    if (limiter == NULL) {
        snprintf(err, RL_LIMITER_ERR_SIZE, "out of memory");
        return RL_NO_MEMORY;
    }
    /* 0 means "the default" for every number, so that a zeroed struct works. */
    rl_http_limiter_options *o = &limiter->options;
    o->call_timeout_ms = or_default(options->call_timeout_ms, DEFAULT_CALL_TIMEOUT_MS);
    o->deadline_ms = or_default(options->deadline_ms, DEFAULT_DEADLINE_MS);
    o->backoff_initial_ms = or_default(options->backoff_initial_ms, DEFAULT_BACKOFF_INITIAL_MS);
    o->backoff_max_ms = or_default(options->backoff_max_ms, DEFAULT_BACKOFF_MAX_MS);
    if (o->backoff_max_ms < o->backoff_initial_ms) o->backoff_max_ms = o->backoff_initial_ms;
    o->max_connections = or_default(options->max_connections, DEFAULT_MAX_CONNECTIONS);
    if (o->max_connections > MAX_CONNECTIONS_LIMIT) o->max_connections = MAX_CONNECTIONS_LIMIT;
    rl__http_transport_options transport = {
        .base_url = options->base_url,
        .call_timeout_ms = o->call_timeout_ms,
        .max_connections = o->max_connections,
        .bearer_token = options->bearer_token,
        .ca_file = options->ca_file,
    };
    rl_status status = rl__http_transport_create(&transport, &limiter->transport, err, RL_LIMITER_ERR_SIZE);
    if (status != RL_OK) {
        free(limiter);
        return status;
    }
    limiter->base.ops = &rl__http_limiter_ops;
    *out = &limiter->base;
    return RL_OK;
}

uint64_t rl__http_limiter_connects_total(rl_limiter *limiter) {
    return rl__http_transport_connects_total(((rl__http_limiter *)limiter)->transport);
}

rl__http_verdict rl__http_verdict_of_failure(long http_status, rl_status *status) {
    switch (http_status) {
    case 400:
    case 401: /* no bearer token, or */
    case 403: /* one the daemon does not take: no retry can fix it */
    case 413: /* the body was too large for the daemon: the request's fault */
        *status = RL_INVALID_REQUEST;
        return RL__HTTP_DONE;
    case 502:
    case 504: /* a proxy in between got no answer: the outcome is unknown */
        return RL__HTTP_RETRY;
    default: /* 503 backend_error, 500, a 404 from a wrong base_url: the server answered */
        *status = RL_BACKEND_ERROR;
        return RL__HTTP_DONE;
    }
}

/* xorshift32: jitter needs no quality, only no shared state between threads. */
static uint32_t next_random(uint32_t *state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000u), .tv_nsec = (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

rl_status rl__http_call(rl__http_limiter *limiter, const char *path, const rl_buf *request,
                        uint64_t deadline_mono_ms, rl_buf *response, rl__http_reader read,
                        void *ctx) {
    const rl_http_limiter_options *o = &limiter->options;
    uint64_t backoff_ms = o->backoff_initial_ms;
    struct timespec seed_time;
    clock_gettime(CLOCK_MONOTONIC, &seed_time);
    uint32_t seed = (uint32_t)seed_time.tv_nsec ^ (uint32_t)(uintptr_t)&seed_time;
    if (seed == 0) seed = 1;
    for (;;) {
        long http_status;
        rl__http_outcome outcome =
            rl__http_exchange(limiter->transport, path, request != NULL ? request->data : NULL,
                              request != NULL ? request->len : 0, deadline_mono_ms, response, &http_status);
        if (outcome == RL__HTTP_NO_MEMORY) return rl__last_error_set(RL_NO_MEMORY, "out of memory");
        if (outcome == RL__HTTP_NO_HANDLE) break; /* the deadline passed, waiting or before sending */
        if (outcome == RL__HTTP_ANSWERED) {
            rl_status status = RL_OK;
            if (read(ctx, http_status, response, &status) == RL__HTTP_DONE) {
                if (status != RL_OK) rl__last_error_from_answer(http_status, response->data, response->len);
                return status;
            }
        }
        uint64_t now_ms = rl__http_monotonic_ms();
        if (now_ms >= deadline_mono_ms) break;
        /* "Equal jitter": at least half the backoff, so that retries do
         * back off, and a random rest, so that many clients cut off by the
         * same restart do not come back in lockstep. */
        uint64_t wait_ms = backoff_ms / 2 + next_random(&seed) % (backoff_ms - backoff_ms / 2 + 1);
        if (wait_ms > deadline_mono_ms - now_ms) wait_ms = deadline_mono_ms - now_ms;
        sleep_ms(wait_ms);
        backoff_ms = backoff_ms * 2 < o->backoff_max_ms ? backoff_ms * 2 : o->backoff_max_ms;
    }
    if (request == NULL) /* a GET changes nothing: there is no outcome to be unsure of */
        return rl__last_error_set(RL_TIMEOUT, "no answer from %s within %u ms", path, o->deadline_ms);
    return rl__last_error_set(RL_TIMEOUT,
                              "no answer from %s within %u ms: the outcome is unknown, retry with the same lease id",
                              path, o->deadline_ms);
}
