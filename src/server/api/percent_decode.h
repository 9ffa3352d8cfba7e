/* server/api/percent_decode.h — %XX escapes of a URL path segment (the key in
 * GET /v1/admin/limits/{key}) or of a query's names and values (GET
 * /v1/admin/audit). Pure, thread-safe.
 */
#ifndef RL_SERVER_PERCENT_DECODE_H
#define RL_SERVER_PERCENT_DECODE_H

#include <stddef.h>

/* Decodes %XX escapes of in[0..in_len) into out (out_size bytes, NUL-
 * terminated). '+' stays '+' (a path is not a form). Returns the decoded
 * length, or -1 if an escape is malformed or the result does not fit. */
int rl_percent_decode(const char *in, size_t in_len, char *out, size_t out_size);

#endif
