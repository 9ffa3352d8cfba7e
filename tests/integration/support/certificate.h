/* support/certificate.h — a certificate and its key for a test's HTTPS
 * daemon, made when the test runs by `openssl req` (no private key is kept
 * in the tree). Blocks on openssl; any thread.
 */
#ifndef RL_TEST_CERTIFICATE_H
#define RL_TEST_CERTIFICATE_H

#include <stdbool.h>
#include <stddef.h>

/* A self-signed P-256 certificate for localhost and 127.0.0.1, valid a day:
 * dir/name.crt and dir/name.key, their paths in cert and key (size bytes
 * each). False if openssl failed. */
bool rl_test_make_certificate(const char *dir, const char *name, char *cert, char *key, size_t size);

#endif
