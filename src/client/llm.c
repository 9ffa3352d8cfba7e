/* llm.c — what one LLM call needs reserved: its request, its tokens, its concurrency slot. */
#include "ratelimiter/llm.h"

#include <string.h>

#include "ratelimiter/keys.h"

uint64_t rl_estimate_prompt_tokens(const char *prompt) { return prompt == NULL ? 0 : (uint64_t)strlen(prompt); }

void rl_llm_requirements_fix(rl_llm_requirements *requirements) {
    for (size_t i = 0; i < requirements->count; i++) requirements->items[i].key = requirements->keys[i];
}

/* The model's dimensions, in the order of rl_llm_requirements (llm.h); the
 * daily budget follows them. */
static const rl_llm_dimension dimensions[] = {RL_LLM_RPM, RL_LLM_TPM, RL_LLM_CONCURRENCY, RL_LLM_RPD};
#define MODEL_DIMENSIONS (sizeof dimensions / sizeof dimensions[0])
#define TPM_INDEX 1
#define DAILY_INDEX MODEL_DIMENSIONS
_Static_assert(MODEL_DIMENSIONS + 1 == RL_LLM_MAX_REQUIREMENTS, "room for the model's dimensions and the budget");

bool rl_llm_requirements_build(const rl_llm_call *call, rl_llm_requirements *out) {
    memset(out, 0, sizeof *out);
    uint64_t prompt_tokens = call->prompt_tokens > 0 ? call->prompt_tokens : rl_estimate_prompt_tokens(call->prompt);
    if (prompt_tokens > RL_AMOUNT_MAX || call->max_output_tokens > RL_AMOUNT_MAX - prompt_tokens) return false;
    uint64_t bound = prompt_tokens + call->max_output_tokens;
    if (bound == 0) return false; /* an amount is at least 1 */
    for (size_t i = 0; i < MODEL_DIMENSIONS; i++) {
        if (rl_key_llm_global(out->keys[i], sizeof out->keys[i], call->provider, call->model, dimensions[i]) < 0)
            return false;
        out->items[i].amount = dimensions[i] == RL_LLM_TPM ? bound : 1; /* tpm counts tokens, the rest calls */
        /* A model need not have every limit, but every provider limits
         * requests per minute: without an rpm the name is wrong, unless the
         * caller says the model has no limits of its own. */
        out->items[i].optional = dimensions[i] != RL_LLM_RPM || call->model_limits_optional;
    }
    out->count = MODEL_DIMENSIONS;
    if (call->want_daily_budget) {
        if (rl_key_tenant_daily_tokens(out->keys[DAILY_INDEX], sizeof out->keys[DAILY_INDEX], call->tenant_id) < 0)
            return false;
        out->items[DAILY_INDEX].amount = bound; /* required: a tenant's budget is never skipped */
        out->count = DAILY_INDEX + 1;
    }
    out->token_upper_bound = bound;
    rl_llm_requirements_fix(out);
    return true;
}

size_t rl_llm_actuals(const rl_llm_requirements *requirements, uint64_t actual_tokens, rl_actual actuals[2]) {
    /* the token dimensions: tpm and the daily budget */
    size_t count = 0;
    actuals[count++] = (rl_actual){requirements->keys[TPM_INDEX], actual_tokens};
    if (requirements->count > DAILY_INDEX)
        actuals[count++] = (rl_actual){requirements->keys[DAILY_INDEX], actual_tokens};
    return count;
}
