/* test_crash_safety.c — the registry (limits.json and its log,
 * limits.json.log) survives kill -9 of ratelimiterd, and a damaged one stops
 * start-up instead of starting empty.
 *
 * Rounds of: start the daemon (memory backend) on a registry of KEYS keys
 * at known definitions, stream admin PUTs from WRITERS threads (each owns a
 * disjoint set of keys, so every key's PUTs are in order and at most one is
 * in flight), SIGKILL it at a random moment (after 0..50 ms, or after a
 * random number of answered PUTs), then read the files as the registry does
 * (copies of them, opened: support/registry_text.h): every key exactly
 * once, each definition whole and equal to the last acknowledged one or to
 * the one in flight when the kill came (the initial one if none was
 * acknowledged). A restart on those files must serve exactly what they hold
 * and ignore a leftover limits.json.tmp or limits.json.log.tmp, which the
 * next PUT removes. (tests/unit/registry/test_registry_crash.c storms the
 * registry itself, deletes, templates and compactions included.)
 *
 * Every field of a definition depends on its generation (the n-th PUT of
 * that key), so a definition mixing fields of two PUTs matches neither.
 * test_restart.c covers a clean restart and some corrupt files; here are the
 * damage a crash or an operator can do (empty, truncated at any point, bad
 * fields deep in a real file, control bytes), with the file left untouched.
 *
 * RL_TEST_SEED=<n> repeats a run's random choices (the kill timing still
 * varies with the machine).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "support/daemon.h"
#include "support/registry_text.h"

enum { KEYS = 20, WRITERS = 3, ROUNDS = 20 };

static unsigned seed;

/* ---- definitions by (key, generation) ---------------------------------- */

static void key_name(int k, char out[32]) { snprintf(out, 32, "crash:key:%02d", k); }

/* Generation g of key k as a cJSON object with every field the daemon
 * writes. Generation 0 is what the test writes before the first start. */
static cJSON *definition(int k, unsigned g) {
    char key[32], unit[32], description[64];
    key_name(k, key);
    snprintf(unit, sizeof unit, "unit-%u", g);
    snprintf(description, sizeof description, "key %d generation %u", k, g);
    bool concurrency = g % 4 == 3;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "kind", concurrency ? "concurrency" : "rolling");
    /* Up and down, so that some PUTs are decreases (still 200, "decreasing"). */
    cJSON_AddNumberToObject(o, "capacity", (double)(1 + (g * 7919u + (unsigned)k * 31u) % 100000u));
    cJSON_AddNumberToObject(o, "window_seconds", concurrency ? 0 : (double)(60 + g));
    cJSON_AddNumberToObject(o, "timeout_seconds", concurrency ? (double)(30 + g) : 0);
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddStringToObject(o, "description", description);
    cJSON_AddStringToObject(o, "overage", g % 2 ? "deny" : "debt");
    return o;
}

static char *definition_text(int k, unsigned g) {
    cJSON *o = definition(k, g);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_non_null(text);
    return text;
}

/* The key index of a definition object, or -1. */
static int key_index(const cJSON *item) {
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(item, "key");
    if (!cJSON_IsString(key)) return -1;
    for (int k = 0; k < KEYS; k++) {
        char name[32];
        key_name(k, name);
        if (strcmp(name, key->valuestring) == 0) return k;
    }
    return -1;
}

static bool is_generation(const cJSON *item, int k, unsigned g) {
    cJSON *want = definition(k, g);
    bool same = cJSON_Compare(item, want, true);
    cJSON_Delete(want);
    return same;
}

/* ---- files -------------------------------------------------------------- */

static char *read_whole(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 4096, n = 0;
    char *data = malloc(cap + 1);
    assert_non_null(data);
    size_t got;
    while ((got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            data = realloc(data, cap + 1);
            assert_non_null(data);
        }
    }
    fclose(f);
    data[n] = '\0';
    *len = n;
    return data;
}

static void write_bytes(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void tmp_path_of(const rl_test_daemon *d, char out[320]) {
    snprintf(out, 320, "%.*s.tmp", (int)sizeof d->registry_path, d->registry_path);
}

static void log_path_of(const rl_test_daemon *d, char out[320]) {
    snprintf(out, 320, "%.*s.log", (int)sizeof d->registry_path, d->registry_path);
}

/* The registry's state as a JSON array (limits.json with the log replayed),
 * len set; NULL if there is none. Fails the test if the files do not open. */
static char *registry_state(const rl_test_daemon *d, size_t *len) {
    char err[512] = "";
    char *text = rl_test_registry_text(d->registry_path, err, sizeof err);
    if (text == NULL && err[0] != '\0') fail_msg("seed %u: the registry does not open: %s", seed, err);
    if (text != NULL) *len = strlen(text);
    return text;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes the registry holding generation 0 of every key. */
static void write_initial_registry(rl_test_daemon *d) {
    cJSON *array = cJSON_CreateArray();
    for (int k = 0; k < KEYS; k++) cJSON_AddItemToArray(array, definition(k, 0));
    char *text = cJSON_Print(array);
    rl_test_daemon_write_registry(d, text);
    free(text);
    cJSON_Delete(array);
}

/* One daemon at a time, in static storage so that the teardown can stop it
 * and remove its directory when a test fails half-way. */
static rl_test_daemon the_daemon;
static bool daemon_in_use;

static rl_test_daemon *begin(void) {
    rl_test_daemon_init(&the_daemon);
    daemon_in_use = true;
    return &the_daemon;
}

static void end(rl_test_daemon *d) {
    rl_test_daemon_cleanup(d);
    daemon_in_use = false;
}

/* Starts d and checks its start-up line counts this many limits. */
static void start_expecting(rl_test_daemon *d, int limits) {
    assert_true(rl_test_daemon_start(d, NULL));
    char text[8192], wanted[64];
    rl_test_daemon_read_stderr(d, text, sizeof text);
    snprintf(wanted, sizeof wanted, "(backend memory, %d limits,", limits);
    if (strstr(text, wanted) == NULL) fail_msg("start-up said:\n%s", text);
}

static int teardown(void **state) {
    (void)state;
    if (daemon_in_use) end(&the_daemon);
    return 0;
}

/* ---- the writers ----------------------------------------------------------- */

typedef struct writer {
    pthread_t thread;
    int index;
    uint16_t port;
    unsigned seed;
    atomic_int *acked_total;
    atomic_bool *stop;
    /* Per key (only this writer's keys are touched): the generation last
     * sent, and the last that got 200. Read by the main thread after join. */
    unsigned sent[KEYS], acked[KEYS];
    long puts_ok;
    char unexpected[512]; /* a non-200 answer other than a dead connection */
} writer;

static void *write_puts(void *arg) {
    writer *w = arg;
    rl_test_client client;
    if (!rl_test_client_init(&client, w->port)) {
        snprintf(w->unexpected, sizeof w->unexpected, "writer %d: curl did not start", w->index);
        return NULL;
    }
    unsigned state = w->seed;
    int mine[KEYS], count = 0;
    for (int k = w->index; k < KEYS; k += WRITERS) mine[count++] = k;
    while (!atomic_load(w->stop)) {
        int k = mine[rand_r(&state) % (unsigned)count];
        unsigned g = ++w->sent[k]; /* recorded before sending: it may land even unanswered */
        char *body = definition_text(k, g);
        rl_test_response r;
        long status = rl_test_client_request(&client, "PUT", "/v1/admin/limits", body, &r);
        free(body);
        if (status == 200) {
            w->acked[k] = g;
            w->puts_ok++;
            atomic_fetch_add(w->acked_total, 1);
        } else if (status != 0) {
            snprintf(w->unexpected, sizeof w->unexpected, "writer %d: PUT gen %u of key %d: HTTP %ld %s",
                     w->index, g, k, status, r.body);
        }
        rl_test_response_free(&r);
        if (status != 200) break; /* 0: the daemon is gone */
    }
    rl_test_client_cleanup(&client);
    return NULL;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void kill9(rl_test_daemon *d) {
    rl_test_client_cleanup(&d->client);
    assert_int_equal(kill(d->pid, SIGKILL), 0);
    int status;
    while (waitpid(d->pid, &status, 0) < 0) assert_int_equal(errno, EINTR);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    d->pid = 0;
}

/* ---- checks --------------------------------------------------------------- */

typedef struct round_stats {
    int unacked_landed; /* keys whose file value is a PUT that got no answer */
    int stale_tmp;      /* rounds that left limits.json.tmp or limits.json.log.tmp behind */
    long puts_ok;
} round_stats;

/* The registry after the crash: every key once, each a whole definition of
 * an allowed generation. Returns the parsed array (caller deletes). */
static cJSON *check_file_after_crash(const rl_test_daemon *d, int round, const unsigned *acked,
                                     const unsigned *sent, round_stats *stats) {
    size_t len = 0;
    char *text = registry_state(d, &len);
    if (text == NULL) fail_msg("seed %u round %d: %s is gone after kill -9", seed, round, d->registry_path);
    cJSON *array = cJSON_ParseWithLength(text, len);
    if (array == NULL || !cJSON_IsArray(array))
        fail_msg("seed %u round %d: %s is not a JSON array after kill -9:\n%s", seed, round,
                 d->registry_path, text);
    if (cJSON_GetArraySize(array) != KEYS)
        fail_msg("seed %u round %d: %d definitions, wanted %d:\n%s", seed, round,
                 cJSON_GetArraySize(array), KEYS, text);
    bool seen[KEYS] = {false};
    const cJSON *item;
    cJSON_ArrayForEach(item, array) {
        int k = key_index(item);
        if (k < 0 || seen[k]) fail_msg("seed %u round %d: unknown or repeated key in:\n%s", seed, round, text);
        seen[k] = true;
        /* Allowed: the last acknowledged generation (0: the initial one),
         * or the one sent after it, if any (it was in flight). */
        if (is_generation(item, k, acked[k])) continue;
        if (sent[k] > acked[k] && is_generation(item, k, sent[k])) {
            stats->unacked_landed++;
            continue;
        }
        char *got = cJSON_PrintUnformatted(item);
        fail_msg("seed %u round %d: key %d holds neither generation %u (last acknowledged) nor %u (last "
                 "sent): %s",
                 seed, round, k, acked[k], sent[k], got);
    }
    free(text);
    return array;
}

/* GET /v1/admin/limits serves exactly the definitions of file (an array). */
static void check_served_equals_file(rl_test_daemon *d, const cJSON *file, int round) {
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(d, "GET", "/v1/admin/limits", NULL, &r), 200);
    cJSON *root = cJSON_Parse(r.body);
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(root, "limits");
    if (!cJSON_IsArray(limits) || cJSON_GetArraySize(limits) != cJSON_GetArraySize(file))
        fail_msg("seed %u round %d: GET /v1/admin/limits after restart: %s", seed, round, r.body);
    const cJSON *stored;
    cJSON_ArrayForEach(stored, file) {
        const cJSON *served = NULL, *info;
        cJSON_ArrayForEach(info, limits) {
            const cJSON *def = cJSON_GetObjectItemCaseSensitive(info, "definition");
            if (key_index(def) == key_index(stored)) served = def;
        }
        if (served == NULL || !cJSON_Compare(served, stored, true)) {
            char *want = cJSON_PrintUnformatted(stored);
            fail_msg("seed %u round %d: served after restart differs from the file: file %s, served %s",
                     seed, round, want, r.body);
        }
    }
    cJSON_Delete(root);
    rl_test_response_free(&r);
}

static void run_round(int round, round_stats *stats) {
    rl_test_daemon *d = begin();
    write_initial_registry(d);
    assert_true(rl_test_daemon_start(d, NULL));

    atomic_int acked_total = 0;
    atomic_bool stop = false;
    writer writers[WRITERS];
    memset(writers, 0, sizeof writers);
    for (int i = 0; i < WRITERS; i++) {
        writers[i] = (writer){.index = i, .port = d->port, .seed = seed * 131u + (unsigned)round * 17u + (unsigned)i,
                              .acked_total = &acked_total, .stop = &stop};
        assert_int_equal(pthread_create(&writers[i].thread, NULL, write_puts, &writers[i]), 0);
    }
    /* Even rounds: after 0..50 ms. Odd rounds: after 0..60 answered PUTs. */
    unsigned choice = (unsigned)rand();
    if (round % 2 == 0) {
        sleep_us((long)(choice % 50001u));
    } else {
        int target = (int)(choice % 61u);
        for (int waited_ms = 0; atomic_load(&acked_total) < target && waited_ms < 5000; waited_ms++)
            sleep_us(1000);
    }
    kill9(d);
    atomic_store(&stop, true);

    unsigned acked[KEYS] = {0}, sent[KEYS] = {0};
    for (int i = 0; i < WRITERS; i++) {
        assert_int_equal(pthread_join(writers[i].thread, NULL), 0);
        if (writers[i].unexpected[0] != '\0') fail_msg("seed %u round %d: %s", seed, round, writers[i].unexpected);
        stats->puts_ok += writers[i].puts_ok;
        for (int k = i; k < KEYS; k += WRITERS) {
            acked[k] = writers[i].acked[k];
            sent[k] = writers[i].sent[k];
        }
    }
    cJSON *file = check_file_after_crash(d, round, acked, sent, stats);

    /* A write cut between creating the tmp file and the rename leaves it
     * behind: the loader must never read it, and the next PUT removes it. */
    char tmp[320], log[320], log_tmp[330];
    tmp_path_of(d, tmp);
    log_path_of(d, log);
    snprintf(log_tmp, sizeof log_tmp, "%s.tmp", log);
    bool stale = exists(tmp) || exists(log_tmp);
    if (stale) stats->stale_tmp++;

    assert_true(rl_test_daemon_start(d, NULL));
    char text[8192], wanted[64];
    rl_test_daemon_read_stderr(d, text, sizeof text);
    snprintf(wanted, sizeof wanted, "(backend memory, %d limits,", KEYS);
    if (strstr(text, wanted) == NULL) fail_msg("seed %u round %d: restart said:\n%s", seed, round, text);
    check_served_equals_file(d, file, round);

    /* The restarted daemon writes again: the tmp files are gone, the new
     * generation is in the registry. */
    char *body = definition_text(0, 1000);
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(d, "PUT", "/v1/admin/limits", body, &r), 200);
    rl_test_response_free(&r);
    free(body);
    assert_false(exists(tmp));
    assert_false(exists(log_tmp));
    size_t len;
    char *after = registry_state(d, &len);
    cJSON *array = cJSON_ParseWithLength(after, len);
    assert_true(cJSON_IsArray(array));
    assert_int_equal(cJSON_GetArraySize(array), KEYS);
    bool found = false;
    const cJSON *item;
    cJSON_ArrayForEach(item, array) if (key_index(item) == 0) found = is_generation(item, 0, 1000);
    assert_true(found);
    cJSON_Delete(array);
    free(after);
    assert_int_equal(rl_test_daemon_stop(d), 0);

    cJSON_Delete(file);
    end(d);
}

static void test_kill9_during_admin_puts(void **state) {
    (void)state;
    round_stats stats = {0};
    for (int round = 0; round < ROUNDS; round++) run_round(round, &stats);
    print_message("%d rounds: %ld PUTs answered 200 before the kills; %d keys held an unanswered PUT's "
                  "definition; %d rounds left a tmp file behind (seed %u)\n",
                  ROUNDS, stats.puts_ok, stats.unacked_landed, stats.stale_tmp, seed);
}

/* A stale tmp file as a crash leaves it, whatever it holds, is never read:
 * next to a valid file (its content is served), and in place of a missing
 * file (a first PUT that never finished: the daemon starts empty, as it did
 * before that PUT). */
static void test_stale_tmp_is_ignored(void **state) {
    (void)state;
    rl_test_daemon *d = begin();
    char tmp[320];
    tmp_path_of(d, tmp);

    write_initial_registry(d);
    const char garbage[] = "[{\"key\":\"crash:key:00\",\"kind\":\"rolling\",\"capa";
    write_bytes(tmp, garbage, sizeof garbage - 1);
    start_expecting(d, 20);
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(d, "GET", "/v1/admin/limits/crash:key:00", NULL, &r), 200);
    cJSON *root = cJSON_Parse(r.body);
    assert_true(is_generation(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "limit"),
                                                               "definition"),
                              0, 0));
    cJSON_Delete(root);
    rl_test_response_free(&r);
    assert_int_equal(rl_test_daemon_stop(d), 0);
    assert_true(exists(tmp)); /* left alone until the next write */

    /* No limits.json, only the tmp of an interrupted first PUT. */
    assert_int_equal(unlink(d->registry_path), 0);
    start_expecting(d, 0);
    char *body = definition_text(3, 1);
    assert_int_equal(rl_test_daemon_http(d, "PUT", "/v1/admin/limits", body, &r), 200);
    rl_test_response_free(&r);
    free(body);
    assert_false(exists(tmp));
    assert_int_equal(rl_test_daemon_stop(d), 0);
    size_t len;
    char *file = read_whole(d->registry_path, &len);
    cJSON *array = cJSON_ParseWithLength(file, len);
    assert_int_equal(cJSON_GetArraySize(array), 1);
    assert_true(is_generation(cJSON_GetArrayItem(array, 0), 3, 1));
    cJSON_Delete(array);
    free(file);
    end(d);
}

/* ---- damaged files stop start-up --------------------------------------------- */

/* The daemon must refuse len bytes of data as its registry: exit 1 with
 * "cannot start", the path and fragment on stderr, never listening, and the
 * file byte for byte as it was (no tmp file either). */
static void expect_refused(const char *what, const char *data, size_t len, const char *fragment) {
    rl_test_daemon *d = begin();
    write_bytes(d->registry_path, data, len);
    char text[8192];
    int code = rl_test_daemon_run_to_exit(d, NULL, 20000, text, sizeof text);
    if (code == -1) fail_msg("%s: still running after 20 s: it started instead of refusing:\n%s", what, text);
    if (code != 1) fail_msg("%s: exit %d, wanted 1:\n%s", what, code, text);
    if (strstr(text, "ratelimiterd: cannot start: ") == NULL || strstr(text, d->registry_path) == NULL ||
        strstr(text, fragment) == NULL || strstr(text, "listening on") != NULL)
        fail_msg("%s: unclear message (wanted the path and \"%s\"):\n%s", what, fragment, text);
    size_t after_len = 0;
    char *after = read_whole(d->registry_path, &after_len);
    if (after == NULL || after_len != len || memcmp(after, data, len) != 0)
        fail_msg("%s: the refused file was changed (%zu bytes, was %zu)", what, after_len, len);
    free(after);
    char tmp[320], log[320];
    tmp_path_of(d, tmp);
    log_path_of(d, log);
    assert_false(exists(tmp));
    assert_false(exists(log));
    end(d);
}

static void expect_refused_text(const char *text, const char *fragment) {
    expect_refused(text, text, strlen(text), fragment);
}

/* The daemon's own file, made by PUTs (as a crash would find it). */
static char *file_written_by_daemon(size_t *len) {
    rl_test_daemon *d = begin();
    assert_true(rl_test_daemon_start(d, NULL));
    for (int k = 0; k < KEYS; k++) {
        char *body = definition_text(k, (unsigned)k);
        rl_test_response r;
        assert_int_equal(rl_test_daemon_http(d, "PUT", "/v1/admin/limits", body, &r), 200);
        rl_test_response_free(&r);
        free(body);
    }
    assert_int_equal(rl_test_daemon_stop(d), 0);
    char *data = read_whole(d->registry_path, len);
    assert_non_null(data);
    end(d);
    return data;
}

static void test_empty_and_truncated_registry(void **state) {
    (void)state;
    /* A crash cannot leave an empty file (only whole files are renamed in):
     * empty is damage, not "no limits". */
    expect_refused("empty file", "", 0, "empty");
    expect_refused_text("  \n\t\n", "JSON");

    size_t len = 0;
    char *data = file_written_by_daemon(&len);
    assert_true(len > 100);
    /* Every cut short of the closing bracket is invalid JSON: a handful of
     * them, through the middle of strings, numbers and between items. */
    const size_t cuts[] = {1, 2, 17, len / 5, len / 3, len / 2, len - len / 3, len - 40, len - 3, len - 2};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "the daemon's file cut to %zu of %zu bytes", cuts[i], len);
        expect_refused(what, data, cuts[i], "not valid JSON");
    }
    /* ...while the whole file (and without its final newline) is fine. */
    rl_test_daemon *d = begin();
    write_bytes(d->registry_path, data, len - 1);
    start_expecting(d, 20);
    assert_int_equal(rl_test_daemon_stop(d), 0);
    end(d);

    /* Bytes a file system can leave after a crash without data journaling. */
    const char zeros[64] = {0};
    expect_refused("64 NUL bytes", zeros, sizeof zeros, "control character");
    char *zero_tail = malloc(len + 64);
    memcpy(zero_tail, data, len - 2);
    memset(zero_tail + len - 2, 0, 66);
    expect_refused("the daemon's file with NULs in place of its end", zero_tail, len + 64, "control character");
    free(zero_tail);
    free(data);
}

static void test_not_an_array_of_definitions(void **state) {
    (void)state;
    expect_refused_text("{}", "array");
    expect_refused_text("null", "array");
    expect_refused_text("42", "array");
    expect_refused_text("\"limits.json\"", "array");
    expect_refused_text("{\"limits\":[]}", "array");
    expect_refused_text("[1]", "item 0: a limit definition must be a JSON object");
    expect_refused_text("[[]]", "item 0: a limit definition must be a JSON object");

    /* An explicitly empty array is a registry with no limits. */
    rl_test_daemon *d = begin();
    rl_test_daemon_write_registry(d, "[]\n");
    start_expecting(d, 0);
    assert_int_equal(rl_test_daemon_stop(d), 0);
    end(d);
}

/* One bad field in item 7 of an otherwise valid 20-key file: refused,
 * naming the item and the field. */
static void refuse_with_item7(const char *field, cJSON *value, const char *fragment) {
    cJSON *array = cJSON_CreateArray();
    for (int k = 0; k < KEYS; k++) cJSON_AddItemToArray(array, definition(k, 0)); /* all rolling */
    cJSON *item = cJSON_GetArrayItem(array, 7);
    if (value != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(item, field, value);
    else
        cJSON_DeleteItemFromObjectCaseSensitive(item, field);
    char *text = cJSON_Print(array);
    char what[128];
    snprintf(what, sizeof what, "item 7 with a bad %s", field);
    char wanted[160];
    snprintf(wanted, sizeof wanted, "item 7: %s", fragment);
    expect_refused(what, text, strlen(text), wanted);
    free(text);
    cJSON_Delete(array);
}

static void test_bad_field_in_registry(void **state) {
    (void)state;
    refuse_with_item7("kind", cJSON_CreateString("bogus"), "kind must be");
    refuse_with_item7("overage", cJSON_CreateString("maybe"), "overage must be");
    refuse_with_item7("capacity", cJSON_CreateString("500"), "capacity must be");
    refuse_with_item7("capacity", cJSON_CreateNumber(-1), "capacity must be");
    refuse_with_item7("capacity", cJSON_CreateNumber(1.5), "capacity must be");
    refuse_with_item7("capacity", NULL, "capacity is required");
    refuse_with_item7("key", NULL, "key is required");
    refuse_with_item7("key", cJSON_CreateString("has space"), "key must be");
    refuse_with_item7("window_seconds", cJSON_CreateNumber(0), "window_seconds must be");
    refuse_with_item7("window_seconds", cJSON_CreateNumber(2.5), "window_seconds must be");
    refuse_with_item7("unit", cJSON_CreateNumber(3), "unit must be");
    /* Item 7 given item 3's key: two definitions of one key. */
    refuse_with_item7("key", cJSON_CreateString("crash:key:03"), "key \"crash:key:03\" is already defined by item 3");
}

/* ---- the log: a torn tail is cut, damage stops start-up --------------------------- */

/* A registry as a kill -9 leaves it: limits.json with generation 0 of every
 * key, and a log of generation 1 of keys 0..4 (five records). */
static void make_logged_registry(rl_test_daemon *d) {
    write_initial_registry(d);
    assert_true(rl_test_daemon_start(d, NULL));
    for (int k = 0; k < 5; k++) {
        char *body = definition_text(k, 1);
        rl_test_response r;
        assert_int_equal(rl_test_daemon_http(d, "PUT", "/v1/admin/limits", body, &r), 200);
        rl_test_response_free(&r);
        free(body);
    }
    kill9(d);
}

/* The key's generation as the daemon serves it. */
static void expect_served(rl_test_daemon *d, int k, unsigned g) {
    char key[32], path[64];
    key_name(k, key);
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    rl_test_response r;
    assert_int_equal(rl_test_daemon_http(d, "GET", path, NULL, &r), 200);
    cJSON *root = cJSON_Parse(r.body);
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "limit"), "definition");
    if (!is_generation(def, k, g)) fail_msg("key %d: wanted generation %u, served %s", k, g, r.body);
    cJSON_Delete(root);
    rl_test_response_free(&r);
}

static void test_torn_log_tail_is_cut(void **state) {
    (void)state;
    rl_test_daemon *d = begin();
    make_logged_registry(d);
    char log[320];
    log_path_of(d, log);
    size_t len = 0;
    char *whole = read_whole(log, &len);
    assert_non_null(whole);
    /* Half of a sixth record: a write the crash cut short. */
    char *torn = malloc(len + 40);
    memcpy(torn, whole, len);
    memcpy(torn + len, "\x80\x00\x00\x00\x12\x34\x56\x78P\x00{\"key\":\"crash:key:05\",", 32);
    write_bytes(log, torn, len + 32);
    start_expecting(d, KEYS);
    char text[8192];
    rl_test_daemon_read_stderr(d, text, sizeof text);
    if (strstr(text, "cut a torn tail") == NULL || strstr(text, log) == NULL) fail_msg("start-up said:\n%s", text);
    for (int k = 0; k < 6; k++) expect_served(d, k, k < 5 ? 1 : 0);
    size_t after_len = 0;
    char *after = read_whole(log, &after_len);
    assert_int_equal(after_len, len); /* cut back to the whole records */
    assert_memory_equal(after, whole, len);
    free(after);
    free(torn);
    free(whole);
    assert_int_equal(rl_test_daemon_stop(d), 0);
    end(d);
}

static void test_damaged_log_stops_start(void **state) {
    (void)state;
    rl_test_daemon *d = begin();
    make_logged_registry(d);
    char log[320];
    log_path_of(d, log);
    size_t len = 0, file_len = 0;
    char *data = read_whole(log, &len);
    char *file = read_whole(d->registry_path, &file_len);
    assert_true(len > 200);
    /* A byte inside the second record (records after it: not a torn tail). */
    size_t second = 8 + 8 + (size_t)((unsigned char)data[8] | (unsigned char)data[9] << 8);
    data[second + 30] ^= 0x04;
    write_bytes(log, data, len);
    char text[8192], offset[48];
    int code = rl_test_daemon_run_to_exit(d, NULL, 20000, text, sizeof text);
    snprintf(offset, sizeof offset, "damaged at offset %zu", second);
    if (code != 1 || strstr(text, "ratelimiterd: cannot start: ") == NULL || strstr(text, log) == NULL ||
        strstr(text, offset) == NULL)
        fail_msg("exit %d, wanted 1 naming %s and \"%s\":\n%s", code, log, offset, text);
    size_t now_len = 0, now_file_len = 0;
    char *now = read_whole(log, &now_len), *now_file = read_whole(d->registry_path, &now_file_len);
    if (now_len != len || memcmp(now, data, len) != 0 || now_file_len != file_len ||
        memcmp(now_file, file, file_len) != 0)
        fail_msg("the refused files were changed");
    free(now);
    free(now_file);
    free(data);
    free(file);
    end(d);
}

int main(void) {
    const char *env = getenv("RL_TEST_SEED");
    seed = env != NULL ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    srand(seed);
    fprintf(stderr, "test_crash_safety: seed %u (RL_TEST_SEED=%u repeats it)\n", seed, seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_kill9_during_admin_puts, teardown),
        cmocka_unit_test_teardown(test_stale_tmp_is_ignored, teardown),
        cmocka_unit_test_teardown(test_empty_and_truncated_registry, teardown),
        cmocka_unit_test_teardown(test_not_an_array_of_definitions, teardown),
        cmocka_unit_test_teardown(test_bad_field_in_registry, teardown),
        cmocka_unit_test_teardown(test_torn_log_tail_is_cut, teardown),
        cmocka_unit_test_teardown(test_damaged_log_stops_start, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
