/* ratelimiter/llm.h — the LLM helpers: what one call to a model needs
 * reserved: requests, tokens, a concurrency slot.
 *
 * token upper bound = rl_estimate_prompt_tokens(prompt) + max_output_tokens,
 * where the v1 estimate is the prompt's UTF-8 byte count: conservative (real
 * token counts are smaller), so that a reservation is never too small.
 */
#ifndef RATELIMITER_LLM_H
#define RATELIMITER_LLM_H

#include "ratelimiter/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The v1 estimate: the prompt's length in bytes (NULL is 0). */
RL_API uint64_t rl_estimate_prompt_tokens(const char *prompt);

typedef struct rl_llm_call {
    const char *tenant_id;      /* needed only with want_daily_budget */
    const char *provider;       /* "openai" */
    const char *model;          /* "gpt-4o" */
    const char *prompt;         /* may be NULL when prompt_tokens is set */
    uint64_t prompt_tokens;     /* used instead of the estimate when > 0 */
    uint64_t max_output_tokens;
    bool want_daily_budget;     /* also reserve tenant:<id>:llm:daily_tokens */
    /* false (zero, the default): the model's rpm is required, as every
     * provider limits requests per minute: a model whose rpm is not defined,
     * a misspelt name above all, is refused (unknown_limit_key naming
     * global:llm:<provider>:<model>:rpm) rather than admitted unlimited.
     * true: every dimension of the model is optional, for a model that has
     * no limits of its own (one run locally): a model with none defined is
     * then admitted holding nothing, so a misspelt one is too. */
    bool model_limits_optional;
} rl_llm_call;

/* The requirements of one call, with their keys stored inline so that the
 * struct can be kept and copied, in this order: the model's rpm 1, tpm =
 * upper bound, concurrency 1 and rpd 1, and with want_daily_budget the
 * tenant's daily tokens = upper bound. The rpm is required unless
 * model_limits_optional; the model's other dimensions are optional (a model
 * needs only the limits it really has: a dimension without a definition is
 * skipped); the tenant's budget is required (a tenant without one is
 * refused, unknown_limit_key). */
#define RL_LLM_MAX_REQUIREMENTS 5
typedef struct rl_llm_requirements {
    rl_requirement items[RL_LLM_MAX_REQUIREMENTS];
    size_t count;
    uint64_t token_upper_bound;
    char keys[RL_LLM_MAX_REQUIREMENTS][RL_KEY_MAX_LEN + 1];
} rl_llm_requirements;

/* Builds out from call. Returns false if a part (provider, model, tenant) is
 * not a valid key part (printable ASCII, no spaces or ':'), a key would be
 * too long, or the upper bound is 0 or above 2^53. out->items point into
 * out->keys: do not copy an rl_llm_requirements by value while its items are
 * in use (re-run the builder, or copy and call rl_llm_requirements_fix). */
RL_API bool rl_llm_requirements_build(const rl_llm_call *call, rl_llm_requirements *out);

/* Re-points items at this copy's own keys after a copy by value. */
RL_API void rl_llm_requirements_fix(rl_llm_requirements *requirements);

/* The actuals of a finished call: tpm (and the daily budget when reserved)
 * = actual_tokens, keys borrowed from requirements. Writes up to 2 into
 * actuals and returns how many. */
RL_API size_t rl_llm_actuals(const rl_llm_requirements *requirements, uint64_t actual_tokens,
                             rl_actual actuals[2]);

#ifdef __cplusplus
}
#endif
#endif
