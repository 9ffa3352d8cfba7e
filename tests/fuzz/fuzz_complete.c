/* fuzz_complete.c — POST /v1/complete bodies into rl__wire_decode_complete.
 *
 * Checks, beyond ASan/UBSan: a refusal is RL_INVALID_REQUEST with a
 * sentence and a zeroed message; an accepted body is one request that
 * api.md's rules accept (rl_complete_request_check: 0..32 actuals, amounts
 * 0..2^53), owns its strings (the body is freed before they are read), and
 * survives a round trip through rl__wire_encode_complete_request unchanged.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "lease_complete.h"
#include "lease_single.inc"
