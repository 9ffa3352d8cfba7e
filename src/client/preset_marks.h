/* client/preset_marks.h — private: which limits of an in-process limiter a
 * provider preset made, and what it made them (ratelimiter/presets.h).
 *
 * The local limiter keeps no registry it writes: its limits come from the
 * file, rl_limiter_local_define and rl_limiter_local_apply_preset (and, with
 * a journal, from the last run's). A key marked here is a preset's, with
 * the origin ("preset:<name>") and the definition it applied; any other
 * key the backend holds is the operator's. Few keys are marked: a list,
 * searched whole.
 *
 * Not thread-safe: the limiter's admin mutex guards it.
 */
#ifndef RL_CLIENT_PRESET_MARKS_H
#define RL_CLIENT_PRESET_MARKS_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/registry.h"
#include "ratelimiter/types.h"

typedef struct rl__preset_mark {
    rl_limit_def def; /* what the preset applied, which the backend holds */
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
} rl__preset_mark;

typedef struct rl__preset_marks {
    rl__preset_mark *marks;
    size_t count, cap;
} rl__preset_marks;

/* The mark of key, or NULL: valid until the next set or forget. */
const rl__preset_mark *rl__preset_marks_find(const rl__preset_marks *marks, const char *key);

/* Marks def->key as origin's, with def. false: out of memory (nothing
 * changes). */
bool rl__preset_marks_set(rl__preset_marks *marks, const rl_limit_def *def, const char *origin);

/* The key is no preset's (the operator defined or deleted it). */
void rl__preset_marks_forget(rl__preset_marks *marks, const char *key);

void rl__preset_marks_free(rl__preset_marks *marks);

#endif
