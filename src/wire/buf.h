/* wire/buf.h — a growable byte buffer for building responses.
 *
 * Appends never fail loudly: on allocation failure the buffer records it in
 * `failed` and ignores further appends, so that encoders stay straight-line
 * and the caller checks once at the end. Not thread-safe; one owner.
 */
#ifndef RL_WIRE_BUF_H
#define RL_WIRE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rl_buf {
    char *data; /* NUL-terminated while !failed */
    size_t len;
    size_t cap;
    bool failed;
} rl_buf;

void rl__buf_init(rl_buf *buf);
void rl__buf_free(rl_buf *buf);
void rl__buf_reset(rl_buf *buf); /* len = 0, keeps the memory */
void rl__buf_append(rl_buf *buf, const char *bytes, size_t len);
void rl__buf_append_str(rl_buf *buf, const char *text);
void rl__buf_append_u64(rl_buf *buf, uint64_t value);
/* Appends text as a JSON string literal with its quotes, escaping '"', '\\'
 * and control characters (the text is assumed to be valid UTF-8). */
void rl__buf_append_json_string(rl_buf *buf, const char *text, size_t len);

#endif
