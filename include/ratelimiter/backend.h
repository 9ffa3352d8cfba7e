/* ratelimiter/backend.h — the pluggable store of limit state.
 *
 * A backend is a versioned vtable found by name (SQLite's VFS in spirit): the
 * HTTP server and the in-process limiter both drive one through the inline
 * wrappers below. Every operation is thread-safe unless said otherwise.
 *
 * Semantics every backend honours (docs/concepts.md):
 * all-or-nothing reserve; idempotent lease ids (a lease seen before returns its
 * first outcome and never reserves twice; a denied lease stays denied);
 * Complete is idempotent and answers OK for unknown or expired leases.
 */
#ifndef RATELIMITER_BACKEND_H
#define RATELIMITER_BACKEND_H

#include <string.h>

#include "ratelimiter/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_BACKEND_ABI_VERSION 10 /* 5: rl_reserve_result.denied_by; 6: audit_query; 7: rl_limit_usage.allotted; 8: optional requirements, dry runs, delete, templates; 9: stats, template_usage; 10: rl_backend_stats.audit* */

typedef struct rl_backend rl_backend;

/* What a backend counts of its own work, for the daemon's GET /metrics
 * (the stats op below). Each part is there when its flag is 1; a backend
 * that wraps another (the submitter, allotments) fills its part and asks
 * the inner one for the rest. Counters only grow. */
#define RL_BACKEND_STATS_SYNC_BUCKETS 12  /* rl_backend_stats_sync_bounds_us */
#define RL_BACKEND_STATS_BATCH_BUCKETS 10 /* rl_backend_stats_batch_bounds */
typedef struct rl_backend_stats {
    /* The memory backend's journal. */
    int journal;
    uint64_t journal_syncs;                                       /* fdatasyncs of the journal */
    uint64_t journal_sync_us[RL_BACKEND_STATS_SYNC_BUCKETS + 1];  /* how many took <= each bound; the last: above */
    uint64_t journal_sync_us_sum;                                 /* their time together */
    uint64_t journal_bytes;                                       /* bytes written to the journal */
    uint64_t journal_write_errors;                                /* flushes that failed (answers refused) */
    /* The memory backend's audit log, as start-up found it beside the
     * journal (fixed after open): whether the journal was not this log's
     * (none, new, another log's, or behind it by more than a crash leaves),
     * so that every entry was kept and the counters do not hold them all. */
    int audit;
    uint64_t audit_journal_mismatch;  /* 1, or 0 when they agree */
    uint64_t audit_entries_unmatched; /* entries kept that the journal's usage does not hold */
    /* The redis backend. */
    int redis;
    uint64_t redis_script_calls; /* EVALSHA calls sent (each a batch of leases, or an admin change) */
    uint64_t redis_errors;       /* calls answered by an error, a lost connection or a timeout */
    /* The submitter in front of it: batches of leases, one script call each. */
    int batches;
    uint64_t batch_count;
    uint64_t batch_leases;
    uint64_t batch_size[RL_BACKEND_STATS_BATCH_BUCKETS + 1]; /* how many batches had <= each bound; the last: above */
    /* Allotments (redis.h): what this daemon holds set aside now. */
    int allotments;
    uint64_t allotments_held;       /* limits it holds an allotment of */
    uint64_t allotment_amount_held; /* their amounts together, each in its limit's unit */
} rl_backend_stats;

/* What the limits made from one template hold together (the
 * template_usage op): one line per template, however many keys it made. */
typedef struct rl_template_usage {
    uint64_t limits; /* made from it and live now (read: see partial) */
    /* Summed over those limits, each as rl_limit_usage says. */
    uint64_t capacity, used, available, debt, reserved, committed;
    /* The backend stopped at its bound on limits read per template (redis:
     * they live in the store, read a page per script call): the figures
     * above are of the `limits` read, not of all. */
    bool partial;
} rl_template_usage;

/* The buckets' upper bounds: a sync's microseconds, a batch's leases. */
static const uint64_t rl_backend_stats_sync_bounds_us[RL_BACKEND_STATS_SYNC_BUCKETS] = {
    50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 250000, 1000000};
static const uint64_t rl_backend_stats_batch_bounds[RL_BACKEND_STATS_BATCH_BUCKETS] = {1,  2,  4,   8,   16,
                                                                                      32, 64, 128, 256, 1024};

/* The bucket of value under bounds[0..count): count when above them all. */
static inline unsigned rl_backend_stats_bucket(const uint64_t *bounds, unsigned count, uint64_t value) {
    unsigned i = 0;
    while (i < count && value > bounds[i]) i++;
    return i;
}

typedef struct rl_backend_ops {
    int abi_version; /* RL_BACKEND_ABI_VERSION */
    const char *name; /* "memory", "redis" */

    /* Creates or updates a limit. A capacity increase applies at once and
     * cancels a pending decrease; a decrease that current usage does not allow
     * yet puts the limit in RL_LIMIT_STATUS_DECREASING. *out_status is the state after
     * the call. The definition is copied. A change of kind while the limit
     * holds anything (after expiring what is due) is RL_LIMIT_IN_USE and
     * changes nothing: reservations of the old kind would go on by its rules. */
    rl_status (*apply_definition)(rl_backend *backend, const rl_limit_def *def,
                                  rl_limit_status *out_status);

    /* Decides count leases, each all-or-nothing, in order; results[i] belongs
     * to requests[i]. Requests must already be valid as
     * rl_reserve_request_check says (lease id, keys, amounts, no key twice):
     * backends trust their input and check it only in debug builds. A lease
     * id is the same lease in any case. A key the backend does not know
     * gives that lease allowed=false with RL_UNKNOWN_LIMIT_KEY and is not
     * remembered. */
    void (*reserve_batch)(rl_backend *backend, const rl_reserve_request *requests, size_t count,
                          rl_reserve_result *results);

    /* Completes count leases, valid as rl_complete_request_check says;
     * statuses[i] is RL_OK unless the backend failed. */
    void (*complete_batch)(rl_backend *backend, const rl_complete_request *requests, size_t count,
                           rl_status *statuses);

    /* Live usage of one limit: RL_OK, or RL_UNKNOWN_LIMIT_KEY. */
    rl_status (*limit_usage)(rl_backend *backend, const char *key, rl_limit_usage *out);

    /* Drops expired state now (a sweep also runs on its own when configured). */
    void (*sweep)(rl_backend *backend);

    /* Frees everything. No call may be in flight or follow. */
    void (*destroy)(rl_backend *backend);

    /* --- ABI 2: backends whose state lives elsewhere (redis) --- */

    /* RL_OK while the backend can serve; RL_BACKEND_ERROR when it cannot
     * (its store is unreachable, or refuses writes). detail, if not NULL,
     * gets detail_size bytes of why; with RL_OK a non-empty detail is a
     * warning: the backend serves, degraded (redis close to its maxmemory).
     * NULL: always healthy (memory). */
    rl_status (*health)(rl_backend *backend, char *detail, size_t detail_size);

    /* Every definition the backend holds, sorted by key, in one malloc'd array
     * the caller frees; for backends shared by many daemons, where the store,
     * not this process's registry, is the authority on which limits exist.
     * NULL: the registry is the authority (memory). */
    rl_status (*list_definitions)(rl_backend *backend, rl_limit_def **out, size_t *count);

    /* --- ABI 3, optional: answering without blocking the caller --- */

    /* reserve_batch that returns at once (before or after the answer): the
     * results are written, then done(context) is called exactly once, from
     * any thread (typically the backend's own flusher thread; the caller's
     * own thread, before this returns, is allowed too). requests and results
     * belong to the caller and must stay valid and untouched until done is
     * called; the backend touches neither after done. done must not call
     * back into the backend's blocking ops and should be quick (it delays
     * the answers of everyone batched with the caller). Every call started
     * before destroy is answered before destroy returns.
     * NULL: the backend can only answer synchronously (memory). */
    void (*reserve_batch_async)(rl_backend *backend, const rl_reserve_request *requests, size_t count,
                                rl_reserve_result *results, void (*done)(void *context), void *context);

    /* complete_batch in the same way as reserve_batch_async. NULL: cannot. */
    void (*complete_batch_async)(rl_backend *backend, const rl_complete_request *requests, size_t count,
                                 rl_status *statuses, void (*done)(void *context), void *context);

    /* --- ABI 4, optional, beside list_definitions: one definition, and how
     * many, without listing them all (an admin GET of one limit, /healthz) --- */

    /* The definition of key into *out: RL_OK, RL_UNKNOWN_LIMIT_KEY, or
     * RL_BACKEND_ERROR. NULL: look it up in list_definitions. */
    rl_status (*get_definition)(rl_backend *backend, const char *key, rl_limit_def *out);

    /* How many definitions the backend holds. NULL: count list_definitions. */
    rl_status (*count_definitions)(rl_backend *backend, size_t *count);

    /* --- ABI 6, optional: the audit log of spend (types.h) --- */

    /* Fills page->entries (query->limit of them, the caller's) with key's
     * entries since query->since_unix_ms, oldest first. RL_OK (also for a
     * key with none, or a backend keeping no log: count 0),
     * RL_BACKEND_ERROR or RL_IO_ERROR. Thread-safe, concurrent with
     * everything. NULL: the backend keeps no audit log. */
    rl_status (*audit_query)(rl_backend *backend, const rl_audit_query *query, rl_audit_page *page);

    /* --- ABI 8, optional: deleting a limit --- */

    /* Deletes the limit of key with all its state. Its open reservations
     * and holds are dropped: nothing charged or refunded, no audit entry. A
     * lease that held some keeps its other entries, and its Complete still
     * works for its other keys (the deleted one is skipped); a retried
     * lease id still gets its first outcome; a reserve naming the key is
     * answered RL_UNKNOWN_LIMIT_KEY until the key is defined again, as a
     * new limit that starts empty. Done (durable, as apply_definition)
     * when it returns. RL_OK; RL_UNKNOWN_LIMIT_KEY (no such limit: nothing
     * changes); RL_BACKEND_ERROR (the store cannot be reached; the delete
     * may or may not have been applied, as a reserve's 503), RL_NO_MEMORY
     * or RL_IO_ERROR (a journal that could not take it). NULL: the backend
     * cannot delete. */
    rl_status (*delete_definition)(rl_backend *backend, const char *key);

    /* Beside list_definitions (a store many daemons share): defines def only
     * if the store holds no limit of its key and has not deleted it, for a
     * daemon putting back at start what its registry file holds; a key
     * deleted through any daemon so stays deleted. RL_OK (defined, or left
     * as the store holds it), RL_UNKNOWN_LIMIT_KEY (the store deleted it:
     * left deleted), or apply_definition's failures. NULL: apply_definition
     * does it (the backend keeps no trace of deletions). */
    rl_status (*restore_definition)(rl_backend *backend, const rl_limit_def *def);

    /* --- ABI 8, optional: limit templates (api.md "Templates") --- */

    /* Puts def as the template of its pattern (def->key: a pattern as
     * core/template_pattern.h says; the rest valid as for a limit),
     * replacing the template of that pattern. From then on a key that no
     * limit defines and that the template matches (the most specific
     * template of those that match) names a limit made from it: its
     * definition with the key in place of the pattern, made when a
     * reserve, a Complete or a usage read names the key, and forgotten
     * once it holds nothing (every reservation expired, completed or
     * refunded, a budget's period charges over), to be made again when
     * named. A limit of the key defined by apply_definition is the key's
     * own and never made from a template; deleting it (delete_definition)
     * leaves the key to the templates again. The limits already made from
     * the pattern take the new definition as apply_definition would: a
     * change of kind while one of them holds anything is RL_LIMIT_IN_USE
     * and changes nothing. Done (durable, as apply_definition) when it
     * returns. RL_OK; RL_INVALID_REQUEST (not a pattern, or more than
     * RL_TEMPLATE_MAX_COUNT templates); RL_LIMIT_IN_USE; RL_NO_MEMORY,
     * RL_IO_ERROR, RL_BACKEND_ERROR. NULL: no templates. */
    rl_status (*put_template)(rl_backend *backend, const rl_limit_def *def);

    /* Removes the template of pattern: the limits made from it are deleted
     * as delete_definition deletes (what they hold is dropped), and none is
     * made from it any more (another template may match their keys). RL_OK;
     * RL_UNKNOWN_LIMIT_KEY (no such template: nothing changes);
     * RL_BACKEND_ERROR, RL_NO_MEMORY, RL_IO_ERROR. */
    rl_status (*delete_template)(rl_backend *backend, const char *pattern);

    /* Beside list_definitions (a store many daemons share, the authority
     * on templates too): every template, sorted by pattern, in one malloc'd
     * array the caller frees. NULL: the registry is the authority. */
    rl_status (*list_templates)(rl_backend *backend, rl_limit_def **out, size_t *count);

    /* --- optional, appended after ABI 8: counters for monitoring --- */

    /* Adds what the backend counts into *out (zeroed by the caller), its
     * flags set. Any thread, at any time; must not block (no store round
     * trip: counters it keeps as it goes). NULL: counts nothing. */
    void (*stats)(rl_backend *backend, rl_backend_stats *out);

    /* Adds up, for each pattern of patterns[0..count), the usage of the
     * limits made from that template into out[i] (zeroed by the caller).
     * The backend's limits are walked a bounded part at a time, others'
     * calls going on between parts: a monitor's reading, not a snapshot of
     * one instant. Any thread; RL_OK, RL_NO_MEMORY, RL_BACKEND_ERROR (a
     * store that did not answer). NULL: the backend cannot add them up. */
    rl_status (*template_usage)(rl_backend *backend, const char *const *patterns, size_t count,
                                rl_template_usage *out);
} rl_backend_ops;

struct rl_backend {
    const rl_backend_ops *ops;
};

static inline rl_status rl_backend_apply_definition(rl_backend *b, const rl_limit_def *def,
                                                    rl_limit_status *out_status) {
    return b->ops->apply_definition(b, def, out_status);
}
static inline void rl_backend_reserve_batch(rl_backend *b, const rl_reserve_request *requests,
                                            size_t count, rl_reserve_result *results) {
    b->ops->reserve_batch(b, requests, count, results);
}
static inline void rl_backend_reserve(rl_backend *b, const rl_reserve_request *request,
                                      rl_reserve_result *result) {
    b->ops->reserve_batch(b, request, 1, result);
}
static inline void rl_backend_complete_batch(rl_backend *b, const rl_complete_request *requests,
                                             size_t count, rl_status *statuses) {
    b->ops->complete_batch(b, requests, count, statuses);
}
static inline rl_status rl_backend_complete(rl_backend *b, const rl_complete_request *request) {
    rl_status status;
    b->ops->complete_batch(b, request, 1, &status);
    return status;
}
static inline rl_status rl_backend_limit_usage(rl_backend *b, const char *key, rl_limit_usage *out) {
    return b->ops->limit_usage(b, key, out);
}
static inline void rl_backend_sweep(rl_backend *b) { b->ops->sweep(b); }
static inline void rl_backend_destroy(rl_backend *b) {
    if (b != NULL) b->ops->destroy(b);
}
/* True when reserve_batch_async / complete_batch_async may be called. */
static inline int rl_backend_has_async(const rl_backend *b) {
    return b->ops->reserve_batch_async != NULL && b->ops->complete_batch_async != NULL;
}
static inline rl_status rl_backend_health(rl_backend *b, char *detail, size_t detail_size) {
    if (detail != NULL && detail_size > 0) detail[0] = '\0';
    return b->ops->health != NULL ? b->ops->health(b, detail, detail_size) : RL_OK;
}
/* The async ops, or for a backend without them the synchronous op and then
 * done(context), before this returns. */
static inline void rl_backend_reserve_batch_async(rl_backend *b, const rl_reserve_request *requests, size_t count,
                                                  rl_reserve_result *results, void (*done)(void *context),
                                                  void *context) {
    if (b->ops->reserve_batch_async != NULL) {
        b->ops->reserve_batch_async(b, requests, count, results, done, context);
        return;
    }
    b->ops->reserve_batch(b, requests, count, results);
    done(context);
}
static inline void rl_backend_complete_batch_async(rl_backend *b, const rl_complete_request *requests, size_t count,
                                                   rl_status *statuses, void (*done)(void *context), void *context) {
    if (b->ops->complete_batch_async != NULL) {
        b->ops->complete_batch_async(b, requests, count, statuses, done, context);
        return;
    }
    b->ops->complete_batch(b, requests, count, statuses);
    done(context);
}
/* True when the store, not the registry, is the authority on which limits
 * exist (list_definitions is set: a backend many daemons share). */
static inline int rl_backend_is_shared(const rl_backend *b) { return b->ops->list_definitions != NULL; }
/* The optional definition ops; RL_INVALID_REQUEST (nothing written) from a
 * backend without the op: check with rl_backend_is_shared, and for
 * get/count fall back on listing where ops->get_definition or
 * ops->count_definitions is NULL. */
static inline rl_status rl_backend_list_definitions(rl_backend *b, rl_limit_def **out, size_t *count) {
    if (b->ops->list_definitions == NULL) return RL_INVALID_REQUEST;
    return b->ops->list_definitions(b, out, count);
}
static inline rl_status rl_backend_get_definition(rl_backend *b, const char *key, rl_limit_def *out) {
    if (b->ops->get_definition == NULL) return RL_INVALID_REQUEST;
    return b->ops->get_definition(b, key, out);
}
static inline rl_status rl_backend_count_definitions(rl_backend *b, size_t *count) {
    if (b->ops->count_definitions == NULL) return RL_INVALID_REQUEST;
    return b->ops->count_definitions(b, count);
}

/* The ABI 8 ops: delete_definition, RL_INVALID_REQUEST (nothing changes)
 * from a backend without it; restore_definition, apply_definition's put
 * from a backend without it. */
static inline rl_status rl_backend_delete_definition(rl_backend *b, const char *key) {
    if (b->ops->delete_definition == NULL) return RL_INVALID_REQUEST;
    return b->ops->delete_definition(b, key);
}
static inline rl_status rl_backend_restore_definition(rl_backend *b, const rl_limit_def *def) {
    if (b->ops->restore_definition == NULL) {
        rl_limit_status ignored;
        return b->ops->apply_definition(b, def, &ignored);
    }
    return b->ops->restore_definition(b, def);
}

/* The template ops: RL_INVALID_REQUEST (nothing changes) from a backend
 * without them. */
static inline rl_status rl_backend_put_template(rl_backend *b, const rl_limit_def *def) {
    if (b->ops->put_template == NULL) return RL_INVALID_REQUEST;
    return b->ops->put_template(b, def);
}
static inline rl_status rl_backend_delete_template(rl_backend *b, const char *pattern) {
    if (b->ops->delete_template == NULL) return RL_INVALID_REQUEST;
    return b->ops->delete_template(b, pattern);
}
static inline rl_status rl_backend_list_templates(rl_backend *b, rl_limit_def **out, size_t *count) {
    if (b->ops->list_templates == NULL) return RL_INVALID_REQUEST;
    return b->ops->list_templates(b, out, count);
}

/* The backend's counters (all 0, no flag set, from a backend without them). */
static inline void rl_backend_stats_get(rl_backend *b, rl_backend_stats *out) {
    memset(out, 0, sizeof *out);
    if (b->ops->stats != NULL) b->ops->stats(b, out);
}

/* The template_usage op; RL_INVALID_REQUEST (nothing written) from a
 * backend without it. */
static inline rl_status rl_backend_template_usage(rl_backend *b, const char *const *patterns, size_t count,
                                                  rl_template_usage *out) {
    if (b->ops->template_usage == NULL) return RL_INVALID_REQUEST;
    return b->ops->template_usage(b, patterns, count, out);
}

/* The audit op, or for a backend without it an empty page (next since =
 * since). */
static inline rl_status rl_backend_audit_query(rl_backend *b, const rl_audit_query *query, rl_audit_page *page) {
    page->count = 0;
    page->next_since_unix_ms = query->since_unix_ms;
    if (b->ops->audit_query == NULL) return RL_OK;
    return b->ops->audit_query(b, query, page);
}

#ifdef __cplusplus
}
#endif
#endif
