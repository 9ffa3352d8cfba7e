/* ratelimiter/types.h — limit definitions, requirements and results.
 *
 * Plain value types, no allocation: strings in requests are borrowed from the
 * caller for the duration of a call; definitions hold their strings inline so
 * that they can be copied with '=' (every size is bounded, so that no input can exhaust memory).
 */
#ifndef RATELIMITER_TYPES_H
#define RATELIMITER_TYPES_H

#include "ratelimiter/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RL_KEY_MAX_LEN 256            /* bytes, printable ASCII without spaces */
#define RL_UNIT_MAX_LEN 64            /* bytes of UTF-8 */
#define RL_DESCRIPTION_MAX_LEN 1024   /* bytes of UTF-8 */
#define RL_ULID_LEN 26                /* Crockford base32 characters */
#define RL_JOB_ID_MAX_LEN 128         /* job_id is free-form, for logs only */
#define RL_MAX_REQUIREMENTS 32        /* per lease */
#define RL_AMOUNT_MAX (UINT64_C(1) << 53) /* largest integer a JSON double holds exactly */
/* Where every counter of rl_limit_usage and rl_template_usage stops: one
 * that would pass it reads RL_COUNTER_MAX ("this or more") and never wraps
 * (docs/api.md "Counters"). */
#define RL_COUNTER_MAX RL_AMOUNT_MAX
#define RL_WINDOW_SECONDS_MAX (366u * 24u * 3600u) /* a year: budgets longer than that are not rate limits */
#define RL_TIMEOUT_SECONDS_MAX (7u * 24u * 3600u)
#define RL_DECREASING_RETRY_AFTER_MS 10000u /* overview "Example 4" */

typedef enum rl_kind {
    RL_KIND_ROLLING = 0,     /* amount held for window_seconds, then restored */
    RL_KIND_CONCURRENCY = 1, /* held until Complete, or timeout_seconds */
    /* Spend over a calendar period: a reserve holds its amount until
     * Complete charges the actual to the period it was made in (or
     * timeout_seconds refunds it in full); the period's charges are 0
     * again at its end. */
    RL_KIND_BUDGET = 2,
} rl_kind;

/* A budget's calendar period, from local 00:00 of its time zone. */
typedef enum rl_period {
    RL_PERIOD_NONE = 0, /* not a budget */
    RL_PERIOD_HOUR,
    RL_PERIOD_DAY,
    RL_PERIOD_WEEK,  /* from Monday */
    RL_PERIOD_MONTH, /* from the 1st */
} rl_period;

#define RL_TIMEZONE_MAX_LEN 63 /* an IANA name, "America/Argentina/ComodRivadavia" */

typedef enum rl_overage {
    RL_OVERAGE_DEBT = 0, /* actual > reserved: charge it all, record the part above capacity as debt */
    RL_OVERAGE_DENY = 1, /* actual > reserved: charge only what fits, count the rest */
} rl_overage;

typedef enum rl_limit_status {
    RL_LIMIT_STATUS_ACTIVE = 0,
    RL_LIMIT_STATUS_DECREASING = 1,
} rl_limit_status;

/* An admin-defined limit (docs/api.md PUT /v1/admin/limits). */
typedef struct rl_limit_def {
    char key[RL_KEY_MAX_LEN + 1];
    rl_kind kind;
    uint64_t capacity;        /* 1..RL_AMOUNT_MAX */
    uint32_t window_seconds;  /* > 0 for rolling, 0 otherwise */
    uint32_t timeout_seconds; /* > 0 for concurrency and budgets (1..RL_TIMEOUT_SECONDS_MAX), 0 for rolling */
    char unit[RL_UNIT_MAX_LEN + 1];
    char description[RL_DESCRIPTION_MAX_LEN + 1];
    rl_overage overage;
    rl_period period;                        /* budgets only; RL_PERIOD_NONE otherwise */
    char timezone[RL_TIMEZONE_MAX_LEN + 1];  /* budgets only ("UTC" by default); "" otherwise */
} rl_limit_def;

typedef struct rl_requirement {
    const char *key; /* NUL-terminated, borrowed */
    uint64_t amount; /* 1..RL_AMOUNT_MAX */
    /* Skipped (not reserved, not an error) when key has no definition; a
     * defined key is reserved as any other, and can deny the lease. A
     * lease whose requirements are all skipped is allowed holding nothing. */
    bool optional;
} rl_requirement;

typedef struct rl_actual {
    const char *key;        /* NUL-terminated, borrowed */
    uint64_t actual_amount; /* 0..RL_AMOUNT_MAX: 0 means the call used nothing */
} rl_actual;

typedef struct rl_reserve_request {
    const char *lease_id; /* a valid ULID (rl_ulid_is_valid), borrowed */
    const char *job_id;   /* optional (NULL), logs only */
    const rl_requirement *requirements;
    size_t requirement_count; /* 1..RL_MAX_REQUIREMENTS, no key twice */
    /* The answer a reserve would give now, denied_by included, changing
     * nothing: no capacity held, no lease id remembered (a later reserve
     * with the same id is new), nothing journaled or audited. A lease id
     * already remembered answers its first outcome, as a reserve would. */
    bool dry_run;
} rl_reserve_request;

typedef struct rl_complete_request {
    const char *lease_id;
    const char *job_id;
    const rl_actual *actuals; /* may be empty: concurrency is released anyway */
    size_t actual_count;      /* 0..RL_MAX_REQUIREMENTS */
} rl_complete_request;

/* Why a lease was denied (rl_denial.reason). */
typedef enum rl_denial_reason {
    RL_DENIAL_NONE = 0,          /* not denied, or not for want of capacity (an error) */
    RL_DENIAL_CAPACITY,          /* "capacity": not enough free now; retry_after_ms says when */
    RL_DENIAL_DECREASING,        /* "decreasing": the limit is shrinking to a capacity below its use */
    RL_DENIAL_EXCEEDS_CAPACITY,  /* "exceeds_capacity": more than the whole capacity: never fits */
} rl_denial_reason;

/* Which limit refused a lease, and by how much. Set on every result with
 * allowed=false and status RL_OK, RL_LIMIT_DECREASING or
 * RL_EXCEEDS_CAPACITY; key is NULL otherwise (allowed, unknown key, lease id
 * conflict, errors). When several limits fail it names the one the caller
 * waits for: the key of the status when the status names one, else the
 * full limit whose room comes back last. */
typedef struct rl_denial {
    const char *key; /* as status_key: same lifetime */
    rl_denial_reason reason;
    uint64_t requested; /* the lease's amount on key */
    uint64_t available; /* key's free capacity when it was decided: capacity minus use, at least 0 */
    uint64_t capacity;  /* key's capacity then; for "decreasing", the capacity it is decreasing to */
    uint64_t period_end_unix_ms; /* a budget's: when its period ends (room comes back then at the latest); else 0 */
} rl_denial;

typedef struct rl_reserve_result {
    bool allowed;
    uint64_t retry_after_ms;      /* 0 when allowed or when retrying cannot help */
    uint64_t reserved_at_unix_ms; /* wall clock; set only when allowed */
    rl_status status;             /* RL_OK for a plain allow or deny; RL_LEASE_ID_CONFLICT
                                     for a remembered lease id reused with other requirements */
    /* The key named by status (unknown_limit_key, limit_decreasing,
     * exceeds_capacity), or NULL. Points into the backend's own state or the
     * request, valid until the next call on the same backend from this thread
     * returns; encode it before then. */
    const char *status_key;
    rl_denial denied_by; /* why it was denied (key NULL: see rl_denial) */
} rl_reserve_result;

/* Live accounting of one limit, for the admin API: why is it denying? */
typedef struct rl_limit_usage {
    rl_limit_status status;
    uint64_t capacity;            /* the capacity enforced now */
    uint64_t pending_decrease_to; /* 0 unless status is RL_LIMIT_STATUS_DECREASING */
    uint64_t used;                /* held by live reservations/holds, may exceed capacity by debt */
    uint64_t available;           /* capacity - used, or 0 */
    uint64_t active;              /* live reservations (rolling) or holds (concurrency) */
    uint64_t debt;                /* used above capacity now (overage: debt) */
    uint64_t debt_total;          /* all overage ever charged above capacity */
    uint64_t overage_denied_total;/* overage not charged (overage: deny) */
    /* Budgets only (0 otherwise): the period counted now, the actuals
     * charged in it, and what open reservations of it hold; used is
     * committed + reserved. */
    uint64_t period_start_unix_ms, period_end_unix_ms;
    uint64_t committed;
    uint64_t reserved;
    /* The redis backend with allotments (redis.h): of available, what
     * daemons hold set aside for their local decisions (as each last told
     * Redis): room for leases that reach those daemons. 0 otherwise. */
    uint64_t allotted;
} rl_limit_usage;

/* ---- the audit log of spend (api.md "Audit") ----
 *
 * The billing truth: for every Complete, one entry per rolling or budget key
 * it charged (a concurrency hold spends nothing), and for every budget
 * reservation refunded by its timeout one entry with expired = true and
 * actual 0. A backend writes an entry if and only if it charged the spend.
 * Entries come back in time order, kept audit_retention_days. */
#define RL_AUDIT_QUERY_MAX 1000u               /* entries in one answer */
#define RL_AUDIT_DEFAULT_RETENTION_DAYS 62u
#define RL_AUDIT_MAX_RETENTION_DAYS 3660u

typedef struct rl_audit_entry {
    uint64_t at_unix_ms;                  /* when it was charged (or refunded) */
    char lease_id[RL_ULID_LEN + 1];       /* upper case */
    char job_id[RL_JOB_ID_MAX_LEN + 1];   /* the reserve request's, "" if none */
    char key[RL_KEY_MAX_LEN + 1];
    uint64_t reserved;                    /* what the lease held on key */
    uint64_t actual;                      /* what was charged: 0 when expired */
    uint64_t period_start_unix_ms;        /* a budget's period it was charged to; 0 for rolling */
    bool expired;                         /* refunded in full by timeout */
} rl_audit_entry;

/* Entries of key with at_unix_ms >= since_unix_ms, oldest first, at most
 * limit (1..RL_AUDIT_QUERY_MAX). */
typedef struct rl_audit_query {
    const char *key;
    uint64_t since_unix_ms;
    uint32_t limit;
} rl_audit_query;

/* An answer: entries[0..count) and where the next page starts
 * (since_unix_ms of the next query; equal to the query's when nothing newer
 * was found: ask again later). */
typedef struct rl_audit_page {
    rl_audit_entry *entries; /* the caller's array of query.limit entries */
    size_t count;
    uint64_t next_since_unix_ms;
} rl_audit_page;

/* Checks a definition against api.md: key, kind, capacity 1..2^53, window
 * only and > 0 for rolling, timeout only and > 0 for concurrency and
 * budgets, a period and a time zone tzdata knows for budgets only, overage.
 * Thread-safe; changes nothing (a budget's zone is read from tzdata). Returns true if valid; otherwise false with a human sentence in err. */
RL_API bool rl_limit_def_validate(const rl_limit_def *def, char *err, size_t err_size);

RL_API const char *rl_kind_name(rl_kind kind);             /* "rolling" | "concurrency" | "budget" */
RL_API const char *rl_period_name(rl_period period);       /* "hour" | "day" | "week" | "month" ("" for none) */
RL_API const char *rl_overage_name(rl_overage overage);    /* "debt" | "deny" */
RL_API const char *rl_limit_status_name(rl_limit_status);  /* "active" | "decreasing" */

/* "capacity" | "decreasing" | "exceeds_capacity" ("" for RL_DENIAL_NONE): denied_by.reason on the wire. */
RL_API const char *rl_denial_reason_name(rl_denial_reason reason);

/* Parses the names above; false if name is none of them. */
RL_API bool rl_denial_reason_parse(const char *name, rl_denial_reason *out);
RL_API bool rl_kind_parse(const char *name, rl_kind *out);
RL_API bool rl_period_parse(const char *name, rl_period *out);
RL_API bool rl_overage_parse(const char *name, rl_overage *out);

#ifdef __cplusplus
}
#endif
#endif
