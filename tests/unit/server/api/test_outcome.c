/* test_outcome.c — what an answered request was (outcome.h), read off its
 * call through the one road (begin/finish, then the outcome, then end) on
 * a real memory-backed service: endpoints, each item's result, the lease
 * and job ids, the limit that refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/memory.h"
#include "server/api/handler.h"
#include "server/api/outcome.h"
#include "server/service.h"
#include "support/memory_service.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    rl_service *service;
    rl_handler_ctx ctx;
    rl_api_call call;
    rl_api_outcome outcome;
    /* The outcome's borrowed strings, kept past the call's end (their
     * memory is the call's decoded body, freed by rl_api_call_end). */
    char kept[4][RL_JOB_ID_MAX_LEN + 1];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->service = rl_test_memory_service_open("rl_test_outcome", f->dir, f->path);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, 64));
    rl_api_call_init(&f->call);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_api_call_free(&f->call);
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    char command[160];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    assert_int_equal(system(command), 0);
    free(f);
    return 0;
}

/* One request on the calling thread (the memory backend answers inside
 * the call), its outcome read before the call ends (the ids it borrows
 * copied into the fixture); returns the status. */
static int request(fixture *f, const char *method, const char *path, const char *body) {
    rl_http_request req = {method, strlen(method), path, strlen(path), body, body != NULL ? strlen(body) : 0,
                           NULL, 0};
    rl_http_response res = {0, NULL, NULL, NULL, NULL, false};
    f->call.done = NULL; /* the memory backend answers inside begin */
    assert_true(rl_api_begin(&f->ctx, &req, &f->call, &res));
    rl_api_outcome_of(&f->call, &req, &res, &f->outcome);
    const char **borrowed[4] = {&f->outcome.lease_id, &f->outcome.job_id, &f->outcome.first_denied_lease_id,
                                &f->outcome.first_denied_job_id};
    for (int i = 0; i < 4; i++) {
        if (*borrowed[i] == NULL) continue;
        snprintf(f->kept[i], sizeof f->kept[i], "%s", *borrowed[i]);
        *borrowed[i] = f->kept[i];
    }
    rl_api_call_end(&f->call);
    return res.status;
}

#define ID1 "01JD5Z8Q6X4W8N1V0M9R7T3K2A"
#define ID2 "01JD5Z8Q6X4W8N1V0M9R7T3K2B"
#define ID3 "01JD5Z8Q6X4W8N1V0M9R7T3K2C"

static void define(fixture *f) {
    assert_int_equal(request(f, "PUT", "/v1/admin/limits",
                             "{\"key\":\"t:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60}"),
                     200);
}

static void a_reserve_allowed_then_denied_names_the_limit(void **state) {
    fixture *f = *state;
    define(f);
    assert_int_equal(f->outcome.endpoint, RL_API_ADMIN_LIMITS);
    assert_int_equal(f->outcome.items, 0);
    assert_int_equal(request(f, "POST", "/v1/reserve",
                             "{\"lease_id\":\"" ID1 "\",\"job_id\":\"job-7\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":2}]}"),
                     200);
    assert_int_equal(f->outcome.endpoint, RL_API_RESERVE);
    assert_int_equal(f->outcome.http_status, 200);
    assert_int_equal(f->outcome.items, 1);
    assert_int_equal(f->outcome.first_result, RL_API_RESULT_ALLOWED);
    assert_string_equal(f->outcome.lease_id, ID1);
    assert_string_equal(f->outcome.job_id, "job-7");
    assert_string_equal(f->outcome.denied_by_key, "");
    assert_int_equal(request(f, "POST", "/v1/reserve",
                             "{\"lease_id\":\"" ID2 "\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":1}]}"),
                     200);
    assert_int_equal(f->outcome.first_result, RL_API_RESULT_DENIED_CAPACITY);
    assert_string_equal(f->outcome.denied_by_key, "t:rpm");
    assert_int_equal(f->outcome.denied_by.reason, RL_DENIAL_CAPACITY);
    assert_int_equal(f->outcome.denied_by.capacity, 2);
    assert_int_equal(f->outcome.denied_by.requested, 1);
    assert_string_equal(f->outcome.first_denied_lease_id, ID2);
    assert_true(f->outcome.first_denied_retry_after_ms > 0);
    assert_string_equal(rl_api_result_name(f->outcome.first_result), "denied_capacity");
    assert_string_equal(rl_api_endpoint_name(f->outcome.endpoint), "reserve");
    /* more than the capacity: never fits */
    assert_int_equal(request(f, "POST", "/v1/reserve",
                             "{\"lease_id\":\"" ID3 "\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":3}]}"),
                     200);
    assert_int_equal(f->outcome.first_result, RL_API_RESULT_DENIED_EXCEEDS_CAPACITY);
}

static void a_batch_counts_every_item(void **state) {
    fixture *f = *state;
    define(f);
    assert_int_equal(request(f, "POST", "/v1/reserve/batch",
                             "{\"requests\":["
                             "{\"lease_id\":\"" ID1 "\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":1}]},"
                             "{\"lease_id\":\"nope\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":1}]},"
                             "{\"lease_id\":\"" ID2 "\",\"requirements\":[{\"key\":\"t:other\",\"amount\":1}]},"
                             "{\"lease_id\":\"" ID3 "\",\"requirements\":[{\"key\":\"t:rpm\",\"amount\":2}],\"dry_run\":true}"
                             "]}"),
                     200);
    assert_int_equal(f->outcome.endpoint, RL_API_RESERVE_BATCH);
    assert_int_equal(f->outcome.items, 4);
    assert_int_equal(f->outcome.results[RL_API_RESULT_ALLOWED], 1);
    assert_int_equal(f->outcome.results[RL_API_RESULT_INVALID], 1);
    assert_int_equal(f->outcome.results[RL_API_RESULT_UNKNOWN_KEY], 1);
    assert_int_equal(f->outcome.results[RL_API_RESULT_DENIED_CAPACITY], 1);
    assert_true(f->outcome.dry_run);
    assert_string_equal(f->outcome.denied_by_key, "t:rpm");
    assert_string_equal(f->outcome.first_denied_lease_id, ID3);
    assert_int_equal(request(f, "POST", "/v1/complete/batch",
                             "{\"requests\":[{\"lease_id\":\"" ID1 "\",\"actuals\":[]},{\"lease_id\":\"x\",\"actuals\":[]}]}"),
                     200);
    assert_int_equal(f->outcome.endpoint, RL_API_COMPLETE_BATCH);
    assert_int_equal(f->outcome.items, 2);
    assert_int_equal(f->outcome.results[RL_API_RESULT_COMPLETED], 1);
    assert_int_equal(f->outcome.results[RL_API_RESULT_INVALID], 1);
}

static void refused_bodies_and_other_paths(void **state) {
    fixture *f = *state;
    assert_int_equal(request(f, "POST", "/v1/reserve", "{not json"), 400);
    assert_int_equal(f->outcome.endpoint, RL_API_RESERVE);
    assert_int_equal(f->outcome.items, 1);
    assert_int_equal(f->outcome.first_result, RL_API_RESULT_INVALID);
    assert_null(f->outcome.lease_id);
    assert_int_equal(request(f, "POST", "/v1/complete", "{\"lease_id\":\"" ID1 "\",\"actuals\":[]}"), 200);
    assert_int_equal(f->outcome.endpoint, RL_API_COMPLETE);
    assert_int_equal(f->outcome.first_result, RL_API_RESULT_COMPLETED);
    assert_string_equal(f->outcome.lease_id, ID1);
    assert_int_equal(request(f, "GET", "/healthz", NULL), 200);
    assert_int_equal(f->outcome.endpoint, RL_API_HEALTHZ);
    assert_int_equal(f->outcome.items, 0);
    assert_int_equal(request(f, "GET", "/nowhere", NULL), 404);
    assert_int_equal(f->outcome.endpoint, RL_API_UNROUTED);
    /* a refusal before the road (no call): the endpoint from the path */
    rl_http_request req = {"GET", 3, "/v1/admin/audit", 15, NULL, 0, NULL, 0};
    rl_buf body;
    rl__buf_init(&body);
    rl_http_response res = {403, NULL, NULL, &body, NULL, false};
    rl_api_outcome_of(NULL, &req, &res, &f->outcome);
    assert_int_equal(f->outcome.endpoint, RL_API_ADMIN_AUDIT);
    assert_int_equal(f->outcome.http_status, 403);
    rl__buf_free(&body);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_reserve_allowed_then_denied_names_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(a_batch_counts_every_item, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_bodies_and_other_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
