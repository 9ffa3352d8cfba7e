/* fuzz_request_guard.c — any Host and Origin a client may send, into the
 * guard that decides before any handler (server/request_guard.h), and the
 * raw head they make into the count of Host lines (server/request_head.h).
 *
 * Input: one byte of flags (bit 0: the listener is loopback-only, bit 1: the
 * method is OPTIONS, bit 2: a Host is given, bit 3: an Origin is given, bit
 * 4: the Host twice, bit 5: the Origin twice), then the Host's bytes, a
 * '\n', the Origin's bytes. Checked: a head written with those lines counts
 * the Host lines it has (when the Origin holds no newline); two of either
 * header is malformed, whatever they say; the decision says
 * why it refuses, in printable ASCII; whatever passes on a loopback listener
 * names the loopback in Host; an origin passes only if it is one of the
 * allowed ones (case aside) or the page's own on a loopback Host (scheme,
 * then exactly the Host), and only a listed one's answer carries CORS; the
 * origin syntax check accepts only what starts with a scheme and fits.
 */
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "fuzz.h"
#include "server/http/request_guard.h"
#include "server/http/request_head.h"

static const char *const allowed[] = {"https://console.example.com", "http://localhost:3000", "http://[::1]:8081"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    uint8_t flags = data[0];
    const char *rest = (const char *)data + 1;
    size_t rest_len = size - 1;
    const char *newline = memchr(rest, '\n', rest_len);
    size_t host_len = newline != NULL ? (size_t)(newline - rest) : rest_len;
    const char *origin = newline != NULL ? newline + 1 : rest + rest_len;
    size_t origin_len = rest_len - host_len - (newline != NULL ? 1 : 0);
    /* copies, so that the sanitizer sees any read past either */
    char *host = fuzz_copy((const uint8_t *)rest, host_len);
    char *origin_copy = fuzz_copy((const uint8_t *)origin, origin_len);
    rl_request_guard guard = {(flags & 1) != 0, allowed, sizeof allowed / sizeof allowed[0]};
    const char *method = (flags & 2) != 0 ? "OPTIONS" : "POST";
    bool has_host = (flags & 4) != 0, has_origin = (flags & 8) != 0;
    size_t host_count = has_host ? (flags & 16) != 0 ? 2 : 1 : 0;
    size_t origin_count = has_origin ? (flags & 32) != 0 ? 2 : 1 : 0;
    /* The head as a client would send it: the Host lines, then the Origin lines. */
    size_t head_cap = 64 + 2 * (host_len + origin_len + 16);
    char *head = malloc(head_cap);
    if (head == NULL) abort();
    size_t head_len = (size_t)snprintf(head, head_cap, "%s / HTTP/1.1\r\n", method);
    for (size_t i = 0; i < host_count + origin_count; i++) {
        bool is_host = i < host_count;
        const char *name = is_host ? "Host: " : "Origin: ";
        memcpy(head + head_len, name, strlen(name));
        head_len += strlen(name);
        memcpy(head + head_len, is_host ? host : origin_copy, is_host ? host_len : origin_len);
        head_len += is_host ? host_len : origin_len;
        memcpy(head + head_len, "\r\n", 2);
        head_len += 2;
    }
    memcpy(head + head_len, "\r\n", 2);
    head_len += 2;
    long counted = rl_request_head_field_count(head, head_len, method, strlen(method), "host", 4);
    /* An Origin with newlines adds lines of its own (Host lines among
     * them, in each copy): no more Host lines than the head has lines. */
    long lines = 0;
    for (size_t i = 0; i < head_len; i++) lines += head[i] == '\n';
    FUZZ_CHECK(counted >= -1 && counted <= lines);
    if (memchr(origin_copy, '\n', origin_len) == NULL) { /* else the Origin can end the head or add lines */
        FUZZ_CHECK(counted == (long)host_count);
        FUZZ_CHECK(rl_request_head_field_count(head, head_len - 1, method, strlen(method), "host", 4) == -1);
    }
    free(head);
    rl_guard_request request = {
        .method = method,
        .method_len = strlen(method),
        .host = has_host ? host : NULL,
        .host_len = host_len,
        .host_count = host_count,
        .origin = has_origin ? origin_copy : NULL,
        .origin_len = origin_len,
        .origin_count = origin_count,
    };
    rl_guard_decision d;
    memset(&d, 0x5a, sizeof d);
    rl_request_guard_check(&guard, &request, &d);
    FUZZ_CHECK(d.verdict == RL_GUARD_PASS || d.verdict == RL_GUARD_PREFLIGHT || d.verdict == RL_GUARD_REFUSE ||
               d.verdict == RL_GUARD_MALFORMED);
    FUZZ_CHECK_TEXT(d.detail);
    for (const char *c = d.detail; *c != '\0'; c++) FUZZ_CHECK(*c >= ' ' && *c <= '~');
    FUZZ_CHECK((d.verdict == RL_GUARD_MALFORMED) == (host_count > 1 || origin_count > 1));
    if (d.verdict == RL_GUARD_REFUSE || d.verdict == RL_GUARD_MALFORMED) {
        FUZZ_CHECK(d.detail[0] != '\0');
    } else {
        if (guard.loopback_only && has_host) FUZZ_CHECK(rl_request_guard_host_is_loopback(host, host_len));
        bool listed = false;
        for (size_t i = 0; has_origin && i < guard.allowed_origin_count; i++)
            listed = listed || (strlen(allowed[i]) == origin_len && strncasecmp(allowed[i], origin_copy, origin_len) == 0);
        size_t scheme = origin_len >= 7 && strncasecmp(origin_copy, "http://", 7) == 0    ? 7
                        : origin_len >= 8 && strncasecmp(origin_copy, "https://", 8) == 0 ? 8
                                                                                           : 0;
        bool own = has_origin && has_host && scheme > 0 && rl_request_guard_host_is_loopback(host, host_len) &&
                   origin_len - scheme == host_len && strncasecmp(origin_copy + scheme, host, host_len) == 0;
        FUZZ_CHECK(d.cors == (has_origin && listed));
        FUZZ_CHECK(!has_origin || listed || own);
        FUZZ_CHECK((d.verdict == RL_GUARD_PREFLIGHT) == (d.cors && (flags & 2) != 0));
    }
    /* the configuration's check, on the Origin as a C string (up to a NUL) */
    char *text = malloc(origin_len + 1);
    if (text == NULL) abort();
    memcpy(text, origin, origin_len);
    text[origin_len] = '\0';
    char err[256];
    err[0] = '\0';
    if (rl_request_guard_origin_check(text, err, sizeof err)) {
        FUZZ_CHECK(strlen(text) <= RL_ORIGIN_MAX_LEN);
        FUZZ_CHECK(strncasecmp(text, "http://", 7) == 0 || strncasecmp(text, "https://", 8) == 0);
    } else {
        FUZZ_CHECK_TEXT(err);
        FUZZ_CHECK(err[0] != '\0');
    }
    free(text);
    free(host);
    free(origin_copy);
    return 0;
}
