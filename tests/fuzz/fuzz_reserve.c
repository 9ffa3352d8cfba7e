/* fuzz_reserve.c — POST /v1/reserve bodies into rl__wire_decode_reserve.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a
 * sentence and a zeroed message; an accepted body is one request that
 * api.md's rules accept (rl_reserve_request_check), owns its strings (the
 * body is freed before they are read), and survives a round trip through
 * rl__wire_encode_reserve_request unchanged.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "lease_reserve.h"
#include "lease_single.inc"
