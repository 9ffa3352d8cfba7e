/* test_service_preset.c — provider presets in the service: "explicit limits
 * win over presets" in both modes, on real backends (memory with a registry
 * in a temp dir; two services on one private redis-server for the shared
 * mode, as two daemons on one Redis).
 *
 * Local mode: a preset defines what is free, takes over what a preset made
 * (another tier, an older table), keeps what the operator defined, and
 * writes nothing when nothing changes; an operator's put makes a key
 * theirs, a delete frees it; a decrease goes through "decreasing"; a kind
 * change of a limit in use and a full registry refuse one key only.
 * Shared mode: the same rule on what the store holds, with no origins.
 */
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

#include "ratelimiter/registry.h"
#include "server/service.h"
#include "support/lease_ids.h"
#include "support/redis_server.h"

#define RPM_4O "global:llm:openai:gpt-4o:rpm"

typedef struct fixture {
    char dir[64];
    char path[96];
    char log_path[104];
    rl_service *service;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_test_service_preset_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/limits.json", f->dir);
    snprintf(f->log_path, sizeof f->log_path, "%s.log", f->path);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rl_service_close(f->service);
    unlink(f->path);
    unlink(f->log_path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* (Re)opens the local-mode service on the fixture's registry. */
static void open_local(fixture *f, size_t max_limits) {
    rl_service_close(f->service);
    rl_service_options options = {.backend_name = "memory", .registry_path = f->path, .max_limits = max_limits};
    rl_memory_options_default(&options.memory);
    options.memory.sweep_interval_ms = 0;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

/* Writes one definition with an origin into the registry, the service closed. */
static void seed_registry(fixture *f, const rl_limit_def *def, const char *origin) {
    rl_service_close(f->service);
    f->service = NULL;
    rl_registry *registry;
    char err[256];
    assert_int_equal(rl_registry_open(f->path, 0, &registry, err, sizeof err), RL_OK);
    rl_registry_change change = {.op = RL_REGISTRY_PUT, .def = *def};
    snprintf(change.origin, sizeof change.origin, "%s", origin);
    assert_int_equal(rl_registry_apply(registry, &change, 1, err, sizeof err), RL_OK);
    assert_int_equal(change.status, RL_OK);
    rl_registry_close(registry);
}

/* Applies the preset named name through rl_service_put_limits, as the
 * daemon's writer does; puts (room for RL_PRESET_MAX_LIMITS) get the answers. */
static size_t apply(rl_service *service, const char *name, rl_service_put *puts) {
    const rl_preset *preset = rl_preset_find(name);
    assert_non_null(preset);
    size_t n = rl_service_preset_puts(&preset, 1, puts);
    rl_service_put_limits(service, puts, n);
    return n;
}

static const rl_service_put *put_of(const rl_service_put *puts, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(puts[i].def.key, key) == 0) return &puts[i];
    fail_msg("no put of %s", key);
    return NULL;
}

/* Every put of the apply answered RL_OK with this outcome. */
static void assert_all(const rl_service_put *puts, size_t n, rl_preset_outcome outcome) {
    for (size_t i = 0; i < n; i++) {
        if (puts[i].status != RL_OK) fail_msg("%s: %s", puts[i].def.key, puts[i].err);
        if (puts[i].outcome != outcome)
            fail_msg("%s: %s, not %s", puts[i].def.key, rl_preset_outcome_name(puts[i].outcome),
                     rl_preset_outcome_name(outcome));
    }
}

static off_t size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static rl_limit_def operator_def(const char *key, uint64_t capacity) {
    rl_limit_def def = {.kind = RL_KIND_ROLLING, .capacity = capacity, .window_seconds = 60};
    snprintf(def.key, sizeof def.key, "%s", key);
    return def;
}

static void reserve(rl_service *service, uint64_t n, const char *key, uint64_t amount) {
    char id[27];
    rl_requirement requirement = {key, amount, false};
    rl_reserve_request request = {rl_test_lease_id(n, id), NULL, &requirement, 1, false};
    rl_reserve_result result;
    rl_backend_reserve(rl_service_backend(service), &request, &result);
    assert_int_equal(result.status, RL_OK);
    assert_true(result.allowed);
}

/* ---- local mode ---------------------------------------------------------------- */

static void test_apply_defines_then_changes_nothing(void **state) {
    fixture *f = *state;
    open_local(f, 0);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(f->service, "openai-tier-1", puts);
    assert_int_equal(n, rl_preset_limit_count(rl_preset_find("openai-tier-1")));
    assert_all(puts, n, RL_PRESET_DEFINED);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 500);
    assert_string_equal(limit.preset, "openai-tier-1");
    assert_string_equal(limit.template_pattern, "");
    /* Again: nothing to write, in the registry or the backend. */
    off_t log_size = size_of(f->log_path);
    n = apply(f->service, "openai-tier-1", puts);
    assert_all(puts, n, RL_PRESET_UNCHANGED);
    assert_int_equal(size_of(f->log_path), log_size);
    /* A restart keeps who made it. */
    open_local(f, 0);
    n = apply(f->service, "openai-tier-1", puts);
    assert_all(puts, n, RL_PRESET_UNCHANGED);
    rl_service_limit *limits;
    size_t count;
    assert_int_equal(rl_service_list_limits(f->service, &limits, &count), RL_OK);
    assert_int_equal(count, n);
    for (size_t i = 0; i < count; i++) assert_string_equal(limits[i].preset, "openai-tier-1");
    free(limits);
}

static void test_explicit_limits_win(void **state) {
    fixture *f = *state;
    open_local(f, 0);
    rl_limit_def mine = operator_def(RPM_4O, 7);
    assert_int_equal(rl_service_put_limit(f->service, &mine, NULL, NULL, 0), RL_OK);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(f->service, "openai-tier-1", puts);
    assert_int_equal(put_of(puts, n, RPM_4O)->outcome, RL_PRESET_KEPT);
    assert_int_equal(put_of(puts, n, "global:llm:openai:gpt-4o:tpm")->outcome, RL_PRESET_DEFINED);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 7);
    assert_string_equal(limit.preset, "");
    /* An explicit put of a key a preset made, even with the preset's very
     * definition, makes it the operator's: a later preset leaves it. */
    rl_limit_def tpm;
    rl_preset_limit(rl_preset_find("openai-tier-1"), 6, &tpm);
    assert_string_equal(tpm.key, "global:llm:openai:gpt-4o:tpm");
    assert_int_equal(rl_service_put_limit(f->service, &tpm, NULL, NULL, 0), RL_OK);
    assert_int_equal(rl_service_get_limit(f->service, tpm.key, &limit), RL_OK);
    assert_string_equal(limit.preset, "");
    n = apply(f->service, "openai-tier-2", puts);
    assert_int_equal(put_of(puts, n, RPM_4O)->outcome, RL_PRESET_KEPT);
    assert_int_equal(put_of(puts, n, tpm.key)->outcome, RL_PRESET_KEPT);
    assert_int_equal(put_of(puts, n, "global:llm:openai:gpt-4.1:rpm")->outcome, RL_PRESET_UPDATED);
    assert_int_equal(rl_service_get_limit(f->service, tpm.key, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 30000); /* tier 1's, now the operator's */
    /* A delete frees the key, whoever made it: the next apply defines it. */
    assert_int_equal(rl_service_delete_limit(f->service, RPM_4O, NULL, 0), RL_OK);
    n = apply(f->service, "openai-tier-2", puts);
    assert_int_equal(put_of(puts, n, RPM_4O)->outcome, RL_PRESET_DEFINED);
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_string_equal(limit.preset, "openai-tier-2");
    assert_int_equal(limit.def.capacity, 5000);
}

/* A newer table of the same preset (simulated: the registry holds what an
 * older one made) updates its keys; a lower capacity than usage allows
 * makes the limit decreasing. */
static void test_a_newer_table_updates_through_decreasing(void **state) {
    fixture *f = *state;
    rl_limit_def old = operator_def(RPM_4O, 800);
    snprintf(old.description, sizeof old.description, "older table");
    seed_registry(f, &old, "preset:openai-tier-1");
    open_local(f, 0);
    reserve(f->service, 1, RPM_4O, 600);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(f->service, "openai-tier-1", puts);
    const rl_service_put *put = put_of(puts, n, RPM_4O);
    assert_int_equal(put->outcome, RL_PRESET_UPDATED);
    assert_int_equal(put->limit_status, RL_LIMIT_STATUS_DECREASING);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 500);
    assert_int_equal(limit.usage.status, RL_LIMIT_STATUS_DECREASING);
    assert_string_equal(limit.preset, "openai-tier-1");
}

/* A preset's put that the backend refuses (a change of kind of a limit in
 * use) is refused for its key only, and the registry keeps what the
 * backend holds, with its origin. */
static void test_a_kind_change_in_use_is_refused_for_that_key(void **state) {
    fixture *f = *state;
    rl_limit_def held = {.key = RPM_4O, .kind = RL_KIND_CONCURRENCY, .capacity = 5, .timeout_seconds = 60};
    seed_registry(f, &held, "preset:retired-tier");
    open_local(f, 0);
    reserve(f->service, 1, RPM_4O, 1);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(f->service, "openai-tier-1", puts);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(puts[i].def.key, RPM_4O) == 0) {
            assert_int_equal(puts[i].status, RL_LIMIT_IN_USE);
            assert_non_null(strstr(puts[i].err, "concurrency"));
        } else {
            assert_int_equal(puts[i].status, RL_OK);
            assert_int_equal(puts[i].outcome, RL_PRESET_DEFINED);
        }
    }
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.kind, RL_KIND_CONCURRENCY);
    assert_string_equal(limit.preset, "retired-tier");
    open_local(f, 0); /* what the registry wrote back survives */
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.kind, RL_KIND_CONCURRENCY);
    assert_string_equal(limit.preset, "retired-tier");
}

/* No room for more limits: the keys past it are refused, the rest done. */
static void test_a_full_registry_refuses_the_keys_past_it(void **state) {
    fixture *f = *state;
    open_local(f, 3);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(f->service, "openai-tier-1", puts), done = 0;
    for (size_t i = 0; i < n; i++) {
        if (puts[i].status == RL_OK) {
            done++;
            continue;
        }
        assert_int_equal(puts[i].status, RL_INVALID_REQUEST);
        assert_non_null(strstr(puts[i].err, "full"));
    }
    assert_int_equal(done, 3);
    assert_int_equal(rl_service_limit_count(f->service), 3);
}

/* Operators' puts of one group, the registry full: a new key is refused,
 * a change of a key it holds still goes (each put its own answer). */
static void test_a_full_registry_refuses_only_the_new_keys_of_a_group(void **state) {
    fixture *f = *state;
    open_local(f, 1);
    rl_limit_def first = operator_def("a", 5);
    assert_int_equal(rl_service_put_limit(f->service, &first, NULL, NULL, 0), RL_OK);
    rl_service_put puts[2];
    memset(puts, 0, sizeof puts);
    puts[0].def = operator_def("b", 5);
    puts[1].def = operator_def("a", 9);
    rl_service_put_limits(f->service, puts, 2);
    assert_int_equal(puts[0].status, RL_INVALID_REQUEST);
    assert_non_null(strstr(puts[0].err, "the registry is full"));
    assert_int_equal(puts[1].status, RL_OK);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, "a", &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 9);
    assert_int_equal(rl_service_get_limit(f->service, "b", &limit), RL_UNKNOWN_LIMIT_KEY);
}

/* In one group of the writer, an operator's put before a preset's of the
 * same key wins: the preset's puts go in a write of their own after it. */
static void test_an_operator_put_in_the_same_group_wins(void **state) {
    fixture *f = *state;
    open_local(f, 0);
    rl_service_put puts[1 + RL_PRESET_MAX_LIMITS];
    memset(&puts[0], 0, sizeof puts[0]);
    puts[0].def = operator_def(RPM_4O, 9);
    const rl_preset *preset = rl_preset_find("openai-tier-1");
    size_t n = 1 + rl_service_preset_puts(&preset, 1, puts + 1);
    rl_service_put_limits(f->service, puts, n);
    assert_int_equal(puts[0].status, RL_OK);
    assert_int_equal(put_of(puts + 1, n - 1, RPM_4O)->outcome, RL_PRESET_KEPT);
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 9);
}

/* The daemon's start: a list, overlapping keys taking the last preset's,
 * said in one sentence; again, nothing changes. */
static void test_apply_presets_at_start(void **state) {
    fixture *f = *state;
    open_local(f, 0);
    const char *names[] = {"openai-tier-1", "openai-tier-2", "anthropic-tier-1", "local"};
    char report[2048];
    assert_int_equal(rl_service_apply_presets(f->service, names, 4, report, sizeof report), RL_OK);
    assert_non_null(strstr(report, "presets openai-tier-1, openai-tier-2, anthropic-tier-1, local: 16 defined, 0 updated"));
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(f->service, RPM_4O, &limit), RL_OK);
    assert_string_equal(limit.preset, "openai-tier-2");
    assert_int_equal(rl_service_get_limit(f->service, "global:llm:openai:gpt-4o-mini:rpd", &limit), RL_OK);
    assert_string_equal(limit.preset, "openai-tier-1"); /* tier 2 has no rpd */
    off_t log_size = size_of(f->log_path);
    open_local(f, 0);
    assert_int_equal(rl_service_apply_presets(f->service, names, 4, report, sizeof report), RL_OK);
    assert_non_null(strstr(report, ": 0 defined, 0 updated, 16 unchanged, 0 kept"));
    assert_true(size_of(f->log_path) <= log_size); /* written nothing (a close may compact) */
    /* An unknown name: nothing applied, the names listed. */
    const char *unknown[] = {"openai-tier-1", "openai-tier-9"};
    assert_int_equal(rl_service_apply_presets(f->service, unknown, 2, report, sizeof report), RL_INVALID_REQUEST);
    assert_non_null(strstr(report, "no preset named \"openai-tier-9\"; the presets are: anthropic-tier-1"));
}

/* ---- shared mode (a real Redis) ----------------------------------------------- */

typedef struct shared_fixture {
    rl_test_redis redis;
    fixture a, b; /* two daemons' registries, one store */
} shared_fixture;

static int setup_shared(void **state) {
    shared_fixture *s = calloc(1, sizeof *s);
    switch (rl_test_redis_start(&s->redis)) {
    case RL_TEST_REDIS_STARTED: break;
    case RL_TEST_REDIS_SKIPPED: free(s); skip(); return 0;
    case RL_TEST_REDIS_FAILED: free(s); fail_msg("redis-server did not start"); return -1;
    }
    fixture *both[] = {&s->a, &s->b};
    for (int i = 0; i < 2; i++) {
        snprintf(both[i]->dir, sizeof both[i]->dir, "/tmp/rl_test_service_preset_XXXXXX");
        assert_non_null(mkdtemp(both[i]->dir));
        snprintf(both[i]->path, sizeof both[i]->path, "%s/limits.json", both[i]->dir);
        snprintf(both[i]->log_path, sizeof both[i]->log_path, "%s.log", both[i]->path);
    }
    *state = s;
    return 0;
}

static int teardown_shared(void **state) {
    shared_fixture *s = *state;
    if (s == NULL) return 0;
    fixture *both[] = {&s->a, &s->b};
    for (int i = 0; i < 2; i++) {
        rl_service_close(both[i]->service);
        unlink(both[i]->path);
        unlink(both[i]->log_path);
        rmdir(both[i]->dir);
    }
    rl_test_redis_cleanup(&s->redis);
    free(s);
    return 0;
}

static void open_shared(fixture *f, uint16_t port) {
    rl_service_close(f->service);
    rl_service_options options = {.backend_name = "redis", .registry_path = f->path};
    rl_redis_options_default(&options.redis);
    options.redis.host = "127.0.0.1";
    options.redis.port = port;
    options.submitter.max_leases = 1;
    char err[256];
    if (rl_service_open(&options, &f->service, err, sizeof err) != RL_OK) fail_msg("%s", err);
}

static void test_shared_mode_follows_the_store(void **state) {
    shared_fixture *s = *state;
    open_shared(&s->a, s->redis.port);
    open_shared(&s->b, s->redis.port);
    rl_service_put puts[RL_PRESET_MAX_LIMITS];
    size_t n = apply(s->a.service, "openai-tier-1", puts);
    assert_all(puts, n, RL_PRESET_DEFINED);
    /* The other daemon sees who made it: the definition says so. */
    rl_service_limit limit;
    assert_int_equal(rl_service_get_limit(s->b.service, RPM_4O, &limit), RL_OK);
    assert_string_equal(limit.preset, "openai-tier-1");
    n = apply(s->b.service, "openai-tier-1", puts);
    assert_all(puts, n, RL_PRESET_UNCHANGED);
    /* An operator's put through one daemon wins over an apply through the other. */
    rl_limit_def mine = operator_def(RPM_4O, 11);
    assert_int_equal(rl_service_put_limit(s->b.service, &mine, NULL, NULL, 0), RL_OK);
    n = apply(s->a.service, "openai-tier-2", puts);
    assert_int_equal(put_of(puts, n, RPM_4O)->outcome, RL_PRESET_KEPT);
    assert_int_equal(put_of(puts, n, "global:llm:openai:gpt-4o:tpm")->outcome, RL_PRESET_UPDATED);
    assert_int_equal(rl_service_get_limit(s->a.service, RPM_4O, &limit), RL_OK);
    assert_int_equal(limit.def.capacity, 11);
    assert_string_equal(limit.preset, "");
    rl_service_limit *limits;
    size_t count;
    assert_int_equal(rl_service_list_limits(s->b.service, &limits, &count), RL_OK);
    for (size_t i = 0; i < count; i++) {
        const char *key = limits[i].def.key;
        /* Tier 2 has no rpd: tier 1's stay, its own. */
        const char *expected = strcmp(key, RPM_4O) == 0 ? "" : strstr(key, ":rpd") ? "openai-tier-1" : "openai-tier-2";
        assert_string_equal(limits[i].preset, expected);
    }
    free(limits);
    /* Deleted through one, defined again by the other's apply. */
    assert_int_equal(rl_service_delete_limit(s->b.service, RPM_4O, NULL, 0), RL_OK);
    n = apply(s->a.service, "openai-tier-2", puts);
    assert_int_equal(put_of(puts, n, RPM_4O)->outcome, RL_PRESET_DEFINED);
    assert_int_equal(put_of(puts, n, "global:llm:openai:gpt-4o:tpm")->outcome, RL_PRESET_UNCHANGED);
    /* A restart's apply changes nothing. */
    open_shared(&s->a, s->redis.port);
    const char *names[] = {"openai-tier-2"};
    char report[1024];
    assert_int_equal(rl_service_apply_presets(s->a.service, names, 1, report, sizeof report), RL_OK);
    assert_non_null(strstr(report, ": 0 defined, 0 updated, 8 unchanged, 0 kept"));
}

/* The store unreachable: every put of the apply fails, none is kept or done. */
static void test_shared_mode_store_down(void **state) {
    shared_fixture *s = *state;
    open_shared(&s->a, s->redis.port);
    rl_test_redis_stop(&s->redis);
    const char *names[] = {"openai-tier-1"};
    char report[1024];
    rl_status status = rl_service_apply_presets(s->a.service, names, 1, report, sizeof report);
    assert_int_equal(status, RL_BACKEND_ERROR);
    assert_non_null(strstr(report, "limit \"global:llm:openai:gpt-4.1:rpm\""));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_defines_then_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_limits_win, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_newer_table_updates_through_decreasing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_kind_change_in_use_is_refused_for_that_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_full_registry_refuses_the_keys_past_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_operator_put_in_the_same_group_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_full_registry_refuses_only_the_new_keys_of_a_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_presets_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_mode_follows_the_store, setup_shared, teardown_shared),
        cmocka_unit_test_setup_teardown(test_shared_mode_store_down, setup_shared, teardown_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
