/* llm.c — what one LLM call needs reserved (spec §5). */
#include "ratelimiter/llm.h"

#include <string.h>

#include "ratelimiter/keys.h"

uint64_t rl_estimate_prompt_tokens(const char *prompt) { return prompt == NULL ? 0 : (uint64_t)strlen(prompt); }

void rl_llm_requirements_fix(rl_llm_requirements *requirements) {
    for (size_t i = 0; i < requirements->count; i++) requirements->items[i].key = requirements->keys[i];
}

bool rl_llm_requirements_build(const rl_llm_call *call, rl_llm_requirements *out) {
    memset(out, 0, sizeof *out);
    uint64_t prompt_tokens = call->prompt_tokens > 0 ? call->prompt_tokens : rl_estimate_prompt_tokens(call->prompt);
    if (prompt_tokens > RL_AMOUNT_MAX || call->max_output_tokens > RL_AMOUNT_MAX - prompt_tokens) return false;
    uint64_t bound = prompt_tokens + call->max_output_tokens;
    if (bound == 0) return false; /* an amount is at least 1 */
    static const rl_llm_dimension dimensions[] = {RL_LLM_RPM, RL_LLM_TPM, RL_LLM_CONCURRENCY};
    static const int per_request_unit[] = {1, 0, 1}; /* rpm and concurrency count calls, tpm tokens */
    for (size_t i = 0; i < 3; i++) {
        if (rl_key_llm_global(out->keys[i], sizeof out->keys[i], call->provider, call->model, dimensions[i]) < 0)
            return false;
        out->items[i].amount = per_request_unit[i] ? 1 : bound;
    }
    out->count = 3;
    if (call->want_daily_budget) {
        if (rl_key_tenant_daily_tokens(out->keys[3], sizeof out->keys[3], call->tenant_id) < 0) return false;
        out->items[3].amount = bound;
        out->count = 4;
    }
    out->token_upper_bound = bound;
    rl_llm_requirements_fix(out);
    return true;
}

size_t rl_llm_actuals(const rl_llm_requirements *requirements, uint64_t actual_tokens, rl_actual actuals[2]) {
    /* the token dimensions: tpm (index 1) and the daily budget (index 3) */
    size_t count = 0;
    actuals[count++] = (rl_actual){requirements->keys[1], actual_tokens};
    if (requirements->count == 4) actuals[count++] = (rl_actual){requirements->keys[3], actual_tokens};
    return count;
}
