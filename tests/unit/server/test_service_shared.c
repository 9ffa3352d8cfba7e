/* test_service_shared.c — the service's shared mode (the backend is the
 * authority on which limits exist, as with redis) and /healthz, without
 * Redis: a small fake backend with list_definitions and health stands in for
 * the store, so that what is tested is the service's logic. Two services on
 * one fake store are two daemons on one Redis. The real thing is tested in
 * tests/integration/test_redis_daemon.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/registry.h"
#include "ratelimiter/types.h"
#include "server/api/handler.h"
#include "server/service.h"
#include "support/lease_ids.h"
#include "support/registry_copy.h"

/* ---- the fake store and its backend ------------------------------------ */

#define STORE_MAX 64

typedef struct fake_store {
    rl_limit_def defs[STORE_MAX]; /* sorted by key */
    size_t count;
    /* Keys deleted (and not defined since): the tombstones a restore
     * respects, as Redis's (lua/delete.lua). */
    char deleted[STORE_MAX][RL_KEY_MAX_LEN + 1];
    size_t deleted_count;
    bool down; /* every call fails as with Redis unreachable */
    int applies, lists;
} fake_store;

typedef struct fake_backend {
    rl_backend base;
    fake_store *store; /* borrowed: shared by the "daemons" */
} fake_backend;

static fake_store *store_of(rl_backend *b) { return ((fake_backend *)b)->store; }

static const rl_limit_def *store_find(const fake_store *s, const char *key) {
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->defs[i].key, key) == 0) return &s->defs[i];
    return NULL;
}

static bool store_deleted(const fake_store *s, const char *key) {
    for (size_t i = 0; i < s->deleted_count; i++)
        if (strcmp(s->deleted[i], key) == 0) return true;
    return false;
}

static void store_put(fake_store *s, const rl_limit_def *def) {
    for (size_t i = 0; i < s->deleted_count; i++) { /* defined again: no tombstone */
        if (strcmp(s->deleted[i], def->key) != 0) continue;
        memmove(&s->deleted[i], &s->deleted[i + 1], (s->deleted_count - i - 1) * sizeof s->deleted[0]);
        s->deleted_count--;
        break;
    }
    size_t i = 0;
    while (i < s->count && strcmp(s->defs[i].key, def->key) < 0) i++;
    if (i < s->count && strcmp(s->defs[i].key, def->key) == 0) {
        s->defs[i] = *def;
        return;
    }
    assert_true(s->count < STORE_MAX);
    memmove(&s->defs[i + 1], &s->defs[i], (s->count - i) * sizeof s->defs[0]);
    s->defs[i] = *def;
    s->count++;
}

static rl_status fake_apply(rl_backend *b, const rl_limit_def *def, rl_limit_status *out_status) {
    fake_store *s = store_of(b);
    if (s->down) return RL_BACKEND_ERROR;
    s->applies++;
    store_put(s, def);
    *out_status = RL_LIMIT_STATUS_ACTIVE;
    return RL_OK;
}

static rl_status fake_delete(rl_backend *b, const char *key) {
    fake_store *s = store_of(b);
    if (s->down) return RL_BACKEND_ERROR;
    for (size_t i = 0; i < s->count; i++) {
        if (strcmp(s->defs[i].key, key) != 0) continue;
        memmove(&s->defs[i], &s->defs[i + 1], (s->count - i - 1) * sizeof s->defs[0]);
        s->count--;
        if (!store_deleted(s, key)) snprintf(s->deleted[s->deleted_count++], sizeof s->deleted[0], "%s", key);
        return RL_OK;
    }
    return RL_UNKNOWN_LIMIT_KEY;
}

static rl_status fake_restore(rl_backend *b, const rl_limit_def *def) {
    fake_store *s = store_of(b);
    if (s->down) return RL_BACKEND_ERROR;
    if (store_find(s, def->key) != NULL) return RL_OK;
    if (store_deleted(s, def->key)) return RL_UNKNOWN_LIMIT_KEY;
    s->applies++;
    store_put(s, def);
    return RL_OK;
}

/* Allows a lease when every key is known and every amount fits the
 * capacity: enough to see which definitions a reserve uses. */
static void fake_reserve_batch(rl_backend *b, const rl_reserve_request *requests, size_t count,
                               rl_reserve_result *results) {
    fake_store *s = store_of(b);
    for (size_t i = 0; i < count; i++) {
        rl_reserve_result *r = &results[i];
        memset(r, 0, sizeof *r);
        r->allowed = true;
        r->reserved_at_unix_ms = 1;
        if (s->down) {
            r->allowed = false;
            r->status = RL_BACKEND_ERROR;
            continue;
        }
        for (size_t j = 0; j < requests[i].requirement_count && r->allowed; j++) {
            const rl_requirement *req = &requests[i].requirements[j];
            const rl_limit_def *def = store_find(s, req->key);
            if (def == NULL) {
                r->allowed = false;
                r->status = RL_UNKNOWN_LIMIT_KEY;
                r->status_key = req->key;
            } else if (req->amount > def->capacity) {
                r->allowed = false;
                r->status = RL_EXCEEDS_CAPACITY;
                r->status_key = req->key;
            }
        }
        if (!r->allowed) r->reserved_at_unix_ms = 0;
    }
}

static void fake_complete_batch(rl_backend *b, const rl_complete_request *requests, size_t count,
                                rl_status *statuses) {
    (void)requests;
    for (size_t i = 0; i < count; i++) statuses[i] = store_of(b)->down ? RL_BACKEND_ERROR : RL_OK;
}

static rl_status fake_limit_usage(rl_backend *b, const char *key, rl_limit_usage *out) {
    fake_store *s = store_of(b);
    if (s->down) return RL_BACKEND_ERROR;
    const rl_limit_def *def = store_find(s, key);
    if (def == NULL) return RL_UNKNOWN_LIMIT_KEY;
    memset(out, 0, sizeof *out);
    out->capacity = def->capacity;
    out->available = def->capacity;
    return RL_OK;
}

static void fake_sweep(rl_backend *b) { (void)b; }

static void fake_destroy(rl_backend *b) { free(b); }

static rl_status fake_health(rl_backend *b, char *detail, size_t detail_size) {
    if (!store_of(b)->down) return RL_OK;
    snprintf(detail, detail_size, "connection refused");
    return RL_BACKEND_ERROR;
}

static rl_status fake_list(rl_backend *b, rl_limit_def **out, size_t *count) {
    fake_store *s = store_of(b);
    *out = NULL;
    *count = 0;
    if (s->down) return RL_BACKEND_ERROR;
    s->lists++;
    if (s->count == 0) return RL_OK;
    *out = malloc(s->count * sizeof **out);
    if (*out == NULL) return RL_NO_MEMORY;
    memcpy(*out, s->defs, s->count * sizeof **out);
    *count = s->count;
    return RL_OK;
}

static const rl_backend_ops fake_ops = {
    .abi_version = RL_BACKEND_ABI_VERSION,
    .name = "fake",
    .apply_definition = fake_apply,
    .reserve_batch = fake_reserve_batch,
    .complete_batch = fake_complete_batch,
    .limit_usage = fake_limit_usage,
    .sweep = fake_sweep,
    .destroy = fake_destroy,
    .health = fake_health,
    .list_definitions = fake_list,
    .delete_definition = fake_delete,
    .restore_definition = fake_restore,
};

static rl_backend *fake_backend_new(fake_store *store) {
    fake_backend *b = calloc(1, sizeof *b);
    assert_non_null(b);
    b->base.ops = &fake_ops;
    b->store = store;
    return &b->base;
}

static rl_limit_def rolling(const char *key, uint64_t capacity) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = RL_KIND_ROLLING;
    def.capacity = capacity;
    def.window_seconds = 60;
    def.overage = RL_OVERAGE_DEBT;
    return def;
}

/* ---- daemons: a service and a handler context each ----------------------- */

typedef struct instance {
    char dir[64];
    char subdir[96];
    char path[128]; /* its limits.json */
    char log_path[136]; /* and the registry's log beside it */
    rl_service *service;
    rl_handler_ctx ctx;
    rl_http_response res;
} instance;

static void daemon_dirs(instance *d) {
    snprintf(d->dir, sizeof d->dir, "/tmp/rl_test_shared_XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    snprintf(d->subdir, sizeof d->subdir, "%s/data", d->dir);
    assert_int_equal(mkdir(d->subdir, 0700), 0);
    snprintf(d->path, sizeof d->path, "%s/limits.json", d->subdir);
    snprintf(d->log_path, sizeof d->log_path, "%s.log", d->path);
}

static rl_status daemon_open(instance *d, fake_store *store, size_t max_limits, char *err,
                             size_t err_size) {
    rl_service_options options = {.backend_name = "ignored", .registry_path = d->path,
                                  .max_limits = max_limits, .backend = fake_backend_new(store)};
    rl_status status = rl_service_open(&options, &d->service, err, err_size);
    if (status == RL_OK) assert_true(rl_handler_ctx_init(&d->ctx, d->service, 8));
    return status;
}

static void daemon_start(instance *d, fake_store *store) {
    char err[256];
    if (daemon_open(d, store, 0, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

/* Two daemons on one store. */
static void daemons_start(instance *a, instance *b, fake_store *store) {
    daemon_dirs(a);
    daemon_dirs(b);
    daemon_start(a, store);
    daemon_start(b, store);
}

static void daemon_stop(instance *d) {
    if (d->service != NULL) {
        rl_handler_ctx_free(&d->ctx);
        rl_service_close(d->service);
        d->service = NULL;
    }
}

static void daemon_cleanup(instance *d) {
    daemon_stop(d);
    unlink(d->path);
    unlink(d->log_path);
    unlink(d->subdir); /* when a test made it a file */
    rmdir(d->subdir);
    rmdir(d->dir);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The definitions in a registry file, by opening (a copy of) it as the
 * instance would. */
static size_t file_count(const char *path) {
    rl_test_registry_copy copy;
    char err[256];
    if (!rl_test_registry_copy_open(&copy, path, NULL, err, sizeof err)) fail_msg("%s", err);
    size_t count = rl_registry_count(copy.registry);
    rl_test_registry_copy_close(&copy);
    return count;
}

static uint64_t file_capacity(const char *path, const char *key) {
    rl_test_registry_copy copy;
    char err[256];
    if (!rl_test_registry_copy_open(&copy, path, NULL, err, sizeof err)) fail_msg("%s", err);
    rl_limit_def def;
    uint64_t capacity = rl_registry_get(copy.registry, key, &def) ? def.capacity : 0;
    rl_test_registry_copy_close(&copy);
    return capacity;
}

static int call(instance *d, const char *method, const char *path, const char *body) {
    rl_http_request req = {method, strlen(method), path, strlen(path), body,
                           body != NULL ? strlen(body) : 0, NULL, 0};
    memset(&d->res, 0, sizeof d->res);
    rl_handle_request(&d->ctx, &req, &d->res);
    assert_non_null(d->res.body);
    assert_false(d->res.body->failed);
    return d->res.status;
}

static const char *body(instance *d) { return d->res.body->data; }

static int put(instance *d, const char *key, uint64_t capacity) {
    char json[256];
    snprintf(json, sizeof json,
             "{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":%llu,\"window_seconds\":60}", key,
             (unsigned long long)capacity);
    return call(d, "PUT", "/v1/admin/limits", json);
}

static int reserve(instance *d, const char *key, uint64_t amount) {
    char lease_id[RL_ULID_LEN + 1];
    static uint64_t seq = 1;
    rl_test_lease_id(seq++, lease_id);
    char json[512];
    snprintf(json, sizeof json,
             "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"%s\",\"amount\":%llu}]}", lease_id,
             key, (unsigned long long)amount);
    return call(d, "POST", "/v1/reserve", json);
}

/* ---- tests -------------------------------------------------------------- */

/* At start the store wins for the keys it holds; the file only seeds keys
 * the store does not have; then the file follows the store. */
static void test_open_store_wins(void **state) {
    (void)state;
    fake_store store = {0};
    rl_limit_def a = rolling("a", 10), c = rolling("c", 30);
    store_put(&store, &a);
    store_put(&store, &c);
    instance d = {0};
    daemon_dirs(&d);
    write_file(d.path, "[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":60},"
                       "{\"key\":\"b\",\"kind\":\"rolling\",\"capacity\":7,\"window_seconds\":60}]");
    daemon_start(&d, &store);

    assert_int_equal(store.applies, 1); /* b only */
    assert_int_equal(store.count, 3);
    assert_int_equal(store_find(&store, "a")->capacity, 10);
    assert_int_equal(store_find(&store, "b")->capacity, 7);
    assert_int_equal(file_count(d.path), 3);
    assert_int_equal(file_capacity(d.path, "a"), 10);
    assert_int_equal(file_capacity(d.path, "c"), 30);
    assert_int_equal(rl_service_limit_count(d.service), 3);
    assert_string_equal(rl_service_backend_name(d.service), "fake");

    assert_int_equal(call(&d, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(&d), "{\"ok\":true,\"backend\":\"fake\",\"limits\":3}");
    daemon_cleanup(&d);
}

/* A PUT through instance A is seen by instance B: GET, the list, a reserve,
 * /healthz; B's registry file catches up when B reads. */
static void test_put_on_a_seen_by_b(void **state) {
    (void)state;
    fake_store store = {0};
    instance a = {0}, b = {0};
    daemons_start(&a, &b, &store);

    assert_int_equal(call(&b, "GET", "/v1/admin/limits/k", NULL), 404);
    assert_string_equal(body(&b), "{\"error\":\"unknown_limit_key:k\",\"detail\":\"no limit has the key k\"}");
    assert_int_equal(reserve(&b, "k", 1), 404);

    assert_int_equal(put(&a, "k", 100), 200);
    assert_string_equal(body(&a), "{\"ok\":true,\"status\":\"active\"}");
    assert_int_equal(file_capacity(a.path, "k"), 100); /* the writer's file at once */
    assert_int_equal(file_count(b.path), 0);            /* the other's when it reads */

    assert_int_equal(call(&b, "GET", "/v1/admin/limits/k", NULL), 200);
    assert_non_null(strstr(body(&b), "\"key\":\"k\""));
    assert_non_null(strstr(body(&b), "\"capacity\":100"));
    assert_int_equal(file_capacity(b.path, "k"), 100);
    assert_int_equal(reserve(&b, "k", 100), 200);
    assert_non_null(strstr(body(&b), "\"allowed\":true"));

    /* A change on B, listed on A. */
    assert_int_equal(put(&b, "k", 50), 200);
    assert_int_equal(put(&b, "j", 5), 200);
    assert_int_equal(call(&a, "GET", "/v1/admin/limits", NULL), 200);
    const char *list = body(&a);
    const char *j = strstr(list, "\"key\":\"j\"");
    const char *k = strstr(list, "\"key\":\"k\"");
    assert_non_null(j);
    assert_non_null(k);
    assert_true(j < k); /* sorted by key */
    assert_non_null(strstr(k, "\"capacity\":50"));
    assert_int_equal(file_capacity(a.path, "k"), 50);
    assert_int_equal(file_capacity(a.path, "j"), 5);
    assert_int_equal(call(&a, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(&a), "{\"ok\":true,\"backend\":\"fake\",\"limits\":2}");
    assert_int_equal(reserve(&a, "k", 51), 200);
    assert_non_null(strstr(body(&a), "exceeds_capacity:k"));

    /* A read that changes nothing writes nothing: the file stays as it is. */
    struct stat before, after;
    assert_int_equal(stat(a.path, &before), 0);
    usleep(20000);
    assert_int_equal(call(&a, "GET", "/v1/admin/limits", NULL), 200);
    assert_int_equal(call(&a, "GET", "/v1/admin/limits/k", NULL), 200);
    assert_int_equal(stat(a.path, &after), 0);
    assert_true(before.st_ino == after.st_ino); /* not renamed over */
    assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
                before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

    daemon_cleanup(&a);
    daemon_cleanup(&b);
}

/* The store down: PUT changes nothing (not even the file), reads and
 * /healthz answer 503, and everything works again once it is back. */
static void test_store_down(void **state) {
    (void)state;
    fake_store store = {0};
    instance d = {0};
    daemon_dirs(&d);
    daemon_start(&d, &store);
    assert_int_equal(put(&d, "a", 3), 200);

    store.down = true;
    assert_int_equal(put(&d, "b", 4), 503);
    assert_string_equal(body(&d), "{\"ok\":false,\"error\":\"backend_error\"}");
    assert_int_equal(put(&d, "a", 9), 503);
    assert_int_equal(file_count(d.path), 1);
    assert_int_equal(file_capacity(d.path, "a"), 3);

    assert_int_equal(call(&d, "GET", "/v1/admin/limits", NULL), 503);
    assert_string_equal(body(&d), "{\"error\":\"backend_error\"}");
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/a", NULL), 503);
    assert_string_equal(body(&d), "{\"error\":\"backend_error\"}");
    assert_int_equal(call(&d, "GET", "/healthz", NULL), 503);
    assert_string_equal(body(&d), "{\"ok\":false,\"backend\":\"fake\",\"error\":\"backend_error\","
                                  "\"detail\":\"connection refused\"}");
    assert_int_equal(reserve(&d, "a", 1), 503);
    /* The count falls back on the registry. */
    assert_int_equal(rl_service_limit_count(d.service), 1);

    store.down = false;
    assert_int_equal(call(&d, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(&d), "{\"ok\":true,\"backend\":\"fake\",\"limits\":1}");
    assert_int_equal(put(&d, "b", 4), 200);
    assert_int_equal(call(&d, "GET", "/v1/admin/limits/b", NULL), 200);
    assert_int_equal(file_count(d.path), 2);
    daemon_cleanup(&d);
}

/* A store that cannot be read at start stops the start, with a reason. */
static void test_open_store_down(void **state) {
    (void)state;
    fake_store store = {.down = true};
    instance d = {0};
    daemon_dirs(&d);
    char err[256] = "";
    assert_int_equal(daemon_open(&d, &store, 0, err, sizeof err), RL_BACKEND_ERROR);
    assert_null(d.service);
    assert_non_null(strstr(err, "cannot list the limits held by the fake backend"));
    daemon_cleanup(&d);
}

/* The file is a cache: when it cannot be written, a PUT the store took
 * still succeeds (every instance uses it already). */
static void test_registry_write_failure_is_not_fatal(void **state) {
    (void)state;
    fake_store store = {0};
    instance a = {0}, b = {0};
    daemons_start(&a, &b, &store);
    assert_int_equal(put(&a, "a", 1), 200);
    /* A's registry directory becomes a plain file, and no file may grow
     * (its log, still open, is appended to): no write can succeed. */
    char lock[sizeof a.path + 8];
    snprintf(lock, sizeof lock, "%s.lock", a.path);
    unlink(a.path);
    unlink(a.log_path);
    unlink(lock); /* the registry's lock file: it goes on holding the lock, unlinked */
    assert_int_equal(rmdir(a.subdir), 0);
    write_file(a.subdir, "");
    struct rlimit unlimited;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &unlimited), 0);
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
    struct rlimit none = {0, unlimited.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &none), 0);

    assert_int_equal(put(&a, "a", 2), 200);
    assert_int_equal(put(&a, "new", 7), 200);
    assert_int_equal(call(&a, "GET", "/v1/admin/limits", NULL), 200); /* write-through fails too */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &unlimited), 0);
    assert_non_null(strstr(body(&a), "\"key\":\"new\""));
    assert_int_equal(call(&b, "GET", "/v1/admin/limits/new", NULL), 200);
    assert_int_equal(file_capacity(b.path, "new"), 7);
    assert_int_equal(file_capacity(b.path, "a"), 0); /* a GET of one key writes that key only */
    assert_int_equal(call(&b, "GET", "/v1/admin/limits", NULL), 200);
    assert_int_equal(file_capacity(b.path, "a"), 2);
    daemon_cleanup(&a);
    daemon_cleanup(&b);
}

/* Many changes at once (a instance joining a store that holds many limits)
 * are written in one rewrite; keys only the file holds stay in it as a
 * backup, and go back to a store that lost them at the next start. */
static void test_bulk_refresh_and_backup(void **state) {
    (void)state;
    fake_store store = {0};
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%02d", i);
        rl_limit_def def = rolling(key, (uint64_t)i + 1);
        store_put(&store, &def);
    }
    instance d = {0};
    daemon_dirs(&d);
    write_file(d.path, "[{\"key\":\"k05\",\"kind\":\"rolling\",\"capacity\":99,\"window_seconds\":60}]");
    daemon_start(&d, &store);
    assert_int_equal(store.applies, 0);
    assert_int_equal(file_count(d.path), 20);
    assert_int_equal(file_capacity(d.path, "k05"), 6);
    assert_int_equal(file_capacity(d.path, "k19"), 20);

    /* The store loses everything and gets 12 other limits (> the per-put
     * threshold): a read rewrites the file once, keeping the old keys. */
    store.count = 0;
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof key, "n%02d", i);
        rl_limit_def def = rolling(key, 100);
        store_put(&store, &def);
    }
    assert_int_equal(call(&d, "GET", "/v1/admin/limits", NULL), 200);
    assert_null(strstr(body(&d), "\"key\":\"k05\"")); /* the store is the authority */
    assert_non_null(strstr(body(&d), "\"key\":\"n11\""));
    assert_int_equal(file_count(d.path), 32);
    assert_int_equal(call(&d, "GET", "/healthz", NULL), 200);
    assert_string_equal(body(&d), "{\"ok\":true,\"backend\":\"fake\",\"limits\":12}");
    /* And the registry object followed the rewritten file. */
    assert_int_equal(put(&d, "n00", 100), 200);

    /* Restart: the backup goes back to the store. */
    daemon_stop(&d);
    daemon_start(&d, &store);
    assert_int_equal(store.count, 32);
    assert_int_equal(store_find(&store, "k05")->capacity, 6);
    daemon_cleanup(&d);
}

/* max_limits bounds the shared set too. */
static void test_max_limits(void **state) {
    (void)state;
    fake_store store = {0};
    instance d = {0};
    daemon_dirs(&d);
    char err[256] = "";
    assert_int_equal(daemon_open(&d, &store, 2, err, sizeof err), RL_OK);
    assert_int_equal(put(&d, "a", 1), 200);
    assert_int_equal(put(&d, "b", 1), 200);
    assert_int_equal(put(&d, "c", 1), 400);
    assert_non_null(strstr(body(&d), "the registry is full"));
    assert_null(store_find(&store, "c")); /* refused before the store took it */
    assert_int_equal(put(&d, "a", 2), 200); /* updates are fine */
    daemon_stop(&d);

    rl_limit_def c = rolling("c", 1);
    store_put(&store, &c); /* another instance with a larger bound added it */
    assert_int_equal(daemon_open(&d, &store, 2, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "full"));
    daemon_cleanup(&d);
}

/* The redis backend unreachable at start: a clear error naming the address. */
static void test_redis_unreachable_at_open(void **state) {
    (void)state;
    instance d = {0};
    daemon_dirs(&d);
    rl_service_options options = {.backend_name = "redis", .registry_path = d.path};
    rl_redis_options_default(&options.redis);
    options.redis.host = "127.0.0.1";
    options.redis.port = 1; /* nothing listens there */
    options.redis.connect_timeout_ms = 200;
    char err[512] = "";
    assert_int_equal(rl_service_open(&options, &d.service, err, sizeof err), RL_BACKEND_ERROR);
    assert_null(d.service);
    if (strstr(err, "the redis backend failed") == NULL || strstr(err, "127.0.0.1:1") == NULL)
        fail_msg("%s", err);
    daemon_cleanup(&d);
}

/* A delete through A is the store's at once: B answers unknown_limit_key,
 * A's file drops the key. B's file keeps it until B starts again, when the
 * store's record of the delete keeps B from putting it back, and the file
 * drops it; a store that lost everything (no such record) gets it back. */
static void test_delete_on_a_seen_by_b(void **state) {
    (void)state;
    fake_store store = {0};
    instance a = {0}, b = {0};
    daemons_start(&a, &b, &store);
    assert_int_equal(put(&a, "k", 100), 200);
    assert_int_equal(put(&a, "j", 5), 200);
    assert_int_equal(call(&b, "GET", "/v1/admin/limits", NULL), 200);
    assert_int_equal(file_count(b.path), 2);

    assert_int_equal(call(&a, "DELETE", "/v1/admin/limits/k", NULL), 200);
    assert_string_equal(body(&a), "{\"ok\":true}");
    assert_null(store_find(&store, "k"));
    assert_int_equal(file_count(a.path), 1);
    assert_int_equal(call(&b, "GET", "/v1/admin/limits/k", NULL), 404);
    assert_int_equal(reserve(&b, "k", 1), 404);
    assert_int_equal(call(&b, "DELETE", "/v1/admin/limits/k", NULL), 404);
    assert_string_equal(body(&b), "{\"ok\":false,\"error\":\"unknown_limit_key:k\",\"detail\":\"no limit has the key k\"}");
    assert_int_equal(file_count(b.path), 1); /* B's own delete: its file follows */
    assert_int_equal(call(&a, "DELETE", "/v1/admin/limits/a%20b", NULL), 400);
    assert_non_null(strstr(body(&a), "\"invalid_request\""));

    /* B was away during a delete: its file still holds the key */
    daemon_stop(&b);
    assert_int_equal(call(&a, "DELETE", "/v1/admin/limits/j", NULL), 200);
    assert_int_equal(put(&a, "j", 6), 200); /* defined again: not a deleted key any more */
    assert_int_equal(call(&a, "DELETE", "/v1/admin/limits/j", NULL), 200);
    write_file(b.path, "[{\"key\":\"j\",\"kind\":\"rolling\",\"capacity\":5,\"window_seconds\":60},"
                       "{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}]");
    int applies = store.applies;
    daemon_start(&b, &store);
    assert_int_equal(store.applies, applies);
    assert_int_equal(store.count, 0);
    assert_int_equal(file_count(b.path), 0);
    daemon_stop(&b);

    /* a store that lost everything gets the file's limits back */
    write_file(b.path, "[{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":100,\"window_seconds\":60}]");
    fake_store lost = {0};
    daemon_start(&b, &lost);
    assert_non_null(store_find(&lost, "k"));
    daemon_stop(&b);

    /* the store unreachable: 503, nothing changes anywhere */
    assert_int_equal(put(&a, "m", 7), 200);
    store.down = true;
    assert_int_equal(call(&a, "DELETE", "/v1/admin/limits/m", NULL), 503);
    assert_string_equal(body(&a), "{\"ok\":false,\"error\":\"backend_error\"}");
    store.down = false;
    assert_non_null(store_find(&store, "m"));
    assert_int_equal(file_capacity(a.path, "m"), 7);
    daemon_cleanup(&a);
    daemon_cleanup(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_store_wins),
        cmocka_unit_test(test_put_on_a_seen_by_b),
        cmocka_unit_test(test_store_down),
        cmocka_unit_test(test_open_store_down),
        cmocka_unit_test(test_registry_write_failure_is_not_fatal),
        cmocka_unit_test(test_bulk_refresh_and_backup),
        cmocka_unit_test(test_max_limits),
        cmocka_unit_test(test_redis_unreachable_at_open),
        cmocka_unit_test(test_delete_on_a_seen_by_b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
