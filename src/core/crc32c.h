/* core/crc32c.h — private: CRC-32C (Castagnoli), the checksum of the
 * record files (record_file.h). Pure and thread-safe. */
#ifndef RL_CORE_CRC32C_H
#define RL_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of data, continuing from crc (0 to start): rl__crc32c(0,
 * "123456789", 9) is 0xE3069283. */
uint32_t rl__crc32c(uint32_t crc, const void *data, size_t len);

#endif
