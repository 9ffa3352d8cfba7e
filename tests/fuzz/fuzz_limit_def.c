/* fuzz_limit_def.c — PUT /v1/admin/limits bodies into rl__wire_decode_limit_def.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a sentence
 * and leaves *out as it was; an accepted definition passes
 * rl_limit_def_validate, its strings are NUL-terminated within their
 * arrays, and it survives a round trip through rl__wire_encode_limit_def
 * (what GET /v1/admin/limits and the registry file write) unchanged. The
 * registry file reads its items with the same decoder: the body as the one
 * item of a file gives the same definition, or the same sentence after
 * "item 0: " (unless the body itself is the problem: not JSON, not an
 * object).
 */
#include <stddef.h>
#include <stdint.h>

#include "core/limit_def.h"
#include "fuzz.h"
#include "registry/registry_file.h"
#include "wire/wire.h"

static void check_same(const rl_limit_def *a, const rl_limit_def *b) {
    FUZZ_CHECK(rl__limit_def_equal(a, b)); /* every field, core/limit_def.h */
}

/* "[" body "]" read as a registry file agrees with the PUT decoder's
 * verdict (status, and def or detail). */
static void check_as_file_item(const uint8_t *data, size_t size, rl_status status,
                               const rl_limit_def *def, const char *detail) {
    if (status != RL_OK && strncmp(detail, "body ", 5) == 0) return; /* the text, not a member */
    char *file = malloc(size + 2);
    FUZZ_CHECK(file != NULL);
    file[0] = '[';
    if (size > 0) memcpy(file + 1, data, size);
    file[size + 1] = ']';
    rl__reg_map map;
    rl__reg_map_init(&map);
    char err[512];
    rl_status file_status = rl__registry_parse(file, size + 2, "f", 1, &map, err, sizeof err);
    free(file);
    /* The file's array is one level more than the body: a body nested to
     * the limit (json_scan.h) makes a file nested past it. */
    if (file_status == RL_INVALID_REQUEST && strncmp(err, "f: file nests", 13) == 0) return;
    FUZZ_CHECK(file_status == status);
    if (status == RL_OK) {
        FUZZ_CHECK(map.count == 1);
        rl_limit_def item;
        rl__reg_entry_def(rl__reg_map_find(&map, def->key), &item);
        check_same(def, &item);
        rl__reg_map_free(&map);
    } else {
        FUZZ_CHECK(strncmp(err, "f: item 0: ", 11) == 0 && strcmp(err + 11, detail) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *body = fuzz_copy(data, size);
    rl_limit_def def, untouched;
    memset(&def, 0xA5, sizeof def);
    untouched = def;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_limit_def(body, size, &def, detail);
    free(body);
    FUZZ_CHECK_TEXT(detail);
    check_as_file_item(data, size, status, &def, detail);

    if (status != RL_OK) {
        FUZZ_CHECK(status == RL_INVALID_REQUEST);
        FUZZ_CHECK(detail[0] != '\0');
        FUZZ_CHECK(memcmp(&def, &untouched, sizeof def) == 0);
        return 0;
    }
    FUZZ_CHECK_TEXT(def.key);
    FUZZ_CHECK_TEXT(def.unit);
    FUZZ_CHECK_TEXT(def.description);
    FUZZ_CHECK_TEXT(def.timezone);
    char why[RL_WIRE_DETAIL_SIZE];
    FUZZ_CHECK(rl_limit_def_validate(&def, why, sizeof why));

    rl_buf encoded;
    rl__buf_init(&encoded);
    rl__wire_encode_limit_def(&encoded, &def);
    FUZZ_CHECK(!encoded.failed);
    rl_limit_def again;
    FUZZ_CHECK(rl__wire_decode_limit_def(encoded.data, encoded.len, &again, detail) == RL_OK);
    check_same(&def, &again);
    rl__buf_free(&encoded);
    return 0;
}
