/* server/http/request_guard.h — which requests a browser may have sent for a page
 * that is not ours, refused before any handler runs.
 *
 * v1 has no authentication: whoever reaches the port may reserve and define
 * limits. Two roads would let a web page the operator happens to have open
 * do it too:
 *   - Origin: a page may POST to any address; with Content-Type text/plain
 *     no CORS preflight is needed, so the browser sends it as it is, with an
 *     Origin header naming the page's site. Programs that are not browsers
 *     (curl, the client library, rlctl) send no Origin. So a request with an
 *     Origin is refused unless that origin is one of server.allowed_origins
 *     (none by default), and for those the CORS answers are given (a
 *     preflight is answered here; other answers carry
 *     Access-Control-Allow-Origin). The one origin passed unlisted is the
 *     daemon's own page (its console) on a loopback Host: an Origin that is
 *     http:// or https:// and then exactly the request's Host, a loopback
 *     name (no CORS headers: the page is same-origin).
 *   - DNS rebinding: a page on evil.example whose name is made to resolve to
 *     127.0.0.1 is "same-origin" with the daemon, so the browser sends no
 *     Origin on a simple request, but it still names evil.example in Host.
 *     A daemon that listens on loopback only can be reached by name only as
 *     localhost, *.localhost or a loopback address: any other Host is
 *     refused. (On other interfaces the names are the operator's to choose,
 *     and the Origin check is what remains.)
 * Refusals are 403 invalid_request with a detail that says which rule.
 * Before either rule, a request with more than one Host or more than one
 * Origin is malformed (RFC 9112 for Host; a browser sends one Origin), and
 * which of them to judge would be a guess: 400 invalid_request.
 *
 * Pure: strings in, a decision out; no allocation, thread-safe. The guard's
 * origins are borrowed and must outlive it.
 */
#ifndef RL_SERVER_REQUEST_GUARD_H
#define RL_SERVER_REQUEST_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* "scheme://host[:port]" as browsers send it. */
#define RL_ORIGIN_MAX_LEN 253
#define RL_REQUEST_GUARD_DETAIL_SIZE 384

typedef struct rl_request_guard {
    bool loopback_only;                  /* the listener is bound to a loopback address */
    const char *const *allowed_origins;  /* checked with rl_request_guard_origin_check */
    size_t allowed_origin_count;
} rl_request_guard;

typedef enum rl_guard_verdict {
    RL_GUARD_PASS,      /* handle it; with cors, the answer carries Access-Control-Allow-Origin */
    RL_GUARD_PREFLIGHT, /* an allowed origin's OPTIONS: answer 204 with the CORS headers */
    RL_GUARD_REFUSE,    /* answer 403 invalid_request with detail */
    RL_GUARD_MALFORMED, /* answer 400 invalid_request with detail */
} rl_guard_verdict;

/* What the guard reads of one request. Strings need no NUL; lengths are in
 * bytes. */
typedef struct rl_guard_request {
    const char *method;
    size_t method_len;
    const char *host; /* its Host (HTTP/1.1) or :authority (HTTP/2); NULL when it has none */
    size_t host_len;
    size_t host_count; /* how many Host lines it had (h2o keeps the last: request_head.h) */
    const char *origin; /* its Origin header, the first; NULL when it has none */
    size_t origin_len;
    size_t origin_count; /* how many Origin headers it had */
} rl_guard_request;

typedef struct rl_guard_decision {
    rl_guard_verdict verdict;
    bool cors; /* the request's Origin is allowed: echo it in the CORS headers */
    char detail[RL_REQUEST_GUARD_DETAIL_SIZE];
} rl_guard_decision;

/* Decides one request. */
void rl_request_guard_check(const rl_request_guard *guard, const rl_guard_request *request, rl_guard_decision *out);

/* Whether text is an origin the configuration may list: http or https, a
 * host (a name, an IPv4 address or a bracketed IPv6 one) and an optional
 * port 1..65535, nothing after (no path, no trailing slash). False with a
 * sentence in err (err_size bytes) otherwise. */
bool rl_request_guard_origin_check(const char *text, char *err, size_t err_size);

/* Whether host (a Host header's value: a name or address, optional :port)
 * names this machine's loopback: localhost, a name under .localhost, an
 * address in 127.0.0.0/8, or [::1]. */
bool rl_request_guard_host_is_loopback(const char *host, size_t host_len);

#endif
