/* listen_addr.c — parsing "HOST:PORT" (see listen_addr.h). */
#include "server/http/listen_addr.h"

#include <stdio.h>
#include <string.h>

static bool fail(char *err, size_t err_size, const char *text, const char *why) {
    if (err != NULL && err_size > 0)
        snprintf(err, err_size, "listen address \"%.80s\" %s", text, why);
    return false;
}

/* Digits only, 0..65535: strtoul would accept signs, spaces and hex. */
static bool parse_port(const char *text, uint16_t *out) {
    size_t len = strlen(text);
    if (len == 0 || len > 5) return false;
    uint32_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return false;
        value = value * 10u + (uint32_t)(text[i] - '0');
    }
    if (value > 65535u) return false;
    *out = (uint16_t)value;
    return true;
}

static bool host_chars_ok(const char *host, size_t len, bool ipv6) {
    for (size_t i = 0; i < len; i++) {
        char c = host[i];
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '.' || c == '-' || (ipv6 && (c == ':' || c == '%'));
        if (!ok) return false;
    }
    return true;
}

bool rl_listen_addr_parse(const char *text, rl_listen_addr *out, char *err, size_t err_size) {
    if (text == NULL) return fail(err, err_size, "", "is missing");
    const char *host = text;
    size_t host_len;
    const char *port_text;
    bool ipv6 = false;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':')
            return fail(err, err_size, text, "must be [IPV6]:PORT");
        host = text + 1;
        host_len = (size_t)(close - host);
        port_text = close + 2;
        ipv6 = true;
        if (host_len == 0) return fail(err, err_size, text, "has an empty IPv6 address");
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL) return fail(err, err_size, text, "must be HOST:PORT or :PORT");
        if (memchr(text, ':', (size_t)(colon - text)) != NULL)
            return fail(err, err_size, text, "has an IPv6 address: write it as [ADDR]:PORT");
        host_len = (size_t)(colon - text);
        port_text = colon + 1;
    }
    if (host_len > RL_LISTEN_HOST_MAX_LEN) return fail(err, err_size, text, "has a host name too long");
    if (!host_chars_ok(host, host_len, ipv6)) return fail(err, err_size, text, "has an invalid host");
    if (!parse_port(port_text, &out->port))
        return fail(err, err_size, text, "needs a port 0..65535 after the last ':'");
    memcpy(out->host, host, host_len);
    out->host[host_len] = '\0';
    return true;
}
