/* fuzz_reserve_batch.c — POST /v1/reserve/batch bodies into
 * rl__wire_decode_reserve_batch (max_batch 256, the default config).
 *
 * Checks, beyond ASan/UBSan: a refusal is a sentence and a zeroed message;
 * an accepted batch has 1..max_batch items, each either valid by api.md's
 * rules (rl_reserve_request_check) or marked RL_INVALID_REQUEST with a
 * sentence and a zeroed request; the valid items survive a round trip
 * through rl__wire_encode_reserve_batch_request; and decoding with a smaller
 * max_batch (3) agrees: it accepts exactly the batches of at most 3 items.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "lease_reserve.h"
#include "lease_batch.inc"
