/* limiter.c — rlctl's commands that go through the library's http limiter
 * (reserve, complete, audit: the same code path as an application's, with
 * its validation and its retries) open it and report its failures here. */
#include <stdio.h>

#include "cli/cli.h"

rl_status rlctl_open_limiter(const rlctl_global *global, rl_limiter **out) {
    rl_http_limiter_options options;
    rl_http_limiter_options_default(&options);
    options.base_url = global->url;
    options.call_timeout_ms = global->timeout_ms;
    options.deadline_ms = global->timeout_ms;
    options.max_connections = 1;
    options.bearer_token = global->token;
    options.ca_file = global->cacert;
    char err[RL_LIMITER_ERR_SIZE] = "";
    rl_status status = rl_limiter_http_open(&options, out, err);
    if (status != RL_OK) fprintf(stderr, "rlctl: cannot use %s: %s\n", global->url, err[0] ? err : rl_status_name(status));
    return status;
}

int rlctl_call_failed(const char *what, rl_status status) {
    const char *why = rl_limiter_last_error();
    fprintf(stderr, "rlctl: %s: %s\n", what, why[0] ? why : rl_status_name(status));
    return status == RL_INVALID_REQUEST ? RLCTL_EXIT_REJECTED : RLCTL_EXIT_UNAVAILABLE;
}
