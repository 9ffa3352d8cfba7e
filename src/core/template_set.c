/* template_set.c — the limit templates in force (template_set.h).
 *
 * Templates sit in an array sorted by pattern (find and list), and an index
 * by their literal first segment ("tenant" of "tenant:{t}:llm:rpm") narrows
 * a key's candidates to the templates of its own first segment plus those
 * whose first segment holds a placeholder: with thousands of templates, a
 * key's first use still looks at a handful.
 */
#include "core/template_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limit_def.h"

#define NONE UINT32_MAX

struct rl__template_set {
    rl__template **items; /* sorted by pattern text */
    size_t count, capacity;
    uint64_t puts;        /* versions handed out */
    /* The index, rebuilt on every change: bucket_heads[hash of a first
     * segment] starts a chain of item indexes through next_in_bucket;
     * wild lists the items whose first segment holds a placeholder. */
    uint32_t *bucket_heads;
    size_t bucket_count; /* a power of two, or 0 */
    uint32_t *next_in_bucket;
    uint32_t *wild;
    size_t wild_count;
};

/* FNV-1a of a first segment. */
static uint64_t hash_head(const char *text, size_t len) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * UINT64_C(1099511628211);
    return h;
}

rl__template_set *rl__template_set_create(void) { return calloc(1, sizeof(rl__template_set)); }

static void free_index(rl__template_set *set) {
    free(set->bucket_heads);
    free(set->next_in_bucket);
    free(set->wild);
    set->bucket_heads = set->next_in_bucket = set->wild = NULL;
    set->bucket_count = set->wild_count = 0;
}

void rl__template_set_free(rl__template_set *set) {
    if (set == NULL) return;
    for (size_t i = 0; i < set->count; i++) free(set->items[i]);
    free(set->items);
    free_index(set);
    free(set);
}

/* Rebuilds the index for the items as they are. False (the old index kept
 * out of use: lookups then scan every item) when out of memory. */
static bool build_index(rl__template_set *set) {
    free_index(set);
    if (set->count == 0) return true;
    size_t buckets = 16;
    while (buckets < set->count * 2) buckets *= 2;
    set->bucket_heads = malloc(buckets * sizeof *set->bucket_heads);
    set->next_in_bucket = malloc(set->count * sizeof *set->next_in_bucket);
    set->wild = malloc(set->count * sizeof *set->wild);
    if (set->bucket_heads == NULL || set->next_in_bucket == NULL || set->wild == NULL) {
        free_index(set);
        return false;
    }
    set->bucket_count = buckets;
    for (size_t b = 0; b < buckets; b++) set->bucket_heads[b] = NONE;
    for (size_t i = 0; i < set->count; i++) {
        const rl__template_pattern *p = &set->items[i]->pattern;
        if (p->head_len == 0) {
            set->wild[set->wild_count++] = (uint32_t)i;
            continue;
        }
        size_t b = hash_head(p->text, p->head_len) & (buckets - 1);
        set->next_in_bucket[i] = set->bucket_heads[b];
        set->bucket_heads[b] = (uint32_t)i;
    }
    return true;
}

/* Where pattern is, or would go; *found says which. */
static size_t position_of(const rl__template_set *set, const char *pattern, bool *found) {
    size_t lo = 0, hi = set->count;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->items[mid]->pattern.text, pattern);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

rl_status rl__template_set_put(rl__template_set *set, const rl_limit_def *def, uint64_t *out_version, char *err,
                               size_t err_size) {
    rl__template *made = malloc(sizeof *made);
    if (made == NULL) {
        snprintf(err, err_size, "out of memory");
        return RL_NO_MEMORY;
    }
    if (!rl__template_pattern_parse(def->key, strlen(def->key), &made->pattern, err, err_size)) {
        free(made);
        return RL_INVALID_REQUEST;
    }
    /* A template is checked as the definition it makes: the pattern is a
     * valid key, so every other rule applies as to a limit. */
    if (!rl_limit_def_validate(def, err, err_size)) {
        free(made);
        return RL_INVALID_REQUEST;
    }
    rl__limit_def_copy(&made->def, def);
    bool found;
    size_t at = position_of(set, made->pattern.text, &found);
    if (!found) {
        if (set->count == RL_TEMPLATE_MAX_COUNT) {
            free(made);
            snprintf(err, err_size, "there are %u templates already, the most there may be", RL_TEMPLATE_MAX_COUNT);
            return RL_INVALID_REQUEST;
        }
        if (set->count == set->capacity) {
            size_t capacity = set->capacity == 0 ? 8 : set->capacity * 2;
            rl__template **items = realloc(set->items, capacity * sizeof *items);
            if (items == NULL) {
                free(made);
                snprintf(err, err_size, "out of memory");
                return RL_NO_MEMORY;
            }
            set->items = items;
            set->capacity = capacity;
        }
        memmove(&set->items[at + 1], &set->items[at], (set->count - at) * sizeof *set->items);
        set->count++;
    } else {
        free(set->items[at]);
    }
    made->version = ++set->puts;
    set->items[at] = made;
    (void)build_index(set);
    if (out_version != NULL) *out_version = made->version;
    return RL_OK;
}

bool rl__template_set_delete(rl__template_set *set, const char *pattern) {
    bool found;
    size_t at = position_of(set, pattern, &found);
    if (!found) return false;
    free(set->items[at]);
    memmove(&set->items[at], &set->items[at + 1], (set->count - at - 1) * sizeof *set->items);
    set->count--;
    (void)build_index(set);
    return true;
}

const rl__template *rl__template_set_find(const rl__template_set *set, const char *pattern) {
    bool found;
    size_t at = position_of(set, pattern, &found);
    return found ? set->items[at] : NULL;
}

/* best, or candidate if it matches key and takes precedence. */
static const rl__template *better(const rl__template *best, const rl__template *candidate, const char *key,
                                 size_t key_len) {
    if (best != NULL && rl__template_pattern_precedence(&best->pattern, &candidate->pattern) < 0) return best;
    return rl__template_pattern_match(&candidate->pattern, key, key_len) ? candidate : best;
}

const rl__template *rl__template_set_match(const rl__template_set *set, const char *key, size_t key_len) {
    const rl__template *best = NULL;
    if (set->count == 0) return NULL;
    if (set->bucket_count == 0) { /* no index (it could not be built): every item */
        for (size_t i = 0; i < set->count; i++) best = better(best, set->items[i], key, key_len);
        return best;
    }
    const char *colon = memchr(key, ':', key_len);
    if (colon != NULL) {
        size_t head_len = (size_t)(colon - key);
        size_t b = hash_head(key, head_len) & (set->bucket_count - 1);
        for (uint32_t i = set->bucket_heads[b]; i != NONE; i = set->next_in_bucket[i])
            best = better(best, set->items[i], key, key_len);
    }
    for (size_t w = 0; w < set->wild_count; w++) best = better(best, set->items[set->wild[w]], key, key_len);
    return best;
}

size_t rl__template_set_count(const rl__template_set *set) { return set->count; }

const rl__template *rl__template_set_at(const rl__template_set *set, size_t i) { return set->items[i]; }

void rl__template_instance_def(const rl__template *template_, const char *key, rl_limit_def *out) {
    rl__limit_def_copy(out, &template_->def);
    snprintf(out->key, sizeof out->key, "%s", key);
}
