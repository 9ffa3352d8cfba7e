/* server/api/admin_change.h — private to src/server/api: what every admin
 * change (a PUT or DELETE of a limit, of a template) does the same way.
 *
 * A change is decoded and checked on the request's loop (a bad one is
 * answered 400 at once), then handed to the admin writer (admin_writer.h:
 * answered once durable, off the loops) or, without one, done here. Its
 * answer is {"ok":true,...} or {"ok":false,"error":..,"detail":..}.
 *
 * Threading: every function runs on the request's thread (the ctx's).
 */
#ifndef RL_SERVER_ADMIN_CHANGE_H
#define RL_SERVER_ADMIN_CHANGE_H

#include <stdbool.h>

#include "server/api/endpoints.h"

/* Writes {"ok":false,"error":<status's string, naming key if not NULL>}
 * with detail (if not NULL) as res's answer, HTTP http_status. */
void rl__admin_change_refused(rl_handler_ctx *ctx, rl_http_response *res, int http_status, rl_status status,
                              const char *key, const char *detail);

/* A failure that is the store's or a file's: the client learns only
 * backend_error (503 when the store cannot be reached, else 500); the
 * operator gets "<what> "<key>" failed: <why>" on stderr. */
void rl__admin_change_failed(rl_handler_ctx *ctx, rl_http_response *res, const char *what,
                             const rl_service_put *put);

/* {"ok":true} as res's answer. */
void rl__admin_change_ok(rl_handler_ctx *ctx, rl_http_response *res);

/* Hands call->admin_put (its change, or its puts when job.puts is set: a
 * preset's, done whole; filled and checked) to the admin writer when the
 * context has one (false: the writer answers later, through the route's
 * finish), else does it now and calls route->finish (true). */
bool rl__admin_change_submit(rl_handler_ctx *ctx, const rl_api_route *route, rl_api_call *call,
                             rl_http_response *res);

/* The key of a path "<row's prefix><key>": the rest after the prefix,
 * percent-decoded into key (RL_KEY_MAX_LEN + 1 bytes); false if it is not
 * a valid key (a template's pattern is one too). */
bool rl__admin_path_key(const rl_api_route *route, const rl_http_request *req, char *key);

#endif
