/* test_api_call.c — the one road of a request (handler.h: begin, done,
 * finish, end) when the answer does not come inside the call: a backend
 * with async ops that answers later from its own thread, one that answers
 * from another thread before its op returns, and one that answers inline;
 * admin puts through a real admin writer; a call reused for requests of
 * every endpoint. The backend is the real memory backend behind async ops
 * of this file's making. */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/memory.h"
#include "server/api/admin_writer.h"
#include "server/api/handler.h"
#include "server/service.h"
#include "support/lease_ids.h"

#define MAX_BATCH 4096

/* ---- a memory backend whose async ops answer in one of three ways ---------- */

typedef enum answer_mode {
    ANSWER_LATER,         /* from a thread of its own, once the test posts `release` */
    ANSWER_BEFORE_RETURN, /* from a thread of its own, joined before the op returns */
    ANSWER_INLINE,        /* on the caller's thread, inside the op */
} answer_mode;

typedef struct async_backend {
    rl_backend base;
    rl_backend *inner; /* the memory backend */
    answer_mode mode;
    sem_t release;
    size_t last_count; /* items of the last async call */
} async_backend;

typedef struct async_job {
    async_backend *backend;
    bool reserve;
    const void *requests;
    size_t count;
    void *results;
    void (*done)(void *context);
    void *context;
    bool wait;
} async_job;

static void *run_job(void *arg) {
    async_job *job = arg;
    if (job->wait) sem_wait(&job->backend->release);
    if (job->reserve)
        rl_backend_reserve_batch(job->backend->inner, job->requests, job->count, job->results);
    else
        rl_backend_complete_batch(job->backend->inner, job->requests, job->count, job->results);
    void (*done)(void *) = job->done;
    void *context = job->context;
    free(job);
    done(context);
    return NULL;
}

static void start_job(async_backend *b, bool reserve, const void *requests, size_t count, void *results,
                      void (*done)(void *), void *context) {
    b->last_count = count;
    async_job *job = malloc(sizeof *job);
    assert_non_null(job);
    *job = (async_job){b, reserve, requests, count, results, done, context, b->mode == ANSWER_LATER};
    if (b->mode == ANSWER_INLINE) {
        run_job(job);
        return;
    }
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, run_job, job), 0);
    if (b->mode == ANSWER_BEFORE_RETURN)
        pthread_join(thread, NULL);
    else
        pthread_detach(thread);
}

static async_backend *as_async(rl_backend *b) { return (async_backend *)b; }

static rl_status fwd_apply(rl_backend *b, const rl_limit_def *def, rl_limit_status *out) {
    return rl_backend_apply_definition(as_async(b)->inner, def, out);
}
static void fwd_reserve(rl_backend *b, const rl_reserve_request *r, size_t n, rl_reserve_result *out) {
    rl_backend_reserve_batch(as_async(b)->inner, r, n, out);
}
static void fwd_complete(rl_backend *b, const rl_complete_request *r, size_t n, rl_status *out) {
    rl_backend_complete_batch(as_async(b)->inner, r, n, out);
}
static rl_status fwd_usage(rl_backend *b, const char *key, rl_limit_usage *out) {
    return rl_backend_limit_usage(as_async(b)->inner, key, out);
}
static void fwd_sweep(rl_backend *b) { rl_backend_sweep(as_async(b)->inner); }
static void async_destroy(rl_backend *b) {
    async_backend *ab = as_async(b);
    rl_backend_destroy(ab->inner);
    sem_destroy(&ab->release);
    free(ab);
}
static void async_reserve(rl_backend *b, const rl_reserve_request *r, size_t n, rl_reserve_result *out,
                          void (*done)(void *), void *context) {
    start_job(as_async(b), true, r, n, out, done, context);
}
static void async_complete(rl_backend *b, const rl_complete_request *r, size_t n, rl_status *out,
                           void (*done)(void *), void *context) {
    start_job(as_async(b), false, r, n, out, done, context);
}

static const rl_backend_ops async_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "memory",
    .apply_definition = fwd_apply,
    .reserve_batch = fwd_reserve,
    .complete_batch = fwd_complete,
    .limit_usage = fwd_usage,
    .sweep = fwd_sweep,
    .destroy = async_destroy,
    .reserve_batch_async = async_reserve,
    .complete_batch_async = async_complete,
};

/* ---- fixture --------------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    char path[128];
    rl_service *service;
    async_backend *backend;
    rl_handler_ctx ctx;
    rl_http_response res;
    /* The test's own `done`: counts, and wakes the waiter. */
    rl_api_call call;
    pthread_mutex_t mutex;
    pthread_cond_t answered;
    int done_calls;
} fixture;

static fixture *the_fixture; /* for the done callback */

static void test_done(rl_api_call *call) {
    (void)call;
    fixture *f = the_fixture;
    pthread_mutex_lock(&f->mutex);
    f->done_calls++;
    pthread_cond_signal(&f->answered);
    pthread_mutex_unlock(&f->mutex);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_api_call_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    f->backend = calloc(1, sizeof *f->backend);
    f->backend->base.ops = &async_ops;
    sem_init(&f->backend->release, 0, 0);
    rl_memory_options memory;
    rl_memory_options_default(&memory);
    memory.sweep_interval_ms = 0;
    assert_int_equal(rl_memory_backend_create(&memory, &f->backend->inner), RL_OK);
    rl_service_options options = {.backend_name = "ignored", .registry_path = f->path,
                                  .backend = &f->backend->base};
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
    assert_true(rl_handler_ctx_init(&f->ctx, f->service, MAX_BATCH));
    rl_api_call_init(&f->call);
    f->call.done = test_done;
    pthread_mutex_init(&f->mutex, NULL);
    pthread_cond_init(&f->answered, NULL);
    the_fixture = f;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_api_call_free(&f->call);
    rl_handler_ctx_free(&f->ctx);
    rl_service_close(f->service);
    pthread_cond_destroy(&f->answered);
    pthread_mutex_destroy(&f->mutex);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static rl_http_request request(const char *method, const char *path, const char *body) {
    rl_http_request req = {method, strlen(method), path, strlen(path), body, body != NULL ? strlen(body) : 0, NULL, 0};
    return req;
}

static int done_calls(fixture *f) {
    pthread_mutex_lock(&f->mutex);
    int n = f->done_calls;
    pthread_mutex_unlock(&f->mutex);
    return n;
}

static void wait_done(fixture *f, int calls) {
    pthread_mutex_lock(&f->mutex);
    while (f->done_calls < calls) pthread_cond_wait(&f->answered, &f->mutex);
    pthread_mutex_unlock(&f->mutex);
}

/* The whole road with f->call, as the event loop drives it; returns whether
 * begin answered at once. The answer is in f->res. */
static bool drive(fixture *f, const char *method, const char *path, const char *body) {
    rl_http_request req = request(method, path, body);
    memset(&f->res, 0, sizeof f->res);
    int before = done_calls(f);
    bool now = rl_api_begin(&f->ctx, &req, &f->call, &f->res);
    if (!now) {
        if (f->backend->mode == ANSWER_LATER) sem_post(&f->backend->release);
        wait_done(f, before + 1);
        rl_api_finish(&f->ctx, &f->call, &f->res);
    }
    rl_api_call_end(&f->call);
    /* done is called exactly when the answer was not given at once. */
    assert_int_equal(done_calls(f), before + (now ? 0 : 1));
    assert_non_null(f->res.body);
    return now;
}

static const char *body(fixture *f) { return f->res.body->data; }

static void put_limit(fixture *f, const char *key, unsigned capacity) {
    char json[256];
    snprintf(json, sizeof json, "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%u,\"window_seconds\":60}", key,
             capacity);
    assert_true(drive(f, "PUT", "/v1/admin/limits", json)); /* no admin writer: done here */
    assert_int_equal(f->res.status, 200);
}

static const char *reserve_body(char *out, size_t size, uint64_t n, const char *key, unsigned amount) {
    char id[27];
    snprintf(out, size, "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%u}]}",
             rl_test_lease_id(n, id), key, amount);
    return out;
}

/* ---- tests --------------------------------------------------------------------- */

static void test_answer_later(void **state) {
    fixture *f = *state;
    put_limit(f, "k", 1);
    f->backend->mode = ANSWER_LATER;
    char text[256];
    rl_http_request req = request("POST", "/v1/reserve", reserve_body(text, sizeof text, 1, "k", 1));
    memset(&f->res, 0, sizeof f->res);
    assert_false(rl_api_begin(&f->ctx, &req, &f->call, &f->res));
    assert_null(f->res.body); /* nothing answered yet */
    assert_int_equal(done_calls(f), 0);
    sem_post(&f->backend->release);
    wait_done(f, 1);
    rl_api_finish(&f->ctx, &f->call, &f->res);
    assert_int_equal(f->res.status, 200);
    assert_non_null(strstr(body(f), "{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":"));
    rl_api_call_end(&f->call);

    /* The capacity is gone: the next answer, also given later, is a denial. */
    assert_false(drive(f, "POST", "/v1/reserve", reserve_body(text, sizeof text, 2, "k", 1)));
    assert_int_equal(f->res.status, 200);
    assert_non_null(strstr(body(f), "{\"allowed\":false,"));
    /* An unknown key's result names it: the key lives in the decoded body,
     * which must still be there when the answer is encoded. */
    assert_false(drive(f, "POST", "/v1/reserve", reserve_body(text, sizeof text, 3, "nope:key", 1)));
    assert_int_equal(f->res.status, 404);
    assert_string_equal(body(f), "{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                                 "\"error\":\"unknown_limit_key:nope:key\",\"detail\":\"no limit has the key "
                                 "nope:key: define it (PUT /v1/admin/limits, or a template that matches it) and "
                                 "retry; nothing was reserved\"}");
}

/* The backend answers before its op returns: begin answers at once, and the
 * caller's done is never called, whichever thread the answer came from. */
static void test_answer_before_return(void **state) {
    fixture *f = *state;
    put_limit(f, "k", 100);
    const answer_mode modes[] = {ANSWER_BEFORE_RETURN, ANSWER_INLINE};
    char text[256];
    for (size_t m = 0; m < 2; m++) {
        f->backend->mode = modes[m];
        for (uint64_t n = 1; n <= 20; n++) {
            assert_true(drive(f, "POST", "/v1/reserve", reserve_body(text, sizeof text, m * 100 + n, "k", 1)));
            assert_int_equal(f->res.status, 200);
            assert_non_null(strstr(body(f), "{\"allowed\":true,"));
        }
    }
    assert_int_equal(done_calls(f), 0);
}

/* Refused bodies never reach the backend and are answered at once, in
 * every mode. */
static void test_refused_at_once(void **state) {
    fixture *f = *state;
    f->backend->mode = ANSWER_LATER;
    assert_true(drive(f, "POST", "/v1/reserve", "{"));
    assert_int_equal(f->res.status, 400);
    assert_non_null(strstr(body(f), "\"error\":\"invalid_request\",\"detail\":"));
    assert_true(drive(f, "POST", "/v1/complete/batch", "{\"requests\":[]}"));
    assert_int_equal(f->res.status, 400);
    /* A batch of invalid items only: answered item by item, no backend call. */
    assert_true(drive(f, "POST", "/v1/reserve/batch", "{\"requests\":[{\"lease_id\":\"x\"}]}"));
    assert_int_equal(f->res.status, 200);
    assert_non_null(strstr(body(f), "{\"results\":[{\"allowed\":false,\"retry_after_ms\":0,"
                                    "\"reserved_at_unix_ms\":0,\"error\":\"invalid_request\",\"detail\":"));
    assert_true(drive(f, "GET", "/healthz", NULL));
    assert_int_equal(f->res.status, 200);
    assert_true(drive(f, "GET", "/nope", NULL));
    assert_int_equal(f->res.status, 404);
}

/* A batch with invalid items between valid ones: the backend gets only the
 * valid ones, packed, and each answer lands in its item's place. */
static void test_batch_packed(void **state) {
    fixture *f = *state;
    put_limit(f, "k", 2);
    char a[27], b[27], c[27], text[1024];
    snprintf(text, sizeof text,
             "{\"requests\":[{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k\",\"amount\":2}]},"
             "{\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"k\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k\",\"amount\":1}]},"
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k\",\"amount\":0}]}]}",
             rl_test_lease_id(1, a), rl_test_lease_id(2, b), rl_test_lease_id(3, c));
    const answer_mode modes[] = {ANSWER_LATER, ANSWER_INLINE};
    for (size_t m = 0; m < 2; m++) {
        f->backend->mode = modes[m];
        drive(f, "POST", "/v1/reserve/batch", text);
        assert_int_equal(f->res.status, 200);
        assert_int_equal(f->backend->last_count, 2);
        const char *results = body(f);
        /* allowed, invalid, denied (a plain denial: error ""), invalid */
        const char *first = strstr(results, "{\"results\":[{\"allowed\":true,");
        assert_non_null(first);
        const char *second = strstr(first, "\"error\":\"invalid_request\"");
        assert_non_null(second);
        const char *third = strstr(second, "{\"allowed\":false,");
        assert_non_null(third);
        const char *fourth = strstr(third, "\"error\":\"\",\"denied_by\":{\"key\":\"k\",\"reason\":\"capacity\","
                                           "\"requested\":1,\"available\":0,\"capacity\":2}},{\"allowed\":false,");
        assert_non_null(fourth);
        assert_non_null(strstr(fourth, "\"error\":\"invalid_request\""));
    }
    /* Complete both: a complete batch through the same call and arrays. */
    snprintf(text, sizeof text,
             "{\"requests\":[{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":1}]},"
             "{\"lease_id\":\"%s\",\"actuals\":[]}]}",
             rl_test_lease_id(1, a), rl_test_lease_id(2, b));
    f->backend->mode = ANSWER_LATER;
    assert_false(drive(f, "POST", "/v1/complete/batch", text));
    assert_string_equal(body(f), "{\"results\":[{\"ok\":true,\"error\":\"\"},{\"ok\":true,\"error\":\"\"}]}");
}

/* A batch bigger than a call keeps: its arrays go at the end of it. */
static void test_big_batch_not_kept(void **state) {
    fixture *f = *state;
    put_limit(f, "k", 1000000);
    size_t count = 3000, size = count * 100 + 64;
    char *text = malloc(size), id[27];
    size_t len = (size_t)snprintf(text, size, "{\"requests\":[");
    for (size_t i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, size - len,
                                "%s{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k\",\"amount\":1}]}",
                                i > 0 ? "," : "", rl_test_lease_id(i + 1, id));
    snprintf(text + len, size - len, "]}");
    f->backend->mode = ANSWER_INLINE;
    assert_true(drive(f, "POST", "/v1/reserve/batch", text));
    assert_int_equal(f->res.status, 200);
    assert_int_equal(f->backend->last_count, count);
    assert_null(f->call.lease.kept_results);
    free(text);
    /* A small batch keeps its arrays for the next request. */
    char one[200], small[256];
    snprintf(small, sizeof small, "{\"requests\":[%s]}", reserve_body(one, sizeof one, 9999, "k", 1));
    assert_true(drive(f, "POST", "/v1/reserve/batch", small));
    assert_non_null(f->call.lease.kept_results);
}

/* Admin puts through a real writer: answered once durable, given later or
 * (when the writer was quicker than the start's return) at once; done is
 * called exactly for the former (drive checks). */
static void test_admin_put_through_writer(void **state) {
    fixture *f = *state;
    rl_admin_writer *writer = rl_admin_writer_start(rl_admin_writer_put_limits, f->service);
    assert_non_null(writer);
    f->ctx.admin_writer = writer;
    for (unsigned i = 1; i <= 50; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"key\":\"w:%u\",\"kind\":\"rolling\",\"capacity\":%u,\"window_seconds\":60}",
                 i, i);
        drive(f, "PUT", "/v1/admin/limits", json);
        assert_int_equal(f->res.status, 200);
        assert_string_equal(body(f), "{\"ok\":true,\"status\":\"active\"}");
    }
    /* A bad body is refused before the writer. */
    assert_true(drive(f, "PUT", "/v1/admin/limits", "{\"key\":\"w:x\"}"));
    assert_int_equal(f->res.status, 400);
    rl_admin_writer_stop(writer);
    f->ctx.admin_writer = NULL;
    assert_true(drive(f, "GET", "/v1/admin/limits/w:50", NULL));
    assert_int_equal(f->res.status, 200);
    assert_non_null(strstr(body(f), "\"capacity\":50,"));
}

/* rl_handle_request waits for an answer given later. */
static void test_handle_request_waits(void **state) {
    fixture *f = *state;
    put_limit(f, "k", 5);
    f->backend->mode = ANSWER_LATER;
    sem_post(&f->backend->release); /* the backend's thread may go at once */
    char text[256];
    rl_http_request req = request("POST", "/v1/reserve", reserve_body(text, sizeof text, 7, "k", 5));
    rl_handle_request(&f->ctx, &req, &f->res);
    assert_int_equal(f->res.status, 200);
    assert_non_null(strstr(body(f), "{\"allowed\":true,"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answer_later, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answer_before_return, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_packed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_batch_not_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_put_through_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_request_waits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
