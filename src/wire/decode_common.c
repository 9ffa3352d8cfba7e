/* decode_common.c — strict parsing and field helpers shared by the decoders. */
#include "wire/decode_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "ratelimiter/ulid.h"
#include "wire/text.h"

bool rl__json_fail(const rl__json_path *path, const char *field, const char *format, ...) {
    char *out = path->detail;
    size_t size = RL_WIRE_DETAIL_SIZE;
    int n = 0;
    /* Each piece is joined to the previous one by '.'; the sentence follows
     * the path after a space, or stands alone when there is no path. */
    const char *sep = "";
    if (path->outer != NULL) {
        n += snprintf(out + n, size - (size_t)n, "%s[%zu]", path->outer, path->outer_index);
        sep = ".";
    }
    if (path->inner != NULL && (size_t)n < size) {
        n += snprintf(out + n, size - (size_t)n, "%s%s[%zu]", sep, path->inner,
                      path->inner_index);
        sep = ".";
    }
    if (field != NULL && (size_t)n < size) {
        n += snprintf(out + n, size - (size_t)n, "%s%s", sep, field);
    }
    if (n > 0 && (size_t)n < size) n += snprintf(out + n, size - (size_t)n, " ");
    if ((size_t)n < size) {
        va_list args;
        va_start(args, format);
        vsnprintf(out + n, size - (size_t)n, format, args);
        va_end(args);
    }
    return false;
}

static bool is_json_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

cJSON *rl__json_parse(const char *body, size_t len, const char *what, char *detail,
                      size_t detail_size) {
    if (body == NULL || len == 0) {
        snprintf(detail, detail_size, "%s is empty", what);
        return NULL;
    }
    size_t at = 0;
    switch (rl__body_scan(body, len, &at)) {
    case RL__BODY_OK:
        break;
    case RL__BODY_BAD_UTF8:
        snprintf(detail, detail_size, "%s is not valid UTF-8 (at byte %zu)", what, at);
        return NULL;
    case RL__BODY_CONTROL:
        snprintf(detail, detail_size,
                 "%s contains a raw control character (at byte %zu); escape it in strings", what,
                 at);
        return NULL;
    case RL__BODY_NUL_ESCAPE:
        snprintf(detail, detail_size, "%s contains \\u0000 (at byte %zu), which is not allowed",
                 what, at);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (root == NULL) {
        size_t error_at = (end != NULL && end >= body && end <= body + len) ? (size_t)(end - body) : 0;
        snprintf(detail, detail_size, "%s is not valid JSON (error near byte %zu)", what, error_at);
        return NULL;
    }
    size_t offset = (size_t)(end - body);
    while (offset < len && is_json_whitespace(body[offset])) offset++;
    if (offset < len) {
        cJSON_Delete(root);
        snprintf(detail, detail_size, "%s has unexpected data after the JSON value (at byte %zu)",
                 what, offset);
        return NULL;
    }
    return root;
}

cJSON *rl__json_parse_object(const char *body, size_t len, char detail[RL_WIRE_DETAIL_SIZE]) {
    cJSON *root = rl__json_parse(body, len, "body", detail, RL_WIRE_DETAIL_SIZE);
    if (root != NULL && !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        snprintf(detail, RL_WIRE_DETAIL_SIZE, "body must be a JSON object");
        return NULL;
    }
    return root;
}

bool rl__json_members(const cJSON *object, const char *const names[], size_t count,
                      const cJSON *found[], const rl__json_path *path) {
    for (size_t i = 0; i < count; i++) found[i] = NULL;
    for (const cJSON *member = object->child; member != NULL; member = member->next) {
        if (member->string == NULL) continue;
        for (size_t i = 0; i < count; i++) {
            if (strcmp(member->string, names[i]) != 0) continue;
            /* cJSON would silently keep the first of two: refuse instead,
             * the sender meant one of them and we cannot know which. */
            if (found[i] != NULL) return rl__json_fail(path, names[i], "appears twice");
            found[i] = member;
            break;
        }
    }
    return true;
}

bool rl__json_u64(const cJSON *item, uint64_t min, uint64_t max, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return false;
    double value = item->valuedouble;
    /* Written so that NaN fails both comparisons. max <= 2^53 converts exactly. */
    if (!(value >= (double)min && value <= (double)max)) return false;
    uint64_t integer = (uint64_t)value;
    if ((double)integer != value) return false;
    *out = integer;
    return true;
}

const char *rl__json_string(const cJSON *item, size_t *len) {
    if (!cJSON_IsString(item) || item->valuestring == NULL) return NULL;
    *len = strlen(item->valuestring);
    return item->valuestring;
}

size_t rl__json_array_count(const cJSON *array, size_t limit) {
    size_t count = 0;
    for (const cJSON *element = array->child; element != NULL && count <= limit;
         element = element->next)
        count++;
    return count;
}

bool rl__decode_lease_id(const cJSON *item, const char **out, const rl__json_path *path) {
    if (item == NULL) return rl__json_fail(path, "lease_id", "is required");
    /* valuestring is the tree's own copy: normalising it in place is fine. */
    char *text = cJSON_IsString(item) ? item->valuestring : NULL;
    size_t len = text != NULL ? strlen(text) : 0;
    if (text == NULL || !rl_ulid_is_valid(text, len))
        return rl__json_fail(path, "lease_id",
                             "must be a ULID: 26 characters of Crockford base32, the first 0..7");
    for (size_t i = 0; i < len; i++) {
        if (text[i] >= 'a' && text[i] <= 'z') text[i] = (char)(text[i] - 'a' + 'A');
    }
    *out = text;
    return true;
}

bool rl__decode_job_id(const cJSON *item, const char **out, const rl__json_path *path) {
    if (rl__json_is_absent(item)) {
        *out = NULL;
        return true;
    }
    size_t len = 0;
    const char *text = rl__json_string(item, &len);
    if (text == NULL || len > RL_JOB_ID_MAX_LEN || !rl__text_is_clean(text, len))
        return rl__json_fail(path, "job_id",
                             "must be null or a string of at most %d bytes without control "
                             "characters",
                             RL_JOB_ID_MAX_LEN);
    *out = text;
    return true;
}

bool rl__decode_key_amount(const cJSON *element, const char *amount_name, uint64_t min_amount,
                           const char **key, uint64_t *amount, const rl__json_path *path) {
    if (!cJSON_IsObject(element)) return rl__json_fail(path, NULL, "must be an object");
    const char *const names[2] = {"key", amount_name};
    const cJSON *found[2];
    if (!rl__json_members(element, names, 2, found, path)) return false;

    if (found[0] == NULL) return rl__json_fail(path, "key", "is required");
    size_t key_len = 0;
    const char *text = rl__json_string(found[0], &key_len);
    if (text == NULL || !rl_key_is_valid(text, key_len))
        return rl__json_fail(path, "key",
                             "must be a string of 1..%d printable ASCII characters without spaces",
                             RL_KEY_MAX_LEN);

    if (found[1] == NULL) return rl__json_fail(path, amount_name, "is required");
    if (!rl__json_u64(found[1], min_amount, RL_AMOUNT_MAX, amount))
        return rl__json_fail(path, amount_name, "must be an integer %llu..%llu",
                             (unsigned long long)min_amount, (unsigned long long)RL_AMOUNT_MAX);
    *key = text;
    return true;
}
