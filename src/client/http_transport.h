/* client/http_transport.h — private: POST JSON to ratelimiterd (or GET an
 * admin answer) over a pool of reusable libcurl easy handles.
 *
 * Each easy handle keeps one keep-alive connection, so a pool of handles is
 * a pool of connections: a call borrows the most recently returned handle
 * (its connection is the likeliest to be alive), runs one exchange, and
 * gives it back. At most max_connections handles exist; a call that finds
 * them all busy waits for one until its deadline. Retries and the meaning
 * of HTTP statuses are the limiter's business (http_limiter.c), not this
 * file's: it only says whether a whole answer arrived.
 *
 * Every function is thread-safe except create/destroy; destroy requires
 * that no post is in flight.
 */
#ifndef RL_CLIENT_HTTP_TRANSPORT_H
#define RL_CLIENT_HTTP_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"
#include "wire/buf.h"

/* A bound on an answer's body: the largest real one (256 batch results
 * naming 256-byte keys) is about 100 KB; anything far larger is not our
 * daemon talking. */
#define RL__HTTP_MAX_RESPONSE_BYTES (4u * 1024u * 1024u)
#define RL__HTTP_BASE_URL_MAX_LEN 512
/* The longest path with its query: the audit query's, with a key of 256
 * bytes each percent-encoded, is under 900. */
#define RL__HTTP_PATH_MAX_LEN 1024

typedef struct rl__http_transport rl__http_transport;

typedef enum rl__http_outcome {
    RL__HTTP_ANSWERED,  /* an HTTP status and the whole body arrived */
    RL__HTTP_FAILED,    /* no whole answer: refused, reset, timed out, truncated */
    RL__HTTP_NO_HANDLE, /* every connection stayed busy until the deadline */
    RL__HTTP_NO_MEMORY,
} rl__http_outcome;

#define RL__HTTP_BEARER_TOKEN_MAX_LEN 512

typedef struct rl__http_transport_options {
    const char *base_url; /* a trailing '/' dropped */
    uint32_t call_timeout_ms;
    uint32_t max_connections;
    const char *bearer_token; /* NULL: no Authorization header */
    const char *ca_file;      /* NULL: the system's authorities */
} rl__http_transport_options;

/* The strings are copied. Returns RL_OK, RL_INVALID_REQUEST (a base_url or
 * ca_file too long, a token that is not 1..RL__HTTP_BEARER_TOKEN_MAX_LEN
 * printable characters without spaces), RL_NO_MEMORY or RL_IO_ERROR
 * (libcurl could not start) with err filled. */
rl_status rl__http_transport_create(const rl__http_transport_options *options, rl__http_transport **out, char *err,
                                    size_t err_size);
void rl__http_transport_destroy(rl__http_transport *transport);

/* POSTs body (Content-Type: application/json) to base_url + path, or GETs
 * it when body is NULL; path (its query included) is at most
 * RL__HTTP_PATH_MAX_LEN bytes. The exchange gets call_timeout_ms, cut
 * short to end by deadline_mono_ms (the CLOCK_MONOTONIC time in ms after
 * which the caller gives up). On RL__HTTP_ANSWERED *http_status is set and
 * response holds the body (reset first, NUL-terminated, writable: the
 * decoders work in place). */
rl__http_outcome rl__http_exchange(rl__http_transport *transport, const char *path, const char *body,
                                   size_t body_len, uint64_t deadline_mono_ms, rl_buf *response,
                                   long *http_status);

/* How many TCP connections the pool has opened so far (tests check that
 * keep-alive works). */
uint64_t rl__http_transport_connects_total(rl__http_transport *transport);

/* CLOCK_MONOTONIC in ms: deadlines must not move with the wall clock. */
uint64_t rl__http_monotonic_ms(void);

#endif
