/* memory/pages.h — memory for the backend's arrays that grow and shrink
 * with the load (the lease index, the forget queue's rings and heap, the
 * limit table's buckets, a limit's ring of reservations): taken from the
 * kernel directly once they are large, and given back to it when freed.
 *
 * Through malloc, glibc maps a large block itself, and each such block
 * freed raises its thresholds (up to 32 MB mapped, twice that kept free at
 * the top of a heap): from then on every block below that size comes from
 * an arena, and so does the top of a thread's arena stay resident however
 * much of it is free (malloc_trim gives back the free pages inside an
 * arena, not the free top of a thread's). Resized as a million tenants
 * came and went, these arrays raised them so, and left megabytes resident
 * in the sweeper's arena. Mapped here they go back whole when freed and
 * move none of the allocator's thresholds.
 *
 * Thread-safe: no state.
 */
#ifndef RL_MEMORY_PAGES_H
#define RL_MEMORY_PAGES_H

#include <stddef.h>

/* Smaller blocks come from malloc: glibc's own threshold before it moves,
 * below which it would not map them either. */
#define RL_MEM_PAGES_MIN_BYTES (128u << 10)
/* Blocks of this size or more start on a boundary of it, so that their
 * owner may advise them into huge pages (madvise MADV_HUGEPAGE). */
#define RL_MEM_PAGES_HUGE_BYTES (2u << 20)

/* size bytes, zeroed; NULL when there is no memory. */
void *rl__mem_pages_alloc(size_t size);

/* Frees pages, of the size it was allocated with (NULL: nothing). */
void rl__mem_pages_free(void *pages, size_t size);

#endif
