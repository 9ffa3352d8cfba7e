/* fuzz_api.c — any request, down the one road every request takes
 * (server/api/handler.h): the endpoint table, the lease pipeline and the
 * admin endpoints, on a real service (memory backend, a registry file in a
 * temporary directory).
 *
 * Input: one byte that picks the method (bits 0-1: POST, GET, PUT, DELETE)
 * and the path (the rest, modulo 13: the four lease endpoints,
 * /v1/admin/limits, /healthz, /v1/admin/limits/<key>, /v1/admin/audit,
 * /v1/admin/templates, /v1/admin/templates/<pattern>, /v1/admin/denials,
 * /console/<file>, /metrics), then the body; for the paths of a key, a
 * pattern, a file or a query the bytes after the first are the key's, the
 * pattern's or the file's path, or the query string, instead.
 * Checked: every request gets an answer at once (a synchronous backend),
 * in a JSON object (but a console file found), with a status the API
 * knows; a refused body is a 400 that says invalid_request; a 404 says
 * what was not found (a detail); the lease
 * endpoints and a limit's delete answer in their own shape, a template's
 * delete in its; the request's outcome (outcome.h) names a known endpoint
 * and counts each item once; and the daemon is still healthy afterwards.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "server/api/handler.h"
#include "server/api/outcome.h"
#include "server/service.h"

static rl_service *service;
static rl_handler_ctx ctx;
static rl_api_call call;

static void never_later(rl_api_call *c) {
    (void)c;
    FUZZ_CHECK(!"a synchronous backend answered later"); /* the memory backend answers inside the call */
}

static void open_service(void) {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    static char dir[64], path[96];
    snprintf(dir, sizeof dir, "%s/rl_fuzz_api_XXXXXX", base);
    if (mkdtemp(dir) == NULL) abort();
    snprintf(path, sizeof path, "%s/limits.json", dir);
    rl_service_options options = {.backend_name = "memory", .registry_path = path, .max_limits = 64};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &service, err, sizeof err) != RL_OK) {
        fprintf(stderr, "fuzz_api: %s\n", err);
        abort();
    }
    if (!rl_handler_ctx_init(&ctx, service, 8)) abort();
    rl_api_call_init(&call);
    call.done = never_later;
    /* A limit the corpus's leases name. */
    static const char def[] = "{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}";
    rl_http_request put = {"PUT", 3, "/v1/admin/limits", 16, def, sizeof def - 1, NULL, 0};
    rl_http_response res;
    FUZZ_CHECK(rl_api_begin(&ctx, &put, &call, &res) && res.status == 200);
    rl_api_call_end(&call);
}

static bool body_is(const rl_http_response *res, const char *prefix) {
    return res->body->len >= strlen(prefix) && memcmp(res->body->data, prefix, strlen(prefix)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (service == NULL) open_service();
    static const char *const methods[] = {"POST", "GET", "PUT", "DELETE"};
    static const char *const paths[] = {"/v1/reserve",       "/v1/complete",     "/v1/reserve/batch",
                                        "/v1/complete/batch", "/v1/admin/limits", "/healthz",
                                        "/v1/admin/limits/",  "/v1/admin/audit",  "/v1/admin/templates",
                                        "/v1/admin/templates/", "/v1/admin/denials", "/console/", "/metrics"};
    const char *method = methods[data[0] & 3];
    size_t path_index = (size_t)(data[0] >> 2) % (sizeof paths / sizeof paths[0]);
    char *rest = fuzz_copy(data + 1, size - 1);
    char *path = NULL;
    rl_http_request req = {method, strlen(method), paths[path_index], strlen(paths[path_index]), rest, size - 1,
                           NULL, 0};
    if (path_index == 6 || path_index == 9 || path_index == 11) { /* the rest is the key's (pattern's, file's) part */
        const char *prefix = paths[path_index];
        path = malloc(strlen(prefix) + size);
        if (path == NULL) abort();
        memcpy(path, prefix, strlen(prefix));
        memcpy(path + strlen(prefix), rest, size - 1);
        req.path = path;
        req.path_len = strlen(prefix) + size - 1;
        req.body = NULL;
        req.body_len = 0;
    } else if (path_index == 7 || path_index == 10) { /* the rest is the query string */
        req.query = rest;
        req.query_len = size - 1;
        req.body = NULL;
        req.body_len = 0;
    }

    rl_http_response res = {0, NULL, NULL, NULL, NULL, false};
    FUZZ_CHECK(rl_api_begin(&ctx, &req, &call, &res));
    FUZZ_CHECK(res.body != NULL && !res.body->failed && res.body->len >= 2);
    int s = res.status;
    if (res.content_type != NULL) { /* only a console file found is not JSON */
        FUZZ_CHECK(path_index == 11 && s == 200 && strcmp(method, "GET") == 0);
    } else {
        FUZZ_CHECK(res.body->data[0] == '{' && res.body->data[res.body->len - 1] == '}');
        FUZZ_CHECK(memchr(res.body->data, '\0', res.body->len) == NULL);
    }
    FUZZ_CHECK(s == 200 || s == 400 || s == 404 || s == 405 || s == 409 || s == 500 || s == 503);
    FUZZ_CHECK((s == 405) == (res.allow != NULL));
    if (s == 400) FUZZ_CHECK(strstr(res.body->data, "\"invalid_request\"") != NULL);
    if (s == 404) FUZZ_CHECK(strstr(res.body->data, ",\"detail\":\"") != NULL);
    bool post = strcmp(method, "POST") == 0;
    if (post && path_index <= 1 && s != 503) /* a single lease: its own shape */
        FUZZ_CHECK(body_is(&res, path_index == 0 ? "{\"allowed\":" : "{\"ok\":"));
    if (post && (path_index == 2 || path_index == 3) && s == 200) FUZZ_CHECK(body_is(&res, "{\"results\":["));
    if (path_index == 7 && s == 200) FUZZ_CHECK(body_is(&res, "{\"entries\":["));
    if (path_index == 6 && strcmp(method, "DELETE") == 0 && s == 200) FUZZ_CHECK(body_is(&res, "{\"ok\":true}"));
    if (path_index == 6 && strcmp(method, "DELETE") == 0 && s == 404)
        FUZZ_CHECK(body_is(&res, "{\"ok\":false,\"error\":\"unknown_limit_key:"));
    if (path_index == 9 && strcmp(method, "DELETE") == 0 && s == 200) FUZZ_CHECK(body_is(&res, "{\"ok\":true}"));
    if (path_index == 9 && strcmp(method, "DELETE") == 0 && s == 404)
        FUZZ_CHECK(body_is(&res, "{\"ok\":false,\"error\":\"invalid_request\",\"detail\":\"no template has"));
    if (path_index == 8 && strcmp(method, "GET") == 0) FUZZ_CHECK(s == 200 && body_is(&res, "{\"templates\":["));
    if (path_index == 10 && s == 200) FUZZ_CHECK(body_is(&res, "{\"denials\":["));
    rl_api_outcome outcome;
    rl_api_outcome_of(&call, &req, &res, &outcome);
    FUZZ_CHECK(outcome.endpoint < RL_API_ENDPOINT_COUNT && outcome.http_status == s);
    uint32_t counted = 0;
    for (int r = 0; r < RL_API_RESULT_COUNT; r++) counted += outcome.results[r];
    FUZZ_CHECK(counted == outcome.items && (outcome.items > 0) == (path_index <= 3 && post && s != 405));
    rl_api_call_end(&call);
    rl_handler_ctx_trim(&ctx);

    rl_http_request health = {"GET", 3, "/healthz", 8, NULL, 0, NULL, 0};
    FUZZ_CHECK(rl_api_begin(&ctx, &health, &call, &res) && res.status == 200);
    rl_api_call_end(&call);
    free(path);
    free(rest);
    return 0;
}
