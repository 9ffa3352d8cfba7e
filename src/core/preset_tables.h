/* core/preset_tables.h — private: the built-in presets' figures
 * (preset_tables.c), read through ratelimiter/presets.h. */
#ifndef RL_CORE_PRESET_TABLES_H
#define RL_CORE_PRESET_TABLES_H

#include "ratelimiter/presets.h"

/* Every preset, in name order; *count of them. Static data. */
const rl_preset *rl__preset_tables(size_t *count);

#endif
