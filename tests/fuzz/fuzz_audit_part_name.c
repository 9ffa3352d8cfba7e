/* fuzz_audit_part_name.c — any name found in the audit log's directory
 * (core/audit_part.h): rl__audit_part_parse.
 *
 * Input: the name's bytes (up to a NUL, as readdir gives them). Checked:
 * what is taken for a part is exactly the name the log writes for that day
 * and index (no other spelling of a part), and its day is one of the years
 * 1970..9999.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/audit_part.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *name = malloc(size + 1);
    if (name == NULL) abort();
    memcpy(name, data, size);
    name[size] = '\0';
    rl__audit_part part;
    memset(&part, 0x5a, sizeof part);
    if (rl__audit_part_parse(name, &part)) {
        FUZZ_CHECK(part.day >= 0 && part.day <= rl__audit_day_of(RL__AUDIT_INSTANT_END_MS - 1));
        FUZZ_CHECK(part.size == RL__AUDIT_PART_SIZE_ALL);
        char written[RL__AUDIT_PART_NAME_SIZE];
        rl__audit_part_name(part.day, part.index, written);
        FUZZ_CHECK(strcmp(written, name) == 0);
    }
    free(name);
    return 0;
}
