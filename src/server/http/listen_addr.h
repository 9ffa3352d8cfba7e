/* server/http/listen_addr.h — "HOST:PORT" as written in config.yaml and --listen.
 *
 * Accepted forms: "127.0.0.1:8080", "localhost:8080", "[::1]:8080", and
 * ":8080" (every interface, as config.yaml's listen may say). Port 0 asks the kernel for a
 * free port (tests use it). Pure functions, thread-safe.
 */
#ifndef RL_SERVER_LISTEN_ADDR_H
#define RL_SERVER_LISTEN_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RL_LISTEN_HOST_MAX_LEN 253 /* a DNS name at most */

typedef struct rl_listen_addr {
    char host[RL_LISTEN_HOST_MAX_LEN + 1]; /* "" for every interface; no brackets */
    uint16_t port;
} rl_listen_addr;

/* Parses text into *out. Returns false with a sentence in err (err_size
 * bytes) if text is not one of the accepted forms; *out is then unspecified. */
bool rl_listen_addr_parse(const char *text, rl_listen_addr *out, char *err, size_t err_size);

#endif
