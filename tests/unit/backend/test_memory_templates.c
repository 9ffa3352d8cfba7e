/* test_memory_templates.c — limits made from templates in the memory
 * backend (backend.h: put_template, delete_template): made when first
 * named, the most specific template winning, the key's own definition
 * winning over any template, forgotten once idle (the table shrinks back,
 * a million keys or not) and made again empty, following their template's
 * changes, deleted with it, and all of it across a restart from the
 * journal, compaction included. */
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

#include "support/file_bytes.h"

#include "backend/memory/memory_backend.h"
#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "ratelimiter/memory.h"
#include "support/civil_time.h"
#include "support/lease_ids.h"

typedef struct fixture {
    char dir[64];
    char journal[128];
    rl_manual_clock clock;
    rl_backend *backend;
    uint64_t compact_bytes;
    uint64_t lease_memory_ms;
    uint64_t next_lease;
} fixture;

static void open_ok(fixture *f, bool with_journal) {
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.clock = &f->clock.base;
    options.sweep_interval_ms = 0;
    options.lease_memory_ms = f->lease_memory_ms;
    options.journal_path = with_journal ? f->journal : NULL;
    options.journal_compact_bytes = f->compact_bytes;
    char err[512];
    if (rl_memory_backend_open(&options, &f->backend, err, sizeof err) != RL_OK) fail_msg("open: %s", err);
}

static int setup(void **state) {
    static fixture f;
    memset(&f, 0, sizeof f);
    snprintf(f.dir, sizeof f.dir, "/tmp/rl_templates_XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    snprintf(f.journal, sizeof f.journal, "%s/journal", f.dir);
    rl_manual_clock_init(&f.clock, 7000000, rl_test_utc_ms(2026, 11, 25, 9, 0));
    f.lease_memory_ms = 1000;
    f.next_lease = 1;
    open_ok(&f, true);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    char command[160];
    snprintf(command, sizeof command, "rm -rf %s", f->dir);
    if (system(command) != 0) return -1;
    return 0;
}

static memory_backend *inside(fixture *f) { return (memory_backend *)f->backend; }

static rl_limit_def rolling(const char *key, uint64_t capacity, uint32_t window_seconds) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = RL_KIND_ROLLING;
    def.capacity = capacity;
    def.window_seconds = window_seconds;
    return def;
}

static rl_limit_def concurrency(const char *key, uint64_t capacity, uint32_t timeout_seconds) {
    rl_limit_def def = rolling(key, capacity, 0);
    def.kind = RL_KIND_CONCURRENCY;
    def.timeout_seconds = timeout_seconds;
    return def;
}

static void put_template(fixture *f, rl_limit_def def) {
    assert_int_equal(rl_backend_put_template(f->backend, &def), RL_OK);
}

/* A reserve of amount on key (optional or not), under a new lease id
 * (its number in *lease when not NULL). */
static rl_reserve_result reserve_as(fixture *f, const char *key, uint64_t amount, bool optional, uint64_t *lease) {
    char id[27];
    uint64_t n = f->next_lease++;
    if (lease != NULL) *lease = n;
    rl_requirement requirement = {key, amount, optional};
    rl_reserve_request request = {rl_test_lease_id(n, id), NULL, &requirement, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

static rl_reserve_result reserve(fixture *f, const char *key, uint64_t amount) {
    return reserve_as(f, key, amount, false, NULL);
}

static void complete(fixture *f, uint64_t lease) {
    char id[27];
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, NULL, 0};
    assert_int_equal(rl_backend_complete(f->backend, &request), RL_OK);
}

static rl_limit_usage usage_of(fixture *f, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &usage), RL_OK);
    return usage;
}

static size_t table_count(fixture *f) { return inside(f)->limits.count; }

static void test_made_on_first_use(void **state) {
    fixture *f = *state;
    assert_int_equal(reserve(f, "tenant:acme:tpm", 10).status, RL_UNKNOWN_LIMIT_KEY);
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    rl_reserve_result r = reserve(f, "tenant:acme:tpm", 60);
    assert_true(r.allowed);
    r = reserve(f, "tenant:acme:tpm", 60);
    assert_false(r.allowed); /* the template's capacity, per key */
    assert_string_equal(r.denied_by.key, "tenant:acme:tpm");
    assert_int_equal(r.denied_by.capacity, 100);
    assert_true(reserve(f, "tenant:zeta:tpm", 100).allowed); /* another key, its own limit */
    assert_int_equal(usage_of(f, "tenant:acme:tpm").used, 60);
    /* Not a definition: not listed, not deletable as one. */
    rl_limit_def *defs;
    size_t count;
    assert_int_equal(rl_memory_backend_definitions(f->backend, &defs, &count), RL_OK);
    assert_int_equal(count, 0);
    free(defs);
    assert_int_equal(rl_backend_delete_definition(f->backend, "tenant:acme:tpm"), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(usage_of(f, "tenant:acme:tpm").used, 60);
    /* A usage read makes one too (and the sweep forgets it). */
    assert_int_equal(usage_of(f, "tenant:new:tpm").capacity, 100);
    assert_int_equal(reserve(f, "tenant:a:b:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY); /* no ':' in a placeholder */
}

/* A limit made from a template is one block, its pattern kept after its
 * key, its first reservations in its ring: a million tenants' limits are a
 * million blocks, not also small ones beside them, which, freed by the
 * sweep, would wait in glibc's fastbins and keep the free memory around
 * them from going back to the kernel. */
static void test_a_made_limit_is_one_block(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    assert_true(reserve(f, "tenant:acme:tpm", 10).allowed);
    rl_mem_limit *limit = rl__mem_limit_table_find(&inside(f)->limits, "tenant:acme:tpm");
    assert_non_null(limit);
    assert_string_equal(limit->template_pattern, "tenant:{t}:tpm");
    assert_ptr_equal(limit->template_pattern, limit->key_text + limit->key_len + 1);
    const char *ring = (const char *)&limit->reservations;
    assert_true((const char *)limit->reservations.slots >= ring &&
                (const char *)limit->reservations.slots < ring + sizeof limit->reservations);
}

static void test_most_specific_wins_and_own_definition_wins(void **state) {
    fixture *f = *state;
    put_template(f, rolling("{scope}:{id}:tpm", 10, 60));
    put_template(f, rolling("tenant:{t}:tpm", 20, 60));
    put_template(f, rolling("tenant:vip-{t}:tpm", 30, 60));
    assert_int_equal(usage_of(f, "team:x:tpm").capacity, 10);
    assert_int_equal(usage_of(f, "tenant:x:tpm").capacity, 20);
    assert_int_equal(usage_of(f, "tenant:vip-x:tpm").capacity, 30);
    /* The key's own definition wins, keeps what the made limit held, and is
     * never forgotten. */
    assert_true(reserve(f, "tenant:x:tpm", 15).allowed);
    rl_limit_def own = rolling("tenant:x:tpm", 50, 60);
    rl_limit_status status;
    assert_int_equal(rl_backend_apply_definition(f->backend, &own, &status), RL_OK);
    assert_int_equal(usage_of(f, "tenant:x:tpm").used, 15);
    assert_int_equal(usage_of(f, "tenant:x:tpm").capacity, 50);
    rl_manual_clock_advance(&f->clock, 61000);
    rl_backend_sweep(f->backend);
    assert_non_null(rl__mem_limit_table_find(&inside(f)->limits, "tenant:x:tpm"));
    /* Deleted, the key is the templates' again: made anew, empty. */
    assert_true(reserve(f, "tenant:x:tpm", 20).allowed);
    assert_int_equal(rl_backend_delete_definition(f->backend, "tenant:x:tpm"), RL_OK);
    rl_limit_usage usage = usage_of(f, "tenant:x:tpm");
    assert_int_equal(usage.capacity, 20);
    assert_int_equal(usage.used, 0);
}

/* Idle made limits are forgotten by the sweep: the table goes back to its
 * size before, however many keys were made. */
static void test_forgotten_once_idle(void **state) {
    fixture *f = *state;
    rl_backend_destroy(f->backend);
    open_ok(f, false); /* a hundred thousand leases need no journal here */
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    put_template(f, concurrency("tenant:{t}:conc", 2, 300));
    char key[64];
    for (int i = 0; i < 100000; i++) {
        snprintf(key, sizeof key, "tenant:t%d:tpm", i);
        assert_true(reserve(f, key, 1).allowed);
    }
    uint64_t held;
    assert_true(reserve_as(f, "tenant:busy:conc", 1, false, &held).allowed);
    assert_int_equal(table_count(f), 100001);
    rl_backend_sweep(f->backend);
    assert_int_equal(table_count(f), 100001); /* all still hold something */
    rl_manual_clock_advance(&f->clock, 60000);
    rl_backend_sweep(f->backend);
    assert_int_equal(table_count(f), 1); /* the hold is live (300 s from its reserve) ... */
    rl_manual_clock_advance(&f->clock, 1);
    assert_non_null(rl__mem_limit_table_find(&inside(f)->limits, "tenant:busy:conc"));
    complete(f, held);
    rl_backend_sweep(f->backend);
    assert_int_equal(table_count(f), 0); /* ... until completed */
    /* Named again: made again, empty. */
    assert_int_equal(usage_of(f, "tenant:t7:tpm").used, 0);
    assert_true(reserve(f, "tenant:t7:tpm", 100).allowed);
    /* A lease remembered past its limit's forgetting still answers its
     * first outcome. */
    uint64_t lease;
    assert_true(reserve_as(f, "tenant:t8:tpm", 5, false, &lease).allowed);
    rl_manual_clock_advance(&f->clock, 60000);
    rl_backend_sweep(f->backend);
    char id[27];
    rl_requirement again = {"tenant:t8:tpm", 5, false};
    rl_reserve_request retry = {rl_test_lease_id(lease, id), NULL, &again, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &retry, &result);
    assert_true(result.allowed);
}

/* A backend with the default lease memory (600 s: the leases outlive their
 * limits' window by far), no journal, and BURST_TENANTS tenants' limits
 * made by a reserve each, their window over and swept: the limits
 * forgotten, their leases still remembered. */
enum { BURST_TENANTS = 100000 };

static void a_burst_of_tenants_gone_idle(fixture *f) {
    rl_backend_destroy(f->backend);
    f->lease_memory_ms = RL_MEMORY_DEFAULT_LEASE_MEMORY_MS;
    open_ok(f, false);
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    char key[64];
    for (int i = 0; i < BURST_TENANTS; i++) {
        snprintf(key, sizeof key, "tenant:t%d:tpm", i);
        assert_true(reserve(f, key, 1).allowed);
    }
    assert_true(inside(f)->limits.bucket_count >= BURST_TENANTS);
    rl_manual_clock_advance(&f->clock, 61000);
    rl_backend_sweep(f->backend);
    assert_int_equal(table_count(f), 0);
    assert_int_equal(inside(f)->leases.count, BURST_TENANTS);
}

/* Once their leases are forgotten too, nothing the burst grew is left:
 * the limit table's buckets, the leases kept for reuse, the slots of the
 * queue the leases were forgotten from. */
static void test_a_burst_leaves_nothing_behind(void **state) {
    fixture *f = *state;
    a_burst_of_tenants_gone_idle(f);
    memory_backend *backend = inside(f);
    assert_int_equal(backend->limits.bucket_count, 64); /* an empty table's */
    rl_manual_clock_advance(&f->clock, RL_MEMORY_DEFAULT_LEASE_MEMORY_MS);
    rl_backend_sweep(f->backend);
    assert_int_equal(backend->leases.count, 0);
    assert_int_equal(backend->leases.mask + 1, 1024); /* the lease index's first size */
    for (uint32_t n = 0; n <= RL_MAX_REQUIREMENTS; n++) assert_int_equal(backend->leases.recycler.lengths[n], 0);
    for (int r = 0; r < RL_DUE_QUEUE_RINGS; r++) assert_null(backend->leases.by_forget_at.rings[r].slots);
    /* And it serves as before. */
    assert_true(reserve(f, "tenant:t1:tpm", 100).allowed);
    assert_int_equal(usage_of(f, "tenant:t1:tpm").used, 100);
}

/* The arrays a burst grows (the lease index, the forget queue's ring: MBs
 * each) are pages of their own (pages.h), not blocks of the allocator's:
 * freed, they go back to the kernel and move none of glibc's thresholds,
 * past which it would keep blocks below them, and the free top of a
 * thread's arena, resident whatever malloc_trim asks. */
static void test_a_burst_grows_pages_of_its_own(void **state) {
    fixture *f = *state;
    a_burst_of_tenants_gone_idle(f);
    memory_backend *backend = inside(f);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_true((backend->leases.mask + 1) * sizeof *backend->leases.slots >= 2 * page);
    assert_int_equal((uintptr_t)backend->leases.slots % page, 0);
    assert_int_equal((uintptr_t)backend->leases.by_forget_at.rings[0].slots % page, 0);
}

/* The memory the burst freed is handed back to the kernel at the sweep that
 * forgot its leases, however long after its limits those go. */
static void test_memory_handed_back_when_the_leases_go(void **state) {
    fixture *f = *state;
    a_burst_of_tenants_gone_idle(f);
    memory_backend *backend = inside(f);
    uint64_t hand_backs = backend->hand_back.hand_backs;
    /* The leases were made 61 s ago: remembered for 60 s + the lease memory. */
    rl_manual_clock_advance(&f->clock, RL_MEMORY_DEFAULT_LEASE_MEMORY_MS - 2000);
    rl_backend_sweep(f->backend);
    assert_int_equal(backend->leases.count, BURST_TENANTS);
    assert_int_equal(backend->hand_back.hand_backs, hand_backs);
    rl_manual_clock_advance(&f->clock, 1000);
    rl_backend_sweep(f->backend);
    assert_int_equal(backend->leases.count, 0);
    assert_int_equal(backend->hand_back.hand_backs, hand_backs + 1);
    rl_manual_clock_advance(&f->clock, 1000);
    rl_backend_sweep(f->backend);
    assert_int_equal(backend->hand_back.hand_backs, hand_backs + 1); /* nothing more went */
}

static void test_template_changes_reach_made_limits(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    assert_true(reserve(f, "tenant:a:tpm", 80).allowed);
    /* An increase at once. */
    put_template(f, rolling("tenant:{t}:tpm", 150, 60));
    assert_int_equal(usage_of(f, "tenant:a:tpm").capacity, 150);
    assert_true(reserve(f, "tenant:a:tpm", 70).allowed);
    /* A decrease below use waits, as a limit's own does. */
    put_template(f, rolling("tenant:{t}:tpm", 50, 60));
    rl_limit_usage usage = usage_of(f, "tenant:a:tpm");
    assert_int_equal(usage.status, RL_LIMIT_STATUS_DECREASING);
    assert_int_equal(usage.pending_decrease_to, 50);
    assert_int_equal(reserve(f, "tenant:a:tpm", 1).status, RL_LIMIT_DECREASING);
    assert_int_equal(usage_of(f, "tenant:b:tpm").capacity, 50); /* a new one: the new definition */
    /* A change of kind while one holds something: refused, nothing changes. */
    rl_limit_def conc = concurrency("tenant:{t}:tpm", 5, 30);
    assert_int_equal(rl_backend_put_template(f->backend, &conc), RL_LIMIT_IN_USE);
    assert_int_equal(usage_of(f, "tenant:a:tpm").pending_decrease_to, 50);
    /* Once idle, it may change kind. */
    rl_manual_clock_advance(&f->clock, 60000);
    assert_int_equal(rl_backend_put_template(f->backend, &conc), RL_OK);
    usage = usage_of(f, "tenant:a:tpm");
    assert_int_equal(usage.capacity, 5);
    assert_true(reserve(f, "tenant:a:tpm", 5).allowed);
    assert_int_equal(usage_of(f, "tenant:a:tpm").active, 1);
    /* A more specific template put later does not take over a made limit. */
    put_template(f, concurrency("tenant:a:{x}", 1, 30));
    assert_int_equal(usage_of(f, "tenant:a:tpm").capacity, 5);
}

static void test_deleting_a_template_deletes_its_limits(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    put_template(f, rolling("{s}:{t}:tpm", 7, 60));
    uint64_t lease;
    assert_true(reserve_as(f, "tenant:a:tpm", 60, false, &lease).allowed);
    assert_int_equal(rl_backend_delete_template(f->backend, "tenant:{x}:tpm"), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_backend_delete_template(f->backend, "tenant:{t}:tpm"), RL_OK);
    /* Dropped with what it held; the key falls to the other template. */
    rl_limit_usage usage = usage_of(f, "tenant:a:tpm");
    assert_int_equal(usage.capacity, 7);
    assert_int_equal(usage.used, 0);
    complete(f, lease); /* its lease completes, charging nothing */
    assert_int_equal(usage_of(f, "tenant:a:tpm").used, 0);
    assert_int_equal(rl_backend_delete_template(f->backend, "{s}:{t}:tpm"), RL_OK);
    assert_int_equal(reserve(f, "tenant:a:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(table_count(f), 0);
}

static void test_optional_requirements_count_templates(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 10, 60));
    assert_true(reserve_as(f, "tenant:a:tpm", 10, true, NULL).allowed);
    rl_reserve_result r = reserve_as(f, "tenant:a:tpm", 1, true, NULL);
    assert_false(r.allowed); /* made, so not skipped: it denies */
    assert_true(reserve_as(f, "other:a:tpm", 1, true, NULL).allowed); /* no template: skipped */
}

static void test_invalid_templates_change_nothing(void **state) {
    fixture *f = *state;
    rl_limit_def no_placeholder = rolling("tenant:acme:tpm", 10, 60);
    assert_int_equal(rl_backend_put_template(f->backend, &no_placeholder), RL_INVALID_REQUEST);
    rl_limit_def no_window = rolling("tenant:{t}:tpm", 10, 0);
    assert_int_equal(rl_backend_put_template(f->backend, &no_window), RL_INVALID_REQUEST);
    assert_int_equal(reserve(f, "tenant:a:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(reserve(f, "tenant:acme:tpm", 1).status, RL_UNKNOWN_LIMIT_KEY);
}

/* Closed and opened again (kill -9 or not, the journal has it all): the
 * templates, the made limits with what they hold, a deleted template's
 * absence; then again from a compacted journal. */
static void check_after_restart(fixture *f, uint64_t lease) {
    assert_int_equal(usage_of(f, "tenant:a:tpm").used, 60);
    assert_int_equal(usage_of(f, "tenant:a:tpm").capacity, 150);
    assert_int_equal(reserve(f, "tenant:a:tpm", 100).allowed, false);
    assert_int_equal(usage_of(f, "tenant:a:conc").active, 1);
    assert_int_equal(reserve(f, "gone:a:x", 1).status, RL_UNKNOWN_LIMIT_KEY);
    char id[27];
    rl_requirement same = {"tenant:a:tpm", 60, false};
    rl_reserve_request retry = {rl_test_lease_id(lease, id), NULL, &same, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(f->backend, &retry, &result);
    assert_true(result.allowed);
    rl_limit_def *defs;
    size_t count;
    assert_int_equal(rl_memory_backend_definitions(f->backend, &defs, &count), RL_OK);
    assert_int_equal(count, 0); /* made limits came back as made, not as definitions */
    free(defs);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void restart(fixture *f) {
    rl_backend_destroy(f->backend);
    f->backend = NULL;
    open_ok(f, true);
}

static void test_restart_keeps_templates_and_made_limits(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 100, 600));
    put_template(f, concurrency("tenant:{t}:conc", 3, 300));
    put_template(f, rolling("gone:{t}:x", 5, 60));
    uint64_t lease;
    assert_true(reserve_as(f, "tenant:a:tpm", 60, false, &lease).allowed);
    assert_true(reserve(f, "tenant:a:conc", 1).allowed);
    assert_true(reserve(f, "gone:a:x", 1).allowed);
    put_template(f, rolling("tenant:{t}:tpm", 150, 600));
    assert_int_equal(rl_backend_delete_template(f->backend, "gone:{t}:x"), RL_OK);
    restart(f);
    check_after_restart(f, lease);
    /* Compacted: a snapshot of the same state (the filler, on keys made
     * from a template of its own, is over before each compaction). */
    rl_backend_destroy(f->backend);
    f->compact_bytes = 4096;
    open_ok(f, true);
    put_template(f, rolling("fill:{n}:x", 1000, 1));
    bool compacted = false;
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "fill:%d:x", i % 7);
        assert_true(reserve(f, key, 1).allowed);
        if (i % 100 == 99) {
            rl_manual_clock_advance(&f->clock, 2000); /* the filler's windows and memory are over */
            rl_backend_sweep(f->backend);
            long before = file_size(f->journal);
            /* the flusher compacts on its own tick */
            compacted |= rl_test_file_shrinks_below(f->journal, before, compacted ? 0 : 20000);
        }
    }
    assert_true(compacted);
    restart(f);
    check_after_restart(f, lease);
}

/* template_usage (backend.h): per template, the live limits made from it
 * and their usage summed, whatever the table holds beside them; thousands
 * of keys (the table growing, walked a part at a time) counted exactly;
 * an idle one counted for nothing; a pattern with no template, zero. */
static void test_template_usage_adds_made_limits_up(void **state) {
    fixture *f = *state;
    put_template(f, rolling("tenant:{t}:tpm", 100, 60));
    put_template(f, concurrency("tenant:{t}:jobs", 3, 30));
    rl_limit_status status;
    rl_limit_def own = rolling("tenant:own:tpm", 1000, 60);
    assert_int_equal(rl_backend_apply_definition(f->backend, &own, &status), RL_OK);
    assert_true(reserve(f, "tenant:own:tpm", 500).allowed); /* its own: not the template's */
    enum { TENANTS = 5000 };
    for (unsigned i = 0; i < TENANTS; i++) {
        char key[64];
        snprintf(key, sizeof key, "tenant:t%u:tpm", i);
        assert_true(reserve(f, key, 1 + i % 7).allowed);
    }
    assert_true(reserve(f, "tenant:a:jobs", 2).allowed);
    uint64_t lease;
    assert_true(reserve_as(f, "tenant:b:jobs", 1, false, &lease).allowed);
    complete(f, lease); /* tenant:b:jobs now holds nothing: idle */
    const char *patterns[] = {"tenant:{t}:tpm", "tenant:{t}:jobs", "nobody:{x}"};
    rl_template_usage sums[3];
    assert_int_equal(rl_backend_template_usage(f->backend, patterns, 3, sums), RL_OK);
    uint64_t used = 0;
    for (unsigned i = 0; i < TENANTS; i++) used += 1 + i % 7;
    assert_int_equal(sums[0].limits, TENANTS);
    assert_int_equal(sums[0].used, used);
    assert_int_equal(sums[0].capacity, 100u * TENANTS);
    assert_int_equal(sums[0].available, 100u * TENANTS - used);
    assert_int_equal(sums[0].debt, 0);
    assert_int_equal(sums[1].limits, 1);
    assert_int_equal(sums[1].used, 2);
    assert_int_equal(sums[1].available, 1);
    assert_int_equal(sums[2].limits, 0);
    assert_int_equal(sums[2].used, 0);
    /* Once their window is over they hold nothing: none counted. */
    rl_manual_clock_advance(&f->clock, 61000);
    assert_int_equal(rl_backend_template_usage(f->backend, patterns, 1, sums), RL_OK);
    assert_int_equal(sums[0].limits, 0);
    assert_int_equal(sums[0].used, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_made_on_first_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_made_limit_is_one_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_most_specific_wins_and_own_definition_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forgotten_once_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_burst_leaves_nothing_behind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_handed_back_when_the_leases_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_burst_grows_pages_of_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_changes_reach_made_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleting_a_template_deletes_its_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optional_requirements_count_templates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_templates_change_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_templates_and_made_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_usage_adds_made_limits_up, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
