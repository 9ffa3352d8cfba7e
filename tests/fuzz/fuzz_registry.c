/* fuzz_registry.c — limits.json content into rl__registry_parse, the parsing
 * half of the registry's file loader (rl__registry_file_load, what
 * rl_registry_open reads), with max_limits 64.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a message
 * naming the file and no definitions; an accepted file is at most 64
 * definitions, each valid, sorted by key with no key twice, and written
 * back as the registry writes its file it parses to the same definitions.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "registry/registry_file.h"
#include "wire/wire.h"

#define NAME "fuzz/limits.json"
#define MAX_LIMITS 64u

static void free_defs(rl_limit_def **defs, size_t count) {
    for (size_t i = 0; i < count; i++) free(defs[i]);
    free(defs);
}

static void check_same(const rl_limit_def *a, const rl_limit_def *b) {
    FUZZ_CHECK(strcmp(a->key, b->key) == 0);
    FUZZ_CHECK(a->kind == b->kind && a->overage == b->overage);
    FUZZ_CHECK(a->capacity == b->capacity);
    FUZZ_CHECK(a->window_seconds == b->window_seconds);
    FUZZ_CHECK(a->timeout_seconds == b->timeout_seconds);
    FUZZ_CHECK(strcmp(a->unit, b->unit) == 0);
    FUZZ_CHECK(strcmp(a->description, b->description) == 0);
}

/* The file's shape (registry_file.h): an array, one definition a line. */
static void check_round_trip(rl_limit_def **defs, size_t count) {
    rl_buf text;
    rl__buf_init(&text);
    rl__buf_append_str(&text, "[\n");
    for (size_t i = 0; i < count; i++) {
        rl__buf_append_str(&text, "  ");
        rl__wire_encode_limit_def(&text, defs[i]);
        rl__buf_append_str(&text, i + 1 < count ? ",\n" : "\n");
    }
    rl__buf_append_str(&text, "]\n");
    FUZZ_CHECK(!text.failed);
    rl_limit_def **again = NULL;
    size_t again_count = 0;
    char err[512];
    FUZZ_CHECK(rl__registry_parse(text.data, text.len, NAME, MAX_LIMITS, &again, &again_count,
                                  err, sizeof err) == RL_OK);
    FUZZ_CHECK(again_count == count);
    for (size_t i = 0; i < count; i++) check_same(defs[i], again[i]);
    free_defs(again, again_count);
    rl__buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_copy(data, size);
    rl_limit_def **defs = NULL;
    size_t count = 0;
    char err[512];
    err[0] = '\0';
    rl_status status =
        rl__registry_parse(text, size, NAME, MAX_LIMITS, &defs, &count, err, sizeof err);
    free(text);
    FUZZ_CHECK_TEXT(err);

    if (status != RL_OK) {
        FUZZ_CHECK(status == RL_INVALID_REQUEST);
        FUZZ_CHECK(strncmp(err, NAME ": ", strlen(NAME ": ")) == 0);
        FUZZ_CHECK(defs == NULL && count == 0);
        return 0;
    }
    FUZZ_CHECK(count <= MAX_LIMITS && (count == 0) == (defs == NULL));
    for (size_t i = 0; i < count; i++) {
        char why[RL_WIRE_DETAIL_SIZE];
        FUZZ_CHECK(rl_limit_def_validate(defs[i], why, sizeof why));
        if (i > 0) FUZZ_CHECK(strcmp(defs[i - 1]->key, defs[i]->key) < 0);
    }
    check_round_trip(defs, count);
    free_defs(defs, count);
    return 0;
}
