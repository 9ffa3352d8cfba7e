/* core/limit_def.h — private: a definition copied and compared field by
 * field, so that bytes after the NULs of its strings never count (copies
 * then also compare equal with memcmp). Every field of rl_limit_def is in
 * both: a new field is added here, once. Pure and thread-safe. */
#ifndef RL_CORE_LIMIT_DEF_H
#define RL_CORE_LIMIT_DEF_H

#include <stdbool.h>

#include "ratelimiter/types.h"

/* *out = def's fields, the rest of *out zeroed. */
void rl__limit_def_copy(rl_limit_def *out, const rl_limit_def *def);
bool rl__limit_def_equal(const rl_limit_def *a, const rl_limit_def *b);

#endif
