/* server/api/lease_call.h — the state of one reserve or complete call on
 * its way through lease_endpoints.c: the decoded body, the valid items
 * handed to the backend, and the backend's results.
 *
 * Typed by lane: a reserve call uses the `reserves` member of each union,
 * a complete call the `completes` one; the call's endpoint says which.
 * Private to src/server/api: the glue only holds it inside an rl_api_call.
 *
 * Ownership: the decoded message is the call's from decode until
 * rl_api_call_end; the two arrays are kept between calls so that a loop's recycled call allocates nothing on the hot path,
 * and freed by rl_api_call_free or when a call needed more than
 * RL_LEASE_CALL_KEEP_BYTES of them.
 */
#ifndef RL_SERVER_LEASE_CALL_H
#define RL_SERVER_LEASE_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/types.h"
#include "wire/wire.h"

#define RL_LEASE_CALL_KEEP_BYTES (64u * 1024u)

struct rl_lease_endpoint;

typedef struct rl_lease_call {
    const struct rl_lease_endpoint *endpoint; /* which of the four, set by its start */
    bool decoded;                             /* msg holds a message to free */
    bool finished; /* its items' answers are encoded: the results below are this call's */
    union {
        rl_wire_reserves reserves;
        rl_wire_completes completes;
    } msg;
    /* The message seen whatever its lane: its items, and which are valid
     * (RL_OK; a batch's invalid items are answered with their sentence). */
    size_t count;
    const rl_status *item_status;
    /* The items the backend decides: msg's own array when every item is
     * valid, else the valid ones packed into `packed`. */
    size_t valid;
    union {
        const rl_reserve_request *reserves;
        const rl_complete_request *completes;
    } requests;
    /* results[i] answers requests[i]: `one` for a single call, else `kept`. */
    union {
        rl_reserve_result *reserves;
        rl_status *completes;
    } results;
    union {
        rl_reserve_result reserve;
        rl_status complete;
    } one;
    /* Kept between calls, with their size in bytes. */
    void *packed;
    size_t packed_bytes;
    void *kept_results;
    size_t kept_results_bytes;
} rl_lease_call;

#endif
