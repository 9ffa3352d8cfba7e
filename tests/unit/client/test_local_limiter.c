/* test_local_limiter.c — opening the in-process limiter from a limits file;
 * its behaviour is the conformance suite's (tests/integration). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"
#include "ratelimiter/registry.h"
#include "support/lease_ids.h"

static char dir[] = "/tmp/rl_local_limiter_XXXXXX";

static const char *write_file(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void opens_a_limits_file_and_enforces_it(void **state) {
    (void)state;
    const char *path = write_file("limits.json",
                                  "[{\"key\":\"p:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60},"
                                  " {\"key\":\"p:conc\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":30}]");
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter;
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    assert_string_equal(limiter->ops->name, "local");
    char id[27];
    rl_requirement reqs[] = {{"p:rpm", 1, false}, {"p:conc", 1, false}};
    rl_reserve_request first = {rl_test_lease_id(1, id), NULL, reqs, 2, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &first, &result), RL_OK);
    assert_true(result.allowed);
    char id2[27];
    rl_reserve_request second = {rl_test_lease_id(2, id2), NULL, reqs, 2, false};
    assert_int_equal(rl_limiter_reserve(limiter, &second, &result), RL_OK);
    assert_false(result.allowed); /* the one concurrency slot is held */
    rl_complete_request done = {id, NULL, NULL, 0};
    assert_int_equal(rl_limiter_complete(limiter, &done), RL_OK);
    char id3[27];
    rl_reserve_request third = {rl_test_lease_id(3, id3), NULL, reqs, 2, false};
    assert_int_equal(rl_limiter_reserve(limiter, &third, &result), RL_OK);
    assert_true(result.allowed);
    /* a bad request is refused whole, and changes nothing */
    rl_reserve_request bad = {"nope", NULL, reqs, 2, false};
    assert_int_equal(rl_limiter_reserve(limiter, &bad, &result), RL_INVALID_REQUEST);
    rl_limiter_destroy(limiter);
}

static void refuses_a_missing_or_corrupt_file(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter = (rl_limiter *)1;
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.json", dir);
    assert_int_not_equal(rl_limiter_local_open(missing, NULL, &limiter, err), RL_OK);
    assert_null(limiter);
    assert_non_null(strstr(err, "none.json"));
    const char *corrupt = write_file("corrupt.json", "[{\"key\":");
    assert_int_not_equal(rl_limiter_local_open(corrupt, NULL, &limiter, err), RL_OK);
    assert_null(limiter);
    assert_non_null(strstr(err, "corrupt.json"));
}

static void audit_refuses_bad_queries(void **state) {
    (void)state;
    const char *path = write_file("audit_limits.json",
                                  "[{\"key\":\"a:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60}]");
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter;
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    rl_audit_entry entries[2];
    rl_audit_page page = {entries, 7, 7};
    rl_audit_query query = {"a rpm", 0, 2};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "key must be"));
    query = (rl_audit_query){"a:rpm", 0, 0};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_INVALID_REQUEST);
    assert_string_equal(rl_limiter_last_error(), "limit must be 1..1000, not 0");
    query.limit = RL_AUDIT_QUERY_MAX + 1;
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_INVALID_REQUEST);
    query = (rl_audit_query){"a:rpm", RL_AMOUNT_MAX + 1, 2};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "since_unix_ms must be 0..9007199254740992"));
    query.since_unix_ms = 5;
    assert_int_equal(rl_limiter_audit(limiter, &query, NULL), RL_INVALID_REQUEST);
    rl_audit_page no_array = {NULL, 0, 0};
    assert_int_equal(rl_limiter_audit(limiter, &query, &no_array), RL_INVALID_REQUEST);

    /* Without an audit directory the backend keeps no log: an empty page,
     * asked again from the same time; the last error is cleared. */
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_OK);
    assert_int_equal(page.count, 0);
    assert_int_equal(page.next_since_unix_ms, 5);
    assert_string_equal(rl_limiter_last_error(), "");
    rl_limiter_destroy(limiter);
}

/* With an audit directory, the in-process limiter lists what each Complete
 * charged, as GET /v1/admin/audit does. Needs the memory backend's audit
 * log (rl_memory_backend_open with audit_dir). */
static void audit_lists_what_was_charged(void **state) {
    (void)state;
    const char *path = write_file("charged.json",
                                  "[{\"key\":\"c:spend\",\"kind\":\"budget\",\"capacity\":1000,\"period\":\"month\","
                                  "\"timeout_seconds\":600},"
                                  " {\"key\":\"c:tpm\",\"kind\":\"rolling\",\"capacity\":1000,\"window_seconds\":60}]");
    char audit_dir[300], err[RL_LIMITER_ERR_SIZE];
    snprintf(audit_dir, sizeof audit_dir, "%s/audit", dir);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.audit_dir = audit_dir;
    rl_limiter *limiter;
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    char id[27];
    rl_requirement reqs[] = {{"c:spend", 400, false}, {"c:tpm", 300, false}};
    rl_reserve_request reserve = {rl_test_lease_id(41, id), "job-41", reqs, 2, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &reserve, &result), RL_OK);
    assert_true(result.allowed);
    rl_actual actuals[] = {{"c:spend", 150}, {"c:tpm", 120}};
    rl_complete_request complete = {id, "job-41", actuals, 2};
    assert_int_equal(rl_limiter_complete(limiter, &complete), RL_OK);
    usleep(2000); /* entries are listed once their millisecond is over */

    rl_audit_entry entries[4];
    rl_audit_page page = {entries, 0, 0};
    rl_audit_query query = {"c:spend", 0, 4};
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_OK);
    assert_int_equal(page.count, 1);
    assert_string_equal(entries[0].lease_id, id);
    assert_string_equal(entries[0].job_id, "job-41");
    assert_string_equal(entries[0].key, "c:spend");
    assert_int_equal(entries[0].reserved, 400);
    assert_int_equal(entries[0].actual, 150);
    assert_true(entries[0].period_start_unix_ms > 0 && entries[0].period_start_unix_ms <= entries[0].at_unix_ms);
    assert_false(entries[0].expired);
    assert_true(entries[0].at_unix_ms >= result.reserved_at_unix_ms);
    assert_true(page.next_since_unix_ms > entries[0].at_unix_ms - 1);
    query.key = "c:tpm";
    assert_int_equal(rl_limiter_audit(limiter, &query, &page), RL_OK);
    assert_int_equal(page.count, 1);
    assert_int_equal(entries[0].reserved, 300);
    assert_int_equal(entries[0].actual, 120);
    assert_int_equal(entries[0].period_start_unix_ms, 0); /* rolling */
    rl_limiter_destroy(limiter);
}

/* rl_limiter_local_delete: the limit and what it holds go; a lease that
 * held it keeps its other keys; the key is unknown until defined again,
 * empty; with a journal the delete outlives the limiter (the limits file
 * is not rewritten: one that lists the key defines it again at open). */
static void deletes_a_limit_at_run_time(void **state) {
    (void)state;
    const char *path = write_file("deletes.json",
                                  "[{\"key\":\"d:rpm\",\"kind\":\"rolling\",\"capacity\":2,\"window_seconds\":60},"
                                  " {\"key\":\"d:conc\",\"kind\":\"concurrency\",\"capacity\":1,\"timeout_seconds\":30}]");
    char journal[300], err[RL_LIMITER_ERR_SIZE];
    snprintf(journal, sizeof journal, "%s/deletes.journal", dir);
    rl_memory_options options;
    rl_memory_options_default(&options);
    options.journal_path = journal;
    rl_limiter *limiter;
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    rl_limit_def extra = {.key = "d:extra", .kind = RL_KIND_ROLLING, .capacity = 5, .window_seconds = 60};
    assert_int_equal(rl_limiter_local_define(limiter, &extra, NULL), RL_OK);
    char id[27], id2[27];
    rl_requirement reqs[] = {{"d:rpm", 1, false}, {"d:conc", 1, false}, {"d:extra", 5, false}};
    rl_reserve_request first = {rl_test_lease_id(1, id), NULL, reqs, 3, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &first, &result), RL_OK);
    assert_true(result.allowed);

    assert_int_equal(rl_limiter_local_delete(limiter, "d:conc"), RL_OK);
    assert_int_equal(rl_limiter_local_delete(limiter, "d:extra"), RL_OK);
    assert_int_equal(rl_limiter_local_delete(limiter, "d:conc"), RL_UNKNOWN_LIMIT_KEY);
    assert_non_null(strstr(rl_limiter_last_error(), "d:conc"));
    assert_int_equal(rl_limiter_local_delete(limiter, "bad key"), RL_INVALID_REQUEST);
    assert_int_equal(rl_limiter_local_delete(limiter, NULL), RL_INVALID_REQUEST);
    rl_reserve_request second = {rl_test_lease_id(2, id2), NULL, reqs, 3, false};
    assert_int_equal(rl_limiter_reserve(limiter, &second, &result), RL_OK);
    assert_false(result.allowed);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_limiter_reserve(limiter, &first, &result), RL_OK);
    assert_true(result.allowed); /* its first outcome */
    rl_complete_request done = {id, NULL, NULL, 0};
    assert_int_equal(rl_limiter_complete(limiter, &done), RL_OK);
    assert_int_equal(rl_limiter_local_define(limiter, &extra, NULL), RL_OK); /* again: empty */
    rl_requirement all_of_extra[] = {{"d:extra", 5, false}};
    rl_reserve_request third = {rl_test_lease_id(3, id2), NULL, all_of_extra, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &third, &result), RL_OK);
    assert_true(result.allowed);
    assert_int_equal(rl_limiter_local_delete(limiter, "d:extra"), RL_OK);

    /* A second limiter on the same journal, while the first is open: refused, naming this process. */
    rl_limiter *second_limiter = NULL;
    assert_int_not_equal(rl_limiter_local_open(path, &options, &second_limiter, err), RL_OK);
    assert_null(second_limiter);
    if (strstr(err, "is in use: this process") == NULL || strstr(err, journal) == NULL) fail_msg("%s", err);
    rl_limiter_destroy(limiter);
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    rl_limiter_destroy(limiter);

    /* reopened on its journal: d:extra stays deleted; the file defines d:conc again */
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    rl_requirement extra_only[] = {{"d:extra", 1, false}};
    rl_reserve_request fourth = {rl_test_lease_id(4, id2), NULL, extra_only, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &fourth, &result), RL_OK);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    rl_requirement conc_only[] = {{"d:conc", 1, false}};
    rl_reserve_request fifth = {rl_test_lease_id(5, id2), NULL, conc_only, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &fifth, &result), RL_OK);
    assert_true(result.allowed); /* defined again, empty */
    rl_limiter_destroy(limiter);
}

/* The result of key in results[0..count). */
static const rl_preset_result *result_of(const rl_preset_result *results, size_t count, const char *key) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(results[i].key, key) == 0) return &results[i];
    fail_msg("no result for %s", key);
    return NULL;
}

static void assert_outcomes(const rl_preset_result *results, size_t count, rl_preset_outcome outcome,
                            const char *except) {
    for (size_t i = 0; i < count; i++) {
        if (except != NULL && strcmp(results[i].key, except) == 0) continue;
        assert_int_equal(results[i].status, RL_OK);
        if (results[i].outcome != outcome)
            fail_msg("%s: %s", results[i].key, rl_preset_outcome_name(results[i].outcome));
    }
}

/* rl_limiter_local_apply_preset: the file's and define's limits are the
 * operator's and win; a preset takes what a preset made; delete frees. */
static void applies_a_preset_where_the_operator_has_not_defined(void **state) {
    (void)state;
    const char *path = write_file("presets.json",
                                  "[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"kind\":\"rolling\",\"capacity\":7,"
                                  "\"window_seconds\":60}]");
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter;
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    rl_preset_result results[RL_PRESET_MAX_LIMITS];
    size_t count = 0;
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-1", results, &count), RL_OK);
    assert_int_equal(count, rl_preset_limit_count(rl_preset_find("openai-tier-1")));
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:rpm")->outcome, RL_PRESET_KEPT);
    assert_outcomes(results, count, RL_PRESET_DEFINED, "global:llm:openai:gpt-4o:rpm");
    /* In force: tier 1's 30,000 tokens a minute for gpt-4o. */
    char id[27];
    rl_requirement too_much[] = {{"global:llm:openai:gpt-4o:tpm", 30001, false}};
    rl_reserve_request request = {rl_test_lease_id(1, id), NULL, too_much, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_int_equal(result.status, RL_EXCEEDS_CAPACITY);
    /* Again: nothing changes. Another tier takes the preset's keys. */
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-1", results, &count), RL_OK);
    assert_outcomes(results, count, RL_PRESET_UNCHANGED, "global:llm:openai:gpt-4o:rpm");
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-2", results, &count), RL_OK);
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:rpm")->outcome, RL_PRESET_KEPT);
    assert_outcomes(results, count, RL_PRESET_UPDATED, "global:llm:openai:gpt-4o:rpm");
    /* define makes a preset's key the operator's; delete frees one. */
    rl_limit_def mine = {.key = "global:llm:openai:gpt-4o:tpm", .kind = RL_KIND_ROLLING, .capacity = 5,
                         .window_seconds = 60};
    assert_int_equal(rl_limiter_local_define(limiter, &mine, NULL), RL_OK);
    assert_int_equal(rl_limiter_local_delete(limiter, "global:llm:openai:gpt-4o:rpm"), RL_OK);
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-2", NULL, NULL), RL_OK);
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-2", results, &count), RL_OK);
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:tpm")->outcome, RL_PRESET_KEPT);
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:rpm")->outcome, RL_PRESET_UNCHANGED);
    /* "local" makes nothing; unknown names and other limiters are refused. */
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "local", results, &count), RL_OK);
    assert_int_equal(count, 0);
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-9", results, &count), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "no preset named \"openai-tier-9\""));
    assert_int_equal(rl_limiter_local_apply_preset(limiter, NULL, results, &count), RL_INVALID_REQUEST);
    assert_int_equal(rl_limiter_local_apply_preset(NULL, "openai-tier-1", results, &count), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "not a local limiter"));
    rl_limiter_destroy(limiter);
}

/* Who made a limit survives: a daemon's limits.json keeps origins (a limit
 * an older table made is updated, through decreasing when usage is above
 * the new capacity), and with a journal a limit an earlier run's apply made
 * is the preset's again while it is still exactly the preset's. */
static void knows_who_made_a_limit_across_opens(void **state) {
    (void)state;
    char path[300], journal[300], err[RL_LIMITER_ERR_SIZE];
    snprintf(path, sizeof path, "%s/origins.json", dir);
    snprintf(journal, sizeof journal, "%s/origins.journal", dir);
    rl_registry *registry;
    assert_int_equal(rl_registry_open(path, 0, &registry, err, sizeof err), RL_OK);
    rl_registry_change change = {.op = RL_REGISTRY_PUT, .origin = "preset:openai-tier-1",
                                 .def = {.key = "global:llm:openai:gpt-4o:rpm", .kind = RL_KIND_ROLLING,
                                         .capacity = 800, .window_seconds = 60, .description = "older table"}};
    assert_int_equal(rl_registry_apply(registry, &change, 1, err, sizeof err), RL_OK);
    rl_registry_close(registry);

    rl_memory_options options;
    rl_memory_options_default(&options);
    options.journal_path = journal;
    rl_limiter *limiter;
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    char id[27];
    rl_requirement many[] = {{"global:llm:openai:gpt-4o:rpm", 600, false}};
    rl_reserve_request request = {rl_test_lease_id(1, id), NULL, many, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    assert_true(result.allowed);
    rl_preset_result results[RL_PRESET_MAX_LIMITS];
    size_t count = 0;
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-1", results, &count), RL_OK);
    const rl_preset_result *rpm = result_of(results, count, "global:llm:openai:gpt-4o:rpm");
    assert_int_equal(rpm->outcome, RL_PRESET_UPDATED);
    assert_int_equal(rpm->limit_status, RL_LIMIT_STATUS_DECREASING);
    assert_outcomes(results, count, RL_PRESET_DEFINED, "global:llm:openai:gpt-4o:rpm");
    rl_limit_def mine = {.key = "global:llm:openai:gpt-4o:tpm", .kind = RL_KIND_ROLLING, .capacity = 3,
                         .window_seconds = 60};
    assert_int_equal(rl_limiter_local_define(limiter, &mine, NULL), RL_OK);
    rl_limiter_destroy(limiter);

    /* Reopened: the file's key as the file says (800, the older table's,
     * updated again); of the journal's, the preset's recognised as such,
     * the one the operator defined kept. */
    if (rl_limiter_local_open(path, &options, &limiter, err) != RL_OK) fail_msg("%s", err);
    assert_int_equal(rl_limiter_local_apply_preset(limiter, "openai-tier-1", results, &count), RL_OK);
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:rpm")->outcome, RL_PRESET_UPDATED);
    assert_int_equal(result_of(results, count, "global:llm:openai:gpt-4o:tpm")->outcome, RL_PRESET_KEPT);
    for (size_t i = 0; i < count; i++)
        if (strcmp(results[i].key, "global:llm:openai:gpt-4o:rpm") != 0 &&
            strcmp(results[i].key, "global:llm:openai:gpt-4o:tpm") != 0)
            assert_int_equal(results[i].outcome, RL_PRESET_UNCHANGED);
    rl_limiter_destroy(limiter);
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    return system(command);
}

/* Templates at run time: a key no limit defines that a template matches
 * is a limit made from it on first use; a template's change reaches it,
 * and its delete drops it. */
static void defines_templates_at_run_time(void **state) {
    (void)state;
    const char *path = write_file("templates.json", "[]");
    char err[RL_LIMITER_ERR_SIZE];
    rl_limiter *limiter;
    assert_int_equal(rl_limiter_local_open(path, NULL, &limiter, err), RL_OK);
    rl_limit_def daily = {.key = "tenant:{tenant}:tokens", .kind = RL_KIND_ROLLING, .capacity = 100,
                          .window_seconds = 86400};
    assert_int_equal(rl_limiter_local_define_template(limiter, &daily), RL_OK);
    char id[27];
    rl_requirement req = {"tenant:acme:tokens", 80, false};
    rl_reserve_request first = {rl_test_lease_id(1, id), NULL, &req, 1, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &first, &result), RL_OK);
    assert_true(result.allowed);
    rl_reserve_request second = {rl_test_lease_id(2, id), NULL, &req, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &second, &result), RL_OK);
    assert_false(result.allowed);
    assert_string_equal(result.denied_by.key, "tenant:acme:tokens");
    daily.capacity = 200; /* the limit made from it follows */
    assert_int_equal(rl_limiter_local_define_template(limiter, &daily), RL_OK);
    rl_reserve_request third = {rl_test_lease_id(3, id), NULL, &req, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &third, &result), RL_OK);
    assert_true(result.allowed);
    /* refusals */
    rl_limit_def plain = daily;
    snprintf(plain.key, sizeof plain.key, "tenant:acme:tokens");
    assert_int_equal(rl_limiter_local_define_template(limiter, &plain), RL_INVALID_REQUEST);
    assert_non_null(strstr(rl_limiter_last_error(), "placeholder"));
    assert_int_equal(rl_limiter_local_delete_template(limiter, "tenant:{x}:tokens"), RL_UNKNOWN_LIMIT_KEY);
    assert_int_equal(rl_limiter_local_delete_template(limiter, "bad pattern"), RL_INVALID_REQUEST);
    /* deleted: the key is unknown again */
    assert_int_equal(rl_limiter_local_delete_template(limiter, "tenant:{tenant}:tokens"), RL_OK);
    rl_reserve_request fourth = {rl_test_lease_id(4, id), NULL, &req, 1, false};
    assert_int_equal(rl_limiter_reserve(limiter, &fourth, &result), RL_OK);
    assert_int_equal(result.status, RL_UNKNOWN_LIMIT_KEY);
    rl_limiter_destroy(limiter);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_a_limits_file_and_enforces_it),
        cmocka_unit_test(refuses_a_missing_or_corrupt_file),
        cmocka_unit_test(audit_refuses_bad_queries),
        cmocka_unit_test(audit_lists_what_was_charged),
        cmocka_unit_test(deletes_a_limit_at_run_time),
        cmocka_unit_test(defines_templates_at_run_time),
        cmocka_unit_test(applies_a_preset_where_the_operator_has_not_defined),
        cmocka_unit_test(knows_who_made_a_limit_across_opens),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
