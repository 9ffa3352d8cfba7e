/* test_registry_crash.c — the registry's files survive kill -9 at any
 * moment: rounds of a child process storming one registry with puts and
 * deletes of definitions and templates, single and in groups, from several
 * threads, each thread owning its keys (so every key has at most one change
 * in flight), SIGKILLed at a random moment; after each kill the files must
 * open, and every key must be in its last acknowledged state or in the
 * state of the change in flight when the kill came (absent, or a whole
 * definition with its origin: every field of a definition and its origin
 * depend on its generation, so a mix of two changes matches neither).
 * The log is compacted every few records, so kills land inside compactions
 * too. The next round's child starts on the files the kill left.
 *
 * The child reports each key's states in shared memory: `next` (the state
 * a change in flight would leave: written before the call) and `acked`
 * (written once the call returned OK). State 0 is absent; g > 0 is
 * generation g.
 *
 * RL_TEST_SEED=<n> repeats a run's random choices (the kill timing still
 * varies with the machine).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ratelimiter/registry.h"
#include "registry/registry_internal.h"

enum { THREADS = 4, LIMITS_PER_THREAD = 10, TEMPLATES_PER_THREAD = 4, ROUNDS = 40 };
enum { KEYS_PER_THREAD = LIMITS_PER_THREAD + TEMPLATES_PER_THREAD, KEYS = THREADS * KEYS_PER_THREAD };

/* Key i: thread i / KEYS_PER_THREAD owns it; the last TEMPLATES_PER_THREAD
 * of each thread's are templates. */
static bool is_template_key(int i) { return i % KEYS_PER_THREAD >= LIMITS_PER_THREAD; }

static void key_name(int i, char out[48]) {
    if (is_template_key(i))
        snprintf(out, 48, "tenant:{tenant}:crash:%02d", i);
    else
        snprintf(out, 48, "crash:key:%02d", i);
}

typedef struct shared {
    _Atomic uint32_t acked[KEYS], next[KEYS];
    _Atomic uint32_t generation[KEYS]; /* the last one used, across rounds */
    _Atomic long acked_changes;
} shared;

static shared *board;
static unsigned seed;
static char dir[64], path[128];

/* ---- generation g of key i ------------------------------------------------------------ */

static rl_limit_def definition(int i, uint32_t g) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    key_name(i, def.key);
    bool concurrency = g % 3 == 1;
    def.kind = concurrency ? RL_KIND_CONCURRENCY : RL_KIND_ROLLING;
    def.capacity = 1 + (g * 7919u + (uint32_t)i * 31u) % 100000u;
    def.window_seconds = concurrency ? 0 : 60 + g % 1000;
    def.timeout_seconds = concurrency ? 30 + g % 1000 : 0;
    snprintf(def.unit, sizeof def.unit, "u%u", g);
    /* Its length varies, so records and items do too. */
    snprintf(def.description, sizeof def.description, "key %d generation %u %.*s", i, g, (int)(g % 300),
             "....................................................................................................."
             "....................................................................................................."
             "....................................................................................................");
    def.overage = g % 2 ? RL_OVERAGE_DENY : RL_OVERAGE_DEBT;
    return def;
}

static void origin_of(uint32_t g, char out[RL_REGISTRY_ORIGIN_MAX_LEN + 1]) {
    if (g % 4 == 0)
        out[0] = '\0';
    else
        snprintf(out, RL_REGISTRY_ORIGIN_MAX_LEN + 1, "preset:generation-%u", g);
}

/* ---- the child: a storm of changes ---------------------------------------------------- */

typedef struct storm {
    rl_registry *registry;
    int thread;
    unsigned state;
} storm;

static void die(const char *what, rl_status status, const char *err) {
    fprintf(stderr, "test_registry_crash child: %s: %s: %s\n", what, rl_status_name(status), err);
    _exit(3);
}

/* One change of key i, its next state chosen at random; filled into c. */
static void plan_change(storm *s, int i, rl_registry_change *c) {
    memset(c, 0, sizeof *c);
    bool delete = rand_r(&s->state) % 4 == 0;
    uint32_t next = delete ? 0 : atomic_load(&board->generation[i]) + 1;
    if (next > 0) atomic_store(&board->generation[i], next);
    c->def = definition(i, next);
    if (delete) key_name(i, c->def.key);
    c->op = is_template_key(i) ? (delete ? RL_REGISTRY_DELETE_TEMPLATE : RL_REGISTRY_PUT_TEMPLATE)
                               : (delete ? RL_REGISTRY_DELETE : RL_REGISTRY_PUT);
    origin_of(next, c->origin);
    atomic_store(&board->next[i], next); /* before the call: it may land unanswered */
}

static void *storm_thread(void *arg) {
    storm *s = arg;
    int first = s->thread * KEYS_PER_THREAD;
    for (;;) {
        /* One change, or a group of 2..5 on distinct keys of this thread. */
        int n = rand_r(&s->state) % 3 == 0 ? 2 + rand_r(&s->state) % 4 : 1;
        rl_registry_change group[5];
        int keys[5];
        int start = rand_r(&s->state) % KEYS_PER_THREAD;
        for (int j = 0; j < n; j++) {
            keys[j] = first + (start + j * 3) % KEYS_PER_THREAD; /* 3 is prime to 14: distinct */
            plan_change(s, keys[j], &group[j]);
        }
        char err[256] = "";
        rl_status status = rl_registry_apply(s->registry, group, (size_t)n, err, sizeof err);
        if (status != RL_OK) die("apply", status, err);
        for (int j = 0; j < n; j++) {
            int i = keys[j];
            if (group[j].status == RL_OK) {
                atomic_store(&board->acked[i], atomic_load(&board->next[i]));
                atomic_fetch_add(&board->acked_changes, 1);
            } else if (group[j].status == RL_UNKNOWN_LIMIT_KEY && atomic_load(&board->acked[i]) == 0) {
                atomic_store(&board->next[i], 0); /* deleting the absent: nothing in flight */
            } else {
                die("a change", group[j].status, group[j].err);
            }
        }
    }
    return NULL;
}

static void run_child(unsigned child_seed) {
    rl_registry *registry = NULL;
    char err[512] = "";
    rl_status status = rl_registry_open(path, 0, &registry, err, sizeof err);
    if (status != RL_OK) die("open", status, err);
    /* Compactions every few records: kills land inside them too. */
    rl__registry_set_compact_bytes(registry, 2048);
    storm storms[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        storms[t] = (storm){registry, t, child_seed * 977u + (unsigned)t};
        if (pthread_create(&threads[t], NULL, storm_thread, &storms[t]) != 0) die("pthread_create", RL_OK, "");
    }
    for (;;) pause(); /* until the kill */
}

/* ---- the parent: kill, then check ------------------------------------------------------ */

/* The state the files give key i: 0 if absent, else the generation the
 * definition and its origin are (fails if they are no generation's). */
static uint32_t state_of(rl_registry *registry, int i, int round) {
    char key[48], origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1] = "";
    key_name(i, key);
    rl_limit_def got;
    bool found = is_template_key(i) ? rl_registry_get_template(registry, key, &got, origin)
                                    : rl_registry_get_origin(registry, key, &got, origin);
    if (!found) return 0;
    int index = -1;
    unsigned g = 0;
    if (sscanf(got.description, "key %d generation %u", &index, &g) != 2 || index != i || g == 0)
        fail_msg("seed %u round %d: %s holds a definition of no generation: \"%s\"", seed, round, key,
                 got.description);
    rl_limit_def want = definition(i, g);
    char want_origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    origin_of(g, want_origin);
    if (memcmp(&got, &want, sizeof got) != 0 || strcmp(origin, want_origin) != 0)
        fail_msg("seed %u round %d: %s: generation %u mixed with another (origin \"%s\", capacity %llu)", seed,
                 round, key, g, origin, (unsigned long long)got.capacity);
    return g;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void test_kill9_during_change_storms(void **state) {
    (void)state;
    board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(board != MAP_FAILED);
    memset(board, 0, sizeof *board);
    strcpy(dir, "/tmp/rl_registry_crash_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/limits.json", dir);

    long landed = 0, acked_before = 0;
    for (int round = 0; round < ROUNDS; round++) {
        fflush(NULL);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) run_child(seed + (unsigned)round);
        /* Even rounds: after 0..40 ms (often while opening); odd rounds:
         * after 1..30 more acknowledged changes. */
        unsigned choice = (unsigned)rand();
        if (round % 2 == 0) {
            sleep_us((long)(choice % 40001u));
        } else {
            long target = atomic_load(&board->acked_changes) + 1 + (long)(choice % 30u);
            for (int waited_ms = 0; atomic_load(&board->acked_changes) < target && waited_ms < 10000; waited_ms++)
                sleep_us(1000);
        }
        assert_int_equal(kill(child, SIGKILL), 0);
        int status;
        while (waitpid(child, &status, 0) < 0) assert_int_equal(errno, EINTR);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
            fail_msg("seed %u round %d: the child ended on its own (status 0x%x): see its line above", seed, round,
                     status);

        rl_registry *registry = NULL;
        char err[512] = "";
        rl_status opened = rl_registry_open(path, 0, &registry, err, sizeof err);
        if (opened != RL_OK) fail_msg("seed %u round %d: the files do not open: %s", seed, round, err);
        for (int i = 0; i < KEYS; i++) {
            uint32_t acked = atomic_load(&board->acked[i]), next = atomic_load(&board->next[i]);
            uint32_t found = state_of(registry, i, round);
            if (found != acked && found != next)
                fail_msg("seed %u round %d: key %d is in state %u: neither %u (last acknowledged) nor %u (in "
                         "flight)",
                         seed, round, i, found, acked, next);
            if (found != acked) landed++;
            atomic_store(&board->acked[i], found);
            atomic_store(&board->next[i], found);
        }
        rl_registry_close(registry); /* only read: leaves the files as they are */
    }
    acked_before = atomic_load(&board->acked_changes);
    print_message("%d rounds: %ld changes acknowledged before the kills, %ld unacknowledged ones landed "
                  "(seed %u)\n",
                  ROUNDS, acked_before, landed, seed);
    assert_true(acked_before > ROUNDS); /* the storms did storm */
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    munmap(board, sizeof *board);
}

int main(void) {
    const char *env = getenv("RL_TEST_SEED");
    seed = env != NULL ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    srand(seed);
    fprintf(stderr, "test_registry_crash: seed %u (RL_TEST_SEED=%u repeats it)\n", seed, seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_during_change_storms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
