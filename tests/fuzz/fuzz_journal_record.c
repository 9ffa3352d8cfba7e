/* fuzz_journal_record.c — any bytes as one record of the memory backend's
 * journal (backend/memory/journal_record.h), as a replay after a crash or a
 * damaged disk would read it.
 *
 * Input: the record's bytes (what record_file hands over after its
 * checksum). Checked: decoding never crashes or reads past the end, a
 * refusal says why; a record that decodes encodes to exactly its bytes
 * (no two encodings of one record, no bytes ignored), within the bound
 * the writer's buffers are sized by.
 */
#include <stddef.h>
#include <stdint.h>

#include "backend/memory/journal_record.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *bytes = (unsigned char *)fuzz_copy(data, size);
    static rl__jrec record;
    static unsigned char again[RL__JREC_MAX_BYTES];
    char why[160];
    why[0] = '\0';
    if (rl__jrec_decode(bytes, size, &record, why, sizeof why)) {
        size_t len = rl__jrec_encode(&record, again);
        FUZZ_CHECK(len <= RL__JREC_MAX_BYTES);
        FUZZ_CHECK(len == size && memcmp(again, bytes, size) == 0);
    } else {
        FUZZ_CHECK_TEXT(why);
        FUZZ_CHECK(why[0] != '\0');
    }
    free(bytes);
    return 0;
}
