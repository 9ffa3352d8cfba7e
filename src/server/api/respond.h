/* server/api/respond.h — small JSON pieces the handlers share. Private to src/server.
 * All functions append to a buffer owned by the caller's thread. */
#ifndef RL_SERVER_RESPOND_H
#define RL_SERVER_RESPOND_H

#include "ratelimiter/status.h"
#include "server/api/handler.h"
#include "wire/buf.h"

/* Writes into res a JSON body with one status: the {"error":..} objects of
 * the non-endpoint answers and admin errors, with detail unless it is NULL. */
void rl_respond_error(rl_handler_ctx *ctx, rl_http_response *res, int http_status, rl_status status,
                      const char *status_key, const char *detail);

/* The same with an error string of the HTTP layer's own, not an rl_status
 * (auth.h's "unauthorized", "forbidden"). */
void rl_respond_error_named(rl_handler_ctx *ctx, rl_http_response *res, int http_status, const char *error,
                            const char *detail);

/* The 404 of a request no endpoint answers (no row takes its path, or its
 * endpoint has nothing there): {"error":"invalid_request","detail":"no
 * route for <method> <path>: <why>"}, the method and path as a person reads
 * them (printable ASCII, anything else '?', a long path cut). */
void rl_respond_no_route(rl_handler_ctx *ctx, rl_http_response *res, const rl_http_request *req, const char *why);

/* Appends the JSON string "<wire string>" or "<wire string>:<key>". */
void rl_respond_append_error_string(rl_buf *buf, rl_status status, const char *status_key);

/* Appends ,"detail":"<detail>" (the caller is inside an object). */
void rl_respond_append_detail(rl_buf *buf, const char *detail);

/* Appends a refused reserve or complete, in its endpoint's shape, with the
 * sentence that says why: for a 400, and for an invalid item of a batch. */
void rl_respond_append_invalid_reserve(rl_buf *buf, const char *detail);
void rl_respond_append_invalid_complete(rl_buf *buf, const char *detail);

/* The answer to a body the wire layer refused: 400 {"error":"invalid_request",
 * "detail":..} for RL_INVALID_REQUEST, else (out of memory) 503 backend_error. */
void rl_respond_decode_failure(rl_handler_ctx *ctx, rl_http_response *res, rl_status status,
                               const char *detail);

/* The HTTP status of an admin call's failure: 503 for an unreachable store
 * (retry later), 500 for the rest (a registry or audit file). */
int rl_respond_admin_failure_status(rl_status status);

/* The HTTP status of a single reserve/complete outcome: 200 for results
 * (allowed or denied), 404 unknown key, 400 invalid, 503 backend failure. */
int rl_respond_backend_http_status(rl_status status);

#endif
