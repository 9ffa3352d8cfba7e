/* fuzz_access_log_line.c — any lease_id, job_id and limit key a request may
 * bring into an access log line (server/observe/access_log_line.h): job_id
 * is free text, and a refused item's lease_id is too.
 *
 * Input: three NUL-separated strings (lease_id, job_id, the denying key;
 * missing ones are NULL, an empty key is none), then nothing more is read.
 * Checked: each format gives one line of at most RL_ACCESS_LOG_LINE_MAX
 * bytes ending in its only '\n'; the JSON line is an object cJSON reads,
 * whose strings are valid UTF-8 and read back exactly what was given when
 * that was valid UTF-8 within its bound (else U+FFFD stands for each bad
 * byte, and the string is no longer than 3 bytes a byte); neither line
 * holds a character that ends a line for some reader (a C1 control, U+2028,
 * U+2029); the text line holds no control character, is valid UTF-8, and
 * reads back field by field: a string bare only when it is a plain word, else quoted, and
 * unescaped it is exactly what was given (cut at its bound).
 */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/text.h"
#include "fuzz.h"
#include "server/observe/access_log_line.h"

static bool utf8_valid(const char *text, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t n = rl__utf8_sequence_len((const unsigned char *)text + i, len - i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

/* Whether line[0..len) holds a C1 control (C2 80..C2 9F) or U+2028, U+2029
 * (E2 80 A8, A9) as it is: a reader that splits on them would cut it. */
static bool holds_line_breaker(const char *line, size_t len) {
    const unsigned char *s = (const unsigned char *)line;
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] == 0xc2 && s[i + 1] >= 0x80 && s[i + 1] < 0xa0) return true;
        if (s[i] == 0xe2 && i + 2 < len && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) return true;
    }
    return false;
}

/* The JSON string field `name` against what was given (NULL: null). */
static void check_json_string(const cJSON *line, const char *name, const char *given, size_t max) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(line, name);
    FUZZ_CHECK(item != NULL);
    if (given == NULL) {
        FUZZ_CHECK(cJSON_IsNull(item));
        return;
    }
    FUZZ_CHECK(cJSON_IsString(item));
    size_t given_len = strnlen(given, max), read_len = strlen(item->valuestring);
    FUZZ_CHECK(utf8_valid(item->valuestring, read_len));
    if (utf8_valid(given, given_len)) {
        FUZZ_CHECK(read_len == given_len && memcmp(item->valuestring, given, given_len) == 0);
    } else {
        FUZZ_CHECK(read_len <= 3 * given_len);
    }
}

static int hex_value(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Reads the text value at *at (after "name=") against what was given: "-"
 * for none; bare exactly when given is a plain word; quoted, it unescapes
 * to given (cut at max). Leaves *at after the value. */
static void check_text_value(const char **at, const char *name, const char *given, size_t max) {
    size_t name_len = strlen(name);
    FUZZ_CHECK(strncmp(*at, name, name_len) == 0 && (*at)[name_len] == '=');
    const char *p = *at + name_len + 1;
    size_t len = given != NULL ? strnlen(given, max) : 0;
    bool plain = given != NULL && len > 0 && !(len == 1 && given[0] == '-');
    for (size_t i = 0; plain && i < len; i++)
        plain = given[i] > ' ' && given[i] <= '~' && given[i] != '"' && given[i] != '\\' && given[i] != '=';
    if (given == NULL) {
        FUZZ_CHECK(p[0] == '-');
        p++;
    } else if (plain) {
        FUZZ_CHECK(strncmp(p, given, len) == 0);
        p += len;
    } else {
        FUZZ_CHECK(*p++ == '"');
        static char unescaped[RL_ACCESS_LOG_LINE_MAX];
        size_t n = 0;
        while (*p != '"') {
            FUZZ_CHECK(*p != '\0');
            char c = *p++;
            if (c == '\\') {
                c = *p++;
                if (c == 'n') c = '\n';
                else if (c == 'r') c = '\r';
                else if (c == 't') c = '\t';
                else if (c == 'x') {
                    int high = hex_value(p[0]), low = high >= 0 ? hex_value(p[1]) : -1;
                    FUZZ_CHECK(low >= 0);
                    c = (char)(high * 16 + low);
                    p += 2;
                } else {
                    FUZZ_CHECK(c == '"' || c == '\\');
                }
            }
            unescaped[n++] = c;
        }
        p++;
        FUZZ_CHECK(n == len && memcmp(unescaped, given, len) == 0);
    }
    FUZZ_CHECK(*p == ' ');
    *at = p + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *copy = malloc(size + 1);
    if (copy == NULL) abort();
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *parts[3] = {NULL, NULL, NULL};
    const char *at = copy, *end = copy + size;
    for (size_t i = 0; i < 3 && at <= end && size > 0; i++) {
        parts[i] = at;
        at += strlen(at) + 1;
    }
    rl_api_outcome o;
    memset(&o, 0, sizeof o);
    o.endpoint = (rl_api_endpoint)(size % RL_API_ENDPOINT_COUNT);
    o.http_status = 200;
    o.items = size > 0 ? data[0] : 0;
    o.first_result = (rl_api_result)(size % RL_API_RESULT_COUNT);
    o.results[RL_API_RESULT_DENIED_CAPACITY] = o.items;
    o.lease_id = parts[0];
    o.job_id = parts[1];
    if (parts[2] != NULL) snprintf(o.denied_by_key, sizeof o.denied_by_key, "%s", parts[2]);
    const char *key = o.denied_by_key[0] != '\0' ? o.denied_by_key : NULL;
    const char *decision = o.items > 0 ? rl_api_result_name(o.first_result) : NULL;

    static char line[RL_ACCESS_LOG_LINE_MAX + 1];
    for (rl_access_log_format f = RL_ACCESS_LOG_TEXT; f <= RL_ACCESS_LOG_JSON; f++) {
        size_t len = rl_access_log_line_format(f, "2026-11-28T07:48:03.123Z", &o, size, line);
        FUZZ_CHECK(len > 0 && len <= RL_ACCESS_LOG_LINE_MAX);
        FUZZ_CHECK(line[len - 1] == '\n' && memchr(line, '\n', len - 1) == NULL);
        FUZZ_CHECK(memchr(line, '\0', len) == NULL);
        FUZZ_CHECK(!holds_line_breaker(line, len));
        line[len] = '\0';
        if (f == RL_ACCESS_LOG_JSON) {
            cJSON *json = cJSON_Parse(line);
            FUZZ_CHECK(cJSON_IsObject(json));
            check_json_string(json, "lease_id", o.lease_id, RL_ACCESS_LOG_LEASE_ID_MAX);
            check_json_string(json, "job_id", o.job_id, RL_ACCESS_LOG_JOB_ID_MAX);
            check_json_string(json, "denied_by", key, RL_ACCESS_LOG_KEY_MAX);
            check_json_string(json, "decision", decision, 64);
            FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(json, "latency_us")->valuedouble == (double)size);
            cJSON_Delete(json);
        } else {
            FUZZ_CHECK(utf8_valid(line, len));
            for (size_t i = 0; i + 1 < len; i++) FUZZ_CHECK((unsigned char)line[i] >= 0x20 && line[i] != 0x7f);
            const char *p = strstr(line, " lease_id=");
            FUZZ_CHECK(p != NULL);
            p++;
            check_text_value(&p, "lease_id", o.lease_id, RL_ACCESS_LOG_LEASE_ID_MAX);
            check_text_value(&p, "job_id", o.job_id, RL_ACCESS_LOG_JOB_ID_MAX);
            check_text_value(&p, "decision", decision, 64);
            check_text_value(&p, "denied_by", key, RL_ACCESS_LOG_KEY_MAX);
            FUZZ_CHECK(strncmp(p, "items=", 6) == 0);
        }
    }
    free(copy);
    return 0;
}
