/* cli/cli.h — rlctl's parts: options, exit codes, the admin HTTP calls and
 * the commands. tools/rlctl.c is the thin main that picks a command.
 *
 * Every command writes its result on stdout and what went wrong on stderr,
 * and returns one of the exit codes below (documented in `rlctl --help`).
 */
#ifndef RL_CLI_H
#define RL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/limiter.h"

#define RLCTL_EXIT_OK 0          /* done; reserve: allowed */
#define RLCTL_EXIT_DENIED 1      /* reserve: not allowed (retry later, new lease id) */
#define RLCTL_EXIT_USAGE 2       /* bad command line or input file */
#define RLCTL_EXIT_REJECTED 3    /* the server said invalid_request, not found, unknown key, a conflict */
#define RLCTL_EXIT_UNAVAILABLE 4 /* unreachable, timeout, backend error */

#define RLCTL_DEFAULT_URL "http://127.0.0.1:8080"
#define RLCTL_DEFAULT_TIMEOUT_MS 5000u

#define RLCTL_TOKEN_MAX_LEN 512

typedef struct rlctl_global {
    const char *url;     /* base URL, no trailing path */
    uint32_t timeout_ms; /* whole command deadline for one HTTP exchange (and its retries) */
    const char *token;   /* sent as "Authorization: Bearer <token>", or NULL */
    const char *cacert;  /* PEM authorities for an https:// URL, or NULL: the system's */
} rlctl_global;

/* A command: argv[0] is its name; getopt state is reset by the caller. */
typedef int (*rlctl_command_fn)(const rlctl_global *global, int argc, char **argv);

int rlctl_cmd_list(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_get(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_put(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_delete(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_templates(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_health(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_reserve(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_complete(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_audit(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_presets(const rlctl_global *global, int argc, char **argv);
int rlctl_cmd_preset(const rlctl_global *global, int argc, char **argv);

/* ---- admin HTTP (libcurl, one exchange) ---- */

typedef struct rlctl_response {
    long status;     /* HTTP status, 0 if the exchange failed */
    /* NUL-terminated, malloc'd ("" if none); free with rlctl_response_free.
     * Without the newline a JSON answer ends with. */
    char *body;
    size_t body_len;
    char error[256]; /* curl's message when status is 0 */
} rlctl_response;

/* Sends method url+path (body may be NULL) and fills *out. Returns out->status. */
long rlctl_http(const rlctl_global *global, const char *method, const char *path, const char *body,
                rlctl_response *out);
void rlctl_response_free(rlctl_response *response);

/* The exit code for a response that was not a 200, after saying on stderr
 * what went wrong (what: "GET /v1/admin/limits"), with the server's "error"
 * and "detail" when the body has them. */
int rlctl_report_failure(const char *what, const rlctl_response *response);

/* ---- the library's http limiter (limiter.c), for reserve, complete, audit ---- */

/* Opens the http limiter on global's URL, one connection, the command's
 * deadline for every call; says why on stderr when it cannot. */
rl_status rlctl_open_limiter(const rlctl_global *global, rl_limiter **out);

/* The exit code of a limiter call that got no result (status), said on
 * stderr in the library's words (rl_limiter_last_error: the server's
 * detail, or the deadline that passed) after what ("reserve <lease id>"). */
int rlctl_call_failed(const char *what, rl_status status);

/* Says "rlctl: <fmt with arg>" and the command's usage on stderr; returns
 * RLCTL_EXIT_USAGE. */
int rlctl_usage_error(const char *usage, const char *fmt, const char *arg);

/* ---- parsing helpers (pure) ---- */

/* Parses a decimal integer 0..max with nothing after it. */
bool rlctl_parse_u64(const char *text, uint64_t max, uint64_t *out);

/* Splits "KEY=AMOUNT" at its last '=': key copied into key (NUL-terminated,
 * up to key_size-1 bytes), amount min..max. False (and err says why) if the
 * form, the key or the amount is wrong. */
bool rlctl_parse_key_amount(const char *text, uint64_t min, char *key, size_t key_size, uint64_t *amount,
                            char *err, size_t err_size);

/* The token of a tokens file (the daemon's format: the first line that is
 * not empty or a '#' comment, spaces around it dropped) into out (out_size
 * bytes, RLCTL_TOKEN_MAX_LEN + 1 is enough). False with err (naming path)
 * if the file cannot be read, holds no token, or its token has a space or
 * a control character or is too long. */
bool rlctl_read_token_file(const char *path, char *out, size_t out_size, char *err, size_t err_size);

/* Whether token[0..len) can be sent as it is: 1..RLCTL_TOKEN_MAX_LEN
 * printable ASCII characters, no space. */
bool rlctl_token_is_valid(const char *token, size_t len);

/* The same rules on text itself (a file's contents, NUL-terminated). */
bool rlctl_first_token(const char *text, char *out, size_t out_size, const char **why);

/* Percent-encodes a key for a URL path (every byte but unreserved and ':'). */
void rlctl_path_escape(const char *key, char *out, size_t out_size);

#endif
