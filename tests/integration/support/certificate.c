/* certificate.c — see certificate.h. */
#include "certificate.h"

#include <stdio.h>
#include <stdlib.h>

bool rl_test_make_certificate(const char *dir, const char *name, char *cert, char *key, size_t size) {
    snprintf(cert, size, "%s/%s.crt", dir, name);
    snprintf(key, size, "%s/%s.key", dir, name);
    char command[1400];
    snprintf(command, sizeof command,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
             "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
             "-keyout '%s' -out '%s' 2>/dev/null",
             key, cert);
    return system(command) == 0;
}
