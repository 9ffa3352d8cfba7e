/* test_request_check.c — api.md's rules, checked before anything is sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ratelimiter/limiter.h"

#define LEASE "01JD5Z8Q6X4W8N1V0M9R7T3K2A"

static void reserve_rules(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_requirement two[] = {{"a:rpm", 1, false}, {"a:tpm", RL_AMOUNT_MAX, false}};
    rl_reserve_request ok = {LEASE, NULL, two, 2, false};
    assert_true(rl_reserve_request_check(&ok, err));

    rl_reserve_request bad = ok;
    bad.lease_id = "01JD5Z8Q6X4W8N1V0M9R7T3K2"; /* 25 characters */
    assert_false(rl_reserve_request_check(&bad, err));
    assert_non_null(strstr(err, "lease_id"));
    bad = ok;
    bad.requirement_count = 0;
    assert_false(rl_reserve_request_check(&bad, err));
    bad.requirement_count = RL_MAX_REQUIREMENTS + 1;
    assert_false(rl_reserve_request_check(&bad, err));

    rl_requirement twice[] = {{"a:rpm", 1, false}, {"a:rpm", 1, false}};
    rl_reserve_request dup = {LEASE, NULL, twice, 2, false};
    assert_false(rl_reserve_request_check(&dup, err));
    assert_string_equal(err, "requirements[1].key repeats requirements[0].key: a lease names each key once");

    rl_requirement zero[] = {{"a:rpm", 0, false}};
    rl_reserve_request z = {LEASE, NULL, zero, 1, false};
    assert_false(rl_reserve_request_check(&z, err));
    assert_string_equal(err, "requirements[0].amount must be an integer 1..9007199254740992");
    zero[0].amount = RL_AMOUNT_MAX + 1;
    assert_false(rl_reserve_request_check(&z, err));

    rl_requirement space[] = {{"a rpm", 1, false}};
    rl_reserve_request s = {LEASE, NULL, space, 1, false};
    assert_false(rl_reserve_request_check(&s, err));
    char long_job[RL_JOB_ID_MAX_LEN + 2];
    memset(long_job, 'j', sizeof long_job - 1);
    long_job[sizeof long_job - 1] = '\0';
    rl_reserve_request job = ok;
    job.job_id = long_job;
    assert_false(rl_reserve_request_check(&job, err));
    /* The wire's rule for a job_id too (lease_rules.h): no control
     * characters, valid UTF-8; any other text up to 128 bytes. */
    job.job_id = "line\nbreak";
    assert_false(rl_reserve_request_check(&job, err));
    assert_string_equal(err, "job_id must be at most 128 bytes of UTF-8 without control characters");
    job.job_id = "\xc3\x28";
    assert_false(rl_reserve_request_check(&job, err));
    job.job_id = "caf\xc3\xa9 #1";
    assert_true(rl_reserve_request_check(&job, err));
    long_job[RL_JOB_ID_MAX_LEN] = '\0';
    job.job_id = long_job;
    assert_true(rl_reserve_request_check(&job, err));
    /* Any case of a ULID. */
    job.lease_id = "01jd5z8q6x4w8n1v0m9r7t3k2a";
    assert_true(rl_reserve_request_check(&job, err));
}

static void complete_rules(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_complete_request none = {LEASE, NULL, NULL, 0};
    assert_true(rl_complete_request_check(&none, err));
    rl_actual actuals[] = {{"a:tpm", 0}, {"a:daily", RL_AMOUNT_MAX}};
    rl_complete_request ok = {LEASE, "job-1", actuals, 2};
    assert_true(rl_complete_request_check(&ok, err));
    actuals[1].actual_amount = RL_AMOUNT_MAX + 1;
    assert_false(rl_complete_request_check(&ok, err));
    rl_actual twice[] = {{"a:tpm", 1}, {"a:tpm", 2}};
    rl_complete_request dup = {LEASE, NULL, twice, 2};
    assert_false(rl_complete_request_check(&dup, err));
    rl_complete_request bad = {"nope", NULL, NULL, 0};
    assert_false(rl_complete_request_check(&bad, err));
}

/* optional and dry_run change no rule: the same keys and amounts are
 * checked (an optional key must be a valid key, named once; an optional
 * amount 1..2^53), whatever the flags. */
static void flags_change_no_rule(void **state) {
    (void)state;
    char err[RL_LIMITER_ERR_SIZE];
    rl_requirement reqs[] = {{"a:rpm", 1, true}, {"a:rpd", 1, true}};
    rl_reserve_request r = {LEASE, NULL, reqs, 2, true};
    assert_true(rl_reserve_request_check(&r, err));
    r.dry_run = false;
    assert_true(rl_reserve_request_check(&r, err));
    reqs[1].key = "a:rpm";
    assert_false(rl_reserve_request_check(&r, err));
    assert_string_equal(err, "requirements[1].key repeats requirements[0].key: a lease names each key once");
    reqs[1].key = "a rpd";
    assert_false(rl_reserve_request_check(&r, err));
    reqs[1].key = "a:rpd";
    reqs[1].amount = 0;
    r.dry_run = true;
    assert_false(rl_reserve_request_check(&r, err));
    assert_string_equal(err, "requirements[1].amount must be an integer 1..9007199254740992");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserve_rules),
        cmocka_unit_test(complete_rules),
        cmocka_unit_test(flags_change_no_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
