/* fuzz_template_def.c — PUT /v1/admin/templates bodies into
 * rl__wire_decode_template_def, and the keys a template names.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a sentence
 * and leaves *out as it was; an accepted template has a pattern the pattern
 * parser takes, passes rl_limit_def_validate, is taken by a template set,
 * and survives a round trip through rl__wire_encode_template_def (what GET
 * /v1/admin/templates writes) unchanged. The same body read as a limit
 * (PUT /v1/admin/limits) never takes "pattern" for its key. Then the
 * input's first line, read as a key, is matched against the pattern: the
 * set's answer agrees with the pattern's, and a matching key is a valid key
 * whose every ':' the pattern has too.
 *
 * Input: "<key>\n<body>", or a body alone when it holds no newline (the
 * key is then empty).
 */
#include <stddef.h>
#include <stdint.h>

#include "core/limit_def.h"
#include "core/template_set.h"
#include "fuzz.h"
#include "ratelimiter/keys.h"
#include "wire/wire.h"

static size_t count_colons(const char *text, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == ':';
    return n;
}

static void check_matching(const rl_limit_def *def, const uint8_t *key_data, size_t key_size) {
    size_t key_len = key_size > RL_KEY_MAX_LEN ? RL_KEY_MAX_LEN : key_size;
    char key[RL_KEY_MAX_LEN + 1];
    memcpy(key, key_data, key_len);
    key[key_len] = '\0';

    rl__template_pattern pattern;
    char err[RL_WIRE_DETAIL_SIZE];
    FUZZ_CHECK(rl__template_pattern_parse(def->key, strlen(def->key), &pattern, err, sizeof err));
    rl__template_set *set = rl__template_set_create();
    FUZZ_CHECK(set != NULL);
    FUZZ_CHECK(rl__template_set_put(set, def, NULL, err, sizeof err) == RL_OK);
    bool matched = rl__template_pattern_match(&pattern, key, key_len);
    FUZZ_CHECK(matched == (rl__template_set_match(set, key, key_len) != NULL));
    if (matched) {
        FUZZ_CHECK(rl_key_is_valid(key, key_len));
        FUZZ_CHECK(count_colons(key, key_len) == count_colons(def->key, strlen(def->key)));
        rl_limit_def made;
        rl__template_instance_def(rl__template_set_match(set, key, key_len), key, &made);
        FUZZ_CHECK(strcmp(made.key, key) == 0 && made.capacity == def->capacity);
    }
    rl__template_set_free(set);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *newline = memchr(data, '\n', size);
    size_t key_size = newline != NULL ? (size_t)(newline - data) : 0;
    const uint8_t *key_data = data;
    if (newline != NULL) {
        data = newline + 1;
        size -= key_size + 1;
    }
    char *body = fuzz_copy(data, size);
    rl_limit_def def, untouched;
    memset(&def, 0xA5, sizeof def);
    untouched = def;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_template_def(body, size, &def, detail);
    FUZZ_CHECK_TEXT(detail);

    rl_limit_def as_limit;
    char limit_detail[RL_WIRE_DETAIL_SIZE];
    if (rl__wire_decode_limit_def(body, size, &as_limit, limit_detail) == RL_OK && status == RL_OK)
        FUZZ_CHECK(strcmp(as_limit.key, def.key) != 0 || strstr(body, "\"key\"") != NULL);
    free(body);

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
    rl__wire_encode_template_def(&encoded, &def);
    FUZZ_CHECK(!encoded.failed);
    rl_limit_def again;
    FUZZ_CHECK(rl__wire_decode_template_def(encoded.data, encoded.len, &again, detail) == RL_OK);
    FUZZ_CHECK(rl__limit_def_equal(&def, &again));
    rl__buf_free(&encoded);

    check_matching(&def, key_data, key_size);
    return 0;
}
