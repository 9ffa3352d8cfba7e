/* memory/hand_back.h — when the memory backend hands the memory it freed
 * back to the kernel.
 *
 * Forgotten leases and limits go back to the allocator, which keeps their
 * pages for reuse: still counted in the process's resident memory, a
 * million tenants' worth of it once they are all gone. malloc_trim gives
 * free pages back, but it walks every arena and holds each one's lock
 * while it does, stalling whoever allocates meanwhile. So it is asked for
 * seldom and off the request path: by the sweep, after the backend's lock
 * is let go, once what the backend holds (its leases and its limits,
 * counted) has fallen to half the most it held since memory was last
 * handed back, and by at least RL_MEM_HAND_BACK_MIN_ITEMS.
 *
 * Under a steady load what is forgotten is replaced at once, nothing falls
 * and nothing is handed back. As a burst drains, memory is handed back
 * each time what is left halves, the last time at the sweep that forgets
 * the last of it: a burst's limits when they go idle, its leases when they
 * are forgotten (lease_memory_ms later), whichever holds the memory.
 *
 * Not thread-safe: the backend's lock guards the record; rl__mem_hand_back
 * itself takes no lock of ours.
 */
#ifndef RL_MEMORY_HAND_BACK_H
#define RL_MEMORY_HAND_BACK_H

#include <stdbool.h>
#include <stdint.h>

/* Below this many items gone (about 0.7 MB of leases and limits) nothing
 * is handed back: not worth a walk of the allocator. */
#define RL_MEM_HAND_BACK_MIN_ITEMS 1024u

typedef struct rl_mem_hand_back {
    uint64_t most_held;  /* the most items held at a sweep since the last hand-back */
    uint64_t hand_backs; /* how many were asked for */
} rl_mem_hand_back;

void rl__mem_hand_back_init(rl_mem_hand_back *record);

/* The sweep tells how many items the backend held before it forgot
 * anything and after. True: memory is to be handed back now
 * (rl__mem_hand_back, once the lock is let go), and counted so. */
bool rl__mem_hand_back_due(rl_mem_hand_back *record, uint64_t held_before, uint64_t held_after);

/* Gives the allocator's free pages back to the kernel (malloc_trim, where
 * glibc has it; nothing elsewhere). Any thread; call it holding no lock
 * that the request path takes. */
void rl__mem_hand_back(void);

#endif
