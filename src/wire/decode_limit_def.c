/* decode_limit_def.c — a LimitDefinition object (PUT /v1/admin/limits and
 * the items of the registry file). */
#include <stdio.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "wire/decode_common.h"
#include "wire/text.h"
#include "wire/wire.h"

enum { F_KEY, F_KIND, F_CAPACITY, F_WINDOW, F_TIMEOUT, F_UNIT, F_DESCRIPTION, F_OVERAGE, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "key", "kind", "capacity", "window_seconds", "timeout_seconds", "unit", "description", "overage",
};

/* An optional text field: absent or null leaves out as "" (the default). */
static bool decode_text(const cJSON *item, const char *name, char *out, size_t max_len,
                        const rl__json_path *path) {
    out[0] = '\0';
    if (rl__json_is_absent(item)) return true;
    size_t len = 0;
    const char *text = rl__json_string(item, &len);
    if (text == NULL || len > max_len || !rl__text_is_clean(text, len))
        return rl__json_fail(path, name,
                             "must be a string of at most %zu bytes of UTF-8 without control "
                             "characters",
                             max_len);
    memcpy(out, text, len + 1);
    return true;
}

/* window_seconds / timeout_seconds: absent or null is 0; which of them must
 * be set is rl_limit_def_validate's business. */
static bool decode_seconds(const cJSON *item, const char *name, uint32_t max, uint32_t *out,
                           const rl__json_path *path) {
    uint64_t value = 0;
    if (!rl__json_is_absent(item) && !rl__json_u64(item, 0, max, &value))
        return rl__json_fail(path, name, "must be an integer 0..%u", max);
    *out = (uint32_t)value;
    return true;
}

static bool decode_fields(const cJSON *object, rl_limit_def *def, const rl__json_path *path) {
    const cJSON *f[F_COUNT];
    if (!rl__json_members(object, field_names, F_COUNT, f, path)) return false;

    if (f[F_KEY] == NULL) return rl__json_fail(path, "key", "is required");
    size_t len = 0;
    const char *text = rl__json_string(f[F_KEY], &len);
    if (text == NULL || !rl_key_is_valid(text, len))
        return rl__json_fail(path, "key",
                             "must be a string of 1..%d printable ASCII characters without spaces",
                             RL_KEY_MAX_LEN);
    memcpy(def->key, text, len + 1);

    if (f[F_KIND] == NULL) return rl__json_fail(path, "kind", "is required");
    text = rl__json_string(f[F_KIND], &len);
    if (text == NULL || !rl_kind_parse(text, &def->kind))
        return rl__json_fail(path, "kind", "must be \"rolling\" or \"concurrency\"");

    if (f[F_CAPACITY] == NULL) return rl__json_fail(path, "capacity", "is required");
    if (!rl__json_u64(f[F_CAPACITY], 1, RL_AMOUNT_MAX, &def->capacity))
        return rl__json_fail(path, "capacity", "must be an integer 1..%llu",
                             (unsigned long long)RL_AMOUNT_MAX);

    if (!decode_seconds(f[F_WINDOW], "window_seconds", RL_WINDOW_SECONDS_MAX,
                        &def->window_seconds, path))
        return false;
    if (!decode_seconds(f[F_TIMEOUT], "timeout_seconds", RL_TIMEOUT_SECONDS_MAX,
                        &def->timeout_seconds, path))
        return false;
    if (!decode_text(f[F_UNIT], "unit", def->unit, RL_UNIT_MAX_LEN, path)) return false;
    if (!decode_text(f[F_DESCRIPTION], "description", def->description, RL_DESCRIPTION_MAX_LEN,
                     path))
        return false;

    def->overage = RL_OVERAGE_DEBT;
    if (!rl__json_is_absent(f[F_OVERAGE])) {
        text = rl__json_string(f[F_OVERAGE], &len);
        if (text == NULL || !rl_overage_parse(text, &def->overage))
            return rl__json_fail(path, "overage", "must be \"debt\" or \"deny\"");
    }
    return rl_limit_def_validate(def, path->detail, RL_WIRE_DETAIL_SIZE);
}

rl_status rl_wire_limit_def_from_json(const cJSON *object, rl_limit_def *out,
                                      char detail[RL_WIRE_DETAIL_SIZE]) {
    detail[0] = '\0';
    rl__json_path path = {.detail = detail};
    if (!cJSON_IsObject(object)) {
        rl__json_fail(&path, NULL, "a limit definition must be a JSON object");
        return RL_INVALID_REQUEST;
    }
    /* Decoded aside so that *out changes only on success. */
    rl_limit_def def;
    memset(&def, 0, sizeof def);
    if (!decode_fields(object, &def, &path)) return RL_INVALID_REQUEST;
    *out = def;
    return RL_OK;
}

rl_status rl_wire_decode_limit_def(const char *body, size_t len, rl_limit_def *out,
                                   char detail[RL_WIRE_DETAIL_SIZE]) {
    detail[0] = '\0';
    cJSON *root = rl__json_parse_object(body, len, detail);
    if (root == NULL) return RL_INVALID_REQUEST;
    rl_status status = rl_wire_limit_def_from_json(root, out, detail);
    cJSON_Delete(root);
    return status;
}
