/* last_error.c — a thread-local sentence, like errno with words (see
 * last_error.h and rl_limiter_last_error in limiter.h). */
#include "client/last_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ratelimiter/limiter.h"

static _Thread_local char last_error[RL_LIMITER_ERR_SIZE];

const char *rl_limiter_last_error(void) { return last_error; }

void rl__last_error_clear(void) { last_error[0] = '\0'; }

rl_status rl__last_error_set(rl_status status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

void rl__last_error_from_answer(long http_status, const char *body, size_t body_len) {
    /* A failure path: parsing the small error body with cJSON is fine here. */
    cJSON *root = body != NULL ? cJSON_ParseWithLength(body, body_len) : NULL;
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *detail = cJSON_GetObjectItemCaseSensitive(root, "detail");
    const char *error_text = cJSON_IsString(error) ? error->valuestring : "no JSON error in the answer";
    if (cJSON_IsString(detail))
        rl__last_error_set(RL_OK, "HTTP %ld %s: %s", http_status, error_text, detail->valuestring);
    else
        rl__last_error_set(RL_OK, "HTTP %ld %s", http_status, error_text);
    cJSON_Delete(root);
}

/* Here rather than inline in limiter.h: a limiter without the op (the
 * batcher) must say so in rl_limiter_last_error, not leave an old sentence. */
rl_status rl_limiter_audit(rl_limiter *l, const rl_audit_query *query, rl_audit_page *page) {
    if (l->ops->audit == NULL)
        return rl__last_error_set(RL_INVALID_REQUEST, "the %s limiter keeps no audit log: ask a local or an http limiter",
                                  l->ops->name);
    return l->ops->audit(l, query, page);
}
