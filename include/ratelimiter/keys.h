/* ratelimiter/keys.h — limit keys and their conventions.
 *
 * A key is 1..RL_KEY_MAX_LEN bytes of printable ASCII without spaces
 * (0x21..0x7e). The builders write the standard keys; they validate
 * each part so that a tenant id cannot smuggle a ':' into another namespace.
 */
#ifndef RATELIMITER_KEYS_H
#define RATELIMITER_KEYS_H

#include "ratelimiter/export.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True if key[0..len) is a valid limit key. Pure, thread-safe. */
RL_API bool rl_key_is_valid(const char *key, size_t len);

/* The dimension of a global LLM key: "rpm", "tpm", "concurrency" or "rpd". */
typedef enum rl_llm_dimension {
    RL_LLM_RPM = 0,
    RL_LLM_TPM = 1,
    RL_LLM_CONCURRENCY = 2,
    RL_LLM_RPD = 3, /* requests per day */
} rl_llm_dimension;

/* Writes "global:llm:<provider>:<model>:<dimension>" into out (out_size bytes,
 * NUL-terminated). provider and model must be non-empty printable ASCII
 * without spaces or ':'. Returns the length written, or -1 if a part is
 * invalid or the key would not fit (out is then an empty string). */
RL_API int rl_key_llm_global(char *out, size_t out_size, const char *provider, const char *model,
                             rl_llm_dimension dimension);

/* Writes "tenant:<tenant_id>:llm:daily_tokens"; same rules and result. */
RL_API int rl_key_tenant_daily_tokens(char *out, size_t out_size, const char *tenant_id);

#ifdef __cplusplus
}
#endif
#endif
