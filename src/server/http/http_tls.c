/* http_tls.c — the listener's TLS context (server.tls.cert_file, key_file;
 * http_internal.h). h2o does the handshake on each accepted connection
 * when the accept context carries it. */
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/http/http_internal.h"

/* Appends OpenSSL's first queued error to what (and clears the queue). */
static bool fail(char *err, size_t err_size, const char *what, const char *path) {
    unsigned long code = ERR_get_error();
    char why[256] = "unknown error";
    if (code != 0) ERR_error_string_n(code, why, sizeof why);
    ERR_clear_error();
    snprintf(err, err_size, "%s %s: %s", what, path, why);
    return false;
}

bool rl__http_tls_open(rl_http_server *server, char *err, size_t err_size) {
    const char *cert = server->options.tls_cert_file, *key = server->options.tls_key_file;
    if (cert == NULL && key == NULL) return true;
    if (cert == NULL || key == NULL) {
        snprintf(err, err_size, "server.tls needs both cert_file and key_file");
        return false;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) return fail(err, err_size, "cannot make a TLS context for", cert);
    /* TLS 1.0 and 1.1 are broken and every client we know has 1.2. No ALPN
     * is offered: HTTP/1.1 inside TLS, as without it (http_server.c says
     * why not HTTP/2). */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    bool ok = SSL_CTX_use_certificate_chain_file(ctx, cert) == 1
                  ? SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1
                        ? SSL_CTX_check_private_key(ctx) == 1 ||
                              fail(err, err_size, "server.tls.key_file does not match the certificate of", cert)
                        : fail(err, err_size, "cannot load server.tls.key_file", key)
                  : fail(err, err_size, "cannot load server.tls.cert_file", cert);
    if (!ok) {
        SSL_CTX_free(ctx);
        return false;
    }
    server->ssl_ctx = ctx;
    return true;
}

void rl__http_tls_close(rl_http_server *server) {
    SSL_CTX_free(server->ssl_ctx);
    server->ssl_ctx = NULL;
}
