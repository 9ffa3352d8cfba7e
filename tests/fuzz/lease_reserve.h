/* lease_reserve.h — the reserve side of the lease harnesses: the names that
 * lease_single.inc and lease_batch.inc use, for reserve requests. */
#ifndef RL_FUZZ_LEASE_RESERVE_H
#define RL_FUZZ_LEASE_RESERVE_H

#include "ratelimiter/limiter.h"
#include "wire/wire.h"

#define LEASE_REQUEST rl_reserve_request
#define LEASE_MESSAGE rl_wire_reserves
#define LEASE_ITEMS requirements
#define LEASE_ITEM_COUNT requirement_count
#define LEASE_ITEM_AMOUNT amount
#define LEASE_FLAG(request) ((request)->dry_run)
#define LEASE_ITEM_FLAG(item) ((item)->optional)
#define LEASE_CHECK rl_reserve_request_check
#define LEASE_DECODE rl__wire_decode_reserve
#define LEASE_DECODE_BATCH rl__wire_decode_reserve_batch
#define LEASE_ENCODE rl__wire_encode_reserve_request
#define LEASE_ENCODE_BATCH rl__wire_encode_reserve_batch_request
#define LEASE_ITEM_DETAIL rl__wire_reserves_item_detail
#define LEASE_FREE rl__wire_reserves_free

#endif
