/* crc32c.c — CRC-32C, reflected polynomial 0x82F63B78, a byte at a time from
 * a table made once (crc32c.h). Records are small and written once per
 * answer group; this is not where time goes. */
#include "core/crc32c.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t rl__crc32c(uint32_t crc, const void *data, size_t len) {
    pthread_once(&table_once, make_table);
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
