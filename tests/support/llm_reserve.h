/* support/llm_reserve.h — one reserve of an LLM call's requirements, built
 * by the helper (ratelimiter/llm.h), for tests that check what a limiter
 * answers a model call. Header-only; include it after <cmocka.h>, whose
 * assertions it uses. */
#ifndef RL_TEST_LLM_RESERVE_H
#define RL_TEST_LLM_RESERVE_H

#include "ratelimiter/limiter.h"
#include "ratelimiter/llm.h"
#include "ratelimiter/ulid.h"

/* Reserves call's requirements under a new lease id; asserts that the
 * requirements build and that the limiter answered (RL_OK). */
static inline rl_reserve_result rl_test_reserve_llm_call(rl_limiter *limiter, const rl_llm_call *call) {
    rl_llm_requirements r;
    assert_true(rl_llm_requirements_build(call, &r));
    char id[RL_ULID_TEXT_SIZE];
    rl_reserve_request request = {rl_ulid_new(id), NULL, r.items, r.count, false};
    rl_reserve_result result;
    assert_int_equal(rl_limiter_reserve(limiter, &request, &result), RL_OK);
    return result;
}

#endif
