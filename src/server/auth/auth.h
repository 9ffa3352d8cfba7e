/* server/auth/auth.h — who may call what: the bearer tokens of
 * admin.tokens_file and data.tokens_file, checked before any route is
 * looked up (http_request.c), and their reload on SIGHUP.
 *
 * Which token a path needs (its raw path, as the router sees it, so that
 * no spelling of a path reaches a handler without its check):
 *   /v1/admin and everything under it (limits, templates, presets, audit,
 *   denials): an admin token, when admin.tokens_file is set;
 *   /v1/reserve..., /v1/complete... (single and batch): a data token or an
 *   admin token, when data.tokens_file is set;
 *   /metrics: any token of either file, when metrics.require_token is true;
 *   everything else (/healthz, the console's files, unknown paths): none.
 * A setting left out leaves its paths as open as v1 was.
 *
 * Answers: no usable "Authorization: Bearer <token>" header, 401
 * {"error":"unauthorized"}; a token that is not one of the tokens the path
 * takes, 403 {"error":"forbidden"}; each with a detail that names the
 * setting, never the token.
 *
 * Threading: create and destroy on the controlling thread; check from any
 * thread (the event loops) at any time, also during a reload (a
 * read-write lock held only to compare digests); reload from one thread at
 * a time (the daemon's signal loop).
 */
#ifndef RL_SERVER_AUTH_H
#define RL_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "server/auth/token_set.h"

typedef struct rl_auth rl_auth;

typedef struct rl_auth_options {
    const char *admin_tokens_file; /* NULL or "": the admin API is open */
    const char *data_tokens_file;  /* NULL or "": reserve and complete are open */
    bool metrics_require_token;    /* needs one of the files set */
} rl_auth_options;

/* What a path needs. */
typedef enum rl_auth_scope {
    RL_AUTH_SCOPE_OPEN,
    RL_AUTH_SCOPE_ADMIN,
    RL_AUTH_SCOPE_DATA,
    RL_AUTH_SCOPE_METRICS,
} rl_auth_scope;

typedef enum rl_auth_verdict {
    RL_AUTH_PASS,
    RL_AUTH_UNAUTHORIZED, /* 401 unauthorized */
    RL_AUTH_FORBIDDEN,    /* 403 forbidden */
} rl_auth_verdict;

typedef struct rl_auth_decision {
    rl_auth_verdict verdict;
    const char *detail; /* static; NULL on RL_AUTH_PASS */
} rl_auth_decision;

/* The wire strings of the two refusals (docs/api.md). */
#define RL_AUTH_ERROR_UNAUTHORIZED "unauthorized"
#define RL_AUTH_ERROR_FORBIDDEN "forbidden"
/* The WWW-Authenticate header of a 401 (RFC 6750). */
#define RL_AUTH_CHALLENGE "Bearer realm=\"ratelimiterd\""

/* Reads the tokens files. False with err ("<file>:<line>: <what>") if one
 * cannot be read or is not a tokens file, or if metrics_require_token is
 * set without a file; then *out is NULL. Owned by the caller. Blocks on the
 * disk. */
bool rl_auth_create(const rl_auth_options *options, rl_auth **out, char *err, size_t err_size);

/* Whether any path needs a token. */
bool rl_auth_enabled(const rl_auth *auth);
/* Whether admin.tokens_file / data.tokens_file is set. */
bool rl_auth_guards_admin(const rl_auth *auth);
bool rl_auth_guards_data(const rl_auth *auth);

/* Reads both files again (SIGHUP). A file that now fails keeps its old
 * tokens; each outcome is written on log (a line per file: how many tokens,
 * or why the old ones stay). Returns whether every file was taken. Blocks
 * on the disk: never on an event loop. */
bool rl_auth_reload(rl_auth *auth, FILE *log);

/* The scope of a raw path (without its query). Pure. */
rl_auth_scope rl_auth_scope_of(const char *path, size_t path_len);

/* Decides one request: its raw path and its Authorization header (NULL when
 * it has none). auth NULL: everything passes. Thread-safe. */
void rl_auth_check(const rl_auth *auth, const char *path, size_t path_len, const char *authorization,
                   size_t authorization_len, rl_auth_decision *out);

/* The token of an Authorization header's value: "Bearer" (any case), one
 * or more spaces, the token, nothing after but spaces. False when it is
 * another scheme or holds no token. Pure. */
bool rl_auth_bearer_token(const char *value, size_t len, const char **token, size_t *token_len);

void rl_auth_destroy(rl_auth *auth);

#endif
