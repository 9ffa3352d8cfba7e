/* core/ulid_text.h — private: a ULID's 128-bit value back to its text, for
 * what a backend keeps by value and must name again (the audit log). */
#ifndef RL_CORE_ULID_TEXT_H
#define RL_CORE_ULID_TEXT_H

#include <stdint.h>

#include "ratelimiter/ulid.h"

/* Writes the 26 upper-case characters of the ULID whose value rl_ulid_decode
 * gave as hi, lo, and a NUL. Pure, thread-safe. */
void rl__ulid_text(uint64_t hi, uint64_t lo, char out[RL_ULID_TEXT_SIZE]);

#endif
