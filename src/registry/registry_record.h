/* registry/registry_record.h — private: one record of the registry's log
 * (limits.json.log, a record file: core/record_file.h frames and checks
 * each record; this is what is inside).
 *
 *   byte 0       what: 'P' put a definition, 'D' delete one,
 *                      'p' put a template,   'd' delete one
 *   byte 1       n, the origin's length: 0..RL_REGISTRY_ORIGIN_MAX_LEN
 *                (0 for a delete)
 *   2..2+n       the origin, printable ASCII
 *   then         a put: the definition as JSON, exactly as limits.json
 *                writes an item (read back by the same decoder, numbers
 *                exactly, every rule checked again);
 *                a delete: the key (or pattern), 1..RL_KEY_MAX_LEN bytes
 *
 * Every record states a whole definition or a deletion, never a difference,
 * so replaying one twice is replaying it once.
 *
 * Pure and reentrant.
 */
#ifndef RL_REGISTRY_RECORD_H
#define RL_REGISTRY_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/registry.h"
#include "wire/buf.h"

/* Longest record: a definition's JSON with every string escaped at worst
 * (\u00XX for each byte), and the origin. */
#define RL__REG_RECORD_MAX_BYTES 16384u

typedef struct rl__reg_record {
    rl_registry_op op;
    rl_limit_def def; /* a put: the definition; a delete: def.key only, the rest zero */
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
} rl__reg_record;

/* Appends the record of op on def (a delete reads only def->key) with
 * origin (NULL: "") to buf. def and origin must be valid. */
void rl__reg_record_encode(rl_buf *buf, rl_registry_op op, const rl_limit_def *def, const char *origin);

/* Reads data[0..len) into *out. False if it is not a valid record, with a
 * sentence in why (why_size bytes); *out is then meaningless. */
bool rl__reg_record_decode(const unsigned char *data, size_t len, rl__reg_record *out, char *why,
                           size_t why_size);

#endif
