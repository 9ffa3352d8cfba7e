/* support/http_client.h — a small HTTP client for the integration tests.
 *
 * One client = one curl easy handle, reused so that requests ride one
 * keep-alive connection, as real clients of the daemon do. A client belongs
 * to one thread; give each thread its own. Call rl_test_http_global_init once
 * from the main thread before any client exists.
 */
#ifndef RL_TEST_HTTP_CLIENT_H
#define RL_TEST_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rl_test_response {
    long status;             /* HTTP status, or 0 if the transfer failed (or a JSON answer had no final newline) */
    char *body;              /* NUL-terminated, malloc'd; "" when empty; a JSON answer's without its final newline */
    size_t body_len;
    char content_type[128];  /* "" if none */
    char error[256];         /* curl's message when status is 0 */
} rl_test_response;

typedef struct rl_test_client {
    void *curl; /* CURL * */
    char base_url[64];
    const char *bearer_token; /* sent as "Authorization: Bearer <it>", or NULL (init: NULL) */
    const char *ca_file;      /* set by rl_test_client_use_https */
} rl_test_client;

void rl_test_http_global_init(void);

/* A client for http://127.0.0.1:port. Returns false if curl cannot start. */
bool rl_test_client_init(rl_test_client *client, uint16_t port);
void rl_test_client_cleanup(rl_test_client *client);

/* From now on https://localhost:port, the daemon's certificate checked
 * against ca_file (borrowed: it must outlive the client). */
void rl_test_client_use_https(rl_test_client *client, const char *ca_file);

/* Sends method path with body (NULL: none) and fills *out (free it with
 * rl_test_response_free). Returns out->status. Times out after 10 s. */
long rl_test_client_request(rl_test_client *client, const char *method, const char *path,
                            const char *body, rl_test_response *out);

void rl_test_response_free(rl_test_response *response);

/* Sends raw bytes on a new connection and collects everything the server
 * writes until it closes or timeout_ms passes, into out (NUL-terminated,
 * truncated to out_size). For what curl will not send (a lying
 * Content-Length). Returns the bytes read, or -1 if it cannot connect. */
long rl_test_raw_exchange(uint16_t port, const char *request, size_t request_len, int timeout_ms,
                          char *out, size_t out_size);

#endif
