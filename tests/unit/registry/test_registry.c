/* test_registry.c — the limit registry and its file, in a fresh temporary
 * directory per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ratelimiter/registry.h"

typedef struct fixture {
    char dir[64];
    char path[128]; /* <dir>/limits.json */
    char tmp[160];  /* <path>.tmp */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    strcpy(f->dir, "/tmp/rl_registry_test_XXXXXX");
    if (mkdtemp(f->dir) == NULL) return -1;
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp", f->path);
    *state = f;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state) {
    fixture *f = *state;
    nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *content, size_t len) {
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    assert_int_equal(fwrite(content, 1, len, file), len);
    assert_int_equal(fclose(file), 0);
}
#define WRITE_TEXT(path, text) write_file((path), (text), strlen(text))

/* The whole file as a malloc'd string, or NULL if it does not exist. */
static char *read_text(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    static char buffer[1 << 20];
    size_t n = fread(buffer, 1, sizeof buffer - 1, file);
    fclose(file);
    buffer[n] = '\0';
    return strdup(buffer);
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static rl_limit_def rolling(const char *key, uint64_t capacity) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = RL_KIND_ROLLING;
    def.capacity = capacity;
    def.window_seconds = 60;
    strcpy(def.unit, "tokens");
    strcpy(def.description, "per minute, \"quoted\" \xe2\x82\xac");
    def.overage = RL_OVERAGE_DEBT;
    return def;
}

static rl_limit_def concurrency(const char *key, uint64_t capacity) {
    rl_limit_def def = rolling(key, capacity);
    def.kind = RL_KIND_CONCURRENCY;
    def.window_seconds = 0;
    def.timeout_seconds = 600;
    def.overage = RL_OVERAGE_DENY;
    def.unit[0] = '\0';
    def.description[0] = '\0';
    return def;
}

static void assert_def_equal(const rl_limit_def *a, const rl_limit_def *b) {
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->kind, b->kind);
    assert_true(a->capacity == b->capacity);
    assert_int_equal(a->window_seconds, b->window_seconds);
    assert_int_equal(a->timeout_seconds, b->timeout_seconds);
    assert_string_equal(a->unit, b->unit);
    assert_string_equal(a->description, b->description);
    assert_int_equal(a->overage, b->overage);
}

static rl_registry *open_ok(const char *path, size_t max_limits) {
    rl_registry *registry = NULL;
    char err[512] = "";
    rl_status status = rl_registry_open(path, max_limits, &registry, err, sizeof err);
    if (status != RL_OK) fail_msg("open %s: %s: %s", path, rl_status_name(status), err);
    assert_non_null(registry);
    return registry;
}

static void put_ok(rl_registry *registry, const rl_limit_def *def) {
    char err[512] = "";
    rl_status status = rl_registry_put(registry, def, err, sizeof err);
    if (status != RL_OK) fail_msg("put %s: %s: %s", def->key, rl_status_name(status), err);
}

/* Opening path fails with status, and err mentions every one of the strings. */
static void open_refused(const char *path, rl_status expected, const char *mention1,
                         const char *mention2, const char *file, int line) {
    rl_registry *registry = (rl_registry *)1;
    char err[512] = "";
    rl_status status = rl_registry_open(path, 0, &registry, err, sizeof err);
    if (status != expected)
        fail_msg("%s:%d: status %s (%s)", file, line, rl_status_name(status), err);
    assert_null(registry);
    if (strstr(err, path) == NULL) fail_msg("%s:%d: \"%s\" does not name the path", file, line, err);
    if (mention1 != NULL && strstr(err, mention1) == NULL)
        fail_msg("%s:%d: \"%s\" does not say \"%s\"", file, line, err, mention1);
    if (mention2 != NULL && strstr(err, mention2) == NULL)
        fail_msg("%s:%d: \"%s\" does not say \"%s\"", file, line, err, mention2);
}
#define OPEN_REFUSED(path, status, m1, m2) open_refused((path), (status), (m1), (m2), __FILE__, __LINE__)

/* ---- tests ------------------------------------------------------------ */

static void test_missing_file_is_empty(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 0);
    rl_limit_def def;
    assert_false(rl_registry_get(registry, "anything", &def));
    assert_false(rl_registry_get(registry, NULL, &def));
    rl_limit_def *list = (rl_limit_def *)1;
    size_t count = 7;
    assert_int_equal(rl_registry_list(registry, &list, &count), RL_OK);
    assert_null(list);
    assert_int_equal(count, 0);
    rl_registry_close(registry);
    assert_false(exists(f->path)); /* opening writes nothing */
    rl_registry_close(NULL);
}

static void test_put_persists_and_reopens(void **state) {
    fixture *f = *state;
    rl_limit_def defs[3] = {
        rolling("global:llm:openai:gpt-4o:tpm", 30000),
        concurrency("global:llm:openai:gpt-4o:concurrency", 50),
        rolling("a\"quoted\\key", UINT64_C(9007199254740992)),
    };
    rl_registry *registry = open_ok(f->path, 0);
    for (size_t i = 0; i < 3; i++) put_ok(registry, &defs[i]);
    assert_int_equal(rl_registry_count(registry), 3);
    rl_registry_close(registry);
    assert_false(exists(f->tmp));

    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 3);
    for (size_t i = 0; i < 3; i++) {
        rl_limit_def got;
        assert_true(rl_registry_get(registry, defs[i].key, &got));
        assert_def_equal(&got, &defs[i]);
    }
    rl_registry_close(registry);

    /* The file: a JSON array, one definition per line, in key order. */
    char *text = read_text(f->path);
    assert_non_null(text);
    const char *start = "[\n  {\"key\":\"a\\\"quoted\\\\key\",";
    assert_true(strncmp(text, start, strlen(start)) == 0);
    assert_non_null(strstr(text, "},\n  {\"key\":\"global:llm:openai:gpt-4o:concurrency\",\"kind\":"
                                 "\"concurrency\",\"capacity\":50,\"window_seconds\":0,"
                                 "\"timeout_seconds\":600,\"unit\":\"\",\"description\":\"\","
                                 "\"overage\":\"deny\"},\n"));
    assert_string_equal(text + strlen(text) - 5, "\"}\n]\n");
    free(text);
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
}

static void test_replace_existing(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def def = rolling("k", 100);
    put_ok(registry, &def);
    def.capacity = 50;
    def.overage = RL_OVERAGE_DENY;
    strcpy(def.description, "smaller");
    put_ok(registry, &def);
    assert_int_equal(rl_registry_count(registry), 1);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "k", &got));
    assert_def_equal(&got, &def);
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    assert_true(rl_registry_get(registry, "k", &got));
    assert_def_equal(&got, &def);
    rl_registry_close(registry);
}

static void test_every_rewrite_is_a_valid_file(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    for (int i = 0; i < 40; i++) {
        char key[32];
        /* Out of order inserts and some replacements. */
        snprintf(key, sizeof key, "key:%02d", (i * 7) % 29);
        rl_limit_def def = i % 3 == 0 ? concurrency(key, (uint64_t)i + 1) : rolling(key, (uint64_t)i + 1);
        put_ok(registry, &def);
        assert_false(exists(f->tmp));
        /* Another reader sees exactly what the registry holds. */
        rl_registry *reader = open_ok(f->path, 0);
        assert_int_equal(rl_registry_count(reader), rl_registry_count(registry));
        rl_limit_def got;
        assert_true(rl_registry_get(reader, key, &got));
        assert_def_equal(&got, &def);
        rl_registry_close(reader);
    }
    assert_int_equal(rl_registry_count(registry), 29);
    rl_registry_close(registry);
}

static void test_list_sorted(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    const char *keys[] = {"m", "b", "z", "a", "B", "tenant:x:llm:daily_tokens", "global:y"};
    for (size_t i = 0; i < 7; i++) {
        rl_limit_def def = rolling(keys[i], i + 1);
        put_ok(registry, &def);
    }
    rl_limit_def *list = NULL;
    size_t count = 0;
    assert_int_equal(rl_registry_list(registry, &list, &count), RL_OK);
    assert_int_equal(count, 7);
    for (size_t i = 1; i < count; i++) assert_true(strcmp(list[i - 1].key, list[i].key) < 0);
    assert_string_equal(list[0].key, "B");
    assert_string_equal(list[6].key, "z");
    free(list);
    rl_registry_close(registry);
}

static void test_corrupt_files_refused(void **state) {
    fixture *f = *state;
    struct {
        const char *content;
        size_t len; /* 0: strlen */
        const char *mention1, *mention2;
    } cases[] = {
        {"", 0, "empty", NULL},
        {"[", 0, "not valid JSON", NULL},
        {"[{\"key\":\"a\"", 0, "not valid JSON", NULL},
        {"garbage", 0, "not valid JSON", NULL},
        {"[]x", 0, "unexpected data", NULL},
        {"{}", 0, "expected a JSON array", NULL},
        {"\"limits\"", 0, "expected a JSON array", NULL},
        {"null", 0, "expected a JSON array", NULL},
        {"[\"\xff\"]", 0, "not valid UTF-8", NULL},
        {"[1]", 0, "item 0", "must be a JSON object"},
        {"[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1},"
         "{\"key\":\"b\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":1}]",
         0, "item 1: ", "capacity must be an integer 1..9007199254740992"},
        {"[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":1}]", 0, "item 0: ",
         "window_seconds must be 1..31622400 for a rolling limit"},
        {"[{\"key\":\"a\",\"kind\":\"sliding\",\"capacity\":1,\"window_seconds\":1}]", 0, "item 0: ",
         "kind must be"},
        {"[{\"key\":\"dup\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1},"
         "{\"key\":\"x\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1},"
         "{\"key\":\"dup\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":1}]",
         0, "item 2: key \"dup\" is already defined by item 0", NULL},
        {"[{\"key\":\"a\",\"key\":\"b\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}]", 0,
         "item 0: key appears twice", NULL},
        /* Integers are read exactly: 2^53 + 1 is not rounded to 2^53, nor 1.5 to anything. */
        {"[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":9007199254740992,\"window_seconds\":1},"
         "{\"key\":\"b\",\"kind\":\"rolling\",\"capacity\":9007199254740993,\"window_seconds\":1}]",
         0, "item 1: capacity must be an integer 1..9007199254740992", NULL},
        {"[{\"key\":\"a\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":59.99999999999999999}]",
         0, "item 0: window_seconds must be an integer 0..31622400", NULL},
        {"[{\"key\":\"a\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":1.5}]",
         0, "item 0: timeout_seconds must be an integer 0..604800", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len > 0 ? cases[i].len : strlen(cases[i].content);
        write_file(f->path, cases[i].content, len);
        OPEN_REFUSED(f->path, RL_INVALID_REQUEST, cases[i].mention1, cases[i].mention2);
    }
    /* A NUL byte inside the file. */
    write_file(f->path, "[]\0", 3);
    OPEN_REFUSED(f->path, RL_INVALID_REQUEST, "control character", NULL);
}

static void test_unreadable_path_refused(void **state) {
    fixture *f = *state;
    assert_int_equal(mkdir(f->path, 0755), 0); /* a directory where the file should be */
    OPEN_REFUSED(f->path, RL_IO_ERROR, "directory", NULL);

    rl_registry *registry = (rl_registry *)1;
    char err[128] = "";
    assert_int_equal(rl_registry_open("", 0, &registry, err, sizeof err), RL_INVALID_REQUEST);
    assert_null(registry);
    assert_true(err[0] != '\0');
}

static void test_too_many_in_file(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        rl_limit_def def = rolling(key, 1);
        put_ok(registry, &def);
    }
    rl_registry_close(registry);
    registry = (rl_registry *)1;
    char err[512] = "";
    assert_int_equal(rl_registry_open(f->path, 2, &registry, err, sizeof err), RL_INVALID_REQUEST);
    assert_null(registry);
    assert_non_null(strstr(err, "more than 2"));
    registry = open_ok(f->path, 3);
    rl_registry_close(registry);
}

static void test_stale_tmp_ignored(void **state) {
    fixture *f = *state;
    /* A crash mid-write leaves a partial tmp file: no file yet, still empty. */
    WRITE_TEXT(f->tmp, "[{\"key\":\"half");
    rl_registry *registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 0);
    rl_limit_def def = rolling("k", 5);
    put_ok(registry, &def); /* overwrites the stale tmp, then renames it */
    assert_false(exists(f->tmp));
    rl_registry_close(registry);

    /* With a good file in place, a stale tmp does not matter either. */
    WRITE_TEXT(f->tmp, "garbage");
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    rl_limit_def other = rolling("other", 9);
    put_ok(registry, &other);
    assert_false(exists(f->tmp));
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 2);
    rl_registry_close(registry);
}

static void test_missing_directory_created(void **state) {
    fixture *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/data/nested/limits.json", f->dir);
    rl_registry *registry = open_ok(path, 0);
    rl_limit_def def = rolling("k", 5);
    put_ok(registry, &def);
    rl_registry_close(registry);
    assert_true(exists(path));
    registry = open_ok(path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    rl_registry_close(registry);
}

static void test_put_fails_when_directory_cannot_exist(void **state) {
    fixture *f = *state;
    /* Tests run as root, so permissions do not stop a write: the directory
     * is missing at open (an empty registry) and then a regular file takes
     * its name, so that neither the tmp file nor the directory can be made. */
    char blocker[128], path[192];
    snprintf(blocker, sizeof blocker, "%s/data", f->dir);
    snprintf(path, sizeof path, "%s/limits.json", blocker);
    rl_registry *registry = open_ok(path, 0);
    WRITE_TEXT(blocker, "not a directory");
    rl_limit_def def = rolling("k", 5);
    char err[512] = "";
    rl_status status = rl_registry_put(registry, &def, err, sizeof err);
    assert_int_equal(status, RL_IO_ERROR);
    assert_non_null(strstr(err, path));
    assert_int_equal(rl_registry_count(registry), 0);
    assert_false(rl_registry_get(registry, "k", &def));
    rl_registry_close(registry);
    /* And a path under a regular file cannot even be opened. */
    OPEN_REFUSED(path, RL_IO_ERROR, "Not a directory", NULL);
}

static void test_failed_put_changes_nothing(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def def = rolling("k", 100);
    put_ok(registry, &def);
    char *before = read_text(f->path);

    /* A directory where the tmp file must go: open(O_CREAT) fails. */
    assert_int_equal(mkdir(f->tmp, 0755), 0);
    rl_limit_def changed = def;
    changed.capacity = 1;
    rl_limit_def added = rolling("new", 1);
    char err[512] = "";
    assert_int_equal(rl_registry_put(registry, &changed, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, f->tmp));
    assert_int_equal(rl_registry_put(registry, &added, err, sizeof err), RL_IO_ERROR);
    /* Memory and file are as before. */
    assert_int_equal(rl_registry_count(registry), 1);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "k", &got));
    assert_true(got.capacity == 100);
    assert_false(rl_registry_get(registry, "new", &got));
    char *after = read_text(f->path);
    assert_string_equal(before, after);
    free(after);

    /* Once the obstacle is gone, puts work again. */
    assert_int_equal(rmdir(f->tmp), 0);
    put_ok(registry, &changed);
    assert_true(rl_registry_get(registry, "k", &got));
    assert_true(got.capacity == 1);
    free(before);
    rl_registry_close(registry);
}

static void test_invalid_put_refused(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def def = rolling("k", 0);
    char err[512] = "";
    assert_int_equal(rl_registry_put(registry, &def, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "capacity"));
    def = rolling("bad key", 1);
    assert_int_equal(rl_registry_put(registry, &def, err, sizeof err), RL_INVALID_REQUEST);
    def = rolling("k", 1);
    def.timeout_seconds = 3;
    assert_int_equal(rl_registry_put(registry, &def, NULL, 0), RL_INVALID_REQUEST);
    assert_int_equal(rl_registry_count(registry), 0);
    assert_false(exists(f->path));
    rl_registry_close(registry);
}

static void test_max_limits_enforced(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 2);
    rl_limit_def a = rolling("a", 1), b = rolling("b", 1), c = rolling("c", 1);
    put_ok(registry, &a);
    put_ok(registry, &b);
    char *before = read_text(f->path);
    char err[512] = "";
    assert_int_equal(rl_registry_put(registry, &c, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "full"));
    assert_int_equal(rl_registry_count(registry), 2);
    char *after = read_text(f->path);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* Replacing an existing key is still allowed when full. */
    b.capacity = 7;
    put_ok(registry, &b);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "b", &got));
    assert_true(got.capacity == 7);
    rl_registry_close(registry);
}

/* Many puts, one write: the last put of a key wins, new and old keys merge
 * in order, and any refusal (invalid, full) leaves file and memory as they were. */
static void test_put_many(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 5);
    rl_limit_def b = rolling("b", 1), d = rolling("d", 1);
    put_ok(registry, &b);
    put_ok(registry, &d);
    rl_limit_def group[] = {rolling("c", 3), rolling("b", 2), concurrency("a", 4), rolling("c", 30), rolling("e", 5)};
    char err[512] = "";
    assert_int_equal(rl_registry_put_many(registry, group, 5, err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_count(registry), 5);
    rl_limit_def *all = NULL;
    size_t count = 0;
    assert_int_equal(rl_registry_list(registry, &all, &count), RL_OK);
    const char *keys[] = {"a", "b", "c", "d", "e"};
    const uint64_t capacities[] = {4, 2, 30, 1, 5};
    for (size_t i = 0; i < count; i++) {
        assert_string_equal(all[i].key, keys[i]);
        assert_true(all[i].capacity == capacities[i]);
    }
    free(all);
    rl_registry_close(registry);
    /* the file says the same */
    registry = open_ok(f->path, 5);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "c", &got));
    assert_true(got.capacity == 30);
    assert_true(rl_registry_get(registry, "a", &got) && got.kind == RL_KIND_CONCURRENCY);
    char *before = read_text(f->path);
    /* one new key too many, or one invalid definition: nothing at all */
    rl_limit_def full[] = {rolling("a", 9), rolling("f", 1)};
    assert_int_equal(rl_registry_put_many(registry, full, 2, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "full"));
    rl_limit_def invalid[] = {rolling("a", 9), rolling("b", 0)};
    assert_int_equal(rl_registry_put_many(registry, invalid, 2, err, sizeof err), RL_INVALID_REQUEST);
    assert_true(rl_registry_get(registry, "a", &got) && got.capacity == 4);
    char *after = read_text(f->path);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(rl_registry_put_many(registry, NULL, 0, err, sizeof err), RL_OK);
    rl_registry_close(registry);
}

typedef struct worker_args {
    rl_registry *registry;
    int id;
} worker_args;

static void *worker(void *arg) {
    worker_args *args = arg;
    for (int i = 0; i < 10; i++) {
        char key[32];
        snprintf(key, sizeof key, "w%d:k%d", args->id, i);
        rl_limit_def def = rolling(key, (uint64_t)i + 1);
        if (rl_registry_put(args->registry, &def, NULL, 0) != RL_OK) return (void *)1;
        rl_limit_def got;
        if (!rl_registry_get(args->registry, key, &got) || got.capacity != (uint64_t)i + 1)
            return (void *)1;
        (void)rl_registry_count(args->registry);
    }
    return NULL;
}

static void test_concurrent_puts(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    pthread_t threads[4];
    worker_args args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_args){registry, i};
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *result = NULL;
        pthread_join(threads[i], &result);
        assert_null(result);
    }
    assert_int_equal(rl_registry_count(registry), 40);
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 40);
    rl_registry_close(registry);
}

/* A delete persists (the file rewritten, whole, without the key), an
 * absent key is unknown and changes nothing, and the last key can go too. */
static void test_delete(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def a = rolling("a", 1), b = concurrency("b", 2), c = rolling("c", 3);
    put_ok(registry, &a);
    put_ok(registry, &b);
    put_ok(registry, &c);
    char err[512] = "";
    assert_int_equal(rl_registry_delete(registry, "b", err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_count(registry), 2);
    rl_limit_def got;
    assert_false(rl_registry_get(registry, "b", &got));
    char *before = read_text(f->path);
    assert_int_equal(rl_registry_delete(registry, "b", err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_registry_delete(registry, "nope", err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    char *after = read_text(f->path);
    assert_string_equal(before, after); /* not rewritten */
    free(before);
    free(after);
    rl_registry_close(registry);

    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 2);
    assert_false(rl_registry_get(registry, "b", &got));
    assert_true(rl_registry_get(registry, "a", &got));
    assert_def_equal(&got, &a);
    assert_true(rl_registry_get(registry, "c", &got));
    assert_def_equal(&got, &c);
    assert_int_equal(rl_registry_delete(registry, "a", err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_delete(registry, "c", err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_count(registry), 0);
    put_ok(registry, &b); /* deleted keys may come again */
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    assert_true(rl_registry_get(registry, "b", &got));
    assert_def_equal(&got, &b);
    rl_registry_close(registry);
}

/* A delete the file cannot take changes nothing, in memory or on disk. */
static void test_failed_delete_changes_nothing(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def def = rolling("k", 100);
    put_ok(registry, &def);
    char *before = read_text(f->path);
    assert_int_equal(mkdir(f->tmp, 0755), 0); /* where the tmp file must go */
    char err[512] = "";
    assert_int_equal(rl_registry_delete(registry, "k", err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, f->tmp));
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "k", &got));
    assert_int_equal(rl_registry_count(registry), 1);
    char *after = read_text(f->path);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(rmdir(f->tmp), 0);
    assert_int_equal(rl_registry_delete(registry, "k", err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_count(registry), 0);
    rl_registry_close(registry);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_missing_file_is_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_persists_and_reopens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_rewrite_is_a_valid_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_files_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_path_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_many_in_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_tmp_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_fails_when_directory_cannot_exist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_put_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_put_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_limits_enforced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_puts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_delete_changes_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
