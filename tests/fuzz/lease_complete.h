/* lease_complete.h — the complete side of the lease harnesses: the names
 * that lease_single.inc and lease_batch.inc use, for complete requests. */
#ifndef RL_FUZZ_LEASE_COMPLETE_H
#define RL_FUZZ_LEASE_COMPLETE_H

#include "ratelimiter/limiter.h"
#include "wire/wire.h"

#define LEASE_REQUEST rl_complete_request
#define LEASE_MESSAGE rl_wire_completes
#define LEASE_ITEMS actuals
#define LEASE_ITEM_COUNT actual_count
#define LEASE_ITEM_AMOUNT actual_amount
#define LEASE_FLAG(request) ((void)(request), false) /* a complete has none */
#define LEASE_ITEM_FLAG(item) ((void)(item), false)
#define LEASE_CHECK rl_complete_request_check
#define LEASE_DECODE rl__wire_decode_complete
#define LEASE_DECODE_BATCH rl__wire_decode_complete_batch
#define LEASE_ENCODE rl__wire_encode_complete_request
#define LEASE_ENCODE_BATCH rl__wire_encode_complete_batch_request
#define LEASE_ITEM_DETAIL rl__wire_completes_item_detail
#define LEASE_FREE rl__wire_completes_free

#endif
