/* test_wire_decode.c — the request decoders of wire.h, fed valid bodies,
 * every malformed body we could think of, and every truncation of the valid
 * ones. Bodies are copied into exactly-sized heap blocks so that AddressSanitizer
 * catches any read past the end (the daemon's bodies are not NUL-terminated). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "wire/wire.h"

#define LEASE "01ARZ3NDEKTSV4RRFFQ69G5FAV"
#define LEASE2 "01ARZ3NDEKTSV4RRFFQ69G5FAW"
#define RPM "global:llm:openai:gpt-4o:rpm"
#define TPM "global:llm:openai:gpt-4o:tpm"
#define CONC "global:llm:openai:gpt-4o:concurrency"
#define DAILY "tenant:tenant_a:llm:daily_tokens"

#define REQS4                                                                               \
    "[{\"key\":\"" RPM "\",\"amount\":1},{\"key\":\"" TPM "\",\"amount\":1800},"            \
    "{\"key\":\"" CONC "\",\"amount\":1},{\"key\":\"" DAILY "\",\"amount\":1800}]"
#define RESERVE4 "{\"lease_id\":\"" LEASE "\",\"job_id\":\"job-7\",\"requirements\":" REQS4 "}"
#define ACTUALS2 "[{\"key\":\"" TPM "\",\"actual_amount\":740},{\"key\":\"" DAILY "\",\"actual_amount\":740}]"
#define COMPLETE2 "{\"lease_id\":\"" LEASE "\",\"job_id\":\"job-7\",\"actuals\":" ACTUALS2 "}"
#define LIMIT_DEF                                                                            \
    "{\"key\":\"" RPM "\",\"kind\":\"rolling\",\"capacity\":3000,\"window_seconds\":60,"     \
    "\"timeout_seconds\":0,\"unit\":\"requests\",\"description\":\"OpenAI gpt-4o requests per " \
    "minute\",\"overage\":\"debt\"}"

#define AMOUNT_MSG "must be an integer 1..9007199254740992"

/* ---- helpers ---------------------------------------------------------- */

static char *heap_copy(const char *body, size_t len) {
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    if (len > 0) memcpy(copy, body, len);
    return copy;
}

static rl_status reserve_n(const char *body, size_t len, rl_wire_reserves *out, char *detail) {
    char *copy = heap_copy(body, len);
    rl_status status = rl__wire_decode_reserve(copy, len, out, detail);
    free(copy); /* the message must not point into the body */
    return status;
}
static rl_status reserve(const char *body, rl_wire_reserves *out, char *detail) {
    return reserve_n(body, strlen(body), out, detail);
}
static rl_status reserve_batch(const char *body, size_t max_batch, rl_wire_reserves *out,
                               char *detail) {
    size_t len = strlen(body);
    char *copy = heap_copy(body, len);
    rl_status status = rl__wire_decode_reserve_batch(copy, len, max_batch, out, detail);
    free(copy);
    return status;
}
static rl_status complete(const char *body, rl_wire_completes *out, char *detail) {
    size_t len = strlen(body);
    char *copy = heap_copy(body, len);
    rl_status status = rl__wire_decode_complete(copy, len, out, detail);
    free(copy);
    return status;
}
static rl_status complete_batch(const char *body, size_t max_batch, rl_wire_completes *out,
                                char *detail) {
    size_t len = strlen(body);
    char *copy = heap_copy(body, len);
    rl_status status = rl__wire_decode_complete_batch(copy, len, max_batch, out, detail);
    free(copy);
    return status;
}
static rl_status limit_def_n(const char *body, size_t len, rl_limit_def *out, char *detail) {
    char *copy = heap_copy(body, len);
    rl_status status = rl__wire_decode_limit_def(copy, len, out, detail);
    free(copy);
    return status;
}
static rl_status limit_def(const char *body, rl_limit_def *out, char *detail) {
    return limit_def_n(body, strlen(body), out, detail);
}

static void check_detail(const char *detail, const char *expected, const char *file, int line) {
    if (expected != NULL && strstr(detail, expected) == NULL)
        fail_msg("%s:%d: detail \"%s\" does not contain \"%s\"", file, line, detail, expected);
    if (detail[0] == '\0') fail_msg("%s:%d: empty detail", file, line);
}

/* The body (len bytes) is refused by the single reserve decoder, which leaves
 * the message empty and says `expected` somewhere in detail. */
static void reserve_refused_n(const char *body, size_t len, const char *expected,
                              const char *file, int line) {
    rl_wire_reserves msg;
    memset(&msg, 0xab, sizeof msg);
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = reserve_n(body, len, &msg, detail);
    if (status != RL_INVALID_REQUEST)
        fail_msg("%s:%d: status %s for %.*s", file, line, rl_status_name(status), (int)len, body);
    assert_null(msg.requests);
    assert_null(msg.item_status);
    assert_null(msg.storage_);
    assert_int_equal(msg.count, 0);
    check_detail(detail, expected, file, line);
    rl__wire_reserves_free(&msg); /* harmless on an empty message */
}
#define RESERVE_REFUSED(body, expected) \
    reserve_refused_n((body), strlen(body), (expected), __FILE__, __LINE__)
#define RESERVE_REFUSED_N(body, len, expected) \
    reserve_refused_n((body), (len), (expected), __FILE__, __LINE__)

static void complete_refused(const char *body, const char *expected, const char *file, int line) {
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = complete(body, &msg, detail);
    if (status != RL_INVALID_REQUEST)
        fail_msg("%s:%d: status %s for %s", file, line, rl_status_name(status), body);
    assert_null(msg.storage_);
    assert_int_equal(msg.count, 0);
    check_detail(detail, expected, file, line);
}
#define COMPLETE_REFUSED(body, expected) complete_refused((body), (expected), __FILE__, __LINE__)

static void limit_refused(const char *body, const char *expected, const char *file, int line) {
    rl_limit_def def;
    memset(&def, 0x5a, sizeof def);
    rl_limit_def before = def;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = limit_def(body, &def, detail);
    if (status != RL_INVALID_REQUEST)
        fail_msg("%s:%d: status %s for %s", file, line, rl_status_name(status), body);
    assert_memory_equal(&def, &before, sizeof def); /* untouched on failure */
    check_detail(detail, expected, file, line);
}
#define LIMIT_REFUSED(body, expected) limit_refused((body), (expected), __FILE__, __LINE__)

/* Builds bodies from a format into one of a few static buffers. */
static const char *body_of(const char *format, ...) __attribute__((format(printf, 1, 2)));
static const char *body_of(const char *format, ...) {
    static char buffers[4][1 << 20];
    static int next;
    char *out = buffers[next++ % 4];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(out, sizeof buffers[0], format, args);
    va_end(args);
    assert_true(n > 0 && (size_t)n < sizeof buffers[0]);
    return out;
}

/* A reserve body with the given requirements JSON. */
static const char *reserve_with(const char *requirements) {
    return body_of("{\"lease_id\":\"" LEASE "\",\"requirements\":%s}", requirements);
}
/* A reserve body whose only requirement has the given amount JSON. */
static const char *reserve_amount(const char *amount) {
    return body_of("{\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"k\",\"amount\":%s}]}",
                   amount);
}
/* A reserve body with the given job_id JSON. */
static const char *reserve_job(const char *job_id) {
    return body_of("{\"lease_id\":\"" LEASE "\",\"job_id\":%s,\"requirements\":[{\"key\":\"k\","
                   "\"amount\":1}]}",
                   job_id);
}
/* n requirements k0..k(n-1) as a JSON array, in a static buffer. */
static const char *requirements_json(size_t n, const char *amount_field) {
    static char out[8192];
    size_t at = 0;
    out[at++] = '[';
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, sizeof out - at, "%s{\"key\":\"k%zu\",\"%s\":%zu}",
                               i > 0 ? "," : "", i, amount_field, i + 1);
    out[at++] = ']';
    out[at] = '\0';
    return out;
}

/* ---- reserve: valid --------------------------------------------------- */

static void test_reserve_valid(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(RESERVE4, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 1);
    assert_int_equal(msg.item_status[0], RL_OK);
    const rl_reserve_request *r = &msg.requests[0];
    assert_string_equal(r->lease_id, LEASE);
    assert_string_equal(r->job_id, "job-7");
    assert_int_equal(r->requirement_count, 4);
    assert_string_equal(r->requirements[0].key, RPM);
    assert_int_equal(r->requirements[0].amount, 1);
    assert_string_equal(r->requirements[1].key, TPM);
    assert_int_equal(r->requirements[1].amount, 1800);
    assert_string_equal(r->requirements[2].key, CONC);
    assert_string_equal(r->requirements[3].key, DAILY);
    assert_int_equal(r->requirements[3].amount, 1800);
    rl__wire_reserves_free(&msg);
    assert_null(msg.storage_);
    rl__wire_reserves_free(&msg); /* twice is harmless */
    rl__wire_reserves_free(NULL);
}

static void test_reserve_lease_id_case(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* Lower and mixed case are valid, and decoded as written: every case of
     * a ULID is the same lease to the backends (test_backend_conformance),
     * which normalize it where they keep it as text. */
    const char *ids[] = {"01arz3ndektsv4rrffq69g5fav", "01ArZ3nDeKtSv4RrFfQ69g5FaV"};
    for (size_t i = 0; i < 2; i++) {
        char body_text[256];
        snprintf(body_text, sizeof body_text,
                 "{\"lease_id\":\"%s\",\"requirements\":[{\"key\":\"k\",\"amount\":1}]}", ids[i]);
        assert_int_equal(reserve(body_text, &msg, detail), RL_OK);
        assert_string_equal(msg.requests[0].lease_id, ids[i]);
        assert_true(strcasecmp(msg.requests[0].lease_id, LEASE) == 0);
        rl__wire_reserves_free(&msg);
    }
}

static void test_reserve_job_id_forms(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(reserve_job("null"), &msg, detail), RL_OK);
    assert_null(msg.requests[0].job_id);
    rl__wire_reserves_free(&msg);

    assert_int_equal(reserve(reserve_with("[{\"key\":\"k\",\"amount\":1}]"), &msg, detail), RL_OK);
    assert_null(msg.requests[0].job_id);
    rl__wire_reserves_free(&msg);

    assert_int_equal(reserve(reserve_job("\"\""), &msg, detail), RL_OK);
    assert_string_equal(msg.requests[0].job_id, "");
    rl__wire_reserves_free(&msg);

    /* UTF-8, raw and escaped, is fine. */
    assert_int_equal(reserve(reserve_job("\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\""), &msg, detail),
                     RL_OK);
    assert_string_equal(msg.requests[0].job_id, "caf\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80");
    rl__wire_reserves_free(&msg);

    char job[RL_JOB_ID_MAX_LEN + 3];
    memset(job, 'j', sizeof job);
    job[0] = '"';
    job[RL_JOB_ID_MAX_LEN + 1] = '"';
    job[RL_JOB_ID_MAX_LEN + 2] = '\0'; /* exactly 128 bytes */
    assert_int_equal(reserve(reserve_job(job), &msg, detail), RL_OK);
    assert_int_equal(strlen(msg.requests[0].job_id), RL_JOB_ID_MAX_LEN);
    rl__wire_reserves_free(&msg);
}

static void test_reserve_amount_forms(void **state) {
    (void)state;
    struct {
        const char *json;
        uint64_t value;
    } cases[] = {
        {"1", 1},
        {"9007199254740992", UINT64_C(9007199254740992)}, /* 2^53 */
        /* Any form whose exact value is an integer in range (wire.h). */
        {"1.0", 1},
        {"1e3", 1000},
        {"1E3", 1000},
        {"1e+3", 1000},
        {"2.5e1", 25},
        {"18000", 18000},
        {"1800.000", 1800},
        {"180000e-2", 1800},
        {"0.18e4", 1800},
        {"9.007199254740992e15", UINT64_C(9007199254740992)},
        {"9007199254740992.000", UINT64_C(9007199254740992)},
        {"0.0000000000000000000000000000001e31", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_wire_reserves msg;
        char detail[RL_WIRE_DETAIL_SIZE];
        assert_int_equal(reserve(reserve_amount(cases[i].json), &msg, detail), RL_OK);
        assert_true(msg.requests[0].requirements[0].amount == cases[i].value);
        rl__wire_reserves_free(&msg);
    }
}

static void test_reserve_whitespace_and_unknown_fields(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    const char *body =
        " \t\r\n{ \"lease_id\" : \"" LEASE "\" ,\n"
        "  \"priority\": [1, {\"deep\": [null, true, \"\\\\u0000 is text here\"]}],\n"
        "  \"extra\": 1, \"extra\": 2,\n" /* unknown fields may repeat: they are ignored */
        "  \"Lease_ID\": 7,\n"           /* names are case-sensitive: unknown */
        "  \"requirements\" : [ { \"amount\" : 5 , \"key\" : \"k\" , \"note\": \"x\" } ]\n"
        "}\n\n ";
    assert_int_equal(reserve(body, &msg, detail), RL_OK);
    assert_string_equal(msg.requests[0].lease_id, LEASE);
    assert_string_equal(msg.requests[0].requirements[0].key, "k");
    assert_int_equal(msg.requests[0].requirements[0].amount, 5);
    rl__wire_reserves_free(&msg);
}

static void test_reserve_escaped_keys(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* '"', '\\' and '/' are printable key characters; escapes decode to them. */
    assert_int_equal(reserve(reserve_with("[{\"key\":\"a\\\"b\\\\c\\/d\\u0041\",\"amount\":1}]"),
                             &msg, detail),
                     RL_OK);
    assert_string_equal(msg.requests[0].requirements[0].key, "a\"b\\c/dA");
    rl__wire_reserves_free(&msg);
}

static void test_reserve_max_requirements_and_key_length(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(reserve_with(requirements_json(32, "amount")), &msg, detail), RL_OK);
    assert_int_equal(msg.requests[0].requirement_count, 32);
    for (size_t i = 0; i < 32; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%zu", i);
        assert_string_equal(msg.requests[0].requirements[i].key, key);
        assert_int_equal(msg.requests[0].requirements[i].amount, i + 1);
    }
    rl__wire_reserves_free(&msg);

    char key[RL_KEY_MAX_LEN + 1];
    memset(key, 'k', RL_KEY_MAX_LEN);
    key[RL_KEY_MAX_LEN] = '\0';
    assert_int_equal(
        reserve(reserve_with(body_of("[{\"key\":\"%s\",\"amount\":1}]", key)), &msg, detail),
        RL_OK);
    assert_int_equal(strlen(msg.requests[0].requirements[0].key), RL_KEY_MAX_LEN);
    rl__wire_reserves_free(&msg);
}

/* ---- reserve: malformed ----------------------------------------------- */

static void test_reserve_not_json(void **state) {
    (void)state;
    RESERVE_REFUSED_N("", 0, "body is empty");
    RESERVE_REFUSED("{", "not valid JSON");
    RESERVE_REFUSED("}", "not valid JSON");
    RESERVE_REFUSED("not json", "not valid JSON");
    RESERVE_REFUSED("{\"lease_id\":}", "not valid JSON");
    RESERVE_REFUSED("{\"lease_id\" \"x\"}", "not valid JSON");
    RESERVE_REFUSED("{'lease_id':'x'}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":1,}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":[1,]}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":tru}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":nul}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":+1}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":.5}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":0x10}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":NaN}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":Infinity}", "not valid JSON");
    /* RFC 8259's number grammar, strictly. */
    const char *bad_numbers[] = {"01", "-01", "00", "1.", "1.e3", ".5", "-", "-a", "1e", "1e+",
                                 "1E-", "--1", "+1", "1e1.5", "1.5.1", "0x1", "1_000", "Infinity",
                                 "-Infinity", "NaN", "nan", "1,", "[1 2]", "[-]"};
    for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++)
        RESERVE_REFUSED(reserve_amount(bad_numbers[i]), "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"unterminated}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"bad escape \\x\"}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"short \\u12\"}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"lone surrogate \\ud800\"}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"lone low surrogate \\udc00\"}", "not valid JSON");
    RESERVE_REFUSED("{\"a\":\"bad pair \\ud800\\u0041\"}", "not valid JSON");
    RESERVE_REFUSED("\"just a string\\", "not valid JSON");
}

static void test_reserve_trailing_garbage(void **state) {
    (void)state;
    RESERVE_REFUSED(RESERVE4 "x", "after the JSON value");
    RESERVE_REFUSED(RESERVE4 " {}", "after the JSON value");
    RESERVE_REFUSED(RESERVE4 "}", "after the JSON value");
    RESERVE_REFUSED(RESERVE4 "\n,", "after the JSON value");
    /* A NUL after the value is not whitespace either. */
    RESERVE_REFUSED_N(RESERVE4 "\0", sizeof(RESERVE4), "control character");
    /* Vertical tab and form feed are whitespace to cJSON but not to JSON. */
    RESERVE_REFUSED(RESERVE4 "\v", "control character");
    RESERVE_REFUSED("\f" RESERVE4, "control character");
}

static void test_reserve_not_an_object(void **state) {
    (void)state;
    RESERVE_REFUSED("[]", "body must be a JSON object");
    RESERVE_REFUSED("[" RESERVE4 "]", "body must be a JSON object");
    RESERVE_REFUSED("1", "body must be a JSON object");
    RESERVE_REFUSED("\"" LEASE "\"", "body must be a JSON object");
    RESERVE_REFUSED("null", "body must be a JSON object");
    RESERVE_REFUSED("true", "body must be a JSON object");
}

static void test_reserve_bad_bytes(void **state) {
    (void)state;
    /* Not UTF-8: in a value we use, in an unknown field, even in a field name. */
    RESERVE_REFUSED(reserve_job("\"\xff\""), "not valid UTF-8");
    RESERVE_REFUSED(reserve_job("\"\xc0\xaf\""), "not valid UTF-8");     /* overlong '/' */
    RESERVE_REFUSED(reserve_job("\"\xe0\x80\xaf\""), "not valid UTF-8"); /* overlong */
    RESERVE_REFUSED(reserve_job("\"\xed\xa0\x80\""), "not valid UTF-8"); /* surrogate */
    RESERVE_REFUSED(reserve_job("\"\xf4\x90\x80\x80\""), "not valid UTF-8"); /* > U+10FFFF */
    RESERVE_REFUSED(reserve_job("\"\xe2\x82\""), "not valid UTF-8");     /* truncated */
    RESERVE_REFUSED(reserve_job("\"\x80\""), "not valid UTF-8");         /* lone continuation */
    RESERVE_REFUSED("{\"x\xfe\":1}", "not valid UTF-8");
    RESERVE_REFUSED_N("{\"a\":\"\xc3", 7, "not valid UTF-8"); /* cut inside a sequence */
    /* Raw control characters and NULs. */
    RESERVE_REFUSED(reserve_job("\"a\x01z\""), "control character");
    RESERVE_REFUSED(reserve_job("\"a\x1fz\""), "control character");
    RESERVE_REFUSED_N("{\"job_id\":\"a\0b\"}", 15, "control character");
    /* "\u0000" would silently cut a key short ("k\u0000x" would become "k"). */
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\\u0000x\",\"amount\":1}]"), "\\u0000");
    RESERVE_REFUSED(reserve_job("\"\\u0000\""), "\\u0000");
}

static void test_reserve_lease_id(void **state) {
    (void)state;
    const char *reqs = ",\"requirements\":[{\"key\":\"k\",\"amount\":1}]}";
    RESERVE_REFUSED(body_of("{\"job_id\":\"j\"%s", reqs), "lease_id is required");
    RESERVE_REFUSED(body_of("{\"Lease_id\":\"" LEASE "\"%s", reqs), "lease_id is required");
    const char *bad[] = {
        "null", "1", "true", "[]", "{}", "\"\"",
        "\"01ARZ3NDEKTSV4RRFFQ69G5FA\"",   /* 25 */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAVV\"", /* 27 */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAU\"",  /* U */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAI\"",  /* I */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAL\"",  /* L */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FAO\"",  /* O */
        "\"81ARZ3NDEKTSV4RRFFQ69G5FAV\"",  /* > 128 bits */
        "\"01ARZ3NDEKTSV4RRFFQ69G5FA \"",
        "\"01ARZ3NDEKTSV4RRFFQ69G5F-V\"",
        "\"01ARZ3NDEKTSV4RRFFQ69G5FA\\u00e9\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        RESERVE_REFUSED(body_of("{\"lease_id\":%s%s", bad[i], reqs),
                        "lease_id must be a ULID: 26 characters of Crockford base32, the first 0..7");
    RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"lease_id\":\"" LEASE2 "\"%s", reqs),
                    "lease_id appears twice");
}

static void test_reserve_job_id(void **state) {
    (void)state;
    const char *expected = "job_id must be null or a string of at most 128 bytes without control "
                           "characters";
    RESERVE_REFUSED(reserve_job("1"), expected);
    RESERVE_REFUSED(reserve_job("true"), expected);
    RESERVE_REFUSED(reserve_job("{}"), expected);
    RESERVE_REFUSED(reserve_job("[\"j\"]"), expected);
    RESERVE_REFUSED(reserve_job("\"tab\\there\""), expected);
    /* A raw tab is JSON whitespace between tokens, never inside a string
     * (RFC 8259 wants it escaped): the body is refused before job_id is. */
    RESERVE_REFUSED(reserve_job("\"raw\ttab\""), "control character");
    RESERVE_REFUSED(reserve_job("\"new\\nline\""), expected);
    RESERVE_REFUSED(reserve_job("\"del\\u007f\""), expected);
    RESERVE_REFUSED(reserve_job("\"esc\\u001b[31m\""), expected);
    char job[RL_JOB_ID_MAX_LEN + 4];
    memset(job, 'j', sizeof job);
    job[0] = '"';
    job[RL_JOB_ID_MAX_LEN + 2] = '"';
    job[RL_JOB_ID_MAX_LEN + 3] = '\0'; /* 129 bytes */
    RESERVE_REFUSED(reserve_job(job), expected);
    /* 65 two-byte characters: 65 characters but 130 bytes. */
    char wide[2 + 65 * 2 + 1] = "\"";
    for (int i = 0; i < 65; i++) strcat(wide, "\xc3\xa9");
    strcat(wide, "\"");
    RESERVE_REFUSED(reserve_job(wide), expected);
    RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"job_id\":null,\"job_id\":\"j\","
                            "\"requirements\":[{\"key\":\"k\",\"amount\":1}]}"),
                    "job_id appears twice");
}

static void test_reserve_requirements_list(void **state) {
    (void)state;
    const char *expected = "requirements must be an array of 1..32 requirements";
    RESERVE_REFUSED("{\"lease_id\":\"" LEASE "\"}", "requirements is required");
    RESERVE_REFUSED(reserve_with("null"), expected);
    RESERVE_REFUSED(reserve_with("[]"), expected);
    RESERVE_REFUSED(reserve_with("{}"), expected);
    RESERVE_REFUSED(reserve_with("{\"key\":\"k\",\"amount\":1}"), expected);
    RESERVE_REFUSED(reserve_with("\"k\""), expected);
    RESERVE_REFUSED(reserve_with("1"), expected);
    RESERVE_REFUSED(reserve_with(requirements_json(33, "amount")), expected);
    RESERVE_REFUSED(reserve_with(requirements_json(200, "amount")), expected);
    RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"k\","
                            "\"amount\":1}],\"requirements\":[{\"key\":\"j\",\"amount\":1}]}"),
                    "requirements appears twice");
}

static void test_reserve_requirement_items(void **state) {
    (void)state;
    RESERVE_REFUSED(reserve_with("[1]"), "requirements[0] must be an object");
    RESERVE_REFUSED(reserve_with("[null]"), "requirements[0] must be an object");
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\",\"amount\":1},[]]"),
                    "requirements[1] must be an object");
    RESERVE_REFUSED(reserve_with("[{\"amount\":1}]"), "requirements[0].key is required");
    RESERVE_REFUSED(reserve_with("[{\"Key\":\"k\",\"amount\":1}]"), "requirements[0].key is required");
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\"}]"), "requirements[0].amount is required");
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\",\"Amount\":1}]"),
                    "requirements[0].amount is required");
    const char *key_msg =
        "requirements[0].key must be a string of 1..256 printable ASCII characters without spaces";
    const char *bad_keys[] = {"\"\"", "\"a b\"", "\"a\\tb\"", "\"caf\xc3\xa9\"", "\"del\\u007f\"",
                              "1", "null", "true", "[\"k\"]", "{}"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++)
        RESERVE_REFUSED(reserve_with(body_of("[{\"key\":%s,\"amount\":1}]", bad_keys[i])), key_msg);
    char key[RL_KEY_MAX_LEN + 2];
    memset(key, 'k', RL_KEY_MAX_LEN + 1);
    key[RL_KEY_MAX_LEN + 1] = '\0'; /* 257 */
    RESERVE_REFUSED(reserve_with(body_of("[{\"key\":\"%s\",\"amount\":1}]", key)), key_msg);
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\",\"key\":\"j\",\"amount\":1}]"),
                    "requirements[0].key appears twice");
    RESERVE_REFUSED(reserve_with("[{\"key\":\"k\",\"amount\":1,\"amount\":2}]"),
                    "requirements[0].amount appears twice");
}

static void test_reserve_amounts(void **state) {
    (void)state;
    const char *bad[] = {
        "0", "-1", "-0", "1.5", "0.5", "1e-1", "9007199254740993.5",
        "9007199254740993",      /* 2^53 + 1: a double would round it to 2^53 */
        "9007199254740994",      /* 2^53 + 2: exactly representable, too big */
        "9007199254740992.5", "9.0071992547409921e15", "1.0000000000000000000001",
        "99999999999999999999", /* more than 19 digits */
        "1e19", "1e1000000000000", "1e-1000000000000", "0e5", "-0.0",
        "18446744073709551616",  /* 2^64 */
        "1e400",                 /* infinity to strtod */
        "-1e400", "1e20",
        "\"1\"", "true", "false", "null", "[1]", "{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        RESERVE_REFUSED(reserve_amount(bad[i]), "requirements[0].amount " AMOUNT_MSG);
}

static void test_reserve_duplicate_keys(void **state) {
    (void)state;
    RESERVE_REFUSED(reserve_with("[{\"key\":\"a\",\"amount\":1},{\"key\":\"b\",\"amount\":1},"
                                 "{\"key\":\"a\",\"amount\":2}]"),
                    "requirements[2].key repeats requirements[0].key");
    /* Keys differ by case: two different limits, fine. */
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(reserve_with("[{\"key\":\"a\",\"amount\":1},{\"key\":\"A\",\"amount\":1}]"),
                             &msg, detail),
                     RL_OK);
    rl__wire_reserves_free(&msg);
    /* The same key written with an escape is still the same key. */
    RESERVE_REFUSED(reserve_with("[{\"key\":\"a\",\"amount\":1},{\"key\":\"\\u0061\",\"amount\":1}]"),
                    "requirements[1].key repeats requirements[0].key");
}

static void test_reserve_exact_detail(void **state) {
    (void)state;
    /* The exact sentences a user sees (and the server passes on). */
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(reserve_with("[{\"key\":\"a\",\"amount\":1},{\"key\":\"b\",\"amount\":1.5}]"),
                             &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "requirements[1].amount must be an integer 1..9007199254740992");
    assert_int_equal(reserve("{\"requirements\":[]}", &msg, detail), RL_INVALID_REQUEST);
    assert_string_equal(detail, "lease_id is required");
    assert_int_equal(reserve("[]", &msg, detail), RL_INVALID_REQUEST);
    assert_string_equal(detail, "body must be a JSON object");
    assert_int_equal(reserve("{\"a\":1} x", &msg, detail), RL_INVALID_REQUEST);
    assert_string_equal(detail, "body has unexpected data after the JSON value (at byte 8)");
    assert_int_equal(reserve("{\"a\":}", &msg, detail), RL_INVALID_REQUEST);
    assert_string_equal(detail, "body is not valid JSON (error near byte 5)");
}

/* A reserve body nesting `depth` levels of objects and arrays, the root
 * included: arrays inside an unknown field, then the real fields. */
static const char *reserve_nested(int depth) {
    static char body[5000];
    size_t at = (size_t)snprintf(body, sizeof body, "{\"x\":");
    for (int i = 1; i < depth; i++) body[at++] = '[';
    for (int i = 1; i < depth; i++) body[at++] = ']';
    snprintf(body + at, sizeof body - at,
             ",\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"k\",\"amount\":1}]}");
    return body;
}

static void test_reserve_deep_nesting(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(reserve_nested(64), &msg, detail), RL_OK);
    rl__wire_reserves_free(&msg);
    RESERVE_REFUSED(reserve_nested(65), "body nests objects and arrays more than 64 deep");
    RESERVE_REFUSED(reserve_nested(1500), "body nests objects and arrays more than 64 deep");
}

/* The body is read once, in the sender's member order, yet the sentence is
 * the one a fixed field order finds first (wire.h), and a syntax error
 * anywhere wins over any field problem. */
static void test_reserve_problem_order(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    const char *ulid_msg = "lease_id must be a ULID: 26 characters of Crockford base32, the first 0..7";
    assert_int_equal(reserve("{\"requirements\":[{\"key\":\"a b\",\"amount\":0}],\"job_id\":5,"
                             "\"lease_id\":\"bad\"}",
                             &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, ulid_msg);
    assert_int_equal(reserve("{\"requirements\":[{\"key\":\"a b\",\"amount\":0}],\"job_id\":5,"
                             "\"lease_id\":\"" LEASE "\"}",
                             &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "job_id must be null or a string of at most 128 bytes without "
                                "control characters");
    /* A field twice comes first, even after the other problems. */
    assert_int_equal(reserve("{\"lease_id\":\"bad\",\"job_id\":1,\"job_id\":2}", &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "job_id appears twice");
    /* In an element: twice, then key, then amount. */
    assert_int_equal(reserve(reserve_with("[{\"amount\":0,\"key\":\"a b\"}]"), &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "requirements[0].key must be a string of 1..256 printable ASCII "
                                "characters without spaces");
    assert_int_equal(reserve(reserve_with("[{\"amount\":0,\"key\":\"a b\",\"amount\":1}]"), &msg,
                             detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "requirements[0].amount appears twice");
    /* The first bad element is the one reported... */
    assert_int_equal(reserve(reserve_with("[{\"key\":\"a\",\"amount\":1},{\"key\":\"b\",\"amount\":0},"
                                          "{\"key\":\"c\"}]"),
                             &msg, detail),
                     RL_INVALID_REQUEST);
    assert_string_equal(detail, "requirements[1].amount must be an integer 1..9007199254740992");
    /* ...unless the list itself is wrong: too long here. */
    static char list[8192 + 64];
    snprintf(list, sizeof list, "[{\"key\":\"a b\",\"amount\":1},%s", requirements_json(32, "amount") + 1);
    RESERVE_REFUSED(reserve_with(list), "requirements must be an array of 1..32 requirements");
    /* Not JSON, after a field problem: that is what the sender must fix first. */
    RESERVE_REFUSED("{\"lease_id\":\"bad\",\"requirements\":[}", "not valid JSON");
    RESERVE_REFUSED("{\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"k\",\"amount\":01}]}",
                    "not valid JSON");
    RESERVE_REFUSED("[1,2,{\"a\":}]", "not valid JSON");
    RESERVE_REFUSED("{\"lease_id\":\"bad\"} x", "after the JSON value");
    RESERVE_REFUSED("{\"lease_id\":\"bad\",\"x\":\"\xff\"}", "not valid UTF-8");
}

static void test_reserve_escaped_names(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* Member names are JSON strings like any other: escapes are decoded. */
    assert_int_equal(reserve("{\"lease\\u005fid\":\"" LEASE "\",\"\\u006aob_id\":\"j\","
                             "\"requirement\\u0073\":[{\"\\u006bey\":\"k\",\"amoun\\u0074\":2}]}",
                             &msg, detail),
                     RL_OK);
    assert_string_equal(msg.requests[0].lease_id, LEASE);
    assert_string_equal(msg.requests[0].job_id, "j");
    assert_int_equal(msg.requests[0].requirements[0].amount, 2);
    rl__wire_reserves_free(&msg);
    RESERVE_REFUSED("{\"lease_id\":\"" LEASE "\",\"lease\\u005fid\":\"" LEASE "\"}",
                    "lease_id appears twice");
}

/* ---- complete --------------------------------------------------------- */

static void test_complete_valid(void **state) {
    (void)state;
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(complete(COMPLETE2, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 1);
    assert_int_equal(msg.item_status[0], RL_OK);
    const rl_complete_request *c = &msg.requests[0];
    assert_string_equal(c->lease_id, LEASE);
    assert_string_equal(c->job_id, "job-7");
    assert_int_equal(c->actual_count, 2);
    assert_string_equal(c->actuals[0].key, TPM);
    assert_int_equal(c->actuals[0].actual_amount, 740);
    assert_string_equal(c->actuals[1].key, DAILY);
    rl__wire_completes_free(&msg);
    assert_null(msg.storage_);
    rl__wire_completes_free(NULL);
}

static void test_complete_empty_actuals(void **state) {
    (void)state;
    const char *bodies[] = {
        "{\"lease_id\":\"" LEASE "\"}",
        "{\"lease_id\":\"" LEASE "\",\"actuals\":null}",
        "{\"lease_id\":\"" LEASE "\",\"actuals\":[]}",
        "{\"lease_id\":\"01arz3ndektsv4rrffq69g5fav\",\"job_id\":null,\"actuals\":[]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        rl_wire_completes msg;
        char detail[RL_WIRE_DETAIL_SIZE];
        assert_int_equal(complete(bodies[i], &msg, detail), RL_OK);
        assert_true(strcasecmp(msg.requests[0].lease_id, LEASE) == 0);
        assert_null(msg.requests[0].job_id);
        assert_int_equal(msg.requests[0].actual_count, 0);
        rl__wire_completes_free(&msg);
    }
}

static void test_complete_amounts(void **state) {
    (void)state;
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* 0 is a valid actual amount: the call used nothing. */
    assert_int_equal(complete("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\","
                              "\"actual_amount\":0},{\"key\":\"j\",\"actual_amount\":9007199254740992}]}",
                              &msg, detail),
                     RL_OK);
    assert_int_equal(msg.requests[0].actuals[0].actual_amount, 0);
    assert_true(msg.requests[0].actuals[1].actual_amount == RL_AMOUNT_MAX);
    rl__wire_completes_free(&msg);

    /* Zero written any way is zero ("-0" too: it is the same number). */
    const char *zeros[] = {"0", "-0", "0.0", "0e7", "-0.0e-3"};
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++) {
        assert_int_equal(complete(body_of("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\","
                                          "\"actual_amount\":%s}]}",
                                          zeros[i]),
                                  &msg, detail),
                         RL_OK);
        assert_int_equal(msg.requests[0].actuals[0].actual_amount, 0);
        rl__wire_completes_free(&msg);
    }

    const char *bad[] = {"-1", "1.5", "9007199254740993", "9007199254740994", "1e400", "-1e-400",
                         "\"5\"", "null", "true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        COMPLETE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\","
                                 "\"actual_amount\":%s}]}",
                                 bad[i]),
                         "actuals[0].actual_amount must be an integer 0..9007199254740992");
    /* "amount" is the reserve field, not this one. */
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\",\"amount\":1}]}",
                     "actuals[0].actual_amount is required");
}

static void test_complete_malformed(void **state) {
    (void)state;
    const char *list_msg = "actuals must be null or an array of 0..32 actuals";
    COMPLETE_REFUSED("", "body is empty");
    COMPLETE_REFUSED("{", "not valid JSON");
    COMPLETE_REFUSED(COMPLETE2 " x", "after the JSON value");
    COMPLETE_REFUSED("[]", "body must be a JSON object");
    COMPLETE_REFUSED("{\"actuals\":[]}", "lease_id is required");
    COMPLETE_REFUSED("{\"lease_id\":\"nope\"}", "lease_id must be a ULID");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"job_id\":5}", "job_id must be null or a string");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":{}}", list_msg);
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":1}", list_msg);
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":\"k\"}", list_msg);
    COMPLETE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"actuals\":%s}",
                             requirements_json(33, "actual_amount")),
                     list_msg);
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[1]}", "actuals[0] must be an object");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"actual_amount\":1}]}",
                     "actuals[0].key is required");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"a b\",\"actual_amount\":1}]}",
                     "actuals[0].key must be a string");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":1},"
                     "{\"key\":\"k\",\"actual_amount\":2}]}",
                     "actuals[1].key repeats actuals[0].key");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[],\"actuals\":[]}",
                     "actuals appears twice");
    COMPLETE_REFUSED("{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":1,"
                     "\"actual_amount\":1}]}",
                     "actuals[0].actual_amount appears twice");

    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(complete(body_of("{\"lease_id\":\"" LEASE "\",\"actuals\":%s}",
                                      requirements_json(32, "actual_amount")),
                              &msg, detail),
                     RL_OK);
    assert_int_equal(msg.requests[0].actual_count, 32);
    rl__wire_completes_free(&msg);
}

/* ---- batches ---------------------------------------------------------- */

/* {"requests":[item, item, ...]} with n copies of item. */
static const char *batch_of(const char *item, size_t n) {
    static char out[1 << 20];
    size_t at = (size_t)snprintf(out, sizeof out, "{\"requests\":[");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, sizeof out - at, "%s%s", i > 0 ? "," : "", item);
    snprintf(out + at, sizeof out - at, "]}");
    return out;
}

static void test_reserve_batch_valid(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve_batch(batch_of(RESERVE4, 256), 0, &msg, detail), RL_OK);
    assert_string_equal(detail, "");
    assert_int_equal(msg.count, 256);
    for (size_t i = 0; i < 256; i++) {
        assert_int_equal(msg.item_status[i], RL_OK);
        assert_string_equal(msg.requests[i].lease_id, LEASE);
        assert_int_equal(msg.requests[i].requirement_count, 4);
        assert_string_equal(msg.requests[i].requirements[3].key, DAILY);
        assert_string_equal(rl__wire_reserves_item_detail(&msg, i), "");
    }
    /* Each request has its own requirements. */
    assert_ptr_not_equal(msg.requests[0].requirements, msg.requests[1].requirements);
    rl__wire_reserves_free(&msg);

    assert_int_equal(reserve_batch(batch_of(RESERVE4, 3), 3, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 3);
    rl__wire_reserves_free(&msg);
}

static void test_reserve_batch_item_errors(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    const char *body = body_of(
        "{\"requests\":[%s,"
        "{\"lease_id\":\"" LEASE2 "\",\"requirements\":[{\"key\":\"a\",\"amount\":1},"
        "{\"key\":\"b\",\"amount\":0}]},"
        "7,"
        "{\"lease_id\":\"" LEASE2 "\",\"requirements\":[{\"key\":\"x\",\"amount\":2},"
        "{\"key\":\"y\",\"amount\":3}]},"
        "{\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"x\",\"amount\":2}]},"
        "{\"lease_id\":\"" LEASE2 "\",\"requirements\":%s}]}",
        RESERVE4, requirements_json(32, "amount"));
    assert_int_equal(reserve_batch(body, 0, &msg, detail), RL_OK);
    /* detail is the first invalid item's sentence. */
    assert_string_equal(detail, "requests[1].requirements[1].amount must be an integer 1..9007199254740992");
    assert_int_equal(msg.count, 6);
    assert_int_equal(msg.item_status[0], RL_OK);
    assert_int_equal(msg.item_status[1], RL_INVALID_REQUEST);
    assert_int_equal(msg.item_status[2], RL_INVALID_REQUEST);
    assert_int_equal(msg.item_status[3], RL_OK);
    assert_int_equal(msg.item_status[4], RL_INVALID_REQUEST);
    assert_int_equal(msg.item_status[5], RL_OK);
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 0), "");
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 1),
                        "requests[1].requirements[1].amount must be an integer 1..9007199254740992");
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 2), "requests[2] must be an object");
    assert_non_null(strstr(rl__wire_reserves_item_detail(&msg, 4), "requests[4].lease_id must be a ULID"));
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 99), "");
    /* The valid ones are fully decoded, around the invalid ones. */
    assert_int_equal(msg.requests[0].requirement_count, 4);
    assert_string_equal(msg.requests[0].requirements[0].key, RPM);
    assert_int_equal(msg.requests[3].requirement_count, 2);
    assert_string_equal(msg.requests[3].requirements[0].key, "x");
    assert_int_equal(msg.requests[3].requirements[1].amount, 3);
    assert_int_equal(msg.requests[5].requirement_count, 32);
    assert_string_equal(msg.requests[5].requirements[31].key, "k31");
    assert_int_equal(msg.requests[5].requirements[31].amount, 32);
    /* An invalid item is left empty. */
    assert_null(msg.requests[1].lease_id);
    assert_int_equal(msg.requests[1].requirement_count, 0);
    rl__wire_reserves_free(&msg);
}

static void reserve_batch_refused(const char *body, size_t max_batch, const char *expected,
                                  const char *file, int line) {
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = reserve_batch(body, max_batch, &msg, detail);
    if (status != RL_INVALID_REQUEST)
        fail_msg("%s:%d: status %s for %.200s", file, line, rl_status_name(status), body);
    assert_null(msg.storage_);
    assert_null(msg.requests);
    assert_int_equal(msg.count, 0);
    check_detail(detail, expected, file, line);
}
#define RESERVE_BATCH_REFUSED(body, max, expected) \
    reserve_batch_refused((body), (max), (expected), __FILE__, __LINE__)

static void test_reserve_batch_payload_errors(void **state) {
    (void)state;
    const char *count_msg = "requests must be an array of 1..256 requests";
    RESERVE_BATCH_REFUSED("", 0, "body is empty");
    RESERVE_BATCH_REFUSED("{\"requests\":[", 0, "not valid JSON");
    RESERVE_BATCH_REFUSED("[" RESERVE4 "]", 0, "body must be a JSON object");
    RESERVE_BATCH_REFUSED(RESERVE4, 0, "requests is required");
    RESERVE_BATCH_REFUSED("{}", 0, "requests is required");
    RESERVE_BATCH_REFUSED("{\"Requests\":[" RESERVE4 "]}", 0, "requests is required");
    RESERVE_BATCH_REFUSED("{\"requests\":null}", 0, count_msg);
    RESERVE_BATCH_REFUSED("{\"requests\":" RESERVE4 "}", 0, count_msg);
    RESERVE_BATCH_REFUSED("{\"requests\":\"x\"}", 0, count_msg);
    RESERVE_BATCH_REFUSED("{\"requests\":[]}", 0, count_msg);
    RESERVE_BATCH_REFUSED(batch_of(RESERVE4, 257), 0, count_msg);
    RESERVE_BATCH_REFUSED(batch_of(RESERVE4, 3), 2, "requests must be an array of 1..2 requests");
    RESERVE_BATCH_REFUSED("{\"requests\":[" RESERVE4 "],\"requests\":[" RESERVE4 "]}", 0,
                          "requests appears twice");
    RESERVE_BATCH_REFUSED("{\"requests\":[" RESERVE4 "]} x", 0, "after the JSON value");
    RESERVE_BATCH_REFUSED("{\"requests\":[\"\xff\"]}", 0, "not valid UTF-8");

    /* A batch of one invalid item is still a well-formed payload. */
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve_batch("{\"requests\":[{}]}", 0, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 1);
    assert_int_equal(msg.item_status[0], RL_INVALID_REQUEST);
    assert_string_equal(detail, "requests[0].lease_id is required");
    rl__wire_reserves_free(&msg);
}

/* The message's block is sized from the body's length: the densest bodies
 * (shortest requirements, many of them) must fit exactly. */
static void test_reserve_densest_bodies(void **state) {
    (void)state;
    static const char keys[] = "abcdefghijklmnopqrstuvwxyzABCDEF"; /* 32 one-byte keys */
    static char item[2048];
    size_t at = (size_t)snprintf(item, sizeof item, "{\"lease_id\":\"" LEASE "\",\"requirements\":[");
    for (size_t i = 0; i < 32; i++)
        at += (size_t)snprintf(item + at, sizeof item - at, "%s{\"key\":\"%c\",\"amount\":1}",
                               i > 0 ? "," : "", keys[i]);
    snprintf(item + at, sizeof item - at, "]}");
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(reserve(item, &msg, detail), RL_OK);
    assert_int_equal(msg.requests[0].requirement_count, 32);
    rl__wire_reserves_free(&msg);
    assert_int_equal(reserve_batch(batch_of(item, 256), 0, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 256);
    for (size_t i = 0; i < 256; i++) {
        assert_int_equal(msg.item_status[i], RL_OK);
        assert_int_equal(msg.requests[i].requirement_count, 32);
        assert_string_equal(msg.requests[i].requirements[31].key, "F");
    }
    rl__wire_reserves_free(&msg);
    /* Many tiny items, all invalid, under a large max_batch. */
    assert_int_equal(reserve_batch(batch_of("7", 5000), 100000, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 5000);
    assert_int_equal(msg.item_status[4999], RL_INVALID_REQUEST);
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 4999), "requests[4999] must be an object");
    rl__wire_reserves_free(&msg);
    assert_int_equal(reserve_batch("{\"requests\":[{}]}", 1000000, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 1);
    rl__wire_reserves_free(&msg);
}

static void test_reserve_batch_syntax_after_items(void **state) {
    (void)state;
    /* Items already decoded, valid or not, do not save a payload that turns
     * out not to be JSON. */
    RESERVE_BATCH_REFUSED("{\"requests\":[" RESERVE4 ",{\"lease_id\":\"bad\"},7,{\"x\":01}]}", 0,
                          "not valid JSON");
    RESERVE_BATCH_REFUSED("{\"requests\":[" RESERVE4 ",{}],\"tail\":[1,]}", 0, "not valid JSON");
    RESERVE_BATCH_REFUSED("{\"requests\":[" RESERVE4 "],\"tail\":\"\\u0000\"}", 0, "\\u0000");
}

static void test_complete_batch(void **state) {
    (void)state;
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(complete_batch(batch_of(COMPLETE2, 256), 0, &msg, detail), RL_OK);
    assert_int_equal(msg.count, 256);
    for (size_t i = 0; i < 256; i++) {
        assert_int_equal(msg.item_status[i], RL_OK);
        assert_int_equal(msg.requests[i].actual_count, 2);
        assert_string_equal(msg.requests[i].actuals[1].key, DAILY);
    }
    rl__wire_completes_free(&msg);

    const char *body = "{\"requests\":["
                       "{\"lease_id\":\"" LEASE "\"},"
                       "{\"lease_id\":\"" LEASE "\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":-1}]},"
                       "{\"lease_id\":\"" LEASE2 "\",\"actuals\":[{\"key\":\"k\",\"actual_amount\":4}]}"
                       "]}";
    assert_int_equal(complete_batch(body, 0, &msg, detail), RL_OK);
    assert_string_equal(detail,
                        "requests[1].actuals[0].actual_amount must be an integer 0..9007199254740992");
    assert_int_equal(msg.item_status[0], RL_OK);
    assert_int_equal(msg.item_status[1], RL_INVALID_REQUEST);
    assert_int_equal(msg.item_status[2], RL_OK);
    assert_int_equal(msg.requests[0].actual_count, 0);
    assert_string_equal(msg.requests[2].lease_id, LEASE2);
    assert_int_equal(msg.requests[2].actuals[0].actual_amount, 4);
    assert_string_equal(rl__wire_completes_item_detail(&msg, 1), detail);
    rl__wire_completes_free(&msg);

    const char *payload_errors[] = {"{}", "{\"requests\":[]}", "{\"requests\":{}}", "[]", "{",
                                    batch_of(COMPLETE2, 257)};
    for (size_t i = 0; i < sizeof payload_errors / sizeof payload_errors[0]; i++) {
        assert_int_equal(complete_batch(payload_errors[i], 0, &msg, detail), RL_INVALID_REQUEST);
        assert_null(msg.storage_);
        assert_int_equal(msg.count, 0);
    }
    assert_int_equal(complete_batch(batch_of(COMPLETE2, 2), 1, &msg, detail), RL_INVALID_REQUEST);
    assert_string_equal(detail, "requests must be an array of 1..1 requests");
}

/* ---- limit definitions ------------------------------------------------ */

static void test_limit_def_valid(void **state) {
    (void)state;
    rl_limit_def def;
    char detail[RL_WIRE_DETAIL_SIZE];
    assert_int_equal(limit_def(LIMIT_DEF, &def, detail), RL_OK);
    assert_string_equal(def.key, RPM);
    assert_int_equal(def.kind, RL_KIND_ROLLING);
    assert_int_equal(def.capacity, 3000);
    assert_int_equal(def.window_seconds, 60);
    assert_int_equal(def.timeout_seconds, 0);
    assert_string_equal(def.unit, "requests");
    assert_string_equal(def.description, "OpenAI gpt-4o requests per minute");
    assert_int_equal(def.overage, RL_OVERAGE_DEBT);

    /* Defaults: unit, description "", overage debt, the unused duration 0. */
    assert_int_equal(limit_def("{\"key\":\"c\",\"kind\":\"concurrency\",\"capacity\":50,"
                               "\"timeout_seconds\":600}",
                               &def, detail),
                     RL_OK);
    assert_int_equal(def.kind, RL_KIND_CONCURRENCY);
    assert_int_equal(def.window_seconds, 0);
    assert_int_equal(def.timeout_seconds, 600);
    assert_string_equal(def.unit, "");
    assert_string_equal(def.description, "");
    assert_int_equal(def.overage, RL_OVERAGE_DEBT);

    /* null is the same as absent for optional fields. */
    assert_int_equal(limit_def("{\"key\":\"r\",\"kind\":\"rolling\",\"capacity\":9007199254740992,"
                               "\"window_seconds\":31622400,\"timeout_seconds\":null,\"unit\":null,"
                               "\"description\":null,\"overage\":\"deny\",\"future\":[1]}",
                               &def, detail),
                     RL_OK);
    assert_true(def.capacity == RL_AMOUNT_MAX);
    assert_int_equal(def.window_seconds, RL_WINDOW_SECONDS_MAX);
    assert_int_equal(def.overage, RL_OVERAGE_DENY);

    /* Longest unit and description, UTF-8 allowed. */
    char unit[RL_UNIT_MAX_LEN + 1], description[RL_DESCRIPTION_MAX_LEN + 1];
    memset(unit, 'u', RL_UNIT_MAX_LEN);
    unit[RL_UNIT_MAX_LEN] = '\0';
    memset(description, 'd', RL_DESCRIPTION_MAX_LEN);
    memcpy(description, "\xc3\xa9t\xc3\xa9", 5);
    description[RL_DESCRIPTION_MAX_LEN] = '\0';
    assert_int_equal(limit_def(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,"
                                       "\"window_seconds\":1,\"unit\":\"%s\",\"description\":\"%s\"}",
                                       unit, description),
                               &def, detail),
                     RL_OK);
    assert_string_equal(def.unit, unit);
    assert_string_equal(def.description, description);
}

static const char *def_with(const char *field_json) {
    return body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":10,\"window_seconds\":60%s}",
                   field_json);
}
static const char *def_without(const char *key, const char *kind, const char *capacity) {
    return body_of("{%s%s%s\"window_seconds\":60}", key, kind, capacity);
}

static void test_limit_def_malformed(void **state) {
    (void)state;
    LIMIT_REFUSED("", "body is empty");
    LIMIT_REFUSED("{", "not valid JSON");
    LIMIT_REFUSED(LIMIT_DEF "]", "after the JSON value");
    LIMIT_REFUSED("[" LIMIT_DEF "]", "body must be a JSON object");
    LIMIT_REFUSED("\"x\"", "body must be a JSON object");
    /* required fields */
    LIMIT_REFUSED(def_without("", "\"kind\":\"rolling\",", "\"capacity\":1,"), "key is required");
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "", "\"capacity\":1,"), "kind is required");
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "\"kind\":\"rolling\",", ""), "capacity is required");
    /* key */
    const char *key_msg = "key must be a string of 1..256 printable ASCII characters without spaces";
    LIMIT_REFUSED(def_without("\"key\":\"\",", "\"kind\":\"rolling\",", "\"capacity\":1,"), key_msg);
    LIMIT_REFUSED(def_without("\"key\":\"a b\",", "\"kind\":\"rolling\",", "\"capacity\":1,"), key_msg);
    LIMIT_REFUSED(def_without("\"key\":7,", "\"kind\":\"rolling\",", "\"capacity\":1,"), key_msg);
    LIMIT_REFUSED(def_without("\"key\":null,", "\"kind\":\"rolling\",", "\"capacity\":1,"), key_msg);
    char key[RL_KEY_MAX_LEN + 2];
    memset(key, 'k', RL_KEY_MAX_LEN + 1);
    key[RL_KEY_MAX_LEN + 1] = '\0';
    LIMIT_REFUSED(body_of("{\"key\":\"%s\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1}",
                          key),
                  key_msg);
    /* kind */
    const char *kind_msg = "kind must be \"rolling\", \"concurrency\" or \"budget\"";
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "\"kind\":\"Rolling\",", "\"capacity\":1,"), kind_msg);
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "\"kind\":\"window\",", "\"capacity\":1,"), kind_msg);
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "\"kind\":0,", "\"capacity\":1,"), kind_msg);
    LIMIT_REFUSED(def_without("\"key\":\"k\",", "\"kind\":null,", "\"capacity\":1,"), kind_msg);
    /* capacity */
    const char *bad_capacity[] = {"0", "-1", "1.5", "\"10\"", "9007199254740994", "1e400", "null",
                                  "true"};
    for (size_t i = 0; i < sizeof bad_capacity / sizeof bad_capacity[0]; i++)
        LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":%s,"
                              "\"window_seconds\":60}",
                              bad_capacity[i]),
                      "capacity must be an integer 1..9007199254740992");
    /* durations */
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":-1}"),
                  "window_seconds must be an integer 0..31622400");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1.5}"),
                  "window_seconds must be an integer 0..31622400");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,"
                          "\"window_seconds\":31622401}"),
                  "window_seconds must be an integer 0..31622400");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":\"60\"}"),
                  "window_seconds must be an integer");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1,\"window_seconds\":1e10}"),
                  "window_seconds must be an integer");
    LIMIT_REFUSED(def_with(",\"timeout_seconds\":604801"), "timeout_seconds must be an integer 0..604800");
    /* rules of rl_limit_def_validate */
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"rolling\",\"capacity\":1}"),
                  "window_seconds must be 1..31622400 for a rolling limit");
    LIMIT_REFUSED(def_with(",\"timeout_seconds\":5"), "timeout_seconds must be 0 for a rolling limit");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"concurrency\",\"capacity\":1}"),
                  "timeout_seconds must be 1..604800 for a concurrency limit");
    LIMIT_REFUSED(body_of("{\"key\":\"k\",\"kind\":\"concurrency\",\"capacity\":1,"
                          "\"timeout_seconds\":5,\"window_seconds\":5}"),
                  "window_seconds must be 0 for a concurrency limit");
    /* overage */
    LIMIT_REFUSED(def_with(",\"overage\":\"allow\""), "overage must be \"debt\" or \"deny\"");
    LIMIT_REFUSED(def_with(",\"overage\":\"DENY\""), "overage must be \"debt\" or \"deny\"");
    LIMIT_REFUSED(def_with(",\"overage\":1"), "overage must be \"debt\" or \"deny\"");
    /* unit / description */
    char unit[RL_UNIT_MAX_LEN + 2];
    memset(unit, 'u', RL_UNIT_MAX_LEN + 1);
    unit[RL_UNIT_MAX_LEN + 1] = '\0';
    LIMIT_REFUSED(def_with(body_of(",\"unit\":\"%s\"", unit)), "unit must be a string of at most 64 bytes");
    LIMIT_REFUSED(def_with(",\"unit\":\"a\\nb\""), "unit must be a string of at most 64 bytes");
    LIMIT_REFUSED(def_with(",\"unit\":5"), "unit must be a string of at most 64 bytes");
    static char description[RL_DESCRIPTION_MAX_LEN + 2];
    memset(description, 'd', RL_DESCRIPTION_MAX_LEN + 1);
    description[RL_DESCRIPTION_MAX_LEN + 1] = '\0';
    LIMIT_REFUSED(def_with(body_of(",\"description\":\"%s\"", description)),
                  "description must be a string of at most 1024 bytes");
    LIMIT_REFUSED(def_with(",\"description\":\"bell\\u0007\""), "description must be a string");
    LIMIT_REFUSED(def_with(",\"description\":\"\xc3\""), "not valid UTF-8");
    /* duplicates */
    LIMIT_REFUSED(def_with(",\"capacity\":20"), "capacity appears twice");
    LIMIT_REFUSED(def_with(",\"key\":\"k\""), "key appears twice");
    LIMIT_REFUSED(def_with(",\"overage\":\"debt\",\"overage\":\"deny\""), "overage appears twice");
}

/* Each integer member is read exactly, as the lease decoders read amounts:
 * any spelling of an integer in range is that integer, and nothing is
 * rounded into range (a double would make 2^53 + 1 into 2^53, and
 * 59.99999999999999999 into 60). */
static void test_limit_def_integers_exact(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *others; /* the rest of a valid definition */
        uint64_t max;
        const char *sentence;
    } members[] = {
        {"capacity", "\"kind\":\"rolling\",\"window_seconds\":60", RL_AMOUNT_MAX,
         "capacity must be an integer 1..9007199254740992"},
        {"window_seconds", "\"kind\":\"rolling\",\"capacity\":10", RL_WINDOW_SECONDS_MAX,
         "window_seconds must be an integer 0..31622400"},
        {"timeout_seconds", "\"kind\":\"concurrency\",\"capacity\":10", RL_TIMEOUT_SECONDS_MAX,
         "timeout_seconds must be an integer 0..604800"},
    };
    for (size_t m = 0; m < sizeof members / sizeof members[0]; m++) {
        const char *name = members[m].name;
        uint64_t max = members[m].max;
        struct {
            const char *json;
            uint64_t value;
        } accepted[] = {
            {body_of("%llu", (unsigned long long)max), max},
            {body_of("%llu.0", (unsigned long long)max), max},
            {"1800.0", 1800},
            {"1.8e3", 1800},
            {"18E2", 1800},
            {"180000e-2", 1800},
            {"1800.000000000000000000000", 1800},
        };
        for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
            if (accepted[i].value > max) continue;
            rl_limit_def def;
            char detail[RL_WIRE_DETAIL_SIZE];
            const char *body =
                body_of("{\"key\":\"k\",%s,\"%s\":%s}", members[m].others, name, accepted[i].json);
            if (limit_def(body, &def, detail) != RL_OK) fail_msg("%s refused: %s", body, detail);
            uint64_t got = m == 0 ? def.capacity : m == 1 ? def.window_seconds : def.timeout_seconds;
            if (got != accepted[i].value)
                fail_msg("%s: %s is %llu", body, name, (unsigned long long)got);
        }
        const char *refused[] = {
            body_of("%llu", (unsigned long long)max + 1),
            body_of("%llu.000000000000000000001", (unsigned long long)max),
            "9007199254740993", /* 2^53 + 1: a double holds 2^53 */
            "9007199254740992.5",
            "9.007199254740993e15",
            "1e16",
            "1e19",
            "18446744073709551617", /* 2^64 + 1 */
            "1.5",
            "59.99999999999999999", /* 60 as a double */
            "-1",
            "-1800.0",
            "1e-1",
        };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            LIMIT_REFUSED(body_of("{\"key\":\"k\",%s,\"%s\":%s}", members[m].others, name,
                                  refused[i]),
                          members[m].sentence);
    }
}

/* ---- every truncation, and byte mutations ----------------------------- */

typedef rl_status (*decode_fn)(const char *body, size_t len);

static rl_status decode_reserve_fn(const char *body, size_t len) {
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_reserve(body, len, &msg, detail);
    assert_true(detail[0] != '\0' || status == RL_OK);
    rl__wire_reserves_free(&msg);
    return status;
}
static rl_status decode_reserve_batch_fn(const char *body, size_t len) {
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_reserve_batch(body, len, 0, &msg, detail);
    rl__wire_reserves_free(&msg);
    return status;
}
static rl_status decode_complete_fn(const char *body, size_t len) {
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_complete(body, len, &msg, detail);
    rl__wire_completes_free(&msg);
    return status;
}
static rl_status decode_complete_batch_fn(const char *body, size_t len) {
    rl_wire_completes msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    rl_status status = rl__wire_decode_complete_batch(body, len, 0, &msg, detail);
    rl__wire_completes_free(&msg);
    return status;
}
static rl_status decode_limit_def_fn(const char *body, size_t len) {
    rl_limit_def def;
    char detail[RL_WIRE_DETAIL_SIZE];
    return rl__wire_decode_limit_def(body, len, &def, detail);
}

static const struct {
    const char *name;
    decode_fn decode;
    const char *body;
} valid_bodies[] = {
    {"reserve", decode_reserve_fn, RESERVE4},
    {"reserve (escapes, UTF-8, nulls)", decode_reserve_fn,
     "{\"lease_id\":\"01arz3ndektsv4rrffq69g5fav\",\"job_id\":\"caf\xc3\xa9\\u00e9\\ud83d\\ude00\","
     "\"x\":[null,true,false,-1.5e3,{}],\"requirements\":[{\"key\":\"a\\\"b\",\"amount\":1e3}]}"},
    {"reserve batch", decode_reserve_batch_fn, "{\"requests\":[" RESERVE4 "," RESERVE4 "]}"},
    {"complete", decode_complete_fn, COMPLETE2},
    {"complete batch", decode_complete_batch_fn, "{\"requests\":[" COMPLETE2 ",{\"lease_id\":\"" LEASE "\"}]}"},
    {"limit def", decode_limit_def_fn, LIMIT_DEF},
};

static void test_every_truncation_is_refused(void **state) {
    (void)state;
    for (size_t b = 0; b < sizeof valid_bodies / sizeof valid_bodies[0]; b++) {
        const char *body = valid_bodies[b].body;
        size_t len = strlen(body);
        char *whole = heap_copy(body, len);
        if (valid_bodies[b].decode(whole, len) != RL_OK)
            fail_msg("%s: the whole body is not valid", valid_bodies[b].name);
        free(whole);
        for (size_t cut = 0; cut < len; cut++) {
            char *copy = heap_copy(body, cut);
            rl_status status = valid_bodies[b].decode(copy, cut);
            free(copy);
            if (status != RL_INVALID_REQUEST)
                fail_msg("%s cut at %zu bytes: %s", valid_bodies[b].name, cut,
                         rl_status_name(status));
        }
    }
}

static void test_byte_mutations_never_crash(void **state) {
    (void)state;
    /* Each byte replaced by each of a few troublemakers: any outcome but a
     * crash (or a sanitizer report) is fine. */
    const unsigned char replacements[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '-',
                                          'e', '.', ' ', 0x00, 0x01, 0x7f, 0x80, 0xc3, 0xff};
    for (size_t b = 0; b < sizeof valid_bodies / sizeof valid_bodies[0]; b++) {
        const char *body = valid_bodies[b].body;
        size_t len = strlen(body);
        for (size_t at = 0; at < len; at++) {
            for (size_t r = 0; r < sizeof replacements; r++) {
                char *copy = heap_copy(body, len);
                copy[at] = (char)replacements[r];
                rl_status status = valid_bodies[b].decode(copy, len);
                assert_true(status == RL_OK || status == RL_INVALID_REQUEST);
                free(copy);
            }
        }
    }
}

/* ---- optional requirements and dry runs -------------------------------- */

static void test_reserve_optional_and_dry_run(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    /* absent: false; true or false as written, in any member order */
    assert_int_equal(reserve(body_of("{\"dry_run\":true,\"lease_id\":\"" LEASE "\",\"requirements\":"
                                     "[{\"optional\":true,\"key\":\"a\",\"amount\":1},"
                                     "{\"key\":\"b\",\"amount\":2,\"optional\":false},{\"key\":\"c\",\"amount\":3}]}"),
                             &msg, detail),
                     RL_OK);
    assert_true(msg.requests[0].dry_run);
    assert_true(msg.requests[0].requirements[0].optional);
    assert_false(msg.requests[0].requirements[1].optional);
    assert_false(msg.requests[0].requirements[2].optional);
    rl__wire_reserves_free(&msg);
    assert_int_equal(reserve(body_of("{\"lease_id\":\"" LEASE "\",\"requirements\":[{\"key\":\"a\",\"amount\":1}],"
                                     "\"dry_run\":false}"),
                             &msg, detail),
                     RL_OK);
    assert_false(msg.requests[0].dry_run);
    rl__wire_reserves_free(&msg);
    assert_int_equal(reserve(RESERVE4, &msg, detail), RL_OK);
    assert_false(msg.requests[0].dry_run);
    for (size_t i = 0; i < 4; i++) assert_false(msg.requests[0].requirements[i].optional);
    rl__wire_reserves_free(&msg);

    /* strictly booleans, each once */
    const char *not_booleans[] = {"1", "0", "null", "\"true\"", "[]", "{}", "-0"};
    for (size_t i = 0; i < sizeof not_booleans / sizeof not_booleans[0]; i++) {
        RESERVE_REFUSED(reserve_with(body_of("[{\"key\":\"a\",\"amount\":1},{\"key\":\"b\",\"amount\":1,"
                                             "\"optional\":%s}]",
                                             not_booleans[i])),
                        "requirements[1].optional must be true or false");
        RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"dry_run\":%s,\"requirements\":"
                                "[{\"key\":\"a\",\"amount\":1}]}",
                                not_booleans[i]),
                        "dry_run must be true or false");
    }
    RESERVE_REFUSED(reserve_with("[{\"key\":\"a\",\"amount\":1,\"optional\":true,\"optional\":true}]"),
                    "requirements[0].optional appears twice");
    RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"dry_run\":true,\"dry_run\":true,"
                            "\"requirements\":[{\"key\":\"a\",\"amount\":1}]}"),
                    "dry_run appears twice");
    /* a literal cut short is not JSON, whatever the field */
    RESERVE_REFUSED(reserve_with("[{\"key\":\"a\",\"amount\":1,\"optional\":tru}]"), "body is not valid JSON");
    RESERVE_REFUSED(body_of("{\"lease_id\":\"" LEASE "\",\"dry_run\":fals,\"requirements\":[]}"),
                    "body is not valid JSON");
    /* the order of problems: the element's key and amount before its flag,
     * the elements before the lease's flag */
    RESERVE_REFUSED(reserve_with("[{\"optional\":1,\"key\":\"a\",\"amount\":0}]"),
                    "requirements[0].amount " AMOUNT_MSG);
    RESERVE_REFUSED(body_of("{\"dry_run\":1,\"lease_id\":\"" LEASE "\",\"requirements\":"
                            "[{\"key\":\"a\",\"amount\":1,\"optional\":2}]}"),
                    "requirements[0].optional must be true or false");
    RESERVE_REFUSED(body_of("{\"dry_run\":1,\"lease_id\":\"" LEASE "\",\"requirements\":"
                            "[{\"key\":\"a\",\"amount\":1},{\"key\":\"a\",\"amount\":1}]}"),
                    "requirements[1].key repeats requirements[0].key");
    RESERVE_REFUSED(body_of("{\"dry_run\":1,\"lease_id\":\"bad\",\"requirements\":[{\"key\":\"a\",\"amount\":1}]}"),
                    "lease_id must be a ULID");
    /* a complete knows neither: unknown members there, skipped */
    rl_wire_completes completes;
    assert_int_equal(complete(body_of("{\"lease_id\":\"" LEASE "\",\"dry_run\":7,\"actuals\":"
                                      "[{\"key\":\"a\",\"actual_amount\":1,\"optional\":\"x\"}]}"),
                              &completes, detail),
                     RL_OK);
    rl__wire_completes_free(&completes);
}

/* In a batch, each item's flags are its own, and a bad one fails only its item. */
static void test_reserve_batch_optional_and_dry_run(void **state) {
    (void)state;
    rl_wire_reserves msg;
    char detail[RL_WIRE_DETAIL_SIZE];
    const char *body = body_of(
        "{\"requests\":["
        "{\"lease_id\":\"" LEASE "\",\"dry_run\":true,\"requirements\":[{\"key\":\"a\",\"amount\":1,\"optional\":true}]},"
        "{\"lease_id\":\"" LEASE2 "\",\"dry_run\":\"yes\",\"requirements\":[{\"key\":\"a\",\"amount\":1}]},"
        "{\"lease_id\":\"" LEASE2 "\",\"requirements\":[{\"key\":\"a\",\"amount\":1},{\"key\":\"b\",\"amount\":1,\"optional\":0}]},"
        "{\"lease_id\":\"" LEASE2 "\",\"requirements\":[{\"key\":\"a\",\"amount\":1,\"optional\":false}]}]}");
    assert_int_equal(reserve_batch(body, 0, &msg, detail), RL_OK);
    assert_string_equal(detail, "requests[1].dry_run must be true or false");
    assert_int_equal(msg.count, 4);
    assert_int_equal(msg.item_status[0], RL_OK);
    assert_true(msg.requests[0].dry_run);
    assert_true(msg.requests[0].requirements[0].optional);
    assert_int_equal(msg.item_status[1], RL_INVALID_REQUEST);
    assert_false(msg.requests[1].dry_run);
    assert_int_equal(msg.item_status[2], RL_INVALID_REQUEST);
    assert_string_equal(rl__wire_reserves_item_detail(&msg, 2), "requests[2].requirements[1].optional must be true or false");
    assert_int_equal(msg.item_status[3], RL_OK);
    assert_false(msg.requests[3].dry_run);
    assert_false(msg.requests[3].requirements[0].optional);
    rl__wire_reserves_free(&msg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_valid),
        cmocka_unit_test(test_reserve_lease_id_case),
        cmocka_unit_test(test_reserve_job_id_forms),
        cmocka_unit_test(test_reserve_amount_forms),
        cmocka_unit_test(test_reserve_whitespace_and_unknown_fields),
        cmocka_unit_test(test_reserve_escaped_keys),
        cmocka_unit_test(test_reserve_max_requirements_and_key_length),
        cmocka_unit_test(test_reserve_not_json),
        cmocka_unit_test(test_reserve_trailing_garbage),
        cmocka_unit_test(test_reserve_not_an_object),
        cmocka_unit_test(test_reserve_bad_bytes),
        cmocka_unit_test(test_reserve_lease_id),
        cmocka_unit_test(test_reserve_job_id),
        cmocka_unit_test(test_reserve_requirements_list),
        cmocka_unit_test(test_reserve_requirement_items),
        cmocka_unit_test(test_reserve_amounts),
        cmocka_unit_test(test_reserve_duplicate_keys),
        cmocka_unit_test(test_reserve_exact_detail),
        cmocka_unit_test(test_reserve_deep_nesting),
        cmocka_unit_test(test_reserve_problem_order),
        cmocka_unit_test(test_reserve_escaped_names),
        cmocka_unit_test(test_reserve_densest_bodies),
        cmocka_unit_test(test_complete_valid),
        cmocka_unit_test(test_complete_empty_actuals),
        cmocka_unit_test(test_complete_amounts),
        cmocka_unit_test(test_complete_malformed),
        cmocka_unit_test(test_reserve_batch_valid),
        cmocka_unit_test(test_reserve_batch_item_errors),
        cmocka_unit_test(test_reserve_batch_payload_errors),
        cmocka_unit_test(test_reserve_batch_syntax_after_items),
        cmocka_unit_test(test_complete_batch),
        cmocka_unit_test(test_limit_def_valid),
        cmocka_unit_test(test_limit_def_malformed),
        cmocka_unit_test(test_limit_def_integers_exact),
        cmocka_unit_test(test_every_truncation_is_refused),
        cmocka_unit_test(test_byte_mutations_never_crash),
        cmocka_unit_test(test_reserve_optional_and_dry_run),
        cmocka_unit_test(test_reserve_batch_optional_and_dry_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
