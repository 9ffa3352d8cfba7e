/* crc32c.c — CRC-32C, reflected polynomial 0x82F63B78 (crc32c.h): with the
 * CPU's crc32 instruction where there is one (x86-64 with SSE4.2: 8 bytes a
 * step, a record of the journal in ~100 cycles), else a byte at a time from
 * a table made once. Both give the same values; every record of the
 * journal and the audit log goes through here on the answer path. */
#include "core/crc32c.h"

#include <pthread.h>
#include <string.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc_by_table(uint32_t crc, const unsigned char *p, size_t len) {
    pthread_once(&table_once, make_table);
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_by_instruction(uint32_t crc, const unsigned char *p,
                                                                        size_t len) {
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; len > 0; p++, len--) c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}

uint32_t rl__crc32c(uint32_t crc, const void *data, size_t len) {
    static int has_instruction = -1; /* every thread that looks computes the same answer */
    int has = __atomic_load_n(&has_instruction, __ATOMIC_RELAXED);
    if (has < 0) {
        has = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&has_instruction, has, __ATOMIC_RELAXED);
    }
    return ~(has ? crc_by_instruction(~crc, data, len) : crc_by_table(~crc, data, len));
}
#else
uint32_t rl__crc32c(uint32_t crc, const void *data, size_t len) { return ~crc_by_table(~crc, data, len); }
#endif
