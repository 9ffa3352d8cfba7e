/* registry_entry.c — see registry_entry.h. */
#include "registry/registry_entry.h"

#include <stdlib.h>
#include <string.h>

#include "core/limit_def.h"

/* Zeros inside a run shorter than this stay in it as literals: a new run
 * costs two bytes of lengths. */
#define ZEROS_WORTH_A_RUN 3

/* LEB128: 7 bits a byte, the high bit saying more follow. */
static size_t put_varint(unsigned char *out, size_t value) {
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (unsigned char)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (unsigned char)value;
    return n;
}

static size_t get_varint(const unsigned char *in, size_t *value) {
    size_t n = 0, shift = 0;
    *value = 0;
    do {
        *value |= (size_t)(in[n] & 0x7f) << shift;
        shift += 7;
    } while (in[n++] & 0x80);
    return n;
}

/* The zeros from bytes[at] on, 8 bytes a step while they last: a
 * definition is mostly zeros (its empty 1 KB description). */
static size_t zeros_from(const unsigned char *bytes, size_t at, size_t len) {
    size_t n = at;
    for (uint64_t word; n + 8 <= len; n += 8) {
        memcpy(&word, bytes + n, 8);
        if (word != 0) break;
    }
    while (n < len && bytes[n] == 0) n++;
    return n - at;
}

/* bytes[0..len) as runs of (zeros skipped, literal length, literal bytes);
 * trailing zeros are not written. out has room for 2 * len bytes. */
static size_t pack(const unsigned char *bytes, size_t len, unsigned char *out) {
    size_t at = 0, n = 0;
    for (;;) {
        size_t zeros = zeros_from(bytes, at, len);
        if (at + zeros == len) break;
        size_t start = at + zeros, end = start;
        for (;;) {
            while (end < len && bytes[end] != 0) end++;
            size_t gap = zeros_from(bytes, end, len);
            /* Short gaps stay in the literal; the end, or a long run, ends it. */
            if (end + gap == len || gap >= ZEROS_WORTH_A_RUN) break;
            end += gap;
        }
        n += put_varint(out + n, zeros);
        n += put_varint(out + n, end - start);
        memcpy(out + n, bytes + start, end - start);
        n += end - start;
        at = end;
    }
    return n;
}

static void unpack(const unsigned char *in, size_t len, unsigned char *bytes) {
    size_t n = 0, at = 0;
    while (n < len) {
        size_t zeros, literal;
        n += get_varint(in + n, &zeros);
        n += get_varint(in + n, &literal);
        at += zeros;
        memcpy(bytes + at, in + n, literal);
        n += literal;
        at += literal;
    }
}

uint64_t rl__reg_hash(const char *key, size_t len) {
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)key[i]) * 0x100000001b3u;
    return h ^ (h >> 29);
}

bool rl__registry_origin_is_valid(const char *origin) {
    size_t len = strnlen(origin, RL_REGISTRY_ORIGIN_MAX_LEN + 1);
    if (len > RL_REGISTRY_ORIGIN_MAX_LEN) return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)origin[i] < 0x20 || (unsigned char)origin[i] > 0x7e) return false;
    return true;
}

rl__reg_entry *rl__reg_entry_new(const rl_limit_def *def, const char *origin) {
    if (origin == NULL) origin = "";
    rl_limit_def canonical;
    rl__limit_def_copy(&canonical, def);
    size_t key_len = strlen(canonical.key), origin_len = strlen(origin);
    memset(canonical.key, 0, sizeof canonical.key); /* kept as text */
    unsigned char packed[2 * sizeof canonical];
    size_t packed_len = pack((const unsigned char *)&canonical, sizeof canonical, packed);
    rl__reg_entry *entry = malloc(sizeof *entry + key_len + 1 + origin_len + 1 + packed_len);
    if (entry == NULL) return NULL;
    entry->hash = rl__reg_hash(def->key, key_len);
    entry->key_len = (uint16_t)key_len;
    entry->packed_len = (uint16_t)packed_len;
    entry->origin_len = (uint8_t)origin_len;
    memcpy(entry->text, def->key, key_len);
    entry->text[key_len] = '\0';
    memcpy(entry->text + key_len + 1, origin, origin_len + 1);
    memcpy(entry->text + key_len + 1 + origin_len + 1, packed, packed_len);
    return entry;
}

void rl__reg_entry_def(const rl__reg_entry *entry, rl_limit_def *out) {
    memset(out, 0, sizeof *out);
    const char *packed = entry->text + entry->key_len + 1 + entry->origin_len + 1;
    unpack((const unsigned char *)packed, entry->packed_len, (unsigned char *)out);
    memcpy(out->key, entry->text, entry->key_len + 1);
}
