/* json_scan.c — the strict in-place JSON tokenizer (json_scan.h). */
#include "wire/json_scan.h"

#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/text.h"

void rl__scan_init(rl__json_scan *s, char *text, size_t len) {
    s->text = text;
    s->cur = text;
    s->end = text + len;
    s->depth = 0;
    s->error = RL__JSON_OK;
    s->error_at = 0;
}

bool rl__scan_fail(rl__json_scan *s, rl__json_error error, const char *p) {
    if (s->error == RL__JSON_OK) {
        s->error = error;
        s->error_at = (size_t)(p - s->text);
    }
    s->cur = s->end; /* every later read sees the end and fails too */
    return false;
}

/* The byte at p is not what the grammar allows there. Say why in the terms a
 * sender can act on: a control character or broken UTF-8 is reported as
 * such (the old cJSON-based decoder's pre-scan did the same), anything else
 * is `otherwise`. */
static bool unexpected(rl__json_scan *s, const char *p, rl__json_error otherwise) {
    unsigned char c = (unsigned char)*p;
    if (p >= s->end) return rl__scan_fail(s, RL__JSON_SYNTAX, p); /* the text ends early */
    if (c < 0x20 && !rl__scan_is_space((char)c)) return rl__scan_fail(s, RL__JSON_CONTROL, p);
    if (c >= 0x80 && rl__utf8_sequence_len((const unsigned char *)p, (size_t)(s->end - p)) == 0)
        return rl__scan_fail(s, RL__JSON_BAD_UTF8, p);
    return rl__scan_fail(s, otherwise, p);
}

static char *skip_space(char *p) {
    while (rl__scan_is_space(*p)) p++;
    return p;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* ---- strings ------------------------------------------------------------ */

/* SWAR tests on 8 bytes at once (Bit Twiddling Hacks, "haszero"/"hasless").
 * A borrow can flag a byte above a true match, never below one, so the
 * lowest flag is exact: on a little-endian machine its position is the
 * first byte that ends the run. */
#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* A flag (high bit) on each byte of w that ends a plain run: '"', '\\',
 * < 0x20 or >= 0x80 (the lowest flag exact, see above). */
static uint64_t run_end_flags(uint64_t w) {
    uint64_t high = w & HIGHS;
    uint64_t control = (w - ONES * 0x20) & ~w & HIGHS;
    uint64_t q = w ^ (ONES * (uint64_t)'"');
    uint64_t quote = (q - ONES) & ~q & HIGHS;
    uint64_t b = w ^ (ONES * (uint64_t)'\\');
    uint64_t backslash = (b - ONES) & ~b & HIGHS;
    return high | control | quote | backslash;
}

static bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

/* The first byte at or after p that is not plain printable ASCII. Keys,
 * lease ids and job ids are all plain: 16 bytes a step with SSE2 (every
 * x86-64 has it), else 8 with SWAR; the last few bytes of the text one by
 * one (the sentinel NUL stops that loop). */
static char *plain_run(char *p, const char *end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* Signed: bytes >= 0x80 are negative, so below 0x20 as well. */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                 _mm_cmpeq_epi8(v, backslash)),
                                    _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(stop);
        if (mask != 0) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        uint64_t flags = run_end_flags(w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (flags != 0) return p + __builtin_ctzll(flags) / 8;
#else
        if (flags != 0) break;
#endif
        p += 8;
    }
    while (is_plain((unsigned char)*p)) p++;
    return p;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits at p. Stops at the first non-digit, so the sentinel keeps
 * it inside the text. */
static bool hex4(rl__json_scan *s, const char *p, uint32_t *out) {
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(p[i]);
        if (digit < 0) return unexpected(s, p + i, RL__JSON_SYNTAX);
        value = value << 4 | (uint32_t)digit;
    }
    *out = value;
    return true;
}

static char *put_utf8(char *w, uint32_t cp) {
    if (cp < 0x80) {
        *w++ = (char)cp;
    } else if (cp < 0x800) {
        *w++ = (char)(0xc0 | cp >> 6);
        *w++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *w++ = (char)(0xe0 | cp >> 12);
        *w++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *w++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *w++ = (char)(0xf0 | cp >> 18);
        *w++ = (char)(0x80 | (cp >> 12 & 0x3f));
        *w++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *w++ = (char)(0x80 | (cp & 0x3f));
    }
    return w;
}

static char *fail_null(rl__json_scan *s, rl__json_error error, const char *p) {
    rl__scan_fail(s, error, p);
    return NULL;
}

/* The \u escape at r (r[0] == '\\', r[1] == 'u'), a surrogate pair taking
 * two: writes its UTF-8 at *w and returns the byte after it, or NULL. UTF-8
 * is at most 4 bytes for the 12 of a pair and 3 for the 6 of one escape,
 * so the writer never overtakes the reader. */
static char *unescape_u(rl__json_scan *s, char *r, char **w) {
    uint32_t cp;
    if (!hex4(s, r + 2, &cp)) return NULL;
    if (cp == 0) return fail_null(s, RL__JSON_NUL_ESCAPE, r);
    if (cp >= 0xdc00 && cp <= 0xdfff) return fail_null(s, RL__JSON_SYNTAX, r); /* a lone low half */
    char *next = r + 6;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        /* A high surrogate means nothing alone: the low half must follow. */
        uint32_t low;
        if (next[0] != '\\' || next[1] != 'u') return fail_null(s, RL__JSON_SYNTAX, next);
        if (!hex4(s, next + 2, &low)) return NULL;
        if (low < 0xdc00 || low > 0xdfff) return fail_null(s, RL__JSON_SYNTAX, next);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        next += 6;
    }
    *w = put_utf8(*w, cp);
    return next;
}

/* The rest of a string from its first escape at r, start being its first
 * byte: copies down over the escapes as it goes. */
static bool read_escaped(rl__json_scan *s, char *start, char *r, char **out, size_t *len) {
    char *w = r;
    for (;;) {
        unsigned char c = (unsigned char)*r;
        if (c == '"') {
            *w = '\0';
            *out = start;
            *len = (size_t)(w - start);
            s->cur = r + 1;
            return true;
        }
        if (c == '\\') {
            char simple;
            switch (r[1]) { /* at most the sentinel */
            case '"': simple = '"'; break;
            case '\\': simple = '\\'; break;
            case '/': simple = '/'; break;
            case 'b': simple = '\b'; break;
            case 'f': simple = '\f'; break;
            case 'n': simple = '\n'; break;
            case 'r': simple = '\r'; break;
            case 't': simple = '\t'; break;
            case 'u':
                r = unescape_u(s, r, &w);
                if (r == NULL) return false;
                continue;
            default:
                return unexpected(s, r + 1, RL__JSON_SYNTAX);
            }
            *w++ = simple;
            r += 2;
        } else if (c >= 0x80) {
            size_t n = rl__utf8_sequence_len((const unsigned char *)r, (size_t)(s->end - r));
            if (n == 0) return rl__scan_fail(s, RL__JSON_BAD_UTF8, r);
            memmove(w, r, n);
            w += n;
            r += n;
        } else if (c < 0x20) {
            return rl__scan_fail(s, r == s->end ? RL__JSON_SYNTAX : RL__JSON_CONTROL, r);
        } else {
            *w++ = (char)c;
            r++;
        }
    }
}

/* The rest of a string from r, the first byte after its plain start that
 * is not plain: UTF-8 sequences and escapes. */
__attribute__((noinline)) static bool read_rest(rl__json_scan *s, char *start, char *r,
                                                char **out, size_t *len) {
    for (;;) {
        unsigned char c = (unsigned char)*r;
        if (c == '"') {
            *r = '\0';
            *out = start;
            *len = (size_t)(r - start);
            s->cur = r + 1;
            return true;
        }
        if (c == '\\') return read_escaped(s, start, r, out, len);
        if (c < 0x80) /* a control character, or the sentinel: no closing quote */
            return rl__scan_fail(s, r == s->end ? RL__JSON_SYNTAX : RL__JSON_CONTROL, r);
        size_t n = rl__utf8_sequence_len((const unsigned char *)r, (size_t)(s->end - r));
        if (n == 0) return rl__scan_fail(s, RL__JSON_BAD_UTF8, r);
        r = plain_run(r + n, s->end);
    }
}

/* A string whose opening quote is just before start. The common case is
 * plain ASCII without escapes: nothing moves, only the closing quote becomes
 * the NUL, and the rest stays out of line so that this path saves no
 * registers. */
static bool read_string(rl__json_scan *s, char *start, char **out, size_t *len) {
    char *r = plain_run(start, s->end);
    if (*r != '"') return read_rest(s, start, r, out, len);
    *r = '\0';
    *out = start;
    *len = (size_t)(r - start);
    s->cur = r + 1;
    return true;
}

bool rl__scan_string(rl__json_scan *s, char **out, size_t *len) {
    char *p = skip_space(s->cur);
    if (*p != '"') return unexpected(s, p, RL__JSON_SYNTAX);
    return read_string(s, p + 1, out, len);
}

/* ---- numbers ------------------------------------------------------------ */

/* Digit i of the significand: the integer part's digits, then the fraction's. */
static int digit_at(const char *int_part, size_t int_len, const char *frac, size_t i) {
    return (i < int_len ? int_part[i] : frac[i - int_len]) - '0';
}

/* The exact value of int_part.frac x 10^exponent, if it is an integer below
 * 10^19. Digits are weighed by position, so "1800.000" and "1.8e3" are
 * 1800 and "1.0000000000000000001" is not integral, whatever a double says. */
static void exact_value(const char *int_part, size_t int_len, const char *frac, size_t frac_len,
                        int64_t exponent, rl__json_number *out) {
    size_t n = int_len + frac_len;
    size_t first = 0, last = n;
    while (first < n && digit_at(int_part, int_len, frac, first) == 0) first++;
    if (first == n) { /* all zeros */
        out->integral = true;
        out->magnitude = 0;
        return;
    }
    while (digit_at(int_part, int_len, frac, last - 1) == 0) last--;
    /* Digit i weighs 10^(point - 1 - i). */
    int64_t point = (int64_t)int_len + exponent;
    if ((int64_t)last > point || point - (int64_t)first > 19) {
        out->integral = false; /* a fraction left, or 10^19 or more */
        return;
    }
    uint64_t value = 0;
    for (size_t i = first; i < last; i++)
        value = value * 10 + (uint64_t)digit_at(int_part, int_len, frac, i);
    for (int64_t k = (int64_t)last; k < point; k++) value *= 10;
    out->integral = true;
    out->magnitude = value;
}

bool rl__scan_number(rl__json_scan *s, rl__json_number *out) {
    char *p = skip_space(s->cur);
    out->negative = *p == '-';
    if (out->negative) p++;
    char *int_part = p;
    uint64_t value = 0; /* wraps past 19 digits, and is then not used */
    if (*p == '0') {
        p++; /* a leading zero stands alone: "01" ends after the 0 */
    } else if (is_digit(*p)) {
        for (; is_digit(*p); p++) value = value * 10 + (uint64_t)(*p - '0');
    } else {
        return unexpected(s, p, RL__JSON_SYNTAX);
    }
    size_t int_len = (size_t)(p - int_part);
    /* The common case: a plain integer of up to 19 digits fits in 64 bits. */
    if (*p != '.' && *p != 'e' && *p != 'E' && int_len <= 19) {
        out->integral = true;
        out->magnitude = value;
        s->cur = p;
        return true;
    }
    char *frac = p;
    size_t frac_len = 0;
    if (*p == '.') {
        frac = ++p;
        if (!is_digit(*p)) return unexpected(s, p, RL__JSON_SYNTAX);
        while (is_digit(*p)) p++;
        frac_len = (size_t)(p - frac);
    }
    int64_t exponent = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        bool minus = *p == '-';
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return unexpected(s, p, RL__JSON_SYNTAX);
        /* Saturates: past a billion the value is 0.x or huge either way. */
        for (; is_digit(*p); p++)
            if (exponent < 1000000000) exponent = exponent * 10 + (*p - '0');
        if (minus) exponent = -exponent;
    }
    s->cur = p;
    exact_value(int_part, int_len, frac, frac_len, exponent, out);
    return true;
}

/* ---- structure ---------------------------------------------------------- */

static bool open_container(rl__json_scan *s, char bracket) {
    char *p = skip_space(s->cur);
    if (*p != bracket) return unexpected(s, p, RL__JSON_SYNTAX);
    if (s->depth >= RL__JSON_MAX_DEPTH) return rl__scan_fail(s, RL__JSON_TOO_DEEP, p);
    s->depth++;
    s->cur = p + 1;
    return true;
}

bool rl__scan_object_open(rl__json_scan *s) { return open_container(s, '{'); }
bool rl__scan_array_open(rl__json_scan *s) { return open_container(s, '['); }

/* Before element or member `index`: the closing bracket (returns 0), else
 * the ',' that separates it from the previous one, if any (returns 1, the
 * cursor at what follows). */
static int next_item(rl__json_scan *s, size_t index, char close) {
    char *p = skip_space(s->cur);
    if (*p == close) {
        s->depth--;
        s->cur = p + 1;
        return 0;
    }
    if (index > 0) {
        if (*p != ',') {
            unexpected(s, p, RL__JSON_SYNTAX);
            return -1;
        }
        p = skip_space(p + 1);
    }
    s->cur = p;
    return 1;
}

int rl__scan_member(rl__json_scan *s, size_t index, char **name, size_t *len) {
    int more = next_item(s, index, '}');
    if (more <= 0) return more;
    /* "{"a":1,}" reaches here with '}' after the comma: not a name. */
    if (!rl__scan_string(s, name, len)) return -1;
    char *p = skip_space(s->cur);
    if (*p != ':') {
        unexpected(s, p, RL__JSON_SYNTAX);
        return -1;
    }
    s->cur = p + 1;
    return 1;
}

int rl__scan_element(rl__json_scan *s, size_t index) {
    /* "[1,]" returns 1 here; reading the value then fails at the ']'. */
    return next_item(s, index, ']');
}

static bool literal(rl__json_scan *s, const char *word) {
    char *p = s->cur;
    for (size_t i = 0; word[i] != '\0'; i++) /* a mismatch, the sentinel included, stops it */
        if (p[i] != word[i]) return unexpected(s, p + i, RL__JSON_SYNTAX);
    s->cur = p + strlen(word);
    return true;
}

bool rl__scan_skip(rl__json_scan *s) {
    char *name;
    size_t len;
    int more;
    switch (rl__scan_peek(s)) {
    case '"':
        return rl__scan_string(s, &name, &len);
    case '{':
        if (!rl__scan_object_open(s)) return false;
        for (size_t i = 0; (more = rl__scan_member(s, i, &name, &len)) > 0; i++)
            if (!rl__scan_skip(s)) return false; /* depth is bounded by open_container() */
        return more == 0;
    case '[':
        if (!rl__scan_array_open(s)) return false;
        for (size_t i = 0; (more = rl__scan_element(s, i)) > 0; i++)
            if (!rl__scan_skip(s)) return false;
        return more == 0;
    case 't':
        return literal(s, "true");
    case 'f':
        return literal(s, "false");
    case 'n':
        return literal(s, "null");
    default: {
        rl__json_number number;
        if (*s->cur == '-' || is_digit(*s->cur)) return rl__scan_number(s, &number);
        return unexpected(s, s->cur, RL__JSON_SYNTAX);
    }
    }
}

bool rl__scan_end(rl__json_scan *s) {
    if (s->error != RL__JSON_OK) return false; /* the cursor is at the end, but stopped */
    char *p = skip_space(s->cur);
    if (p == s->end) return true;
    return unexpected(s, p, RL__JSON_TRAILING);
}

void rl__scan_describe(rl__json_error error, size_t at, const char *what, char *detail,
                       size_t detail_size) {
    switch (error) {
    case RL__JSON_OK:
        snprintf(detail, detail_size, "%s is valid JSON", what);
        break;
    case RL__JSON_SYNTAX:
        snprintf(detail, detail_size, "%s is not valid JSON (error near byte %zu)", what, at);
        break;
    case RL__JSON_BAD_UTF8:
        snprintf(detail, detail_size, "%s is not valid UTF-8 (at byte %zu)", what, at);
        break;
    case RL__JSON_CONTROL:
        snprintf(detail, detail_size,
                 "%s contains a raw control character (at byte %zu); escape it in strings", what,
                 at);
        break;
    case RL__JSON_NUL_ESCAPE:
        snprintf(detail, detail_size, "%s contains \\u0000 (at byte %zu), which is not allowed",
                 what, at);
        break;
    case RL__JSON_TOO_DEEP:
        snprintf(detail, detail_size,
                 "%s nests objects and arrays more than %d deep (at byte %zu)", what,
                 RL__JSON_MAX_DEPTH, at);
        break;
    case RL__JSON_TRAILING:
        snprintf(detail, detail_size,
                 "%s has unexpected data after the JSON value (at byte %zu)", what, at);
        break;
    }
}
