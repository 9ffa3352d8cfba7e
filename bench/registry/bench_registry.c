/* bench_registry.c — what a registry of LIMITS definitions costs: start-up
 * (open and list everything, as the daemon does), its memory, and the
 * latency of a durable PUT (and DELETE) one at a time.
 *
 *   bench_registry [--store registry|sqlite] PATH LIMITS PUTS
 *
 * registry: the library's (ratelimiter/registry.h), through its public API
 * only, so that the same file compiles against an older revision's library
 * (bench/registry/run.sh builds BASE's); sqlite: the prototype of
 * sqlite_registry.h (when built with BENCH_SQLITE). Each measurement runs
 * in a fresh child process, so that one's memory does not count in
 * another's. Prints one line of key=value pairs:
 *
 *   store, limits, startup_ms (median of 3: the snapshot alone, opened and
 *   listed), open_ms (the open alone), rss_mb (VmRSS the open added), put_p50_us, put_p99_us, put_max_us (PUTS puts of
 *   existing keys, new capacities), delete_p50_us, delete_p99_us (PUTS/4
 *   deletes, where the store has them), startup_after_ms (after the puts,
 *   the process killed without closing: the snapshot and its log),
 *   compact_ms (the registry's compaction, where it has one), disk_kb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ratelimiter/registry.h"
#ifdef BENCH_SQLITE
#include "sqlite_registry.h"
#endif
#if defined(RL_REGISTRY_ORIGIN_MAX_LEN) && __has_include("registry/registry_internal.h")
#include "registry/registry_internal.h"
#define HAS_DELETE 1
#endif

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    if (f != NULL) fclose(f);
    return kb;
}

static void die(const char *what, const char *err) {
    fprintf(stderr, "bench_registry: %s: %s\n", what, err);
    exit(1);
}

static rl_limit_def definition(size_t i, uint64_t capacity) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "bench:tenant:%06zu:llm:tpm", i);
    def.kind = RL_KIND_ROLLING;
    def.capacity = capacity;
    def.window_seconds = 60;
    strcpy(def.unit, "tokens");
    strcpy(def.description, "tokens per minute");
    def.overage = RL_OVERAGE_DEBT;
    return def;
}

/* ---- the two stores behind one face ---------------------------------------------- */

static bool use_sqlite;
static char path[512];

typedef struct store {
    rl_registry *registry;
#ifdef BENCH_SQLITE
    sq_registry *sqlite;
#endif
} store;

static store store_open(size_t max_limits) {
    store s = {0};
    char err[512] = "";
#ifdef BENCH_SQLITE
    if (use_sqlite) {
        if ((s.sqlite = sq_open(path, err)) == NULL) die("open", err);
        return s;
    }
#endif
    if (rl_registry_open(path, max_limits, &s.registry, err, sizeof err) != RL_OK) die("open", err);
    return s;
}

static void store_close(store *s) {
#ifdef BENCH_SQLITE
    if (use_sqlite) {
        sq_close(s->sqlite);
        return;
    }
#endif
    rl_registry_close(s->registry);
}

static void store_put_many(store *s, const rl_limit_def *defs, size_t count) {
    char err[512] = "";
#ifdef BENCH_SQLITE
    if (use_sqlite) {
        if (!sq_put_many(s->sqlite, defs, count, err)) die("put", err);
        return;
    }
#endif
    if (rl_registry_put_many(s->registry, defs, count, err, sizeof err) != RL_OK) die("put", err);
}

/* False if the store has no delete. */
static bool store_delete(store *s, const char *key) {
    char err[512] = "";
#ifdef BENCH_SQLITE
    if (use_sqlite) {
        bool found;
        if (!sq_delete(s->sqlite, key, &found, err) || !found) die("delete", err);
        return true;
    }
#endif
#ifdef HAS_DELETE
    if (rl_registry_delete(s->registry, key, err, sizeof err) != RL_OK) die("delete", err);
    return true;
#else
    (void)s;
    (void)key;
    return false;
#endif
}

static size_t store_list(store *s) {
    rl_limit_def *defs = NULL;
    size_t count = 0;
#ifdef BENCH_SQLITE
    char err[512] = "";
    if (use_sqlite) {
        if (!sq_list(s->sqlite, &defs, &count, err)) die("list", err);
        free(defs);
        return count;
    }
#endif
    if (rl_registry_list(s->registry, &defs, &count) != RL_OK) die("list", "out of memory");
    free(defs);
    return count;
}

static const char *const suffixes[] = {"", ".log", ".tmp", ".log.tmp", "-wal", "-shm", "-journal"};

static void remove_files(void) {
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

static long disk_kb(void) {
    long total = 0;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char p[600];
        struct stat st;
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        if (stat(p, &st) == 0) total += (long)st.st_size;
    }
    return total / 1024;
}

/* ---- measurements, each in a child --------------------------------------------------- */

/* Runs fn in a child that writes its numbers into a pipe; returns them. */
static void in_child(void (*fn)(double *out, void *context), void *context, double *out, size_t n) {
    int fds[2];
    if (pipe(fds) != 0) die("pipe", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        double values[16] = {0};
        fn(values, context);
        if (write(fds[1], values, n * sizeof *values) < 0) _exit(2);
        _exit(0); /* no close of the store: as a kill leaves it */
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got < n * sizeof *out && (r = read(fds[0], (char *)out + got, n * sizeof *out - got)) > 0) got += (size_t)r;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got != n * sizeof *out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("child", "failed");
}

static size_t limits, puts_count;

static void fill(double *out, void *context) {
    (void)context;
    rl_limit_def *defs = malloc(limits * sizeof *defs);
    for (size_t i = 0; i < limits; i++) defs[i] = definition(i, 1000000);
    store s = store_open(limits + puts_count + 16);
    store_put_many(&s, defs, limits);
    store_close(&s);
    free(defs);
    out[0] = 1;
}

static void measure_startup(double *out, void *context) {
    (void)context;
    long before = rss_kb();
    double t = now_us();
    store s = store_open(limits + puts_count + 16);
    long opened = rss_kb();
    double open_ms = (now_us() - t) / 1000.0;
    size_t listed = store_list(&s);
    out[0] = (now_us() - t) / 1000.0;
    out[1] = (double)(opened - before) / 1024.0;
    out[2] = (double)listed;
    out[3] = open_ms;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(double *v, size_t n, double p) {
    qsort(v, n, sizeof *v, by_value);
    size_t at = (size_t)(p * (double)(n - 1) + 0.5);
    return v[at];
}

static void measure_puts(double *out, void *context) {
    (void)context;
    store s = store_open(limits + puts_count + 16);
    double *lat = malloc(puts_count * sizeof *lat);
    unsigned seed = 12345;
    for (size_t i = 0; i < puts_count; i++) {
        rl_limit_def def = definition((size_t)rand_r(&seed) % limits, 1000 + i);
        double t = now_us();
        store_put_many(&s, &def, 1);
        lat[i] = now_us() - t;
    }
    out[0] = percentile(lat, puts_count, 0.50);
    out[1] = percentile(lat, puts_count, 0.99);
    out[2] = lat[puts_count - 1];
    size_t deletes = puts_count / 4;
    out[3] = out[4] = -1;
    for (size_t i = 0; i < deletes; i++) {
        rl_limit_def def = definition(limits - 1 - i, 1);
        double t = now_us();
        if (!store_delete(&s, def.key)) break;
        lat[i] = now_us() - t;
        if (i + 1 == deletes) {
            out[3] = percentile(lat, deletes, 0.50);
            out[4] = percentile(lat, deletes, 0.99);
        }
    }
    free(lat);
}

static void measure_compaction(double *out, void *context) {
    (void)context;
    out[0] = -1;
#ifdef HAS_DELETE
    if (use_sqlite) return;
    store s = store_open(limits + puts_count + 16);
    char err[512] = "";
    double t = now_us();
    if (rl__registry_compact(s.registry, err, sizeof err) != RL_OK) die("compact", err);
    out[0] = (now_us() - t) / 1000.0;
#endif
}

int main(int argc, char **argv) {
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--store") == 0) {
        use_sqlite = strcmp(argv[a + 1], "sqlite") == 0;
#ifndef BENCH_SQLITE
        if (use_sqlite) die("--store sqlite", "built without SQLite");
#endif
        a += 2;
    }
    if (argc - a != 3) {
        fprintf(stderr, "usage: bench_registry [--store registry|sqlite] PATH LIMITS PUTS\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s", argv[a]);
    limits = strtoul(argv[a + 1], NULL, 10);
    puts_count = strtoul(argv[a + 2], NULL, 10);
    if (limits < puts_count || puts_count < 4) die("arguments", "need LIMITS >= PUTS >= 4");

    remove_files();
    double filled;
    in_child(fill, NULL, &filled, 1); /* the parent stays small: children inherit its memory */

    double startup[3], open_only[3], rss = 0, v[8];
    for (int i = 0; i < 3; i++) {
        in_child(measure_startup, NULL, v, 4);
        if ((size_t)v[2] != limits) die("startup", "wrong count");
        startup[i] = v[0];
        open_only[i] = v[3];
        rss = v[1];
    }
    double put[5];
    in_child(measure_puts, NULL, put, 5);
    in_child(measure_startup, NULL, v, 4);
    double after = v[0];
    long disk = disk_kb();
    double compact;
    in_child(measure_compaction, NULL, &compact, 1);
    printf("store=%s limits=%zu startup_ms=%.1f open_ms=%.1f rss_mb=%.1f put_p50_us=%.0f put_p99_us=%.0f put_max_us=%.0f "
           "delete_p50_us=%.0f delete_p99_us=%.0f startup_after_ms=%.1f compact_ms=%.1f disk_kb=%ld\n",
           use_sqlite ? "sqlite" : "registry", limits, percentile(startup, 3, 0.5), percentile(open_only, 3, 0.5), rss, put[0], put[1], put[2],
           put[3], put[4], after, compact, disk);
    remove_files();
    return 0;
}
