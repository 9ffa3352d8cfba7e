/* redis/template_copy.h — this daemon's copy of the templates Redis holds
 * (lua/made.lua): which template makes a key's limit, looked up on every
 * call naming keys (Redis stays the authority: the scripts make a limit
 * from the template Redis holds, and only for a key without a limit of its
 * own); each template's JSON, to put it back in a Redis that lost it; and
 * the calendars of budget templates, for the period bounds the scripts
 * need (budget_periods.h).
 *
 * Kept current by the backend: its own puts and deletes at once, another
 * daemon's from the changes it follows each second (redis_templates.c).
 * Thread-safe: lookups share a read lock; changes (rare) take it to write.
 * rl__template_copy_count reads no lock, so that a daemon without
 * templates pays nothing per key.
 */
#ifndef RL_REDIS_TEMPLATE_COPY_H
#define RL_REDIS_TEMPLATE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/redis/budget_periods.h"
#include "ratelimiter/types.h"

typedef struct rl__template_copy rl__template_copy;

/* NULL if out of memory. */
rl__template_copy *rl__template_copy_create(void);
void rl__template_copy_destroy(rl__template_copy *copy); /* NULL is allowed */

/* Puts (or replaces) template def (def->key its pattern, valid), with its
 * JSON as Redis holds it. False when out of memory, or when def is no
 * template this build takes (then it is not kept) or a budget whose zone
 * tzdata cannot read (kept: the scripts ask for its bounds). */
bool rl__template_copy_put(rl__template_copy *copy, const rl_limit_def *def, const char *json, size_t json_len);

/* Forgets the template of pattern (deleted). */
void rl__template_copy_remove(rl__template_copy *copy, const char *pattern);

/* How many templates are kept. Lock-free. */
size_t rl__template_copy_count(const rl__template_copy *copy);

/* The pattern of the template that makes key's limit (the most specific
 * that matches: core/template_set.h) into pattern, its kind into *kind
 * (may be NULL). False when none matches. */
bool rl__template_copy_match(rl__template_copy *copy, const char *key, char pattern[RL_KEY_MAX_LEN + 1],
                             rl_kind *kind);

/* The period bounds around unix_ms of the budget template of pattern into
 * *out; false if pattern is no budget template kept (or its zone could not
 * be read). */
bool rl__template_copy_bounds(rl__template_copy *copy, const char *pattern, uint64_t unix_ms, rl_budget_bounds *out);

/* Copies of every template's JSON, sorted by pattern (as
 * rl_definition_cache_all). NULL with *count 0 when empty or out of memory. */
char **rl__template_copy_jsons(rl__template_copy *copy, size_t *count);

/* The patterns of every budget template, in one malloc'd array of
 * RL_KEY_MAX_LEN + 1 byte strings (*count of them; NULL when none or out
 * of memory). */
char (*rl__template_copy_budget_patterns(rl__template_copy *copy, size_t *count))[RL_KEY_MAX_LEN + 1];

#endif
