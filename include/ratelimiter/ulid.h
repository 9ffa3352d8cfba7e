/* ratelimiter/ulid.h — lease ids are ULIDs (sortable by time, unique without coordination).
 *
 * A ULID is 26 characters of Crockford base32 (0-9 A-Z without I L O U; lower
 * case accepted as the spec of ULID allows), and its first character is at
 * most '7' so that the 128-bit value does not overflow.
 */
#ifndef RATELIMITER_ULID_H
#define RATELIMITER_ULID_H

#include "ratelimiter/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RL_ULID_TEXT_SIZE 27 /* 26 characters and a NUL */

/* True if text[0..len) is a valid ULID. Pure, thread-safe. */
RL_API bool rl_ulid_is_valid(const char *text, size_t len);

/* The 128-bit value of a valid ULID, big-endian halves (hi holds the 48-bit
 * timestamp at its top). Case does not matter: "01j..." and "01J..." are the
 * same lease. Returns false if text is not a valid ULID. */
RL_API bool rl_ulid_decode(const char *text, size_t len, uint64_t *hi, uint64_t *lo);

/* Writes a new ULID (26 characters and a NUL) into out: the current Unix
 * time in ms, then 80 bits from getrandom(2). Within one millisecond the ids
 * of this process are strictly increasing (the random part is incremented),
 * so they sort in the order they were made. Thread-safe. Returns out, or NULL
 * if the system gave no randomness (then out is an empty string). */
RL_API char *rl_ulid_new(char out[RL_ULID_TEXT_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
