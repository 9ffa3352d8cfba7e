/* request_guard.c — see request_guard.h. */
#include "server/http/request_guard.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LOCALHOST "localhost"

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* A character of a host name or an IPv4 address. */
static bool is_name_char(char c) { return (lower(c) >= 'a' && lower(c) <= 'z') || is_digit(c) || c == '-' || c == '.'; }

static bool same_ignoring_case(const char *a, size_t a_len, const char *b, size_t b_len) {
    if (a_len != b_len) return false;
    for (size_t i = 0; i < a_len; i++)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

/* ":port" after a host, or nothing: 1..5 digits. */
static bool port_ok(const char *text, size_t len) {
    if (len == 0) return true;
    if (text[0] != ':' || len < 2 || len > 6) return false;
    for (size_t i = 1; i < len; i++)
        if (!is_digit(text[i])) return false;
    return true;
}

/* A copy of text[0..len) with a NUL, for inet_pton; false if it does not fit. */
static bool copy_text(const char *text, size_t len, char *out, size_t out_size) {
    if (len >= out_size) return false;
    memcpy(out, text, len);
    out[len] = '\0';
    return true;
}

static bool is_ipv6_loopback(const char *text, size_t len) {
    char copy[INET6_ADDRSTRLEN];
    struct in6_addr address;
    return copy_text(text, len, copy, sizeof copy) && inet_pton(AF_INET6, copy, &address) == 1 &&
           memcmp(&address, &in6addr_loopback, sizeof address) == 0;
}

static bool is_ipv4_loopback(const char *text, size_t len) {
    char copy[INET_ADDRSTRLEN];
    struct in_addr address;
    return copy_text(text, len, copy, sizeof copy) && inet_pton(AF_INET, copy, &address) == 1 &&
           (ntohl(address.s_addr) >> 24) == 127u;
}

/* localhost and the names under it (RFC 6761: they resolve to loopback,
 * browsers do that themselves), with one trailing dot or none. */
static bool is_localhost_name(const char *name, size_t len) {
    if (len > 0 && name[len - 1] == '.') len--;
    size_t suffix = sizeof LOCALHOST - 1;
    if (len < suffix || !same_ignoring_case(name + len - suffix, suffix, LOCALHOST, suffix)) return false;
    if (len == suffix) return true;
    if (name[len - suffix - 1] != '.' || len == suffix + 1) return false;
    for (size_t i = 0; i < len - suffix; i++) /* the labels and the dot before "localhost" */
        if (!is_name_char(name[i]) || (name[i] == '.' && (i == 0 || name[i - 1] == '.'))) return false;
    return true;
}

bool rl_request_guard_host_is_loopback(const char *host, size_t host_len) {
    if (host_len == 0) return false;
    if (host[0] == '[') {
        const char *close = memchr(host, ']', host_len);
        if (close == NULL) return false;
        size_t inside = (size_t)(close - host) - 1;
        return is_ipv6_loopback(host + 1, inside) && port_ok(close + 1, host_len - inside - 2);
    }
    const char *colon = memchr(host, ':', host_len);
    size_t name_len = colon != NULL ? (size_t)(colon - host) : host_len;
    if (!port_ok(host + name_len, host_len - name_len)) return false;
    return is_localhost_name(host, name_len) || is_ipv4_loopback(host, name_len);
}

/* The scheme's length ("http://" or "https://", any case), or 0. */
static size_t scheme_len(const char *text, size_t len) {
    if (len >= 7 && same_ignoring_case(text, 7, "http://", 7)) return 7;
    if (len >= 8 && same_ignoring_case(text, 8, "https://", 8)) return 8;
    return 0;
}

bool rl_request_guard_origin_check(const char *text, char *err, size_t err_size) {
    size_t len = strlen(text);
    if (len > RL_ORIGIN_MAX_LEN) {
        snprintf(err, err_size, "an origin is at most %d bytes", RL_ORIGIN_MAX_LEN);
        return false;
    }
    size_t at = scheme_len(text, len);
    if (at == 0) {
        snprintf(err, err_size, "\"%.80s\" is not an origin: it must start with http:// or https://", text);
        return false;
    }
    const char *host = text + at;
    size_t rest = len - at, host_len;
    if (rest > 0 && host[0] == '[') {
        const char *close = memchr(host, ']', rest);
        host_len = close != NULL ? (size_t)(close - host) + 1 : 0;
        char copy[INET6_ADDRSTRLEN];
        struct in6_addr address;
        if (host_len == 0 || !copy_text(host + 1, host_len - 2, copy, sizeof copy) ||
            inet_pton(AF_INET6, copy, &address) != 1)
            host_len = 0;
    } else {
        host_len = 0;
        while (host_len < rest && is_name_char(host[host_len])) host_len++;
    }
    if (host_len == 0 || !port_ok(host + host_len, rest - host_len)) {
        snprintf(err, err_size,
                 "\"%.80s\" is not an origin: scheme://host[:port] as a browser sends it, nothing after "
                 "(no path, no trailing slash)",
                 text);
        return false;
    }
    return true;
}

/* text as printable ASCII for a detail (a header may hold any byte), at most
 * max bytes of it, "…" marked by "..." when cut. */
static void printable(const char *text, size_t len, char *out, size_t max) {
    size_t n = len < max ? len : max;
    for (size_t i = 0; i < n; i++) out[i] = text[i] >= ' ' && text[i] <= '~' && text[i] != '"' ? text[i] : '?';
    out[n] = '\0';
    if (len > max) strcpy(out + n, "...");
}

static bool origin_allowed(const rl_request_guard *guard, const char *origin, size_t origin_len) {
    for (size_t i = 0; i < guard->allowed_origin_count; i++) {
        const char *allowed = guard->allowed_origins[i];
        if (same_ignoring_case(origin, origin_len, allowed, strlen(allowed))) return true;
    }
    return false;
}

/* origin is "http://" or "https://" then exactly host (case aside): the
 * page making the request was itself loaded from this host and port. */
static bool is_own_origin(const char *origin, size_t origin_len, const char *host, size_t host_len) {
    size_t at = scheme_len(origin, origin_len);
    return at > 0 && same_ignoring_case(origin + at, origin_len - at, host, host_len);
}

#define SHOWN_MAX 120 /* bytes of a header shown in a detail */

/* A refusal whose detail shows the offending header's value in format's %s. */
static void refuse(rl_guard_decision *out, const char *format, const char *value, size_t len) {
    char shown[SHOWN_MAX + 4];
    printable(value, len, shown, SHOWN_MAX);
    snprintf(out->detail, sizeof out->detail, format, shown);
    out->verdict = RL_GUARD_REFUSE;
}

/* More than one of a header that must be one: which one counts would be a guess. */
static bool repeated(rl_guard_decision *out, const char *header, size_t count) {
    if (count <= 1) return false;
    snprintf(out->detail, sizeof out->detail,
             "the request has %zu %s headers and may have one: which of them to go by would be a guess", count,
             header);
    out->verdict = RL_GUARD_MALFORMED;
    return true;
}

void rl_request_guard_check(const rl_request_guard *guard, const rl_guard_request *request, rl_guard_decision *out) {
    out->verdict = RL_GUARD_PASS;
    out->cors = false;
    out->detail[0] = '\0';
    if (repeated(out, "Host", request->host_count) || repeated(out, "Origin", request->origin_count)) return;
    const char *method = request->method, *host = request->host, *origin = request->origin;
    size_t method_len = request->method_len, host_len = request->host_len, origin_len = request->origin_len;
    if (guard->loopback_only && host != NULL && !rl_request_guard_host_is_loopback(host, host_len)) {
        refuse(out,
               "Host \"%s\" is not a loopback name or address, and this daemon listens on loopback only: "
               "refused, so that a web page cannot reach it by rebinding a name of its own to 127.0.0.1",
               host, host_len);
        return;
    }
    if (origin == NULL) return; /* not a browser: curl, the client library, rlctl */
    bool listed = origin_allowed(guard, origin, origin_len);
    /* The daemon's own page (the console) names the Host it was loaded from;
     * a loopback Host cannot be a rebound name, so that page is ours. */
    if (!listed && host != NULL && rl_request_guard_host_is_loopback(host, host_len) &&
        is_own_origin(origin, origin_len, host, host_len))
        return;
    if (!listed) {
        refuse(out,
               "Origin \"%s\" is not in server.allowed_origins: a request from a web page is refused unless the "
               "page's origin is listed there",
               origin, origin_len);
        return;
    }
    out->cors = true;
    if (same_ignoring_case(method, method_len, "OPTIONS", 7)) out->verdict = RL_GUARD_PREFLIGHT;
}
