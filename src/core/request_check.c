/* request_check.c — api.md's rules for a reserve or complete (lease_rules.h),
 * and the check of a whole request with them, before anything is sent or
 * changed (ratelimiter/limiter.h: the in-process and HTTP limiters, rlctl). */
#include <string.h>

#include "core/error_text.h"
#include "core/lease_rules.h"
#include "core/text.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/ulid.h"

/* ---- the rules -------------------------------------------------------------- */

bool rl__lease_id_ok(const char *text, size_t len) { return text != NULL && rl_ulid_is_valid(text, len); }

bool rl__job_id_ok(const char *text, size_t len) {
    return text != NULL && len <= RL_JOB_ID_MAX_LEN && rl__text_is_clean(text, len);
}

bool rl__lease_key_ok(const char *text, size_t len) { return text != NULL && rl_key_is_valid(text, len); }

size_t rl__lease_key_repeats(const char *const *keys, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (strcmp(keys[j], keys[i]) == 0) return j;
    return i;
}

/* ---- a whole request ------------------------------------------------------------ */

/* The first broken rule, said in err (NULL: not said). */
static bool check_ids(const char *lease_id, const char *job_id, char *err) {
    if (lease_id == NULL || !rl__lease_id_ok(lease_id, strnlen(lease_id, RL_ULID_LEN + 1))) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE,
                       "lease_id must be a ULID: 26 characters of Crockford base32, the first 0..7");
        return false;
    }
    if (job_id != NULL && !rl__job_id_ok(job_id, strnlen(job_id, RL_JOB_ID_MAX_LEN + 1))) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE,
                       "job_id must be at most %d bytes of UTF-8 without control characters", RL_JOB_ID_MAX_LEN);
        return false;
    }
    return true;
}

/* keys[i] for i < count: each valid, none twice. */
static bool check_key(const char *const *keys, size_t i, const char *list, char *err) {
    const char *key = keys[i];
    if (key == NULL || !rl__lease_key_ok(key, strnlen(key, RL_KEY_MAX_LEN + 1))) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE,
                       "%s[%zu].key must be 1..%d printable ASCII characters without spaces", list, i,
                       RL_KEY_MAX_LEN);
        return false;
    }
    size_t earlier = rl__lease_key_repeats(keys, i);
    if (earlier != i) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE, "%s[%zu].key repeats %s[%zu].key: a lease names each key once",
                       list, i, list, earlier);
        return false;
    }
    return true;
}

static bool reserve_check(const rl_reserve_request *request, char *err) {
    if (!check_ids(request->lease_id, request->job_id, err)) return false;
    size_t count = request->requirement_count;
    if (!rl__lease_count_ok(count, RL__REQUIREMENTS_MIN_COUNT) || request->requirements == NULL) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE, "requirements must be an array of 1..%d requirements",
                       RL_MAX_REQUIREMENTS);
        return false;
    }
    const char *keys[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < count; i++) {
        keys[i] = request->requirements[i].key;
        if (!check_key(keys, i, "requirements", err)) return false;
        if (!rl__lease_amount_ok(request->requirements[i].amount, RL__REQUIREMENT_AMOUNT_MIN)) {
            rl__error_text(err, RL_LIMITER_ERR_SIZE,
                           "requirements[%zu].amount must be an integer 1..9007199254740992", i);
            return false;
        }
    }
    return true;
}

static bool complete_check(const rl_complete_request *request, char *err) {
    if (!check_ids(request->lease_id, request->job_id, err)) return false;
    size_t count = request->actual_count;
    if (!rl__lease_count_ok(count, RL__ACTUALS_MIN_COUNT) || (count > 0 && request->actuals == NULL)) {
        rl__error_text(err, RL_LIMITER_ERR_SIZE, "actuals must be an array of 0..%d actuals", RL_MAX_REQUIREMENTS);
        return false;
    }
    const char *keys[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < count; i++) {
        keys[i] = request->actuals[i].key;
        if (!check_key(keys, i, "actuals", err)) return false;
        if (!rl__lease_amount_ok(request->actuals[i].actual_amount, RL__ACTUAL_AMOUNT_MIN)) {
            rl__error_text(err, RL_LIMITER_ERR_SIZE,
                           "actuals[%zu].actual_amount must be an integer 0..9007199254740992", i);
            return false;
        }
    }
    return true;
}

bool rl_reserve_request_check(const rl_reserve_request *request, char err[RL_LIMITER_ERR_SIZE]) {
    return reserve_check(request, err);
}

bool rl_complete_request_check(const rl_complete_request *request, char err[RL_LIMITER_ERR_SIZE]) {
    return complete_check(request, err);
}

bool rl__reserve_request_is_valid(const rl_reserve_request *request) { return reserve_check(request, NULL); }

bool rl__complete_request_is_valid(const rl_complete_request *request) { return complete_check(request, NULL); }
