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
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ratelimiter/registry.h"
#include "core/record_file.h"
#include "registry/registry_internal.h"
#include "support/registry_copy.h"
#include "registry/registry_record.h"

typedef struct fixture {
    char dir[64];
    char path[128]; /* <dir>/limits.json */
    char tmp[160];  /* <path>.tmp */
    char log[160];  /* <path>.log */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    strcpy(f->dir, "/tmp/rl_registry_test_XXXXXX");
    if (mkdtemp(f->dir) == NULL) return -1;
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp", f->path);
    snprintf(f->log, sizeof f->log, "%s.log", f->path);
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

/* Puts "k0".."k<n-1>", rolling, capacities 1..n. */
static void put_keys(rl_registry *registry, int n) {
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        rl_limit_def def = rolling(key, (uint64_t)i + 1);
        put_ok(registry, &def);
    }
}

/* Opening path fails with status, and err names the file named and
 * mentions every one of the strings. */
static void open_refused(const char *path, const char *named, rl_status expected, const char *mention1,
                         const char *mention2, const char *file, int line) {
    rl_registry *registry = (rl_registry *)1;
    char err[512] = "";
    rl_status status = rl_registry_open(path, 0, &registry, err, sizeof err);
    if (status != expected)
        fail_msg("%s:%d: status %s (%s)", file, line, rl_status_name(status), err);
    assert_null(registry);
    if (strstr(err, named) == NULL) fail_msg("%s:%d: \"%s\" does not name %s", file, line, err, named);
    if (mention1 != NULL && strstr(err, mention1) == NULL)
        fail_msg("%s:%d: \"%s\" does not say \"%s\"", file, line, err, mention1);
    if (mention2 != NULL && strstr(err, mention2) == NULL)
        fail_msg("%s:%d: \"%s\" does not say \"%s\"", file, line, err, mention2);
}
#define OPEN_REFUSED(path, status, m1, m2) open_refused((path), (path), (status), (m1), (m2), __FILE__, __LINE__)
#define OPEN_REFUSED_NAMING(path, named, status, m1, m2) \
    open_refused((path), (named), (status), (m1), (m2), __FILE__, __LINE__)

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
        /* The files read again (a copy: they are this registry's while it
         * is open) hold exactly what the registry holds. */
        rl_test_registry_copy reader;
        char err[512];
        if (!rl_test_registry_copy_open(&reader, f->path, NULL, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(rl_registry_count(reader.registry), rl_registry_count(registry));
        rl_limit_def got;
        assert_true(rl_registry_get(reader.registry, key, &got));
        assert_def_equal(&got, &def);
        rl_test_registry_copy_close(&reader);
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
    /* A FIFO: refused at once, not waited on for a writer. */
    assert_int_equal(rmdir(f->path), 0);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    OPEN_REFUSED(f->path, RL_IO_ERROR, "is a FIFO, not a regular file", NULL);
    assert_int_equal(unlink(f->path), 0);

    rl_registry *registry = (rl_registry *)1;
    char err[128] = "";
    assert_int_equal(rl_registry_open("", 0, &registry, err, sizeof err), RL_INVALID_REQUEST);
    assert_null(registry);
    assert_true(err[0] != '\0');
}

static void test_too_many_in_file(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    put_keys(registry, 3);
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
     * is removed after open (an empty registry) and a regular file takes
     * its name, so that neither the tmp file nor the directory can be made. */
    char blocker[128], path[192];
    snprintf(blocker, sizeof blocker, "%s/data", f->dir);
    snprintf(path, sizeof path, "%s/limits.json", blocker);
    rl_registry *registry = open_ok(path, 0);
    char lock[220];
    snprintf(lock, sizeof lock, "%s.lock", path); /* made by the open, held while it is open */
    assert_int_equal(unlink(lock), 0);
    assert_int_equal(rmdir(blocker), 0);
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

/* The whole file (which may hold NULs), malloc'd, or NULL if missing. */
static unsigned char *read_bytes(const char *path, size_t *len) {
    FILE *file = fopen(path, "rb");
    *len = 0;
    if (file == NULL) return NULL;
    size_t cap = 1 << 16;
    unsigned char *data = malloc(cap);
    assert_non_null(data);
    size_t n;
    while ((n = fread(data + *len, 1, cap - *len, file)) > 0) {
        *len += n;
        if (*len == cap) {
            cap *= 2;
            data = realloc(data, cap);
            assert_non_null(data);
        }
    }
    fclose(file);
    return data;
}

/* A file's bytes, to compare with what it holds later. */
typedef struct file_bytes {
    unsigned char *data;
    size_t len;
} file_bytes;

static file_bytes bytes_of(const char *path) {
    file_bytes b;
    b.data = read_bytes(path, &b.len);
    return b;
}

static void assert_unchanged(const char *path, file_bytes *before) {
    file_bytes now = bytes_of(path);
    if ((now.data == NULL) != (before->data == NULL) || now.len != before->len ||
        (now.len > 0 && memcmp(now.data, before->data, now.len) != 0))
        fail_msg("%s changed: %zu bytes, was %zu", path, now.len, before->len);
    free(now.data);
    free(before->data);
    before->data = NULL;
}

/* No file of this process may grow past the size of path now
 * (RLIMIT_FSIZE): the log's next append fails with EFBIG, as on a full
 * disk. Returns the limit to restore. */
static struct rlimit no_growth(const char *path) {
    struct rlimit unlimited;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &unlimited), 0);
    signal(SIGXFSZ, SIG_IGN);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    struct rlimit limit = {(rlim_t)st.st_size, unlimited.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);
    return unlimited;
}

static void test_failed_put_changes_nothing(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def def = rolling("k", 100);
    rl_limit_def changed = def;
    changed.capacity = 1;
    rl_limit_def added = rolling("new", 1);
    char err[512] = "";

    /* The log cannot be made: a directory where its tmp file must go. */
    char log_tmp[200];
    snprintf(log_tmp, sizeof log_tmp, "%s.tmp", f->log);
    assert_int_equal(mkdir(log_tmp, 0755), 0);
    assert_int_equal(rl_registry_put(registry, &def, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, log_tmp));
    assert_int_equal(rl_registry_count(registry), 0);
    assert_false(exists(f->log));
    assert_int_equal(rmdir(log_tmp), 0);
    put_ok(registry, &def);
    file_bytes file = bytes_of(f->path), log = bytes_of(f->log);

    /* The log cannot grow: every change of a group fails, none stays. */
    struct rlimit unlimited = no_growth(f->log);
    assert_int_equal(rl_registry_put(registry, &changed, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, f->log));
    assert_int_equal(rl_registry_put(registry, &added, err, sizeof err), RL_IO_ERROR);
    assert_int_equal(rl_registry_delete(registry, "k", err, sizeof err), RL_IO_ERROR);
    rl_registry_change group[3];
    memset(group, 0, sizeof group);
    group[0] = (rl_registry_change){.op = RL_REGISTRY_PUT, .def = added};
    group[1] = (rl_registry_change){.op = RL_REGISTRY_DELETE, .def = rolling("absent", 1)};
    group[2] = (rl_registry_change){.op = RL_REGISTRY_DELETE, .def = def};
    assert_int_equal(rl_registry_apply(registry, group, 3, err, sizeof err), RL_IO_ERROR);
    assert_int_equal(group[0].status, RL_IO_ERROR);
    assert_non_null(strstr(group[0].err, f->log));
    assert_int_equal(group[1].status, RL_UNKNOWN_LIMIT_KEY); /* would not have applied anyway */
    assert_int_equal(group[2].status, RL_IO_ERROR);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &unlimited), 0);
    /* Memory and files are as before. */
    assert_int_equal(rl_registry_count(registry), 1);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, "k", &got));
    assert_true(got.capacity == 100);
    assert_false(rl_registry_get(registry, "new", &got));
    assert_unchanged(f->path, &file);
    assert_unchanged(f->log, &log);

    /* Once the disk has room, puts work again. */
    put_ok(registry, &changed);
    assert_true(rl_registry_get(registry, "k", &got));
    assert_true(got.capacity == 1);
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    assert_true(rl_registry_get(registry, "k", &got) && got.capacity == 1);
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


/* ---- the log, deletes, groups, origins, templates -------------------------------- */

static rl_registry_change change(rl_registry_op op, rl_limit_def def, const char *origin) {
    rl_registry_change c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.def = def;
    snprintf(c.origin, sizeof c.origin, "%s", origin);
    c.status = RL_TIMEOUT; /* overwritten by every apply */
    return c;
}

static void apply_ok(rl_registry *registry, rl_registry_change *changes, size_t count) {
    char err[512] = "";
    rl_status status = rl_registry_apply(registry, changes, count, err, sizeof err);
    if (status != RL_OK) fail_msg("apply: %s: %s", rl_status_name(status), err);
}

/* key's origin, or NULL without a definition. */
static const char *origin_of(rl_registry *registry, const char *key) {
    static char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl_limit_def def;
    memset(origin, 'x', sizeof origin);
    return rl_registry_get_origin(registry, key, &def, origin) ? origin : NULL;
}

static const char *template_origin(rl_registry *registry, const char *pattern) {
    static char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl_limit_def def;
    return rl_registry_get_template(registry, pattern, &def, origin) ? origin : NULL;
}

static void test_delete(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def a = rolling("a", 1), b = concurrency("b", 2);
    put_ok(registry, &a);
    put_ok(registry, &b);
    char err[512] = "";
    assert_int_equal(rl_registry_delete(registry, "a", err, sizeof err), RL_OK);
    assert_string_equal(err, "");
    rl_limit_def got;
    assert_false(rl_registry_get(registry, "a", &got));
    assert_int_equal(rl_registry_count(registry), 1);
    /* Absent (again, never, not even a key): nothing changes, and it says so. */
    file_bytes log = bytes_of(f->log);
    assert_int_equal(rl_registry_delete(registry, "a", err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    assert_non_null(strstr(err, "\"a\""));
    assert_int_equal(rl_registry_delete(registry, "never", NULL, 0), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_registry_delete(registry, NULL, err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    char long_key[400];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    assert_int_equal(rl_registry_delete(registry, long_key, err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_registry_delete_template(registry, "b", err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    /* A key of the longest length is named whole, by a delete and in a
     * group's change. */
    char wanted[RL_REGISTRY_ERR_SIZE];
    long_key[RL_KEY_MAX_LEN] = '\0';
    snprintf(wanted, sizeof wanted, "no limit has the key \"%s\"", long_key);
    assert_int_equal(rl_registry_delete(registry, long_key, err, sizeof err), RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(err, wanted);
    rl_registry_change change = {.op = RL_REGISTRY_DELETE_TEMPLATE};
    memcpy(change.def.key, long_key, RL_KEY_MAX_LEN + 1);
    assert_int_equal(rl_registry_apply(registry, &change, 1, NULL, 0), RL_OK);
    assert_int_equal(change.status, RL_UNKNOWN_LIMIT_KEY);
    snprintf(wanted, sizeof wanted, "no template has the pattern \"%s\"", long_key);
    assert_string_equal(change.err, wanted);
    assert_unchanged(f->log, &log);
    /* A deleted key can be put again. */
    a.capacity = 5;
    put_ok(registry, &a);
    assert_int_equal(rl_registry_delete(registry, "b", err, sizeof err), RL_OK);
    rl_registry_close(registry);

    /* The log, then (once closed) limits.json, say the same. */
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    assert_true(rl_registry_get(registry, "a", &got) && got.capacity == 5);
    assert_false(rl_registry_get(registry, "b", &got));
    rl_registry_close(registry);
    char *text = read_text(f->path);
    assert_null(strstr(text, "\"key\":\"b\""));
    assert_non_null(strstr(text, "\"key\":\"a\""));
    free(text);
}

/* Each change of a group has its own outcome; the valid ones apply, in
 * order, each seeing those before it; all of it is there after a reopen. */
static void test_apply_group_statuses(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 3);
    rl_limit_def x = rolling("x", 1), y = concurrency("y", 2), z = rolling("z", 3), w = rolling("w", 4);
    rl_limit_def invalid = rolling("bad", 0), pattern = rolling("tenant:{tenant}:llm:daily_tokens", 1000);
    rl_registry_change group[] = {
        change(RL_REGISTRY_PUT, x, ""),
        change(RL_REGISTRY_DELETE, rolling("absent", 1), ""),
        change(RL_REGISTRY_PUT, invalid, ""),
        change(RL_REGISTRY_PUT, y, "preset:openai-tier-1"),
        change(RL_REGISTRY_PUT, z, "bad\x01origin"),
        change(RL_REGISTRY_PUT, z, ""),
        change(RL_REGISTRY_PUT, w, ""), /* a 4th key: full (max_limits 3) */
        change(RL_REGISTRY_DELETE, x, ""),
        change(RL_REGISTRY_PUT, w, ""), /* now there is room */
        change(RL_REGISTRY_DELETE, x, ""), /* already gone within the group */
        change(RL_REGISTRY_PUT_TEMPLATE, pattern, "preset:p"),
        change(RL_REGISTRY_DELETE_TEMPLATE, rolling("no:{such}", 1), ""),
        change((rl_registry_op)42, x, ""),
    };
    const rl_status wanted[] = {RL_OK, RL_UNKNOWN_LIMIT_KEY, RL_INVALID_REQUEST, RL_OK, RL_INVALID_REQUEST,
                                RL_OK, RL_INVALID_REQUEST, RL_OK, RL_OK, RL_UNKNOWN_LIMIT_KEY, RL_OK,
                                RL_UNKNOWN_LIMIT_KEY, RL_INVALID_REQUEST};
    const char *why[] = {"", "absent", "capacity", "", "origin", "", "full", "", "", "\"x\"", "", "no:{such}", "operation"};
    size_t n = sizeof group / sizeof group[0];
    apply_ok(registry, group, n);
    for (size_t i = 0; i < n; i++) {
        if (group[i].status != wanted[i]) fail_msg("change %zu: %s", i, rl_status_name(group[i].status));
        if (strstr(group[i].err, why[i]) == NULL || (wanted[i] == RL_OK) != (group[i].err[0] == '\0'))
            fail_msg("change %zu: err \"%s\"", i, group[i].err);
    }
    for (int reopen = 0; reopen < 2; reopen++) {
        rl_limit_def got;
        assert_int_equal(rl_registry_count(registry), 3);
        assert_false(rl_registry_get(registry, "x", &got));
        assert_true(rl_registry_get(registry, "y", &got));
        assert_def_equal(&got, &y);
        assert_string_equal(origin_of(registry, "y"), "preset:openai-tier-1");
        assert_string_equal(origin_of(registry, "z"), "");
        assert_string_equal(origin_of(registry, "w"), "");
        assert_null(origin_of(registry, "bad"));
        assert_int_equal(rl_registry_template_count(registry), 1);
        assert_string_equal(template_origin(registry, pattern.key), "preset:p");
        rl_registry_close(registry);
        registry = open_ok(f->path, 3);
    }
    /* Nothing to write: a group that changes nothing writes nothing. */
    file_bytes log = bytes_of(f->log);
    rl_registry_change nothing[] = {change(RL_REGISTRY_DELETE, x, ""), change(RL_REGISTRY_PUT, invalid, "")};
    apply_ok(registry, nothing, 2);
    assert_int_equal(nothing[0].status, RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(nothing[1].status, RL_INVALID_REQUEST);
    assert_int_equal(rl_registry_apply(registry, NULL, 0, NULL, 0), RL_OK);
    assert_unchanged(f->log, &log);
    rl_registry_close(registry);
}

/* A registry that never changed writes nothing: no log, no limits.json. */
static void test_refused_changes_write_nothing(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_registry_change group[] = {change(RL_REGISTRY_DELETE, rolling("a", 1), ""),
                                  change(RL_REGISTRY_DELETE_TEMPLATE, rolling("a", 1), "")};
    apply_ok(registry, group, 2);
    rl_registry_close(registry);
    assert_false(exists(f->path));
    assert_false(exists(f->log));
}

/* Templates: their own map and bound, put, replaced, listed, deleted, kept. */
static void test_templates(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 1);
    rl_limit_def limit = rolling("tenant:acme:llm:daily_tokens", 5);
    put_ok(registry, &limit); /* max_limits 1 does not bound templates */
    rl_limit_def t1 = rolling("tenant:{tenant}:llm:daily_tokens", 1000), t2 = concurrency("{a}:{b}", 3);
    char err[512] = "";
    assert_int_equal(rl_registry_put_template(registry, &t1, NULL, err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_put_template(registry, &t2, "preset:x", err, sizeof err), RL_OK);
    /* The same text as a limit key and as a pattern: two things. */
    rl_limit_def same = rolling(limit.key, 7);
    assert_int_equal(rl_registry_put_template(registry, &same, "", err, sizeof err), RL_OK);
    rl_limit_def got;
    assert_true(rl_registry_get(registry, limit.key, &got) && got.capacity == 5);
    assert_true(rl_registry_get_template(registry, limit.key, &got, NULL) && got.capacity == 7);
    assert_false(rl_registry_get(registry, t1.key, &got));
    assert_false(rl_registry_get_template(registry, NULL, &got, NULL));
    /* Refused: invalid, a bad origin. */
    rl_limit_def invalid = rolling("{x}", 0);
    assert_int_equal(rl_registry_put_template(registry, &invalid, NULL, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "capacity"));
    char long_origin[100];
    memset(long_origin, 'o', sizeof long_origin - 1);
    long_origin[sizeof long_origin - 1] = '\0';
    assert_int_equal(rl_registry_put_template(registry, &t1, long_origin, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, "origin"));
    assert_int_equal(rl_registry_put_template(registry, &t1, "tab\there", err, sizeof err), RL_INVALID_REQUEST);
    /* Replaced: the new definition and origin. */
    t1.capacity = 2000;
    assert_int_equal(rl_registry_put_template(registry, &t1, "preset:y", err, sizeof err), RL_OK);
    assert_int_equal(rl_registry_template_count(registry), 3);
    assert_int_equal(rl_registry_count(registry), 1);
    rl_limit_def *list = NULL;
    size_t count = 0;
    assert_int_equal(rl_registry_list_templates(registry, &list, &count), RL_OK);
    assert_int_equal(count, 3);
    assert_string_equal(list[0].key, "tenant:acme:llm:daily_tokens");
    assert_string_equal(list[1].key, "tenant:{tenant}:llm:daily_tokens");
    assert_true(list[1].capacity == 2000);
    assert_string_equal(list[2].key, "{a}:{b}");
    assert_def_equal(&list[2], &t2);
    free(list);
    assert_int_equal(rl_registry_delete_template(registry, limit.key, err, sizeof err), RL_OK);
    assert_true(rl_registry_get(registry, limit.key, &got)); /* the limit stays */
    rl_registry_close(registry);

    /* Across a reopen, then a compaction (at close), then a reopen. */
    for (int round = 0; round < 2; round++) {
        registry = open_ok(f->path, 1);
        assert_int_equal(rl_registry_template_count(registry), 2);
        assert_true(rl_registry_get_template(registry, t1.key, &got, NULL));
        assert_def_equal(&got, &t1);
        assert_string_equal(template_origin(registry, t1.key), "preset:y");
        assert_string_equal(template_origin(registry, t2.key), "preset:x");
        assert_null(template_origin(registry, limit.key));
        if (round == 0) assert_int_equal(rl__registry_compact(registry, err, sizeof err), RL_OK);
        rl_registry_close(registry);
    }
    char *text = read_text(f->path); /* templates never in limits.json */
    assert_null(strstr(text, "{tenant}"));
    free(text);
}

/* A limits.json written by v0.3 (no log) opens as it did, budgets too; the
 * first change starts the log and leaves the file as it was until a
 * compaction writes the new state into it. */
static void test_v03_file_opens(void **state) {
    fixture *f = *state;
    const char v03[] =
        "[\n"
        "  {\"key\":\"acme:spend\",\"kind\":\"budget\",\"capacity\":5000000,\"window_seconds\":0,"
        "\"timeout_seconds\":300,\"unit\":\"usd_micros\",\"description\":\"\",\"overage\":\"debt\","
        "\"period\":\"month\",\"timezone\":\"America/New_York\"},\n"
        "  {\"key\":\"global:llm:openai:gpt-4o:concurrency\",\"kind\":\"concurrency\",\"capacity\":50,"
        "\"window_seconds\":0,\"timeout_seconds\":600,\"unit\":\"\",\"description\":\"\",\"overage\":\"deny\"},\n"
        "  {\"key\":\"global:llm:openai:gpt-4o:tpm\",\"kind\":\"rolling\",\"capacity\":30000,\"window_seconds\":60,"
        "\"timeout_seconds\":0,\"unit\":\"tokens\",\"description\":\"per minute, \\\"quoted\\\" \xe2\x82\xac\","
        "\"overage\":\"debt\"}\n"
        "]\n";
    WRITE_TEXT(f->path, v03);
    rl_registry *registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 3);
    assert_int_equal(rl_registry_template_count(registry), 0);
    rl_limit_def got, tpm = rolling("global:llm:openai:gpt-4o:tpm", 30000);
    assert_true(rl_registry_get(registry, tpm.key, &got));
    assert_def_equal(&got, &tpm);
    assert_true(rl_registry_get(registry, "acme:spend", &got));
    assert_int_equal(got.period, RL_PERIOD_MONTH);
    assert_string_equal(got.timezone, "America/New_York");
    assert_string_equal(origin_of(registry, "acme:spend"), "");
    assert_false(exists(f->log)); /* opening writes nothing */
    rl_limit_def rpm = rolling("global:llm:openai:gpt-4o:rpm", 500);
    put_ok(registry, &rpm);
    assert_true(exists(f->log));
    char *text = read_text(f->path);
    assert_string_equal(text, v03);
    free(text);
    rl_registry_close(registry);
    /* Closed: limits.json holds all four, as v0.3 would have written them. */
    text = read_text(f->path);
    assert_non_null(strstr(text, "\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":500,"));
    assert_non_null(strstr(text, "\"period\":\"month\",\"timezone\":\"America/New_York\"}"));
    assert_true(strncmp(text, "[\n  {\"key\":\"acme:spend\"", 22) == 0);
    free(text);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 4);
    rl_registry_close(registry);
}

/* The records the log holds, framed: what an earlier run of the registry
 * could have appended. */
static void append_record(const char *log, rl_registry_op op, const rl_limit_def *def, const char *origin) {
    rl_buf record;
    rl__buf_init(&record);
    rl__reg_record_encode(&record, op, def, origin);
    unsigned char framed[RL__RECORD_FRAME_BYTES + RL__REG_RECORD_MAX_BYTES];
    size_t n = rl__record_frame(framed, record.data, record.len);
    rl__buf_free(&record);
    FILE *file = fopen(log, "ab");
    assert_non_null(file);
    assert_int_equal(fwrite(framed, 1, n, file), n);
    assert_int_equal(fclose(file), 0);
}

static void append_raw(const char *path, const void *data, size_t len) {
    FILE *file = fopen(path, "ab");
    assert_non_null(file);
    assert_int_equal(fwrite(data, 1, len, file), len);
    assert_int_equal(fclose(file), 0);
}

/* What a crash cuts short at the end of the log was never acknowledged: cut
 * (the file shrinks back), and the registry opens without it. */
static void test_torn_tail_cut(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def a = rolling("a", 1);
    put_ok(registry, &a);
    rl_registry_close(registry); /* compacted: limits.json holds a */
    /* b put by a process that then dies without closing: what a kill -9 leaves. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        registry = open_ok(f->path, 0);
        rl_limit_def b = rolling("b", 2);
        put_ok(registry, &b);
        _exit(0);
    }
    int child_status = 0;
    assert_int_equal(waitpid(child, &child_status, 0), child);
    assert_true(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
    struct stat st;
    assert_int_equal(stat(f->log, &st), 0);
    off_t whole = st.st_size;

    rl_limit_def c = rolling("c", 3);
    unsigned char framed[RL__RECORD_FRAME_BYTES + RL__REG_RECORD_MAX_BYTES];
    rl_buf record;
    rl__buf_init(&record);
    rl__reg_record_encode(&record, RL_REGISTRY_PUT, &c, "");
    size_t n = rl__record_frame(framed, record.data, record.len);
    rl__buf_free(&record);
    const size_t cuts[] = {3, RL__RECORD_FRAME_BYTES, n - 1};
    for (int kind = 0; kind < 5; kind++) {
        if (kind < 3) {
            append_raw(f->log, framed, cuts[kind]); /* cut inside the record */
        } else if (kind == 3) {
            unsigned char bad[sizeof framed];
            memcpy(bad, framed, n);
            bad[n - 2] ^= 0x20; /* whole, but its checksum fails: torn while written */
            append_raw(f->log, bad, n);
        } else {
            static const unsigned char zeros[4096];
            append_raw(f->log, zeros, sizeof zeros); /* a file system's zeros */
        }
        rl_registry *again = open_ok(f->path, 0);
        assert_int_equal(stat(f->log, &st), 0);
        assert_int_equal(st.st_size, whole);
        rl_limit_def got;
        assert_int_equal(rl_registry_count(again), 2);
        assert_true(rl_registry_get(again, "b", &got));
        assert_false(rl_registry_get(again, "c", &got));
        rl_registry_close(again); /* only read: leaves the files alone */
    }
}

/* Any one byte of the log changed, anywhere before its last record: the
 * opening is refused and both files are left as they were; only a change
 * in the last record may pass as its torn tail, which is cut. */
static void test_every_byte_of_the_log_changed_in_turn(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    put_keys(registry, 4);
    file_bytes good = bytes_of(f->log), snapshot = bytes_of(f->path);
    rl_registry_close(registry);
    /* The files as they were before the close compacted them. */
    write_file(f->path, (const char *)snapshot.data, snapshot.len);
    size_t last = RL__RECORD_FILE_HEADER_BYTES;
    for (size_t at = last; at < good.len;) { /* the frames, to the last one's start */
        size_t n = (size_t)good.data[at] | (size_t)good.data[at + 1] << 8 | (size_t)good.data[at + 2] << 16;
        if (at + RL__RECORD_FRAME_BYTES + n >= good.len) break;
        at += RL__RECORD_FRAME_BYTES + n;
        last = at;
    }
    unsigned char *damaged = malloc(good.len);
    assert_non_null(damaged);
    const unsigned char flips[] = {0x01, 0x80, 0xff};
    for (size_t at = 0; at < good.len; at++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            memcpy(damaged, good.data, good.len);
            damaged[at] ^= flips[k];
            write_file(f->log, (const char *)damaged, good.len);
            rl_registry *again = NULL;
            char err[512] = "";
            rl_status status = rl_registry_open(f->path, 0, &again, err, sizeof err);
            if (status == RL_OK) {
                if (at < last) fail_msg("byte %zu ^ 0x%02x opened", at, flips[k]);
                assert_int_equal(rl_registry_count(again), 3);
                rl_registry_close(again);
                continue;
            }
            assert_int_equal(status, RL_IO_ERROR);
            if (strstr(err, f->log) == NULL || strstr(err, "offset") == NULL) fail_msg("byte %zu: %s", at, err);
            file_bytes now = bytes_of(f->log);
            assert_int_equal(now.len, good.len);
            assert_memory_equal(now.data, damaged, good.len);
            free(now.data);
        }
    }
    free(damaged);
    free(good.data);
    free(snapshot.data);
}

/* Damage is refused, naming the file and the offset, and both files stay
 * exactly as they were. */
static void test_damage_refused(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    put_keys(registry, 4);
    file_bytes good = bytes_of(f->log);
    rl_registry_close(registry);
    /* The log as it was before the close compacted it. */
    write_file(f->log, (const char *)good.data, good.len);
    unsigned char *damaged = malloc(good.len + RL__RECORD_FRAME_BYTES + RL__REG_RECORD_MAX_BYTES);
    assert_non_null(damaged);

    /* A byte of the second record flipped, with records after it. */
    memcpy(damaged, good.data, good.len);
    size_t second = RL__RECORD_FILE_HEADER_BYTES + RL__RECORD_FRAME_BYTES +
                    (damaged[8] | damaged[9] << 8 | damaged[10] << 16);
    damaged[second + RL__RECORD_FRAME_BYTES + 20] ^= 0x01;
    write_file(f->log, (const char *)damaged, good.len);
    file_bytes snapshot = bytes_of(f->path), log = bytes_of(f->log);
    char offset[32];
    snprintf(offset, sizeof offset, "offset %zu", second);
    OPEN_REFUSED_NAMING(f->path, f->log, RL_IO_ERROR, offset, "checksum");
    assert_unchanged(f->path, &snapshot);
    assert_unchanged(f->log, &log);

    /* A wrong header. */
    memcpy(damaged, good.data, good.len);
    damaged[0] = 'X';
    write_file(f->log, (const char *)damaged, good.len);
    OPEN_REFUSED_NAMING(f->path, f->log, RL_IO_ERROR, "offset 0", "header");

    /* Records whose checksums hold but that say nothing this version reads:
     * an unknown type, a definition that is not valid. */
#define RECORD(text) {text, sizeof text - 1}
    const struct {
        const char *bytes;
        size_t len;
    } bad_records[] = {
        RECORD("Zfoo"),
        RECORD("P\x00{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":0,\"window_seconds\":1}"),
        RECORD("D\x00has space"),
        RECORD("P\x05" "ab"),
    };
#undef RECORD
    const char *says[] = {"unknown record type", "capacity must be", "key must be", "origin length"};
    for (size_t i = 0; i < 4; i++) {
        write_file(f->log, (const char *)good.data, good.len);
        unsigned char framed[256];
        size_t n = rl__record_frame(framed, bad_records[i].bytes, bad_records[i].len);
        append_raw(f->log, framed, n);
        append_record(f->log, RL_REGISTRY_DELETE, &(rl_limit_def){.key = "k0"}, NULL);
        snprintf(offset, sizeof offset, "offset %zu", good.len);
        snapshot = bytes_of(f->path);
        log = bytes_of(f->log);
        OPEN_REFUSED_NAMING(f->path, f->log, RL_IO_ERROR, offset, says[i]);
        assert_unchanged(f->path, &snapshot);
        assert_unchanged(f->log, &log);
    }
    free(damaged);
    free(good.data);
}

/* Compaction: the log stays near the size of a snapshot; a crash between
 * its two steps (limits.json rewritten, the log not yet) loses nothing,
 * since replaying the old log over the new file changes nothing. */
static void test_compaction(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl__registry_set_compact_bytes(registry, 4096);
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%02d", i % 40);
        rl_limit_def def = i % 5 == 0 ? concurrency(key, (uint64_t)i + 1) : rolling(key, (uint64_t)i + 1);
        rl_registry_change c[2] = {change(RL_REGISTRY_PUT, def, i % 3 == 0 ? "preset:p" : ""),
                                   change(RL_REGISTRY_DELETE, rolling("k07", 1), "")};
        apply_ok(registry, c, i % 7 == 0 ? 2 : 1);
        struct stat st;
        assert_int_equal(stat(f->log, &st), 0);
        if (st.st_size > 4096 + 3 * 2048) fail_msg("the log is %lld bytes after %d puts", (long long)st.st_size, i);
    }
    rl_limit_def *before = NULL;
    size_t count = 0;
    assert_int_equal(rl_registry_list(registry, &before, &count), RL_OK);
    char origins[64][RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    for (size_t i = 0; i < count; i++) strcpy(origins[i], origin_of(registry, before[i].key));

    /* The crash between the steps: the new limits.json, the old log. */
    file_bytes old_log = bytes_of(f->log);
    char err[512] = "";
    assert_int_equal(rl__registry_compact(registry, err, sizeof err), RL_OK);
    rl_registry_close(registry);
    write_file(f->log, (const char *)old_log.data, old_log.len);
    free(old_log.data);
    for (int round = 0; round < 2; round++) {
        registry = open_ok(f->path, 0);
        rl_limit_def *after = NULL;
        size_t after_count = 0;
        assert_int_equal(rl_registry_list(registry, &after, &after_count), RL_OK);
        assert_int_equal(after_count, count);
        for (size_t i = 0; i < count; i++) {
            assert_def_equal(&after[i], &before[i]);
            assert_string_equal(origin_of(registry, after[i].key), origins[i]);
        }
        free(after);
        /* A change, so that the close compacts: the second round reads the
         * compacted files. */
        put_ok(registry, &before[0]);
        rl_registry_close(registry);
    }
    free(before);
}

/* The bounds hold after the log is replayed too, and for templates. */
static void test_bounds_after_replay(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 3);
    put_keys(registry, 3);
    rl_registry_close(registry);
    /* The log over the file: counted after every record (a key put then
     * deleted within the log counts once at most). */
    append_record(f->log, RL_REGISTRY_PUT, &(rl_limit_def){.key = "k3", .kind = RL_KIND_ROLLING, .capacity = 1,
                                                           .window_seconds = 1}, NULL);
    append_record(f->log, RL_REGISTRY_DELETE, &(rl_limit_def){.key = "k0"}, NULL);
    registry = open_ok(f->path, 3);
    assert_int_equal(rl_registry_count(registry), 3);
    rl_registry_close(registry);
    char err[512] = "";
    append_record(f->log, RL_REGISTRY_PUT, &(rl_limit_def){.key = "k4", .kind = RL_KIND_ROLLING, .capacity = 1,
                                                           .window_seconds = 1}, NULL);
    assert_int_equal(rl_registry_open(f->path, 3, &registry, err, sizeof err), RL_INVALID_REQUEST);
    assert_non_null(strstr(err, f->log));
    assert_non_null(strstr(err, "more than 3"));

    /* RL_REGISTRY_MAX_TEMPLATES templates, and not one more. */
    registry = open_ok(f->path, 10);
    size_t n = RL_REGISTRY_MAX_TEMPLATES + 1;
    rl_registry_change *group = calloc(n, sizeof *group);
    assert_non_null(group);
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "t%05zu:{x}", i);
        group[i] = change(RL_REGISTRY_PUT_TEMPLATE, rolling(key, 1), "");
    }
    apply_ok(registry, group, n);
    for (size_t i = 0; i + 1 < n; i++) assert_int_equal(group[i].status, RL_OK);
    assert_int_equal(group[n - 1].status, RL_INVALID_REQUEST);
    assert_non_null(strstr(group[n - 1].err, "full"));
    assert_int_equal(rl_registry_template_count(registry), RL_REGISTRY_MAX_TEMPLATES);
    group[0] = change(RL_REGISTRY_PUT_TEMPLATE, rolling("t00000:{x}", 2), ""); /* a replacement fits */
    apply_ok(registry, group, 1);
    assert_int_equal(group[0].status, RL_OK);
    free(group);
    rl_registry_close(registry);
    registry = open_ok(f->path, 10);
    assert_int_equal(rl_registry_template_count(registry), RL_REGISTRY_MAX_TEMPLATES);
    rl_registry_close(registry);
}

/* The log's own tmp file, left by an interrupted compaction, is never read
 * and goes with the first write. */
static void test_stale_log_tmp_ignored(void **state) {
    fixture *f = *state;
    char log_tmp[200];
    snprintf(log_tmp, sizeof log_tmp, "%s.tmp", f->log);
    rl_registry *registry = open_ok(f->path, 0);
    rl_limit_def a = rolling("a", 1);
    put_ok(registry, &a);
    rl_registry_close(registry);
    WRITE_TEXT(log_tmp, "rlrec01\ngarbage");
    WRITE_TEXT(f->tmp, "[garbage");
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 1);
    assert_true(exists(log_tmp));
    rl_limit_def b = rolling("b", 1);
    put_ok(registry, &b);
    assert_false(exists(log_tmp));
    assert_false(exists(f->tmp));
    rl_registry_close(registry);
}

/* A compaction that cannot write leaves every change in the log: the
 * registry goes on, and the state is whole at the next open. */
static void test_compaction_failure_keeps_everything(void **state) {
    fixture *f = *state;
    rl_registry *registry = open_ok(f->path, 0);
    rl__registry_set_compact_bytes(registry, 512);
    rl_limit_def a = rolling("a", 1);
    put_ok(registry, &a);
    assert_int_equal(mkdir(f->tmp, 0755), 0); /* limits.json cannot be rewritten */
    put_keys(registry, 40);
    char err[512] = "";
    assert_int_equal(rl__registry_compact(registry, err, sizeof err), RL_IO_ERROR);
    assert_non_null(strstr(err, f->tmp));
    rl_registry_close(registry); /* its compaction fails too: a line on stderr */
    assert_int_equal(rmdir(f->tmp), 0);
    registry = open_ok(f->path, 0);
    assert_int_equal(rl_registry_count(registry), 41);
    rl_registry_close(registry);
}

/* A log that grew across runs (only templates changed: no close compacted
 * it) is compacted by the first change of a later run once it is past the
 * rule: the part compacted before a restart is not known, all of it counts. */
static void test_log_grown_across_runs_compacted(void **state) {
    fixture *f = *state;
    rl_limit_def t = rolling("tenant:{tenant}:tpm", 1);
    for (int run = 0; run < 3; run++) {
        rl_registry *registry = open_ok(f->path, 0);
        for (int i = 0; i < 20; i++) {
            t.capacity++;
            assert_int_equal(rl_registry_put_template(registry, &t, "preset:p", NULL, 0), RL_OK);
        }
        rl_registry_close(registry); /* no definition changed: no compaction */
    }
    struct stat st;
    assert_int_equal(stat(f->log, &st), 0);
    off_t grown = st.st_size;
    assert_true(grown > 4096);
    rl_registry *registry = open_ok(f->path, 0);
    rl__registry_set_compact_bytes(registry, 4096);
    t.capacity++;
    assert_int_equal(rl_registry_put_template(registry, &t, "preset:p", NULL, 0), RL_OK);
    assert_int_equal(stat(f->log, &st), 0);
    assert_true(st.st_size < 512); /* the header and one template */
    rl_registry_close(registry);
    registry = open_ok(f->path, 0);
    rl_limit_def got;
    assert_true(rl_registry_get_template(registry, t.key, &got, NULL) && got.capacity == t.capacity);
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
        cmocka_unit_test_setup_teardown(test_apply_group_statuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_changes_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_templates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v03_file_opens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_byte_of_the_log_changed_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds_after_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_log_tmp_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_failure_keeps_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_grown_across_runs_compacted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
