/* core/preset_rule.h — private: "explicit limits win over presets"
 * (ratelimiter/presets.h), decided in one place for the daemon's two modes
 * and the in-process limiter.
 *
 * Who made a definition is its origin (ratelimiter/registry.h): "" for the
 * operator, "preset:<name>" for a preset. Where origins are kept (the
 * registry, the local limiter's marks) they say it; where they are not (a
 * shared store: Redis holds definitions only), a definition that is exactly
 * what a preset makes for its key (its description names the preset and
 * its date) counts as that preset's, and any other as the operator's.
 *
 * Pure and thread-safe (the presets are static data).
 */
#ifndef RL_CORE_PRESET_RULE_H
#define RL_CORE_PRESET_RULE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/presets.h"
#include "ratelimiter/registry.h"

#define RL_PRESET_ORIGIN_PREFIX "preset:"

/* The origin of preset's limits: "preset:<name>". */
void rl__preset_origin(const rl_preset *preset, char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]);

/* The preset an origin names ("preset:<name>" of a known preset), or NULL
 * (the operator's "", or anything else). */
const rl_preset *rl__preset_of_origin(const char *origin);

/* What a preset's put of def (origin: its "preset:<name>") does to its key,
 * which holds held (NULL: no definition) made by held_origin: defined,
 * updated (held by any preset, unless the same definition of the same
 * origin: unchanged) or kept (the operator's, or any origin that is not a
 * preset's). Never RL_PRESET_REFUSED: that is the store's to say. */
rl_preset_outcome rl__preset_outcome(const rl_limit_def *held, const char *held_origin, const rl_limit_def *def,
                                     const char *origin);

/* The preset whose limit of def->key is exactly def, or NULL: the origin of
 * a definition where no origin is kept. */
const rl_preset *rl__preset_that_made(const rl_limit_def *def);

/* origin of def by rl__preset_that_made: "preset:<name>" or "". */
void rl__preset_origin_of_def(const rl_limit_def *def, char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1]);

/* Writes "no preset named \"<name>\"; the presets are: a, b, ..." into err
 * (the name left out when it is not 1..RL_PRESET_NAME_MAX_LEN printable
 * ASCII characters). */
void rl__preset_unknown(const char *name, char *err, size_t err_size);

#endif
