/* wire/wire.h — the JSON of docs/api.md: request decoders, response encoders.
 *
 * Decoders take a body that need not be NUL-terminated, validate everything
 * the rules ask (the lease rules of core/lease_rules.h: ULID lease ids in
 * any case, keys, integer amounts 1..2^53, counts, no key twice in one
 * lease; and valid UTF-8, no field twice, nothing after the value) and on failure return RL_INVALID_REQUEST with a human sentence in
 * `detail`. Unknown fields are ignored. A decoded message owns its memory
 * (the strings its requests point to): free it with its _free function.
 *
 * Every decoder (requests, limit definitions, the registry file) parses
 * with a strict single-pass scanner (json_scan.h), not cJSON: RFC 8259
 * exactly (no leading zeros, "1.", NaN, comments, trailing commas;
 * whitespace is space, tab, LF and CR only, and raw control characters are
 * refused in strings too), valid UTF-8, \u escapes with surrogate pairs,
 * "\u0000" refused, objects and arrays at most 64 deep (unknown fields
 * included). A message is one allocation: the body is copied into it once
 * and its strings are decoded in place there.
 *
 * Amounts, and every integer of a limit definition, are read exactly,
 * without floating point: any number whose exact value is an integer in
 * range is accepted, however written (1800, 1800.0, 1.8e3, 180000e-2; "-0"
 * is 0, a valid actual_amount), and anything else is refused (1.5, 1e-1,
 * 9007199254740993 = 2^53 + 1). So a client that holds token counts in
 * floats (JavaScript, Python's 1800.0) is served, and no value is ever
 * rounded into range. When a request has several problems, `detail` names
 * the first in a fixed order whatever the body's member order: a syntax
 * error anywhere in the body, then a known field twice, lease_id, job_id,
 * the list, then the first bad list element (its key, amount, optional, a
 * repeated key), then dry_run. optional and dry_run are true or false.
 *
 * Encoders append to an rl_buf the exact shapes of api.md. All functions are
 * reentrant; a message is owned by one thread at a time.
 */
#ifndef RL_WIRE_H
#define RL_WIRE_H

#include "ratelimiter/types.h"
#include "wire/buf.h"

#define RL_WIRE_DETAIL_SIZE 200
#define RL_WIRE_DEFAULT_MAX_BATCH 256u

/* One or many reserve requests. For a batch, an item that is itself invalid
 * does not fail the payload: item_status[i] is RL_INVALID_REQUEST (see
 * rl__wire_reserves_item_detail), requests[i] is zeroed and must not be
 * passed to a backend. */
typedef struct rl_wire_reserves {
    rl_reserve_request *requests;
    rl_status *item_status;
    size_t count;
    void *storage_; /* private: the one block (arrays, decoded body text) */
} rl_wire_reserves;

typedef struct rl_wire_completes {
    rl_complete_request *requests;
    rl_status *item_status;
    size_t count;
    void *storage_;
} rl_wire_completes;

/* POST /v1/reserve: exactly one request (count 1, item_status[0] RL_OK). */
rl_status rl__wire_decode_reserve(const char *body, size_t len, rl_wire_reserves *out,
                                  char detail[RL_WIRE_DETAIL_SIZE]);
/* POST /v1/reserve/batch: {"requests":[...]} with 1..max_batch items. */
rl_status rl__wire_decode_reserve_batch(const char *body, size_t len, size_t max_batch,
                                        rl_wire_reserves *out, char detail[RL_WIRE_DETAIL_SIZE]);
void rl__wire_reserves_free(rl_wire_reserves *msg);

/* Why batch item index was refused (item_status[index] RL_INVALID_REQUEST),
 * in the same kind of sentence as the call's detail: "requests[3].
 * requirements[1].amount must be ...". Lives as long as the message; "" for a
 * valid item or an index out of range. */
const char *rl__wire_reserves_item_detail(const rl_wire_reserves *msg, size_t index);

rl_status rl__wire_decode_complete(const char *body, size_t len, rl_wire_completes *out,
                                   char detail[RL_WIRE_DETAIL_SIZE]);
rl_status rl__wire_decode_complete_batch(const char *body, size_t len, size_t max_batch,
                                         rl_wire_completes *out, char detail[RL_WIRE_DETAIL_SIZE]);
void rl__wire_completes_free(rl_wire_completes *msg);
const char *rl__wire_completes_item_detail(const rl_wire_completes *msg, size_t index);

/* PUT /v1/admin/limits body (and the JSON the redis backend keeps of each
 * limit): one definition, defaults applied (overage debt, unit and
 * description empty, the unused of window/timeout 0), validated. Read with
 * the same scanner and the same exact integers as the lease decoders:
 * capacity 1..2^53, window_seconds and timeout_seconds in range, however
 * written (60, 60.0, 6e1), never rounded. *out changes only on RL_OK. */
rl_status rl__wire_decode_limit_def(const char *body, size_t len, rl_limit_def *out,
                                    char detail[RL_WIRE_DETAIL_SIZE]);

/* PUT /v1/admin/templates body: a definition whose key is its "pattern"
 * (core/template_pattern.h), otherwise read and validated as
 * rl__wire_decode_limit_def reads a limit. out->key is the pattern. */
rl_status rl__wire_decode_template_def(const char *body, size_t len, rl_limit_def *out,
                                       char detail[RL_WIRE_DETAIL_SIZE]);

/* Why a reserve got lease_id_conflict (a JSON string's contents). */
#define RL_WIRE_LEASE_ID_CONFLICT_DETAIL                                                                  \
    "this lease id was reserved before with other requirements (keys or amounts): a retry must send the " \
    "same request; a new request needs a new lease id"

/* {"allowed":..,"retry_after_ms":..,"reserved_at_unix_ms":..,"error":".."},
 * and for lease_id_conflict and unknown_limit_key a "detail" after "error"; a denial with
 * denied_by.key set then carries "denied_by":{"key","reason","requested",
 * "available","capacity"} (and a budget's "period_end_unix_ms"); the
 * answer to a dry run (dry_run) ends with "dry_run":true. */
void rl__wire_encode_reserve_result(rl_buf *buf, const rl_reserve_result *result, bool dry_run);
/* "denied_by":{"key","reason","requested","available","capacity"[,
 * "period_end_unix_ms"]}: a denial's member (the caller writes the comma
 * before it); key is the limit's (d->key is not read). */
void rl__wire_encode_denied_by(rl_buf *buf, const char *key, const rl_denial *d);
/* {"ok":true,"error":""} or {"ok":false,"error":"<status>"} */
void rl__wire_encode_complete_result(rl_buf *buf, rl_status status);
/* The error string of a status: "", "invalid_request", "<name>:<key>". */
void rl__wire_encode_error_string(rl_buf *buf, rl_status status, const char *status_key);
/* A LimitDefinition object: every field of api.md, in its order. */
void rl__wire_encode_limit_def(rl_buf *buf, const rl_limit_def *def);
/* A template: a LimitDefinition object whose first member is "pattern"
 * (def->key) instead of "key". */
void rl__wire_encode_template_def(rl_buf *buf, const rl_limit_def *def);
/* A LimitInfo object: {"definition":..,"status":..,"pending_decrease_to":..,
 * "usage":{"capacity","used","available","active","debt","debt_total",
 * "overage_denied_total"}}. */
void rl__wire_encode_limit_info(rl_buf *buf, const rl_limit_def *def, const rl_limit_usage *usage);

/* Where a limit's definition comes from, when it is not the operator's own
 * PUT: a LimitInfo then ends with "template":"<pattern>" (made from that
 * template) or "preset":"<name>" (defined by that provider preset). NULL or
 * "" members are left out, so an explicit limit's LimitInfo is as it was. */
typedef struct rl_wire_limit_source {
    const char *template_pattern;
    const char *preset;
} rl_wire_limit_source;

/* rl__wire_encode_limit_info, then source's members (source may be NULL). */
void rl__wire_encode_limit_info_from(rl_buf *buf, const rl_limit_def *def, const rl_limit_usage *usage,
                                     const rl_wire_limit_source *source);

/* ==== Client side: request encoders, response decoders ====================
 * (the http limiter speaks the same JSON from the other end.)
 *
 * The encoders write the request shapes of api.md; they do not validate
 * (check with rl_reserve_request_check first). The decoders read the
 * responses the daemon writes, leniently where api.md's examples differ
 * from the contract ("unknown_limit_key: k" with a space is read like
 * "unknown_limit_key:k") and strictly everywhere else: a body that is not
 * exactly the expected shape (truncated, not JSON, wrong count of results)
 * fails with RL_INVALID_REQUEST, which the client treats as a transport
 * failure. They decode in place: body must be writable with a NUL at
 * body[len] (an rl_buf's data is), and status_key points into it.
 */

/* {"lease_id":..,"job_id":..,"requirements":[{"key":..,"amount":..}]};
 * job_id is left out when NULL, "optional":true written only on an
 * optional requirement, "dry_run":true last only for a dry run. */
void rl__wire_encode_reserve_request(rl_buf *buf, const rl_reserve_request *request);
/* {"requests":[<request>,...]} for requests[0..count). */
void rl__wire_encode_reserve_batch_request(rl_buf *buf, const rl_reserve_request *requests,
                                           size_t count);
/* {"lease_id":..,"job_id":..,"actuals":[{"key":..,"actual_amount":..}]} */
void rl__wire_encode_complete_request(rl_buf *buf, const rl_complete_request *request);
void rl__wire_encode_complete_batch_request(rl_buf *buf, const rl_complete_request *requests,
                                            size_t count);

/* One reserve result as the daemon wrote it. status_key points into the
 * decoded body (NUL-terminated) or is NULL; the caller maps it to its own
 * request's key before the body goes away. */
typedef struct rl_wire_reserve_answer {
    bool allowed;
    uint64_t retry_after_ms;
    uint64_t reserved_at_unix_ms;
    rl_status status;
    const char *status_key;
    rl_denial denied_by; /* key NULL when absent; key points into the body */
    bool dry_run;        /* the answer says it was a dry run ("dry_run":true) */
} rl_wire_reserve_answer;

/* The error string of a result: "" -> RL_OK, "invalid_request",
 * "backend_error", "<name>:<key>" for the statuses that name a key (the key
 * may be missing: *key NULL; present, it must be a valid key). Returns false
 * for any other string. *key points into text. */
bool rl__wire_parse_error_string(const char *text, rl_status *status, const char **key);

/* The body of POST /v1/reserve (200, or the 404 of an unknown key). */
rl_status rl__wire_decode_reserve_answer(char *body, size_t len, rl_wire_reserve_answer *out);
/* {"results":[..]} of POST /v1/reserve/batch with exactly count results. */
rl_status rl__wire_decode_reserve_batch_answer(char *body, size_t len, rl_wire_reserve_answer *out,
                                               size_t count);
/* {"ok":..,"error":..} of POST /v1/complete: *status is RL_OK for ok:true,
 * else the error string's status. */
rl_status rl__wire_decode_complete_answer(char *body, size_t len, rl_status *status);
/* {"results":[{"ok":..,"error":..},..]} with exactly count results. */
rl_status rl__wire_decode_complete_batch_answer(char *body, size_t len, rl_status *statuses,
                                                size_t count);

/* ==== The audit log of spend (GET /v1/admin/audit, api.md "Audit") ======
 * Both ends: the daemon encodes a page (encode_audit.c), the http limiter
 * asks with the path and reads the answer (decode_audit.c). */

/* {"entries":[<entry>,..],"next_since_unix_ms":..} of page->entries[0..
 * count), each entry {"at_unix_ms","lease_id","job_id","key","reserved",
 * "actual","period_start_unix_ms","expired"} in that order. */
void rl__wire_encode_audit_page(rl_buf *buf, const rl_audit_page *page);

/* The request's path and query: "/v1/admin/audit?key=<key, percent-
 * encoded>&since_unix_ms=<T>&limit=<N>". Does not validate (check the
 * query first). */
void rl__wire_encode_audit_path(rl_buf *buf, const rl_audit_query *query);

/* The 200 answer to query (already checked: a valid key, a limit 1..
 * RL_AUDIT_QUERY_MAX) into page->entries (query->limit of them), count and
 * next_since_unix_ms. Strict: every field of every entry present once and
 * valid (a ULID lease id, upper-cased; a job id as api.md allows; the
 * query's key), entries in time order from since_unix_ms on, at most
 * query->limit, an expired entry with actual 0, next_since_unix_ms present
 * and not before since_unix_ms. Anything else is RL_INVALID_REQUEST with
 * *page's count 0. Decodes in place, like the other answer decoders. */
rl_status rl__wire_decode_audit_answer(char *body, size_t len, const rl_audit_query *query,
                                       rl_audit_page *page);

/* Percent-encodes text for a URL path or query: every byte but the
 * unreserved ones (RFC 3986: letters, digits, "-._~") and ':' as %XX. Stops
 * before an escape that would not fit; out (out_size > 0 bytes) is always
 * NUL-terminated. Returns the length written. */
size_t rl__wire_percent_encode(const char *text, char *out, size_t out_size);

#endif
