/* request_check.c — api.md's rules for a reserve or complete, checked before
 * anything is sent or changed (the in-process and HTTP limiters share them). */
#include <string.h>

#include "core/error_text.h"
#include "ratelimiter/keys.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/ulid.h"

static bool check_ids(const char *lease_id, const char *job_id, char *err) {
    if (lease_id == NULL || !rl_ulid_is_valid(lease_id, strlen(lease_id))) {
        rl_error_text(err, RL_LIMITER_ERR_SIZE, "lease_id must be a ULID: 26 characters of Crockford base32, the first 0..7");
        return false;
    }
    if (job_id != NULL && strnlen(job_id, RL_JOB_ID_MAX_LEN + 1) > RL_JOB_ID_MAX_LEN) {
        rl_error_text(err, RL_LIMITER_ERR_SIZE, "job_id must be at most %d bytes", RL_JOB_ID_MAX_LEN);
        return false;
    }
    return true;
}

/* keys[i] for i < count: each valid, none twice. */
static bool check_key(const char *const *keys, size_t i, const char *list, char *err) {
    const char *key = keys[i];
    if (key == NULL || !rl_key_is_valid(key, strnlen(key, RL_KEY_MAX_LEN + 1))) {
        rl_error_text(err, RL_LIMITER_ERR_SIZE,
                      "%s[%zu].key must be 1..%d printable ASCII characters without spaces", list, i,
                      RL_KEY_MAX_LEN);
        return false;
    }
    for (size_t j = 0; j < i; j++) {
        if (strcmp(keys[j], key) == 0) {
            rl_error_text(err, RL_LIMITER_ERR_SIZE, "%s[%zu].key repeats %s[%zu].key: a lease names each key once",
                          list, i, list, j);
            return false;
        }
    }
    return true;
}

bool rl_reserve_request_check(const rl_reserve_request *request, char err[RL_LIMITER_ERR_SIZE]) {
    if (!check_ids(request->lease_id, request->job_id, err)) return false;
    size_t count = request->requirement_count;
    if (count < 1 || count > RL_MAX_REQUIREMENTS || request->requirements == NULL) {
        rl_error_text(err, RL_LIMITER_ERR_SIZE, "requirements must be an array of 1..%d requirements",
                      RL_MAX_REQUIREMENTS);
        return false;
    }
    const char *keys[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < count; i++) {
        keys[i] = request->requirements[i].key;
        if (!check_key(keys, i, "requirements", err)) return false;
        uint64_t amount = request->requirements[i].amount;
        if (amount < 1 || amount > RL_AMOUNT_MAX) {
            rl_error_text(err, RL_LIMITER_ERR_SIZE, "requirements[%zu].amount must be an integer 1..9007199254740992", i);
            return false;
        }
    }
    return true;
}

bool rl_complete_request_check(const rl_complete_request *request, char err[RL_LIMITER_ERR_SIZE]) {
    if (!check_ids(request->lease_id, request->job_id, err)) return false;
    size_t count = request->actual_count;
    if (count > RL_MAX_REQUIREMENTS || (count > 0 && request->actuals == NULL)) {
        rl_error_text(err, RL_LIMITER_ERR_SIZE, "actuals must be an array of 0..%d actuals", RL_MAX_REQUIREMENTS);
        return false;
    }
    const char *keys[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < count; i++) {
        keys[i] = request->actuals[i].key;
        if (!check_key(keys, i, "actuals", err)) return false;
        if (request->actuals[i].actual_amount > RL_AMOUNT_MAX) {
            rl_error_text(err, RL_LIMITER_ERR_SIZE, "actuals[%zu].actual_amount must be an integer 0..9007199254740992", i);
            return false;
        }
    }
    return true;
}
