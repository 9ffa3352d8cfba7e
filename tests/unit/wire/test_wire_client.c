/* test_wire_client.c — the client's half of the wire: request encoders read
 * back by the server's decoders, and response decoders fed what the
 * server's encoders write, plus the bodies they must refuse (truncated, the
 * wrong count, an unknown error string). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/wire.h"

#define LEASE "01J0000000000000000000000A"

/* Decoders work in place: give them a writable, NUL-terminated copy. */
static char *copy(const char *text) {
    char *out = strdup(text);
    assert_non_null(out);
    return out;
}

static void reserve_request_round_trip(void **state) {
    (void)state;
    rl_requirement requirements[] = {{"global:llm:openai:gpt-4o:tpm", 1800, false}, {"k\"q\\", 9007199254740992u, false}};
    rl_reserve_request requests[2] = {{LEASE, "job \"1\"", requirements, 2, false}, {LEASE, NULL, requirements, 1, false}};
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_reserve_request(&buf, &requests[0]);
    assert_false(buf.failed);
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_wire_reserves msg;
    /* Keys are printable ASCII: '"' and '\\' are allowed and must be escaped. */
    assert_int_equal(rl__wire_decode_reserve(buf.data, buf.len, &msg, detail), RL_OK);
    assert_string_equal(msg.requests[0].requirements[1].key, "k\"q\\");
    assert_string_equal(msg.requests[0].job_id, "job \"1\"");
    rl__wire_reserves_free(&msg);

    requirements[1].key = "tenant:a:llm:daily_tokens";
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_batch_request(&buf, requests, 2);
    assert_int_equal(rl__wire_decode_reserve_batch(buf.data, buf.len, 256, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 2);
    assert_string_equal(msg.requests[0].lease_id, LEASE);
    assert_string_equal(msg.requests[0].job_id, "job \"1\"");
    assert_int_equal(msg.requests[0].requirement_count, 2);
    assert_string_equal(msg.requests[0].requirements[1].key, "tenant:a:llm:daily_tokens");
    assert_int_equal(msg.requests[0].requirements[1].amount, 9007199254740992u);
    assert_null(msg.requests[1].job_id);
    assert_int_equal(msg.requests[1].requirements[0].amount, 1800);
    rl__wire_reserves_free(&msg);
    rl__buf_free(&buf);
}

static void complete_request_round_trip(void **state) {
    (void)state;
    rl_actual actuals[] = {{"a:tpm", 0}, {"b:tpm", 740}};
    rl_complete_request requests[2] = {{LEASE, NULL, actuals, 2}, {LEASE, "j", NULL, 0}};
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_complete_batch_request(&buf, requests, 2);
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_wire_completes msg;
    assert_int_equal(rl__wire_decode_complete_batch(buf.data, buf.len, 256, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 2);
    assert_int_equal(msg.requests[0].actual_count, 2);
    assert_int_equal(msg.requests[0].actuals[0].actual_amount, 0);
    assert_int_equal(msg.requests[0].actuals[1].actual_amount, 740);
    assert_int_equal(msg.requests[1].actual_count, 0);
    rl__wire_completes_free(&msg);
    rl__buf_reset(&buf);
    rl__wire_encode_complete_request(&buf, &requests[1]);
    assert_string_equal(buf.data, "{\"lease_id\":\"" LEASE "\",\"job_id\":\"j\",\"actuals\":[]}");
    rl__buf_free(&buf);
}

static void reserve_answers_from_the_server_encoder(void **state) {
    (void)state;
    const rl_reserve_result results[] = {
        {true, 0, 1736660000000u, RL_OK, NULL, {0}},
        {false, 120, 0, RL_OK, NULL, {"g:tpm", RL_DENIAL_CAPACITY, 1800, 1200, 90000, 0}},
        {false, 3600000, 0, RL_OK, NULL, {"acme:spend", RL_DENIAL_CAPACITY, 9, 2, 50, 1796083200000u}},
        {false, 0, 0, RL_UNKNOWN_LIMIT_KEY, "tenant:foo", {0}},
        {false, 10000, 0, RL_LIMIT_DECREASING, "g:tpm", {"g:tpm", RL_DENIAL_DECREASING, 5, 0, 50, 0}},
        {false, 0, 0, RL_EXCEEDS_CAPACITY, "g:rpm", {"g:rpm", RL_DENIAL_EXCEEDS_CAPACITY, 9007199254740992u, 7, 100, 0}},
        {false, 0, 0, RL_BACKEND_ERROR, NULL, {0}},
        {false, 0, 0, RL_LEASE_ID_CONFLICT, NULL, {0}}, /* with its detail */
    };
    enum { N = sizeof results / sizeof results[0] };
    rl_buf buf;
    rl__buf_init(&buf);
    rl__buf_append_str(&buf, "{\"results\":[");
    for (size_t i = 0; i < N; i++) {
        if (i > 0) rl__buf_append_str(&buf, ",");
        rl__wire_encode_reserve_result(&buf, &results[i], i % 2 == 1); /* every other one a dry run's */
    }
    rl__buf_append_str(&buf, "]}");
    rl_wire_reserve_answer answers[N];
    assert_int_equal(rl__wire_decode_reserve_batch_answer(buf.data, buf.len, answers, N), RL_OK);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(answers[i].allowed, results[i].allowed);
        assert_int_equal(answers[i].retry_after_ms, results[i].retry_after_ms);
        assert_int_equal(answers[i].reserved_at_unix_ms, results[i].reserved_at_unix_ms);
        assert_int_equal(answers[i].status, results[i].status);
        assert_int_equal(answers[i].dry_run, i % 2 == 1);
        if (results[i].status_key == NULL)
            assert_null(answers[i].status_key);
        else
            assert_string_equal(answers[i].status_key, results[i].status_key);
        const rl_denial *want = &results[i].denied_by, *got = &answers[i].denied_by;
        if (want->key == NULL) {
            assert_null(got->key);
            continue;
        }
        assert_string_equal(got->key, want->key);
        assert_int_equal(got->reason, want->reason);
        assert_int_equal(got->requested, want->requested);
        assert_int_equal(got->available, want->available);
        assert_int_equal(got->capacity, want->capacity);
        assert_int_equal(got->period_end_unix_ms, want->period_end_unix_ms);
    }
    rl__buf_free(&buf);
}

static void api_md_spellings_are_read(void **state) {
    (void)state;
    /* api.md's example puts a space after the colon; an older daemon wrote no "error". */
    char *body = copy("{\"allowed\":false,\"retry_after_ms\":0,\"reserved_at_unix_ms\":0,"
                      "\"error\":\"unknown_limit_key: tenant:foo:llm:daily_tokens\",\"detail\":[1]}");
    rl_wire_reserve_answer a;
    assert_int_equal(rl__wire_decode_reserve_answer(body, strlen(body), &a), RL_OK);
    assert_int_equal(a.status, RL_UNKNOWN_LIMIT_KEY);
    assert_string_equal(a.status_key, "tenant:foo:llm:daily_tokens");
    free(body);
    body = copy("{\"ok\":true}");
    rl_status status = RL_TIMEOUT;
    assert_int_equal(rl__wire_decode_complete_answer(body, strlen(body), &status), RL_OK);
    assert_int_equal(status, RL_OK);
    free(body);
    body = copy("{\"results\":[{\"ok\":true,\"error\":\"\"},{\"ok\":false,\"error\":\"backend_error\"},{\"ok\":false}]}");
    rl_status statuses[3];
    assert_int_equal(rl__wire_decode_complete_batch_answer(body, strlen(body), statuses, 3), RL_OK);
    assert_int_equal(statuses[0], RL_OK);
    assert_int_equal(statuses[1], RL_BACKEND_ERROR);
    assert_int_equal(statuses[2], RL_BACKEND_ERROR); /* ok:false without a reason is no success */
    free(body);
}

static void bodies_that_are_not_answers_are_refused(void **state) {
    (void)state;
    static const char *const reserve_bodies[] = {
        "",
        "{\"allowed\":tr",                              /* cut short */
        "{\"retry_after_ms\":0,\"error\":\"\"}",        /* no allowed */
        "{\"allowed\":true}",                           /* no error */
        "{\"allowed\":1,\"error\":\"\"}",               /* not a bool */
        "{\"allowed\":true,\"retry_after_ms\":1.5,\"error\":\"\"}",
        "{\"allowed\":true,\"retry_after_ms\":-1,\"error\":\"\"}",
        "{\"allowed\":false,\"error\":\"rate_limited\"}", /* no such error string */
        "{\"allowed\":true,\"error\":\"\"} x",
        "{\"error\":\"invalid_request\"}",             /* the router's 404 */
    };
    for (size_t i = 0; i < sizeof reserve_bodies / sizeof reserve_bodies[0]; i++) {
        char *body = copy(reserve_bodies[i]);
        rl_wire_reserve_answer a;
        assert_int_equal(rl__wire_decode_reserve_answer(body, strlen(body), &a), RL_INVALID_REQUEST);
        free(body);
    }
    static const char *const batch_bodies[] = {
        "{\"results\":[{\"allowed\":true,\"error\":\"\"}]}", /* one of two */
        ("{\"results\":[{\"allowed\":true,\"error\":\"\"},{\"allowed\":true,\"error\":\"\"},"
         "{\"allowed\":true,\"error\":\"\"}]}"), /* three of two (one literal: clang asks) */
        "{\"result\":[]}",
        "[]",
    };
    for (size_t i = 0; i < sizeof batch_bodies / sizeof batch_bodies[0]; i++) {
        char *body = copy(batch_bodies[i]);
        rl_wire_reserve_answer a[2];
        assert_int_equal(rl__wire_decode_reserve_batch_answer(body, strlen(body), a, 2), RL_INVALID_REQUEST);
        free(body);
    }
}

/* optional and dry_run go on the wire only when set (a request without
 * them is byte for byte what it was), and come back as they went. */
static void reserve_flags_round_trip(void **state) {
    (void)state;
    rl_requirement requirements[] = {{"g:rpm", 1, false}, {"g:rpd", 1, true}};
    rl_reserve_request requests[2] = {{LEASE, NULL, requirements, 2, true}, {LEASE, NULL, requirements, 1, false}};
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_reserve_request(&buf, &requests[0]);
    assert_string_equal(buf.data, "{\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"g:rpm\",\"amount\":1},"
                                  "{\"key\":\"g:rpd\",\"amount\":1,\"optional\":true}],\"dry_run\":true}");
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_request(&buf, &requests[1]);
    assert_string_equal(buf.data, "{\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"g:rpm\",\"amount\":1}]}");
    rl__buf_reset(&buf);
    rl__wire_encode_reserve_batch_request(&buf, requests, 2);
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_wire_reserves msg;
    assert_int_equal(rl__wire_decode_reserve_batch(buf.data, buf.len, 256, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 2);
    assert_true(msg.requests[0].dry_run);
    assert_false(msg.requests[0].requirements[0].optional);
    assert_true(msg.requests[0].requirements[1].optional);
    assert_false(msg.requests[1].dry_run);
    assert_false(msg.requests[1].requirements[0].optional);
    rl__wire_reserves_free(&msg);
    rl__buf_free(&buf);
}

/* A dry run's answer: a reserve's, "dry_run":true last; read back as such,
 * and strictly (a daemon writes a boolean there). */
static void dry_run_answers_are_read(void **state) {
    (void)state;
    char *body = copy("{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":7,\"error\":\"\",\"dry_run\":true}");
    rl_wire_reserve_answer a;
    assert_int_equal(rl__wire_decode_reserve_answer(body, strlen(body), &a), RL_OK);
    assert_true(a.allowed);
    assert_true(a.dry_run);
    free(body);
    body = copy("{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":7,\"error\":\"\"}");
    assert_int_equal(rl__wire_decode_reserve_answer(body, strlen(body), &a), RL_OK);
    assert_false(a.dry_run);
    free(body);
    body = copy("{\"allowed\":true,\"retry_after_ms\":0,\"reserved_at_unix_ms\":7,\"error\":\"\",\"dry_run\":1}");
    assert_int_equal(rl__wire_decode_reserve_answer(body, strlen(body), &a), RL_INVALID_REQUEST);
    free(body);
}

static void error_strings(void **state) {
    (void)state;
    rl_status status;
    const char *key;
    assert_true(rl__wire_parse_error_string("", &status, &key));
    assert_int_equal(status, RL_OK);
    assert_true(rl__wire_parse_error_string("invalid_request", &status, &key));
    assert_int_equal(status, RL_INVALID_REQUEST);
    assert_true(rl__wire_parse_error_string("exceeds_capacity:a:b", &status, &key));
    assert_int_equal(status, RL_EXCEEDS_CAPACITY);
    assert_string_equal(key, "a:b");
    assert_true(rl__wire_parse_error_string("unknown_limit_key", &status, &key));
    assert_int_equal(status, RL_UNKNOWN_LIMIT_KEY);
    assert_null(key);
    assert_false(rl__wire_parse_error_string("unknown_limit_keys:x", &status, &key));
    assert_false(rl__wire_parse_error_string("backend_error:x", &status, &key));
    assert_true(rl__wire_parse_error_string("lease_id_conflict", &status, &key));
    assert_int_equal(status, RL_LEASE_ID_CONFLICT);
    assert_null(key);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserve_request_round_trip),
        cmocka_unit_test(complete_request_round_trip),
        cmocka_unit_test(reserve_answers_from_the_server_encoder),
        cmocka_unit_test(api_md_spellings_are_read),
        cmocka_unit_test(bodies_that_are_not_answers_are_refused),
        cmocka_unit_test(error_strings),
        cmocka_unit_test(reserve_flags_round_trip),
        cmocka_unit_test(dry_run_answers_are_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
