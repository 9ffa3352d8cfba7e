/* http_tls.c — the listener's TLS context (server.tls.cert_file, key_file;
 * http_internal.h). h2o does the handshake on each accepted connection
 * when the accept context carries it.
 *
 * The files are read by core/regular_file.h, not by OpenSSL's own file
 * loaders: those would open a FIFO and wait there, with the daemon's stop
 * signals blocked. And no pass phrase is ever asked for: OpenSSL's default
 * would prompt on the terminal (where Ctrl-C cannot reach a daemon that
 * blocks SIGINT) or fail with "UI routines::processing error"; an
 * encrypted key is refused with a sentence that says so. */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "core/regular_file.h"
#include "server/http/http_internal.h"

/* A certificate chain or a key is a few KiB. */
#define TLS_FILE_MAX_BYTES (1024u * 1024u)

/* Appends OpenSSL's first queued error to what (and clears the queue). */
static bool fail(char *err, size_t err_size, const char *what, const char *path) {
    unsigned long code = ERR_get_error();
    char why[256] = "unknown error";
    if (code != 0) ERR_error_string_n(code, why, sizeof why);
    ERR_clear_error();
    snprintf(err, err_size, "%s %s: %s", what, path, why);
    return false;
}

/* OpenSSL's pass phrase callback: none is given, and *asked (when userdata
 * is not NULL) says that one was wanted. */
static int refuse_pass_phrase(char *buf, int size, int rwflag, void *userdata) {
    (void)buf, (void)size, (void)rwflag;
    if (userdata != NULL) *(bool *)userdata = true;
    return -1;
}

/* A PEM file read whole: its bytes, and a BIO that reads them. */
typedef struct pem_file {
    char *data;
    size_t len;
    BIO *bio;
} pem_file;

/* Reads path into *pem (setting names it in err). free_pem after, either
 * way. */
static bool read_pem(const char *setting, const char *path, pem_file *pem, char *err, size_t err_size) {
    char why[512];
    *pem = (pem_file){NULL, 0, NULL};
    if (rl__read_whole_file(path, TLS_FILE_MAX_BYTES, &pem->data, &pem->len, NULL, why, sizeof why) != RL_OK) {
        snprintf(err, err_size, "%s: %s", setting, why);
        return false;
    }
    pem->bio = BIO_new_mem_buf(pem->data, (int)pem->len);
    return pem->bio != NULL || fail(err, err_size, "cannot read", path);
}

/* A key's bytes are a secret: not left in freed memory. */
static void free_pem(pem_file *pem) {
    BIO_free(pem->bio);
    if (pem->data != NULL) OPENSSL_cleanse(pem->data, pem->len);
    free(pem->data);
}

/* The leaf certificate, then every certificate after it as the chain, as
 * SSL_CTX_use_certificate_chain_file does with a file. */
static bool use_certificate_chain(SSL_CTX *ctx, BIO *bio) {
    X509 *leaf = PEM_read_bio_X509_AUX(bio, NULL, refuse_pass_phrase, NULL);
    if (leaf == NULL) return false;
    bool ok = SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;
    X509_free(leaf);
    X509 *issuer = NULL;
    while (ok && (issuer = PEM_read_bio_X509(bio, NULL, refuse_pass_phrase, NULL)) != NULL) {
        ok = SSL_CTX_add0_chain_cert(ctx, issuer) == 1; /* takes issuer */
        if (!ok) X509_free(issuer);
    }
    if (!ok) return false;
    /* The chain ends where no more PEM begins: that error is the end. */
    unsigned long last = ERR_peek_last_error();
    if (ERR_GET_LIB(last) != ERR_LIB_PEM || ERR_GET_REASON(last) != PEM_R_NO_START_LINE) return false;
    ERR_clear_error();
    return true;
}

static bool load_certificate(SSL_CTX *ctx, const char *cert, char *err, size_t err_size) {
    pem_file pem;
    bool ok = read_pem("server.tls.cert_file", cert, &pem, err, err_size) &&
              (use_certificate_chain(ctx, pem.bio) || fail(err, err_size, "cannot load server.tls.cert_file", cert));
    free_pem(&pem);
    return ok;
}

static bool load_key(SSL_CTX *ctx, const char *key, const char *cert, char *err, size_t err_size) {
    pem_file pem;
    if (!read_pem("server.tls.key_file", key, &pem, err, err_size)) {
        free_pem(&pem);
        return false;
    }
    bool asked = false;
    EVP_PKEY *pkey = PEM_read_bio_PrivateKey(pem.bio, NULL, refuse_pass_phrase, &asked);
    free_pem(&pem);
    bool ok;
    if (asked) {
        ERR_clear_error();
        snprintf(err, err_size,
                 "server.tls.key_file %s is encrypted, and encrypted keys are not supported: nobody is there to "
                 "give the daemon its pass phrase; write the key out unencrypted, readable by the daemon's user "
                 "alone (openssl pkey -in %s -out <new file>)",
                 key, key);
        ok = false;
    } else {
        ok = pkey != NULL && SSL_CTX_use_PrivateKey(ctx, pkey) == 1
                 ? SSL_CTX_check_private_key(ctx) == 1 ||
                       fail(err, err_size, "server.tls.key_file does not match the certificate of", cert)
                 : fail(err, err_size, "cannot load server.tls.key_file", key);
    }
    EVP_PKEY_free(pkey);
    return ok;
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
    SSL_CTX_set_default_passwd_cb(ctx, refuse_pass_phrase);
    /* TLS 1.0 and 1.1 are broken and every client we know has 1.2. No ALPN
     * is offered: HTTP/1.1 inside TLS, as without it (http_server.c says
     * why not HTTP/2). */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (!load_certificate(ctx, cert, err, err_size) || !load_key(ctx, key, cert, err, err_size)) {
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
