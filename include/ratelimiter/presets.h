/* ratelimiter/presets.h — built-in provider presets: the quotas OpenAI,
 * Anthropic and Google publish for their API tiers, as limits ready to
 * define.
 *
 * A preset is a dated list of a provider's per-model quotas for one tier:
 * requests per minute, tokens per minute and requests per day, each a
 * rolling limit on the LLM helper's keys (keys.h):
 *
 *     global:llm:<provider>:<model>:rpm   rolling, 60 s, unit "requests"
 *     global:llm:<provider>:<model>:tpm   rolling, 60 s, unit "tokens"
 *     global:llm:<provider>:<model>:rpd   rolling, 86,400 s, unit "requests"
 *
 * A quota the provider does not publish (often requests per day, and
 * concurrency always) is left out: the LLM helper marks those dimensions
 * optional (llm.h), so a model needs only the limits it has. Every model
 * of a preset has an rpm, which the helper requires, so that a misspelt
 * model is refused rather than unlimited.
 *
 * Providers change their quotas and grant others per account: each preset
 * says where its figures come from and as of when (source, as_of), and an
 * operator's own definition of a key always wins over a preset's (the
 * daemon keeps an applied preset's limits apart from explicit ones).
 *
 * Where a provider counts differently from this limiter, the preset errs
 * on the safe side, and its note says how:
 *   - Anthropic counts input and output tokens per minute apart (ITPM,
 *     OTPM); a reservation here holds prompt and output together, so tpm
 *     is the input limit: input never exceeds it, the output limit is not
 *     enforced.
 *   - Google resets requests per day at midnight Pacific time; a rolling
 *     24 h window never admits more within any day than a calendar reset
 *     would.
 *
 * Everything here is static data: pure and thread-safe.
 */
#ifndef RATELIMITER_PRESETS_H
#define RATELIMITER_PRESETS_H

#include "ratelimiter/export.h"

#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_PRESET_NAME_MAX_LEN 32

/* One model's published quotas in a preset; 0: not published (no limit). */
typedef struct rl_preset_model {
    const char *model;  /* the key part: "gpt-4o", "claude-sonnet-4", "gemini-2.5-flash" */
    uint64_t rpm, tpm, rpd;
} rl_preset_model;

typedef struct rl_preset {
    const char *name;     /* "openai-tier-1": provider, then tier */
    const char *provider; /* the key part: "openai", "anthropic", "gemini", or "local" */
    const char *tier;     /* as the provider names it: "Tier 1", "Free" */
    const char *as_of;    /* the date the figures were published, "YYYY-MM-DD" */
    const char *source;   /* where they were published (a URL) */
    const char *note;     /* how the preset maps the provider's counting, or "" */
    const rl_preset_model *models;
    size_t model_count;   /* 0 for "local": local inference has no API quota */
} rl_preset;

/* How many presets there are, and the i-th (i < count), in name order. */
RL_API size_t rl_preset_count(void);
RL_API const rl_preset *rl_preset_at(size_t i);

/* The preset named name, or NULL. */
RL_API const rl_preset *rl_preset_find(const char *name);

/* How many limit definitions the preset makes (every published quota of
 * every model). */
RL_API size_t rl_preset_limit_count(const rl_preset *preset);

/* The i-th definition the preset makes (i < rl_preset_limit_count), in key
 * order of each model (rpd, rpm, tpm) and model order, into *out:
 * validated by rl_limit_def_validate, description naming the preset. */
RL_API void rl_preset_limit(const rl_preset *preset, size_t i, rl_limit_def *out);

/* ---- applying a preset ----------------------------------------------------
 *
 * Explicit limits win over presets. Applying a preset, for each limit it
 * makes:
 *   - a key with no definition is defined;
 *   - a key a preset defined (this one or another: an older table, another
 *     tier) takes this preset's definition;
 *   - a key the operator defined (a PUT of the key, rl_limiter_local_define,
 *     the limits file) keeps the operator's definition.
 * An explicit definition of a key a preset made makes it the operator's;
 * deleting it removes it, whoever made it. A preset never deletes a key:
 * one an earlier preset made that this one does not is left as it is.
 */

/* The most limits one preset makes: room for every result of one apply. */
#define RL_PRESET_MAX_LIMITS 64

/* What applying a preset did to one of its keys. */
typedef enum rl_preset_outcome {
    RL_PRESET_DEFINED = 0, /* "defined": the key had no definition, now the preset's */
    RL_PRESET_UPDATED,     /* "updated": a preset's definition replaced by this preset's */
    RL_PRESET_UNCHANGED,   /* "unchanged": it held this preset's definition already; nothing written */
    RL_PRESET_KEPT,        /* "kept": the operator's definition stays */
    RL_PRESET_REFUSED,     /* "refused": the store refused this preset's definition (a status says why) */
} rl_preset_outcome;

/* "defined", "updated", "unchanged", "kept", "refused"; "?" otherwise. */
RL_API const char *rl_preset_outcome_name(rl_preset_outcome outcome);

/* The result of one key of an apply. */
typedef struct rl_preset_result {
    char key[RL_KEY_MAX_LEN + 1];
    rl_preset_outcome outcome;
    /* RL_OK, or with RL_PRESET_REFUSED why: RL_LIMIT_IN_USE (a change of
     * kind while the limit holds reservations), RL_INVALID_REQUEST (no
     * room for another limit), or the store's failure. */
    rl_status status;
    /* The limit's state after a define or an update: a lower capacity than
     * usage allows is RL_LIMIT_STATUS_DECREASING until it fits. */
    rl_limit_status limit_status;
} rl_preset_result;

#ifdef __cplusplus
}
#endif
#endif
