/* server/http/request_head.h — the raw head of an HTTP/1 request (its
 * request line and header lines, as the client sent them), for what h2o
 * folds away before a handler sees the request.
 *
 * h2o 2.2 keeps only the last Host line of a request, in its authority,
 * and drops the others: a request with "Host: evil.example" then "Host:
 * localhost" looks like one with a loopback Host alone. HTTP/1.1 says a
 * request with more than one Host line is malformed (RFC 9112, 3.2), and a
 * guard that cannot see them cannot refuse it. The request's bytes are
 * still at the start of its connection's input buffer while it is handled
 * (h2o consumes them once the answer is sent), so they are counted there.
 *
 * Pure: bytes in, a count out; no allocation, thread-safe.
 */
#ifndef RL_SERVER_REQUEST_HEAD_H
#define RL_SERVER_REQUEST_HEAD_H

#include <stdbool.h>
#include <stddef.h>

/* How many header lines of the head at bytes[0..len) are named name
 * (name_len bytes, lower case; any case matches), or -1 if the bytes do
 * not start with a request line of method (method_len bytes) and a head
 * that ends (an empty line) within len: then they are not this request's
 * head, and nothing is known. Empty lines before the request line are
 * skipped, as h2o skips them; a line folded onto the previous one (it
 * starts with a space or a tab) names nothing. */
long rl_request_head_field_count(const char *bytes, size_t len, const char *method, size_t method_len,
                                 const char *name, size_t name_len);

#endif
