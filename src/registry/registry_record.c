/* registry_record.c — see registry_record.h. */
#include "registry/registry_record.h"

#include <stdio.h>
#include <string.h>

#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "registry/registry_entry.h"
#include "wire/decode_limit_def.h"
#include "wire/wire.h"

static const char op_codes[] = {
    [RL_REGISTRY_PUT] = 'P',
    [RL_REGISTRY_DELETE] = 'D',
    [RL_REGISTRY_PUT_TEMPLATE] = 'p',
    [RL_REGISTRY_DELETE_TEMPLATE] = 'd',
};

static bool is_put(rl_registry_op op) { return op == RL_REGISTRY_PUT || op == RL_REGISTRY_PUT_TEMPLATE; }

void rl__reg_record_encode(rl_buf *buf, rl_registry_op op, const rl_limit_def *def, const char *origin) {
    if (origin == NULL || !is_put(op)) origin = "";
    size_t origin_len = strlen(origin);
    char head[2] = {op_codes[op], (char)origin_len};
    rl__buf_append(buf, head, sizeof head);
    rl__buf_append(buf, origin, origin_len);
    if (is_put(op))
        rl__wire_encode_limit_def(buf, def);
    else
        rl__buf_append(buf, def->key, strlen(def->key));
}

#define fail(why, why_size, ...) (rl__error_text((why), (why_size), __VA_ARGS__), false)

/* The definition's JSON, text[0..len) (NUL at text[len]), into *out. */
static bool decode_def(char *text, size_t len, rl_limit_def *out, char *why, size_t why_size) {
    rl__json_scan s;
    rl__scan_init(&s, text, len);
    uint32_t rank = RL__RANK_NONE;
    char detail[RL_WIRE_DETAIL_SIZE] = "";
    rl__json_path path = {.detail = detail};
    if (!rl__decode_limit_def(&s, "a limit definition must be a JSON object", out, &rank, &path) ||
        !rl__scan_end(&s)) {
        rl__scan_describe(s.error, s.error_at, "definition", detail, sizeof detail);
        return fail(why, why_size, "%s", detail);
    }
    if (rank != RL__RANK_NONE) return fail(why, why_size, "%s", detail);
    return true;
}

bool rl__reg_record_decode(const unsigned char *data, size_t len, rl__reg_record *out, char *why,
                           size_t why_size) {
    memset(out, 0, sizeof *out);
    if (len < 3) return fail(why, why_size, "a record of %zu bytes is too short", len);
    if (len > RL__REG_RECORD_MAX_BYTES)
        return fail(why, why_size, "a record of %zu bytes is longer than %u", len, RL__REG_RECORD_MAX_BYTES);
    size_t op = 0;
    while (op < sizeof op_codes && op_codes[op] != (char)data[0]) op++;
    if (op == sizeof op_codes) return fail(why, why_size, "unknown record type 0x%02x", data[0]);
    out->op = (rl_registry_op)op;
    size_t origin_len = data[1];
    if (origin_len > RL_REGISTRY_ORIGIN_MAX_LEN || origin_len > len - 2 - 1)
        return fail(why, why_size, "origin length %zu out of range", origin_len);
    memcpy(out->origin, data + 2, origin_len);
    if (!rl__registry_origin_is_valid(out->origin))
        return fail(why, why_size, "origin must be printable ASCII");
    if (!is_put(out->op) && origin_len != 0) return fail(why, why_size, "a deletion has no origin");
    const char *body = (const char *)data + 2 + origin_len;
    size_t body_len = len - 2 - origin_len;
    if (!is_put(out->op)) {
        if (body_len > RL_KEY_MAX_LEN || !rl_key_is_valid(body, body_len))
            return fail(why, why_size, "key must be 1..%d printable ASCII characters without spaces", RL_KEY_MAX_LEN);
        memcpy(out->def.key, body, body_len);
        return true;
    }
    /* The scanner decodes in place and needs a NUL after the text. */
    char text[RL__REG_RECORD_MAX_BYTES + 1];
    memcpy(text, body, body_len);
    text[body_len] = '\0';
    return decode_def(text, body_len, &out->def, why, why_size);
}
