/* buf.c — the growable response buffer of buf.h.
 *
 * An empty buffer points at a static "" so that data is always a valid
 * NUL-terminated string (cap == 0 marks it as not ours to write or free).
 */
#include "wire/buf.h"
#include "wire/buf_escape.h"

#include <stdlib.h>
#include <string.h>

static char empty_string[1];

#define BUF_MIN_CAP 256u

void rl__buf_init(rl_buf *buf) {
    buf->data = empty_string;
    buf->len = 0;
    buf->cap = 0;
    buf->failed = false;
}

void rl__buf_free(rl_buf *buf) {
    if (buf->cap > 0) free(buf->data);
    rl__buf_init(buf);
}

void rl__buf_reset(rl_buf *buf) {
    buf->len = 0;
    buf->failed = false;
    if (buf->cap > 0) buf->data[0] = '\0';
}

/* Makes room for extra more bytes plus the NUL; false (and failed) if it cannot. */
static bool reserve(rl_buf *buf, size_t extra) {
    if (buf->failed) return false;
    if (extra > SIZE_MAX / 2 - buf->len) {
        buf->failed = true;
        return false;
    }
    size_t needed = buf->len + extra + 1;
    if (needed <= buf->cap) return true;
    size_t cap = buf->cap < BUF_MIN_CAP ? BUF_MIN_CAP : buf->cap;
    while (cap < needed) cap *= 2;
    char *data = realloc(buf->cap > 0 ? buf->data : NULL, cap);
    if (data == NULL) {
        buf->failed = true;
        return false;
    }
    if (buf->cap == 0) data[0] = '\0';
    buf->data = data;
    buf->cap = cap;
    return true;
}

void rl__buf_append(rl_buf *buf, const char *bytes, size_t len) {
    if (!reserve(buf, len)) return;
    memcpy(buf->data + buf->len, bytes, len);
    buf->len += len;
    buf->data[buf->len] = '\0';
}

void rl__buf_append_str(rl_buf *buf, const char *text) { rl__buf_append(buf, text, strlen(text)); }

void rl__buf_append_u64(rl_buf *buf, uint64_t value) {
    char digits[20]; /* 2^64-1 has 20 digits */
    size_t start = sizeof digits;
    do {
        digits[--start] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0);
    rl__buf_append(buf, digits + start, sizeof digits - start);
}

/* 0: copy as is; otherwise the letter after the backslash ('u' for \u00XX). */
static const char escape_letter[128] = {
    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
    [0x00] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u',
    [0x06] = 'u', [0x07] = 'u', [0x0b] = 'u', [0x0e] = 'u', [0x0f] = 'u', [0x10] = 'u',
    [0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u',
    [0x17] = 'u', [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u', [0x1c] = 'u',
    [0x1d] = 'u', [0x1e] = 'u', [0x1f] = 'u', ['"'] = '"', ['\\'] = '\\',
};

void rl__buf_append_json_escaped(rl_buf *buf, const char *text, size_t len) {
    /* Most strings need no escape: reserve for that case, copy runs. */
    if (!reserve(buf, len)) return;
    size_t run_start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 128 || escape_letter[c] == 0) continue;
        rl__buf_append(buf, text + run_start, i - run_start);
        run_start = i + 1;
        if (escape_letter[c] == 'u') {
            static const char hex[] = "0123456789abcdef";
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            rl__buf_append(buf, esc, sizeof esc);
        } else {
            char esc[2] = {'\\', escape_letter[c]};
            rl__buf_append(buf, esc, sizeof esc);
        }
    }
    rl__buf_append(buf, text + run_start, len - run_start);
}

void rl__buf_append_json_string(rl_buf *buf, const char *text, size_t len) {
    if (!reserve(buf, len + 2)) return;
    rl__buf_append(buf, "\"", 1);
    rl__buf_append_json_escaped(buf, text, len);
    rl__buf_append(buf, "\"", 1);
}
