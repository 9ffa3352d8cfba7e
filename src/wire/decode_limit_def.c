/* decode_limit_def.c — a LimitDefinition object (decode_limit_def.h), and
 * the body of PUT /v1/admin/limits (wire.h). */
#include "wire/decode_limit_def.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimiter/keys.h"
#include "core/template_pattern.h"
#include "core/text.h"
#include "wire/wire.h"

#define STRINGIFY(x) #x
#define DIGITS(x) STRINGIFY(x) /* a numeric macro as a string literal */

/* One member of a definition: how its value is read and where it goes. A
 * member is a string (accept judges and stores it) or, when accept is NULL,
 * an integer min..max stored as a uint32_t or uint64_t (by size). A new
 * member, such as a budget's period and time zone, is a row of the table. */
typedef struct member {
    const char *name;
    size_t name_len;
    /* Absent is "<name> is required", and null is then a wrong value; an
     * optional member that is absent or null keeps its default. */
    bool required;
    bool (*accept)(const struct member *m, const char *text, size_t len, rl_limit_def *def);
    const char *must; /* a string member's sentence, after its name */
    uint64_t min, max;
    size_t offset, size; /* of the rl_limit_def field */
} member;

static bool accept_key(const member *m, const char *text, size_t len, rl_limit_def *def) {
    (void)m;
    if (!rl_key_is_valid(text, len)) return false;
    memcpy(def->key, text, len + 1);
    return true;
}

/* A template's pattern (template_pattern.h): the definition's key member,
 * named "pattern" in a template. The reason a pattern is refused is the
 * parser's sentence, kept for the note. */
static bool accept_pattern(const member *m, const char *text, size_t len, rl_limit_def *def) {
    (void)m;
    rl__template_pattern pattern;
    char err[RL_WIRE_DETAIL_SIZE];
    if (!rl__template_pattern_parse(text, len, &pattern, err, sizeof err)) return false;
    memcpy(def->key, text, len + 1);
    return true;
}

static bool accept_kind(const member *m, const char *text, size_t len, rl_limit_def *def) {
    (void)m;
    (void)len; /* text holds no NUL: the scanner refuses "\u0000" */
    return rl_kind_parse(text, &def->kind);
}

static bool accept_period(const member *m, const char *text, size_t len, rl_limit_def *def) {
    (void)m;
    (void)len;
    return rl_period_parse(text, &def->period);
}

static bool accept_overage(const member *m, const char *text, size_t len, rl_limit_def *def) {
    (void)m;
    (void)len;
    return rl_overage_parse(text, &def->overage);
}

/* Free text into a char array of m->size bytes. */
static bool accept_text(const member *m, const char *text, size_t len, rl_limit_def *def) {
    if (len >= m->size || !rl__text_is_clean(text, len)) return false;
    memcpy((char *)def + m->offset, text, len + 1);
    return true;
}

#define NAME(literal) literal, sizeof(literal) - 1
#define FIELD(field) offsetof(rl_limit_def, field), sizeof(((rl_limit_def *)0)->field)
#define TEXT_MUST(max) "must be a string of at most " DIGITS(max) " bytes of UTF-8 without control characters"

/* In the order their problems are reported (api.md's order). */
static const member members[] = {
    {NAME("key"), true, accept_key,
     "must be a string of 1.." DIGITS(RL_KEY_MAX_LEN) " printable ASCII characters without spaces",
     0, 0, FIELD(key)},
    {NAME("kind"), true, accept_kind, "must be \"rolling\", \"concurrency\" or \"budget\"", 0, 0, FIELD(kind)},
    {NAME("capacity"), true, NULL, NULL, 1, RL_AMOUNT_MAX, FIELD(capacity)},
    /* Which of window/timeout must be set is rl_limit_def_validate's business. */
    {NAME("window_seconds"), false, NULL, NULL, 0, RL_WINDOW_SECONDS_MAX, FIELD(window_seconds)},
    {NAME("timeout_seconds"), false, NULL, NULL, 0, RL_TIMEOUT_SECONDS_MAX, FIELD(timeout_seconds)},
    {NAME("unit"), false, accept_text, TEXT_MUST(RL_UNIT_MAX_LEN), 0, 0, FIELD(unit)},
    {NAME("description"), false, accept_text, TEXT_MUST(RL_DESCRIPTION_MAX_LEN), 0, 0,
     FIELD(description)},
    {NAME("overage"), false, accept_overage, "must be \"debt\" or \"deny\"", 0, 0, FIELD(overage)},
    /* A budget's; which kinds take them is rl_limit_def_validate's business,
     * and whether tzdata knows the zone too. */
    {NAME("period"), false, accept_period, "must be \"hour\", \"day\", \"week\" or \"month\"", 0, 0,
     FIELD(period)},
    {NAME("timezone"), false, accept_text, "must be an IANA time zone name of at most " DIGITS(RL_TIMEZONE_MAX_LEN) " bytes",
     0, 0, FIELD(timezone)},
};
enum { MEMBER_COUNT = sizeof members / sizeof members[0] };

/* In a template, members[0] (key) is read as this one instead. */
static const member pattern_member = {
    NAME("pattern"), true, accept_pattern,
    "must be a key of 1.." DIGITS(RL_KEY_MAX_LEN) " printable ASCII characters without spaces holding 1.." DIGITS(
        RL_TEMPLATE_MAX_PLACEHOLDERS) " placeholders {name} (letters, digits, '_'), never two side by side, each name "
                                      "once",
    0, 0, FIELD(key)};
_Static_assert(MEMBER_COUNT < 32, "members are tracked in a uint32_t");

/* Problems rank: the shape first, then each member in table order, then the
 * rules that relate members. */
enum { RANK_SHAPE = 0, RANK_RULES = MEMBER_COUNT + 1 };
/* A member's place in the table (the pattern takes the key's). */
static size_t index_of(const member *m) { return m == &pattern_member ? 0 : (size_t)(m - members); }
static uint32_t rank_of(const member *m) { return (uint32_t)index_of(m) + 1; }

/* members[i], or for a template's key the pattern member. */
static const member *member_at(size_t i, bool as_template) {
    return i == 0 && as_template ? &pattern_member : &members[i];
}

static const member *find_member(const char *name, size_t len, bool as_template) {
    for (size_t i = 0; i < MEMBER_COUNT; i++) {
        const member *m = member_at(i, as_template);
        if (m->name_len == len && memcmp(m->name, name, len) == 0) return m;
    }
    return NULL;
}

static void store_integer(const member *m, uint64_t value, rl_limit_def *def) {
    char *field = (char *)def + m->offset;
    if (m->size == sizeof(uint32_t)) {
        uint32_t narrow = (uint32_t)value; /* max fits: see the table */
        memcpy(field, &narrow, sizeof narrow);
    } else {
        memcpy(field, &value, sizeof value);
    }
}

/* The value of member m (the scanner at it). */
static bool read_member(rl__json_scan *s, const member *m, rl_limit_def *def, uint32_t *rank,
                        const rl__json_path *path) {
    /* Skipping a value that starts with 'n' succeeds only for null. */
    if (!m->required && rl__scan_peek(s) == 'n') return rl__scan_skip(s);
    if (m->accept == NULL) {
        uint64_t value = 0;
        bool valid;
        if (!rl__read_integer(s, m->min, m->max, &value, &valid)) return false;
        if (valid)
            store_integer(m, value, def);
        else
            rl__json_note(rank, rank_of(m), path, m->name, "must be an integer %llu..%llu",
                          (unsigned long long)m->min, (unsigned long long)m->max);
        return true;
    }
    char *text;
    size_t len;
    if (!rl__read_string_or_skip(s, &text, &len)) return false;
    if (text == NULL || !m->accept(m, text, len, def))
        rl__json_note(rank, rank_of(m), path, m->name, "%s", m->must);
    return true;
}

/* A definition, or with as_template a template (its key read from
 * "pattern"). */
static bool decode_def(rl__json_scan *s, const char *not_object, bool as_template, rl_limit_def *out,
                       uint32_t *rank, const rl__json_path *path) {
    memset(out, 0, sizeof *out);
    out->overage = RL_OVERAGE_DEBT;
    if (rl__scan_peek(s) != '{') {
        if (!rl__scan_skip(s)) return false;
        rl__json_note(rank, RANK_SHAPE, path, NULL, "%s", not_object);
        return true;
    }
    if (!rl__scan_object_open(s)) return false;
    uint32_t seen = 0;
    char *name;
    size_t len;
    int more;
    for (size_t i = 0; (more = rl__scan_member(s, i, &name, &len)) > 0; i++) {
        const member *m = find_member(name, len, as_template);
        if (m == NULL) {
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        uint32_t bit = UINT32_C(1) << index_of(m);
        if (seen & bit) {
            /* The sender meant one of the two and we cannot know which. */
            rl__json_note(rank, RANK_SHAPE, path, m->name, "appears twice");
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        seen |= bit;
        if (!read_member(s, m, out, rank, path)) return false;
    }
    if (more < 0) return false;
    for (size_t i = 0; i < MEMBER_COUNT; i++) {
        const member *m = member_at(i, as_template);
        if (m->required && !(seen & UINT32_C(1) << i)) rl__json_note(rank, rank_of(m), path, m->name, "is required");
    }
    /* A budget without a time zone counts in UTC. */
    if (out->kind == RL_KIND_BUDGET && out->timezone[0] == '\0') memcpy(out->timezone, "UTC", 4);
    if (*rank == RL__RANK_NONE && !rl_limit_def_validate(out, path->detail, RL_WIRE_DETAIL_SIZE))
        *rank = RANK_RULES;
    return true;
}

bool rl__decode_limit_def(rl__json_scan *s, const char *not_object, rl_limit_def *out, uint32_t *rank,
                          const rl__json_path *path) {
    return decode_def(s, not_object, false, out, rank, path);
}

bool rl__decode_template_def(rl__json_scan *s, const char *not_object, rl_limit_def *out, uint32_t *rank,
                             const rl__json_path *path) {
    return decode_def(s, not_object, true, out, rank, path);
}

/* A body that is one definition (or template). */
static rl_status decode_body(const char *body, size_t len, bool as_template, rl_limit_def *out,
                             char detail[RL_WIRE_DETAIL_SIZE]) {
    detail[0] = '\0';
    if (body == NULL || len == 0) {
        snprintf(detail, RL_WIRE_DETAIL_SIZE, "body is empty");
        return RL_INVALID_REQUEST;
    }
    /* The scanner decodes strings in place and stops at a NUL after the text. */
    char *text = len < SIZE_MAX ? malloc(len + 1) : NULL;
    if (text == NULL) {
        snprintf(detail, RL_WIRE_DETAIL_SIZE, "out of memory");
        return RL_NO_MEMORY;
    }
    memcpy(text, body, len);
    text[len] = '\0';
    rl__json_scan s;
    rl__scan_init(&s, text, len);
    uint32_t rank = RL__RANK_NONE;
    rl__json_path path = {.detail = detail};
    /* Decoded aside so that *out changes only on success. */
    rl_limit_def def;
    rl_status status = RL_INVALID_REQUEST;
    if (!decode_def(&s, "body must be a JSON object", as_template, &def, &rank, &path) ||
        !rl__scan_end(&s)) {
        /* Not JSON wins over a problem noted before the error. */
        rl__scan_describe(s.error, s.error_at, "body", detail, RL_WIRE_DETAIL_SIZE);
    } else if (rank == RL__RANK_NONE) {
        *out = def;
        status = RL_OK;
    }
    free(text);
    return status;
}

rl_status rl__wire_decode_limit_def(const char *body, size_t len, rl_limit_def *out,
                                    char detail[RL_WIRE_DETAIL_SIZE]) {
    return decode_body(body, len, false, out, detail);
}

rl_status rl__wire_decode_template_def(const char *body, size_t len, rl_limit_def *out,
                                       char detail[RL_WIRE_DETAIL_SIZE]) {
    return decode_body(body, len, true, out, detail);
}
