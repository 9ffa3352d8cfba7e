/* hand_back.c — when freed memory goes back to the kernel (see hand_back.h). */
#include "backend/memory/hand_back.h"

#include <stdlib.h> /* any libc header: __GLIBC__ is said there */
#ifdef __GLIBC__
#include <malloc.h>
#endif

void rl__mem_hand_back_init(rl_mem_hand_back *record) {
    record->most_held = 0;
    record->hand_backs = 0;
}

bool rl__mem_hand_back_due(rl_mem_hand_back *record, uint64_t held_before, uint64_t held_after) {
    if (held_before > record->most_held) record->most_held = held_before;
    uint64_t gone = record->most_held > held_after ? record->most_held - held_after : 0;
    if (gone < RL_MEM_HAND_BACK_MIN_ITEMS || gone < held_after) return false;
    record->most_held = held_after;
    record->hand_backs++;
    return true;
}

void rl__mem_hand_back(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
