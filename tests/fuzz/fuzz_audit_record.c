/* fuzz_audit_record.c — any bytes as one record of the audit log
 * (core/audit_record.h), read back from a file after a crash or written by
 * another version: rl__audit_record_decode.
 *
 * Input: the record's bytes (the payload of one record_file record).
 * Checked: a refusal says why; what is accepted keeps every rule of the
 * entry (a key by the key rule, an upper-case ULID, a job_id without NUL,
 * amounts and instants in range, an expired entry with actual 0, seq >= 1),
 * points inside the input, and, made an entry, encodes back to exactly the
 * same bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/audit_record.h"
#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/ulid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *record = (unsigned char *)fuzz_copy(data, size);
    rl__audit_view view;
    const char *why = NULL;
    if (!rl__audit_record_decode(record, size, &view, &why)) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
        free(record);
        return 0;
    }
    FUZZ_CHECK(view.record == record && view.record_len == size);
    FUZZ_CHECK(size <= RL__AUDIT_RECORD_MAX_BYTES);
    FUZZ_CHECK(view.seq >= 1);
    FUZZ_CHECK(view.at_unix_ms < RL__AUDIT_INSTANT_END_MS && view.period_start_unix_ms < RL__AUDIT_INSTANT_END_MS);
    FUZZ_CHECK(view.reserved <= RL_AMOUNT_MAX && view.actual <= RL_AMOUNT_MAX);
    FUZZ_CHECK(!view.expired || view.actual == 0);
    FUZZ_CHECK(view.key >= (const char *)record && view.job_id + view.job_id_len == (const char *)record + size);
    FUZZ_CHECK(rl_key_is_valid(view.key, view.key_len));
    FUZZ_CHECK(view.job_id_len <= RL_JOB_ID_MAX_LEN && memchr(view.job_id, '\0', view.job_id_len) == NULL);
    FUZZ_CHECK(rl_ulid_is_valid(view.lease_id, RL_ULID_LEN));
    for (size_t i = 0; i < RL_ULID_LEN; i++) FUZZ_CHECK(!(view.lease_id[i] >= 'a' && view.lease_id[i] <= 'z'));

    rl_audit_entry entry;
    memset(&entry, 0x5a, sizeof entry);
    rl__audit_view_to_entry(&view, &entry);
    FUZZ_CHECK(strlen(entry.key) == view.key_len && strlen(entry.job_id) == view.job_id_len);
    FUZZ_CHECK(strlen(entry.lease_id) == RL_ULID_LEN);
    FUZZ_CHECK(rl__audit_view_has_key(&view, entry.key, view.key_len));
    unsigned char again[RL__AUDIT_RECORD_MAX_BYTES];
    size_t len = rl__audit_record_encode(again, view.seq, &entry, &why);
    if (len > 0 && view.opens_group) rl__audit_record_open_group(again);
    FUZZ_CHECK(len == size && memcmp(again, record, size) == 0);
    free(record);
    return 0;
}
