/* denial_ring.c — see denial_ring.h. */
#include "server/observe/denial_ring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* One loop's part: written by that loop, copied by readers. Aligned so
 * that two loops' mutexes never share a cache line. */
typedef struct ring_part {
    _Alignas(64) pthread_mutex_t mutex;
    rl_denial_entry *entries; /* capacity of them */
    uint64_t written;         /* entries ever written; the next goes at written % capacity */
} ring_part;

struct rl_denial_ring {
    uint32_t loops;
    uint32_t per_loop; /* each part's capacity */
    _Atomic uint64_t seq;
    ring_part *parts;
};

rl_denial_ring *rl_denial_ring_create(uint32_t loops) {
    if (loops == 0) return NULL;
    rl_denial_ring *ring = calloc(1, sizeof *ring);
    if (ring == NULL) return NULL;
    ring->loops = loops;
    ring->per_loop = RL_DENIAL_RING_CAPACITY / loops;
    if (ring->per_loop < RL_DENIAL_RING_MIN_PER_LOOP) ring->per_loop = RL_DENIAL_RING_MIN_PER_LOOP;
    atomic_init(&ring->seq, 0);
    ring->parts = aligned_alloc(_Alignof(ring_part), sizeof *ring->parts * loops);
    if (ring->parts == NULL) {
        free(ring);
        return NULL;
    }
    memset(ring->parts, 0, sizeof *ring->parts * loops);
    for (uint32_t i = 0; i < loops; i++) {
        ring_part *part = &ring->parts[i];
        part->entries = calloc(ring->per_loop, sizeof *part->entries);
        if (part->entries == NULL || pthread_mutex_init(&part->mutex, NULL) != 0) {
            free(part->entries);
            part->entries = NULL;
            ring->loops = i; /* the parts made so far */
            rl_denial_ring_destroy(ring);
            return NULL;
        }
    }
    return ring;
}

void rl_denial_ring_destroy(rl_denial_ring *ring) {
    if (ring == NULL) return;
    for (uint32_t i = 0; i < ring->loops; i++) {
        pthread_mutex_destroy(&ring->parts[i].mutex);
        free(ring->parts[i].entries);
    }
    free(ring->parts);
    free(ring);
}

size_t rl_denial_ring_capacity(const rl_denial_ring *ring) { return (size_t)ring->per_loop * ring->loops; }

uint64_t rl_denial_ring_noted_total(const rl_denial_ring *ring) {
    return atomic_load_explicit(&((rl_denial_ring *)ring)->seq, memory_order_relaxed);
}

static uint64_t wall_clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A borrowed string of the outcome into a field (size bytes), cut to fit. */
static void copy_text(char *field, size_t size, const char *text) {
    size_t len = text != NULL ? strnlen(text, size - 1) : 0;
    if (len > 0) memcpy(field, text, len);
    field[len] = '\0';
}

void rl_denial_ring_note(rl_denial_ring *ring, uint32_t loop, const rl_api_outcome *outcome) {
    if (outcome->denied_by_key[0] == '\0' || loop >= ring->loops) return;
    /* Read off the outcome before the lock: the lock covers only the copy. */
    rl_denial_entry entry;
    entry.seq = atomic_fetch_add_explicit(&ring->seq, 1, memory_order_relaxed) + 1;
    entry.at_unix_ms = wall_clock_ms();
    entry.endpoint = outcome->endpoint;
    copy_text(entry.lease_id, sizeof entry.lease_id, outcome->first_denied_lease_id);
    copy_text(entry.job_id, sizeof entry.job_id, outcome->first_denied_job_id);
    copy_text(entry.key, sizeof entry.key, outcome->denied_by_key);
    entry.denied_by = outcome->denied_by;
    entry.denied_by.key = NULL;
    entry.retry_after_ms = outcome->first_denied_retry_after_ms;
    entry.items = outcome->items;
    entry.denied_items = outcome->results[RL_API_RESULT_DENIED_CAPACITY] +
                         outcome->results[RL_API_RESULT_DENIED_DECREASING] +
                         outcome->results[RL_API_RESULT_DENIED_EXCEEDS_CAPACITY];
    entry.dry_run = outcome->dry_run;

    ring_part *part = &ring->parts[loop];
    pthread_mutex_lock(&part->mutex);
    part->entries[part->written % ring->per_loop] = entry;
    part->written++;
    pthread_mutex_unlock(&part->mutex);
}

static bool matches(const rl_denial_entry *entry, const rl_denial_filter *filter) {
    if (filter == NULL) return true;
    if (filter->key != NULL && filter->key[0] != '\0' && strcmp(entry->key, filter->key) != 0) return false;
    if (filter->lease_id != NULL && filter->lease_id[0] != '\0' && strcasecmp(entry->lease_id, filter->lease_id) != 0)
        return false;
    return true;
}

static int newest_first(const void *a, const void *b) {
    uint64_t x = ((const rl_denial_entry *)a)->seq, y = ((const rl_denial_entry *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

size_t rl_denial_ring_read(const rl_denial_ring *ring, const rl_denial_filter *filter, rl_denial_entry *out,
                           size_t max) {
    if (max == 0) return 0;
    /* The newest max matches of each part, then the newest max of them all:
     * a loop waits for a reader at most while max entries of its part are
     * copied (the console asks for 50), one part at a time. */
    size_t per_part = max < ring->per_loop ? max : ring->per_loop;
    rl_denial_entry *found = malloc(sizeof *found * per_part * ring->loops);
    if (found == NULL) return 0;
    size_t count = 0;
    for (uint32_t i = 0; i < ring->loops; i++) {
        ring_part *part = &ring->parts[i];
        size_t taken = 0;
        pthread_mutex_lock(&part->mutex);
        uint64_t kept = part->written < ring->per_loop ? part->written : ring->per_loop;
        for (uint64_t n = 0; n < kept && taken < per_part; n++) {
            const rl_denial_entry *entry = &part->entries[(part->written - 1 - n) % ring->per_loop];
            if (matches(entry, filter)) found[count + taken++] = *entry;
        }
        pthread_mutex_unlock(&part->mutex);
        count += taken;
    }
    qsort(found, count, sizeof *found, newest_first);
    if (count > max) count = max;
    memcpy(out, found, sizeof *found * count);
    free(found);
    return count;
}
