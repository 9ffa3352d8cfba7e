/* core/template_set.h — private: the limit templates in force, and which one
 * makes the definition of a key that has none (template_pattern.h says
 * which wins).
 *
 * A template is a definition whose key is a pattern. A key that no limit
 * defines but a template matches is a limit made from the template: its
 * definition is the template's with the key in place of the pattern.
 *
 * Each template carries a version, new on every put of its pattern, so that
 * what a backend made from an older version can tell it must follow.
 *
 * Not thread-safe: its owner guards it (the memory backend's lock, the
 * redis backend's definitions mutex). Lookups do not allocate; put and
 * delete rebuild the index, O(templates): templates change rarely, keys are
 * looked up on every first use.
 */
#ifndef RL_CORE_TEMPLATE_SET_H
#define RL_CORE_TEMPLATE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/template_pattern.h"
#include "ratelimiter/status.h"
#include "ratelimiter/types.h"

#define RL_TEMPLATE_MAX_COUNT 10000u

typedef struct rl__template {
    rl__template_pattern pattern;
    rl_limit_def def;  /* def.key is the pattern */
    uint64_t version;  /* the set's put counter when this was put: unique, growing */
} rl__template;

typedef struct rl__template_set rl__template_set;

/* An empty set; NULL when out of memory. */
rl__template_set *rl__template_set_create(void);
void rl__template_set_free(rl__template_set *set); /* NULL is allowed */

/* Puts def (def->key a valid pattern; the rest as rl_limit_def_validate
 * wants it) in place of the template of the same pattern, if any. RL_OK;
 * RL_INVALID_REQUEST with a sentence in err (a bad pattern or definition,
 * or the set full at RL_TEMPLATE_MAX_COUNT); RL_NO_MEMORY. On failure
 * nothing changes. *out_version (may be NULL) is the template's version. */
rl_status rl__template_set_put(rl__template_set *set, const rl_limit_def *def, uint64_t *out_version, char *err,
                               size_t err_size);

/* Removes the template of pattern. False when there is none. */
bool rl__template_set_delete(rl__template_set *set, const char *pattern);

/* The template of exactly this pattern, or NULL. Valid until the next put
 * or delete. */
const rl__template *rl__template_set_find(const rl__template_set *set, const char *pattern);

/* The template that makes key[0..key_len)'s definition (the most specific
 * that matches), or NULL when none does. Valid until the next put or
 * delete. */
const rl__template *rl__template_set_match(const rl__template_set *set, const char *key, size_t key_len);

/* How many templates; the i-th in pattern order (i < count). */
size_t rl__template_set_count(const rl__template_set *set);
const rl__template *rl__template_set_at(const rl__template_set *set, size_t i);

/* The definition a template makes for key: its own, keyed key. */
void rl__template_instance_def(const rl__template *template_, const char *key, rl_limit_def *out);

#endif
