/* fuzz_registry_record.c — any bytes as one record of the registry's log
 * (registry/registry_record.h: limits.json.log, read back at every open),
 * as a replay after a crash or a damaged disk would read it.
 *
 * Input: the record's bytes (what record_file hands over after its
 * checksum). Checked: decoding never crashes or reads past the end; a
 * refusal says why; a record taken is a known operation with a valid origin
 * (none on a deletion) and a valid definition (a deletion: a valid key and
 * nothing else), and encoded again it is a record that decodes to exactly
 * the same, whose own encoding is the same bytes (one canonical form),
 * within RL__REG_RECORD_MAX_BYTES.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "registry/registry_entry.h"
#include "registry/registry_record.h"
#include "wire/wire.h"

static bool is_put(rl_registry_op op) { return op == RL_REGISTRY_PUT || op == RL_REGISTRY_PUT_TEMPLATE; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *bytes = (unsigned char *)fuzz_copy(data, size);
    static rl__reg_record record, again;
    char why[200];
    why[0] = '\0';
    if (!rl__reg_record_decode(bytes, size, &record, why, sizeof why)) {
        FUZZ_CHECK_TEXT(why);
        FUZZ_CHECK(why[0] != '\0');
        free(bytes);
        return 0;
    }
    free(bytes);
    FUZZ_CHECK(record.op >= RL_REGISTRY_PUT && record.op <= RL_REGISTRY_DELETE_TEMPLATE);
    FUZZ_CHECK(rl__registry_origin_is_valid(record.origin));
    char detail[RL_WIRE_DETAIL_SIZE];
    if (is_put(record.op)) {
        FUZZ_CHECK(rl_limit_def_validate(&record.def, detail, sizeof detail));
    } else {
        FUZZ_CHECK(record.origin[0] == '\0');
        FUZZ_CHECK(rl_key_is_valid(record.def.key, strlen(record.def.key)));
        rl_limit_def only_key;
        memset(&only_key, 0, sizeof only_key);
        memcpy(only_key.key, record.def.key, strlen(record.def.key));
        FUZZ_CHECK(memcmp(&only_key, &record.def, sizeof only_key) == 0);
    }
    rl_buf encoded, reencoded;
    rl__buf_init(&encoded);
    rl__buf_init(&reencoded);
    rl__reg_record_encode(&encoded, record.op, &record.def, record.origin);
    FUZZ_CHECK(!encoded.failed && encoded.len <= RL__REG_RECORD_MAX_BYTES);
    FUZZ_CHECK(rl__reg_record_decode((const unsigned char *)encoded.data, encoded.len, &again, why, sizeof why));
    FUZZ_CHECK(again.op == record.op && strcmp(again.origin, record.origin) == 0);
    FUZZ_CHECK(memcmp(&again.def, &record.def, sizeof again.def) == 0);
    rl__reg_record_encode(&reencoded, again.op, &again.def, again.origin);
    FUZZ_CHECK(reencoded.len == encoded.len && memcmp(reencoded.data, encoded.data, encoded.len) == 0);
    rl__buf_free(&encoded);
    rl__buf_free(&reencoded);
    return 0;
}
