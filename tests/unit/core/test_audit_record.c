/* test_audit_record.c — an audit entry as a record: encoded and decoded back
 * the same (the lease id in upper case); every rule of the decoder refuses
 * the record that breaks it, and the encoder never writes one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/audit_record.h"

static rl_audit_entry sample(void) {
    rl_audit_entry e;
    memset(&e, 0, sizeof e);
    e.at_unix_ms = UINT64_C(1795651200123); /* 2026-11-26T00:00:00.123Z */
    strcpy(e.lease_id, "01JD5Z8N3F6Q7R8S9T0V1W2X3Y");
    strcpy(e.job_id, "batch-7 \xc3\xa9t\xc3\xa9");
    strcpy(e.key, "tenant:acme:spend:monthly");
    e.reserved = 350000;
    e.actual = 52000;
    e.period_start_unix_ms = UINT64_C(1793491200000);
    return e;
}

static size_t encode(unsigned char *out, uint64_t seq, const rl_audit_entry *e) {
    const char *why = NULL;
    size_t len = rl__audit_record_encode(out, seq, e, &why);
    if (len == 0) fail_msg("refused: %s", why);
    return len;
}

static void assert_same_entry(const rl_audit_entry *a, const rl_audit_entry *b) {
    assert_int_equal(a->at_unix_ms, b->at_unix_ms);
    assert_string_equal(a->lease_id, b->lease_id);
    assert_string_equal(a->job_id, b->job_id);
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->reserved, b->reserved);
    assert_int_equal(a->actual, b->actual);
    assert_int_equal(a->period_start_unix_ms, b->period_start_unix_ms);
    assert_int_equal(a->expired, b->expired);
}

static void an_entry_reads_back_the_same(void **state) {
    (void)state;
    rl_audit_entry e = sample();
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = encode(record, 42, &e);
    assert_int_equal(len, RL__AUDIT_RECORD_FIXED_BYTES + strlen(e.key) + strlen(e.job_id));
    rl__audit_view view;
    assert_true(rl__audit_record_decode(record, len, &view, NULL));
    assert_int_equal(view.seq, 42);
    assert_ptr_equal(view.record, record);
    assert_int_equal(view.record_len, len);
    assert_true(rl__audit_view_has_key(&view, e.key, strlen(e.key)));
    assert_false(rl__audit_view_has_key(&view, "tenant:acme", 11));
    rl_audit_entry back;
    memset(&back, 0x55, sizeof back);
    rl__audit_view_to_entry(&view, &back);
    assert_same_entry(&e, &back);

    /* the longest: a 256-byte key, a 128-byte job id; an expired one, no job id */
    memset(e.key, 'k', RL_KEY_MAX_LEN);
    e.key[RL_KEY_MAX_LEN] = '\0';
    memset(e.job_id, 'j', RL_JOB_ID_MAX_LEN);
    e.job_id[RL_JOB_ID_MAX_LEN] = '\0';
    assert_int_equal(encode(record, UINT64_MAX, &e), RL__AUDIT_RECORD_MAX_BYTES);
    e.job_id[0] = '\0';
    e.expired = true;
    e.actual = 0;
    len = encode(record, 1, &e);
    assert_true(rl__audit_record_decode(record, len, &view, NULL));
    rl__audit_view_to_entry(&view, &back);
    assert_same_entry(&e, &back);
}

/* The mark of the entry that opens a group reads back, and marks nothing else. */
static void the_group_mark_reads_back(void **state) {
    (void)state;
    rl_audit_entry e = sample();
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = encode(record, 3, &e);
    rl__audit_view view;
    assert_true(rl__audit_record_decode(record, len, &view, NULL));
    assert_false(view.opens_group);
    rl__audit_record_open_group(record);
    assert_true(rl__audit_record_decode(record, len, &view, NULL));
    assert_true(view.opens_group);
    assert_false(view.expired);
    rl_audit_entry back;
    rl__audit_view_to_entry(&view, &back);
    assert_same_entry(&e, &back);
}

static void a_lease_id_is_written_in_upper_case(void **state) {
    (void)state;
    rl_audit_entry e = sample();
    strcpy(e.lease_id, "01jd5z8n3f6q7r8s9t0v1w2x3y");
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = encode(record, 1, &e);
    rl__audit_view view;
    assert_true(rl__audit_record_decode(record, len, &view, NULL));
    rl_audit_entry back;
    rl__audit_view_to_entry(&view, &back);
    assert_string_equal(back.lease_id, "01JD5Z8N3F6Q7R8S9T0V1W2X3Y");
}

/* The sample encoded, one byte changed, must be refused with a reason. */
static void refused_with(size_t at, unsigned char value, const char *reason) {
    rl_audit_entry e = sample();
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = encode(record, 7, &e);
    record[at] = value;
    rl__audit_view view;
    const char *why = NULL;
    if (rl__audit_record_decode(record, len, &view, &why)) fail_msg("byte %zu = %u accepted", at, value);
    assert_non_null(why);
    if (strstr(why, reason) == NULL) fail_msg("byte %zu: '%s', not '%s'", at, why, reason);
}

static void every_rule_refuses(void **state) {
    (void)state;
    const size_t key_at = RL__AUDIT_RECORD_FIXED_BYTES;
    const size_t job_at = key_at + strlen(sample().key);
    refused_with(0, 2, "version");
    refused_with(1, 4, "flags");
    refused_with(1, 0x80, "flags");
    refused_with(1, 1, "expired entry with an actual");
    refused_with(2, RL_JOB_ID_MAX_LEN + 1, "job_id longer");
    refused_with(2, 3, "fields' length");
    refused_with(3, 0, "fields' length");
    refused_with(4, 1, "fields' length");
    refused_with(5, 0, "sequence number 0"); /* seq 7 */
    refused_with(20, 0xff, "past the year 9999"); /* at */
    refused_with(44, 0xff, "past the year 9999"); /* period start */
    refused_with(28, 0x01, "above 2^53");          /* reserved */
    refused_with(36, 0x01, "above 2^53");          /* actual */
    refused_with(45, '8', "ULID");                 /* the first character is 0..7 */
    refused_with(50, 'U', "ULID");
    refused_with(50, 'z', "ULID"); /* valid Crockford, but not the case written */
    refused_with(key_at + 3, ' ', "key rule");
    refused_with(key_at, '\0', "key rule");
    refused_with(job_at + 2, '\0', "NUL inside job_id");
}

static void lengths_and_numbers_refuse(void **state) {
    (void)state;
    rl_audit_entry e = sample();
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES + 1];
    size_t len = encode(record, 7, &e);
    rl__audit_view view;
    const char *why;
    for (size_t cut = 0; cut < len; cut++) assert_false(rl__audit_record_decode(record, cut, &view, &why));
    record[len] = 'x';
    assert_false(rl__audit_record_decode(record, len + 1, &view, &why));
    /* the limits themselves pass */
    e.reserved = e.actual = RL_AMOUNT_MAX;
    e.at_unix_ms = e.period_start_unix_ms = RL__AUDIT_INSTANT_END_MS - 1;
    assert_int_not_equal(rl__audit_record_encode(record, 1, &e, NULL), 0);
}

static void the_encoder_writes_nothing_the_decoder_refuses(void **state) {
    (void)state;
    unsigned char record[RL__AUDIT_RECORD_MAX_BYTES];
    const char *why = NULL;
    rl_audit_entry e = sample();
    assert_int_equal(rl__audit_record_encode(record, 0, &e, &why), 0);
    assert_string_equal(why, "sequence number 0");
    e = sample();
    e.key[0] = '\0';
    assert_int_equal(rl__audit_record_encode(record, 1, &e, &why), 0);
    e = sample();
    strcpy(e.lease_id, "not-a-lease");
    assert_int_equal(rl__audit_record_encode(record, 1, &e, &why), 0);
    e = sample();
    e.expired = true;
    assert_int_equal(rl__audit_record_encode(record, 1, &e, &why), 0);
    e = sample();
    e.actual = RL_AMOUNT_MAX + 1;
    assert_int_equal(rl__audit_record_encode(record, 1, &e, &why), 0);
    e = sample();
    memset(e.key, 'k', sizeof e.key); /* no NUL */
    assert_int_equal(rl__audit_record_encode(record, 1, &e, &why), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_entry_reads_back_the_same),
        cmocka_unit_test(the_group_mark_reads_back),
        cmocka_unit_test(a_lease_id_is_written_in_upper_case),
        cmocka_unit_test(every_rule_refuses),
        cmocka_unit_test(lengths_and_numbers_refuse),
        cmocka_unit_test(the_encoder_writes_nothing_the_decoder_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
