/* support/backend_fixture.h — what a backend test case needs, written
 * against the rl_backend_* interface only, so that one case runs unchanged
 * against every backend: a manual clock the backend reads its time from, the
 * backend, and short helpers (define a limit, reserve, complete, read usage)
 * that fail the test on an operational error. Leases are named by number
 * (support/lease_ids.h). Include <cmocka.h> first. Header-only.
 */
#ifndef RL_TEST_BACKEND_FIXTURE_H
#define RL_TEST_BACKEND_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/clock.h"
#include "support/lease_ids.h"

#define T0_MONOTONIC_MS UINT64_C(1000000)
#define T0_UNIX_MS UINT64_C(1736660000000)

typedef struct fixture {
    rl_manual_clock clock; /* at T0_*; the backend reads "now" from it */
    rl_backend *backend;
    char dir[64]; /* a journal's and audit log's directory, or "" */
} fixture;

/* Applies a definition and returns the backend's answer (define: one that must be taken). */
static inline rl_status apply_def(fixture *f, const char *key, rl_kind kind, uint64_t capacity, uint32_t seconds,
                                  rl_overage overage, rl_limit_status *status) {
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    snprintf(def.key, sizeof def.key, "%s", key);
    def.kind = kind;
    def.capacity = capacity;
    if (kind == RL_KIND_ROLLING) def.window_seconds = seconds;
    else def.timeout_seconds = seconds;
    def.overage = overage;
    char err[200];
    assert_true(rl_limit_def_validate(&def, err, sizeof err));
    return rl_backend_apply_definition(f->backend, &def, status);
}

static inline rl_limit_status define(fixture *f, const char *key, rl_kind kind, uint64_t capacity,
                                     uint32_t seconds, rl_overage overage) {
    rl_limit_status status;
    assert_int_equal(apply_def(f, key, kind, capacity, seconds, overage, &status), RL_OK);
    return status;
}

/* A reserve, or with dry_run its dry run. */
static inline rl_reserve_result reserve_request(fixture *f, uint64_t lease, const rl_requirement *reqs, size_t n,
                                                bool dry_run) {
    char id[27];
    rl_reserve_request request = {rl_test_lease_id(lease, id), NULL, reqs, n, dry_run};
    rl_reserve_result result;
    memset(&result, 0xab, sizeof result);
    rl_backend_reserve(f->backend, &request, &result);
    return result;
}

static inline rl_reserve_result reserve_n(fixture *f, uint64_t lease, const rl_requirement *reqs, size_t n) {
    return reserve_request(f, lease, reqs, n, false);
}

static inline rl_reserve_result reserve1(fixture *f, uint64_t lease, const char *key, uint64_t amount) {
    rl_requirement req = {key, amount, false};
    return reserve_n(f, lease, &req, 1);
}

static inline void complete_n(fixture *f, uint64_t lease, const rl_actual *actuals, size_t n) {
    char id[27];
    rl_complete_request request = {rl_test_lease_id(lease, id), NULL, actuals, n};
    assert_int_equal(rl_backend_complete(f->backend, &request), RL_OK);
}

static inline void complete1(fixture *f, uint64_t lease, const char *key, uint64_t actual) {
    rl_actual a = {key, actual};
    complete_n(f, lease, &a, 1);
}

static inline rl_limit_usage usage_of(fixture *f, const char *key) {
    rl_limit_usage usage;
    assert_int_equal(rl_backend_limit_usage(f->backend, key, &usage), RL_OK);
    return usage;
}

/* key's entries since since_unix_ms, at most limit, into entries; the next
 * page's since in *next. */
static inline size_t audit_page(fixture *f, const char *key, uint64_t since_unix_ms, uint32_t limit,
                         rl_audit_entry *entries, uint64_t *next) {
    rl_audit_query query = {key, since_unix_ms, limit};
    rl_audit_page page = {entries, 0, 0};
    assert_int_equal(rl_backend_audit_query(f->backend, &query, &page), RL_OK);
    assert_true(page.count <= limit);
    *next = page.next_since_unix_ms;
    return page.count;
}

static inline void expect_entry(const rl_audit_entry *e, uint64_t at_unix_ms, uint64_t lease, const char *job_id,
                         const char *key, uint64_t reserved, uint64_t actual, uint64_t period_start_unix_ms,
                         bool expired) {
    char id[27];
    assert_int_equal(e->at_unix_ms, at_unix_ms);
    assert_string_equal(e->lease_id, rl_test_lease_id(lease, id));
    assert_string_equal(e->job_id, job_id);
    assert_string_equal(e->key, key);
    assert_int_equal(e->reserved, reserved);
    assert_int_equal(e->actual, actual);
    assert_int_equal(e->period_start_unix_ms, period_start_unix_ms);
    assert_int_equal(e->expired, expired);
}

#endif
