/* decode_common.c — path-qualified details, and the strict cJSON parsing of
 * limit definitions (decode_common.h). */
#include "wire/decode_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/json_scan.h"
#include "wire/text.h"

/* Writes "<path>.<field> <message>" into path->detail. */
__attribute__((format(printf, 3, 0))) static void vformat(const rl__json_path *path,
                                                         const char *field, const char *format,
                                                         va_list args) {
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
    if ((size_t)n < size) vsnprintf(out + n, size - (size_t)n, format, args);
}

bool rl__json_fail(const rl__json_path *path, const char *field, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vformat(path, field, format, args);
    va_end(args);
    return false;
}

bool rl__json_note(uint32_t *best, uint32_t rank, const rl__json_path *path, const char *field,
                   const char *format, ...) {
    if (rank >= *best) return false;
    *best = rank;
    va_list args;
    va_start(args, format);
    vformat(path, field, format, args);
    va_end(args);
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
    rl__body_problem problem = rl__body_scan(body, len, &at);
    if (problem != RL__BODY_OK) {
        static const rl__json_error as_error[] = {
            [RL__BODY_BAD_UTF8] = RL__JSON_BAD_UTF8,
            [RL__BODY_CONTROL] = RL__JSON_CONTROL,
            [RL__BODY_NUL_ESCAPE] = RL__JSON_NUL_ESCAPE,
        };
        rl__scan_describe(as_error[problem], at, what, detail, detail_size);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (root == NULL) {
        size_t error_at = (end != NULL && end >= body && end <= body + len) ? (size_t)(end - body) : 0;
        rl__scan_describe(RL__JSON_SYNTAX, error_at, what, detail, detail_size);
        return NULL;
    }
    size_t offset = (size_t)(end - body);
    while (offset < len && is_json_whitespace(body[offset])) offset++;
    if (offset < len) {
        cJSON_Delete(root);
        rl__scan_describe(RL__JSON_TRAILING, offset, what, detail, detail_size);
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
