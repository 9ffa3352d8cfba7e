/* fuzz_limit_def.c — PUT /v1/admin/limits bodies into rl_wire_decode_limit_def.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a sentence
 * and leaves *out as it was; an accepted definition passes
 * rl_limit_def_validate, its strings are NUL-terminated within their
 * arrays, and it survives a round trip through rl_wire_encode_limit_def
 * (what GET /v1/admin/limits and the registry file write) unchanged.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "wire/wire.h"

static void check_same(const rl_limit_def *a, const rl_limit_def *b) {
    FUZZ_CHECK(strcmp(a->key, b->key) == 0);
    FUZZ_CHECK(a->kind == b->kind);
    FUZZ_CHECK(a->capacity == b->capacity);
    FUZZ_CHECK(a->window_seconds == b->window_seconds);
    FUZZ_CHECK(a->timeout_seconds == b->timeout_seconds);
    FUZZ_CHECK(strcmp(a->unit, b->unit) == 0);
    FUZZ_CHECK(strcmp(a->description, b->description) == 0);
    FUZZ_CHECK(a->overage == b->overage);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *body = fuzz_copy(data, size);
    rl_limit_def def, untouched;
    memset(&def, 0xA5, sizeof def);
    untouched = def;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl_wire_decode_limit_def(body, size, &def, detail);
    free(body);
    FUZZ_CHECK_TEXT(detail);

    if (status != RL_OK) {
        FUZZ_CHECK(status == RL_INVALID_REQUEST);
        FUZZ_CHECK(detail[0] != '\0');
        FUZZ_CHECK(memcmp(&def, &untouched, sizeof def) == 0);
        return 0;
    }
    FUZZ_CHECK_TEXT(def.key);
    FUZZ_CHECK_TEXT(def.unit);
    FUZZ_CHECK_TEXT(def.description);
    char why[RL_WIRE_DETAIL_SIZE];
    FUZZ_CHECK(rl_limit_def_validate(&def, why, sizeof why));

    rl_buf encoded;
    rl_buf_init(&encoded);
    rl_wire_encode_limit_def(&encoded, &def);
    FUZZ_CHECK(!encoded.failed);
    rl_limit_def again;
    FUZZ_CHECK(rl_wire_decode_limit_def(encoded.data, encoded.len, &again, detail) == RL_OK);
    check_same(&def, &again);
    rl_buf_free(&encoded);
    return 0;
}
