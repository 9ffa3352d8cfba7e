/* text.c — UTF-8 validation (text.h). */
#include "core/text.h"

#include <stdint.h>
#include <string.h>

size_t rl__utf8_sequence_len(const unsigned char *s, size_t avail) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; /* overlong */
        if (c == 0xed) hi = 0x9f; /* UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90; /* overlong */
        if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0; /* continuation byte, C0/C1 overlong lead, F5..FF */
    }
    if (avail < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
    }
    return len;
}

/* SWAR tests on 8 bytes at once (Bit Twiddling Hacks, "haszero"/"hasless"). */
#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* True if every byte of w is printable ASCII, 0x20..0x7e: no byte below
 * 0x20 ("hasless") and none at or above 0x7f (adding 1 to a byte's low 7
 * bits reaches 0x80 only from 0x7f, and cannot carry into the next byte). */
static bool word_is_printable(uint64_t w) {
    uint64_t below_space = (w - ONES * 0x20) & ~w & HIGHS;
    uint64_t del_or_high = (((w & ~HIGHS) + ONES) | w) & HIGHS;
    return (below_space | del_or_high) == 0;
}

bool rl__text_is_clean(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        if (len - i >= 8) { /* job ids are plain ASCII: 8 bytes a step */
            uint64_t w;
            memcpy(&w, s + i, sizeof w);
            if (word_is_printable(w)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            if (s[i] < 0x20 || s[i] == 0x7f) return false;
            i++;
            continue;
        }
        size_t n = rl__utf8_sequence_len(s + i, len - i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}
