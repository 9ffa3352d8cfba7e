/* test_handlers_console.c — GET /v1/admin/denials and the console's files
 * without sockets: a real service (registry in a temp dir + memory backend)
 * behind the api's road, a denied reserve's outcome through the observer
 * into the ring, and the endpoint's exact answer; the files built in, with
 * their media types; a context without a ring answers an empty list; GET /
 * sends a browser on to the console. Over HTTP and in a browser:
 * tests/integration/test_console.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/api/console_files.h"
#include "server/api/handler.h"
#include "server/observe/observe.h"
#include "server/service.h"

typedef struct fixture {
    char dir[64];
    char path[96];
    rl_service *service;
    rl_handler_ctx ctx;
    rl_observe watchers;
    rl_http_response res;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_handlers_console_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    FILE *file = fopen(f->path, "w");
    assert_non_null(file);
    fputs("[{\"key\":\"g:tpm\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60}]\n", file);
    fclose(file);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, 8));
    f->watchers.denials = rl_denial_ring_create(1);
    f->ctx.denials = f->watchers.denials;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    rl_denial_ring_destroy(f->watchers.denials);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

static rl_http_request request_of(const char *method, const char *target, const char *body) {
    const char *query = strchr(target, '?');
    rl_http_request req = {method, strlen(method), target, query != NULL ? (size_t)(query - target) : strlen(target),
                           body,   body != NULL ? strlen(body) : 0,
                           query != NULL ? query + 1 : NULL, query != NULL ? strlen(query + 1) : 0};
    return req;
}

static const char *handle(fixture *f, const char *method, const char *target, const char *body) {
    rl_http_request req = request_of(method, target, body);
    rl_handle_request(&f->ctx, &req, &f->res);
    rl__buf_append(f->res.body, "", 1); /* NUL-terminate for the checks */
    return f->res.body->data;
}

/* A request down the daemon's road, answered at once (memory backend), its
 * outcome given to the observer as a loop would. */
static void observed(fixture *f, const char *method, const char *target, const char *body) {
    rl_http_request req = request_of(method, target, body);
    rl_api_call call;
    rl_api_call_init(&call);
    assert_true(rl_api_begin(&f->ctx, &req, &call, &f->res));
    rl_api_outcome outcome;
    rl_api_outcome_of(&call, &req, &f->res, &outcome);
    rl_observe_answered(&f->watchers, 0, &outcome, 5);
    rl_api_call_end(&call);
    rl_api_call_free(&call);
}

static void test_denials_from_the_road(void **state) {
    fixture *f = *state;
    assert_string_equal(handle(f, "GET", "/v1/admin/denials", NULL), "{\"denials\":[],\"kept\":1024,\"noted_total\":0}");
    observed(f, "POST", "/v1/reserve",
             "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2A\",\"requirements\":[{\"key\":\"g:tpm\",\"amount\":8}]}");
    observed(f, "POST", "/v1/reserve",
             "{\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2B\",\"job_id\":\"j\\\"7\",\"requirements\":[{\"key\":\"g:tpm\","
             "\"amount\":5}]}");
    observed(f, "GET", "/v1/admin/limits", NULL); /* not a reserve: nothing noted */
    const char *body = handle(f, "GET", "/v1/admin/denials", NULL);
    assert_int_equal(f->res.status, 200);
    assert_null(f->res.content_type);
    /* The time is the wall clock: cut it out, check the rest exactly. */
    const char *after_time = strstr(body, ",\"lease_id\"");
    assert_non_null(after_time);
    assert_int_equal(strncmp(body, "{\"denials\":[{\"at_unix_ms\":17", 28), 0);
    const char *expected =
        ",\"lease_id\":\"01JD5Z8Q6X4W8N1V0M9R7T3K2B\",\"job_id\":\"j\\\"7\",\"endpoint\":\"reserve\",\"retry_after_ms\":";
    assert_int_equal(strncmp(after_time, expected, strlen(expected)), 0);
    const char *denied_by = strstr(body, ",\"items\":1,\"denied_items\":1,\"dry_run\":false,\"denied_by\":{\"key\":"
                                         "\"g:tpm\",\"reason\":\"capacity\",\"requested\":5,\"available\":2,"
                                         "\"capacity\":10}}]");
    assert_non_null(denied_by);
    assert_non_null(strstr(body, "],\"kept\":1024,\"noted_total\":1}"));
    /* A filter that matches nothing, and a bad query. */
    assert_string_equal(handle(f, "GET", "/v1/admin/denials?key=other", NULL),
                        "{\"denials\":[],\"kept\":1024,\"noted_total\":1}");
    handle(f, "GET", "/v1/admin/denials?limit=x", NULL);
    assert_int_equal(f->res.status, 400);
    /* A context without a ring (a tool's): an empty list. */
    f->ctx.denials = NULL;
    assert_string_equal(handle(f, "GET", "/v1/admin/denials?limit=5", NULL),
                        "{\"denials\":[],\"kept\":0,\"noted_total\":0}");
    f->ctx.denials = f->watchers.denials;
}

static void test_console_files(void **state) {
    fixture *f = *state;
    assert_true(rl_console_file_count >= 3);
    const char *index = NULL;
    for (size_t i = 0; i < rl_console_file_count; i++)
        if (strcmp(rl_console_files[i].name, "index.html") == 0) index = rl_console_files[i].data;
    assert_non_null(index);
    const char *paths[] = {"/console", "/console/", "/console/index.html"};
    for (size_t i = 0; i < 3; i++) {
        const char *body = handle(f, "GET", paths[i], NULL);
        assert_int_equal(f->res.status, 200);
        assert_string_equal(f->res.content_type, "text/html; charset=utf-8");
        assert_true(f->res.browser_page);
        assert_string_equal(body, index);
    }
    handle(f, "GET", "/console/console.js", NULL);
    assert_string_equal(f->res.content_type, "text/javascript; charset=utf-8");
    handle(f, "GET", "/console/console.css", NULL);
    assert_string_equal(f->res.content_type, "text/css; charset=utf-8");
    /* Not a file: a JSON 404 that says so, with no page headers; the API's
     * answers neither. */
    const char *missing[] = {"/console/nothing", "/console/index.html/", "/console//index.html",
                             "/console/../healthz"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        char expected[256];
        snprintf(expected, sizeof expected,
                 "{\"error\":\"invalid_request\",\"detail\":\"no route for GET %s: the console has no file of "
                 "that name (its page is /console)\"}",
                 missing[i]);
        assert_string_equal(handle(f, "GET", missing[i], NULL), expected);
        assert_int_equal(f->res.status, 404);
        assert_null(f->res.content_type);
        assert_false(f->res.browser_page);
    }
    /* Not the console's path at all: any unknown path's 404. */
    assert_string_equal(handle(f, "GET", "/consolex", NULL),
                        "{\"error\":\"invalid_request\",\"detail\":\"no route for GET /consolex: the API is "
                        "under /v1/ (see /console)\"}");
    assert_int_equal(f->res.status, 404);
    assert_false(f->res.browser_page);
    handle(f, "GET", "/healthz", NULL);
    assert_false(f->res.browser_page);
    handle(f, "PUT", "/console/console.js", "");
    assert_int_equal(f->res.status, 405);
    assert_string_equal(f->res.allow, "GET");
}

/* The daemon's address opened in a browser: a redirect to the page, a body
 * that says where it is for whoever reads it (curl), no page headers. */
static void test_root_redirects_to_the_console(void **state) {
    fixture *f = *state;
    const char *methods[] = {"GET", "HEAD"};
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(handle(f, methods[i], "/", NULL), "{\"detail\":\"the web console is at /console\"}");
        assert_int_equal(f->res.status, 302);
        assert_string_equal(f->res.location, "/console");
        assert_null(f->res.content_type);
        assert_false(f->res.browser_page);
    }
    /* Only the root: no other answer has a Location. */
    handle(f, "GET", "/console", NULL);
    assert_null(f->res.location);
    handle(f, "GET", "//", NULL);
    assert_int_equal(f->res.status, 404);
    assert_null(f->res.location);
    handle(f, "POST", "/", "");
    assert_int_equal(f->res.status, 405);
    assert_string_equal(f->res.allow, "GET");
    assert_null(f->res.location);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_denials_from_the_road, setup, teardown),
        cmocka_unit_test_setup_teardown(test_console_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_redirects_to_the_console, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
