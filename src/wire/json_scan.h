/* wire/json_scan.h — private: a strict, zero-copy JSON tokenizer (RFC 8259).
 *
 * Every decoder walks its text with it in one pass and builds no tree (the
 * reserve and complete bodies, a limit definition, the registry file, the
 * daemon's answers): each asks for the value it expects next (an object's
 * next member, a string, a number) and skips the values it does not know.
 *
 * The text is the decoder's own writable copy of the body, and must have a
 * NUL at text[len]: that sentinel stops the whitespace, digit, literal and
 * string loops without a bounds check (a NUL before text[len] is a raw
 * control character, an error like any other). Strings are decoded in place
 * (an unescaped string is never longer than its escaped form) and
 * NUL-terminated where they end, over their closing quote or earlier, so
 * they are handed out as C strings without a copy.
 *
 * Strict means: RFC 8259's grammar exactly (no leading zeros, "1.", "+1",
 * NaN, comments, trailing commas, single quotes, or whitespace other than
 * space, tab, LF, CR), valid UTF-8 everywhere, no raw control characters,
 * \u escapes with surrogate pairs decoded to UTF-8, and objects and arrays
 * nested at most RL__JSON_MAX_DEPTH deep. "\u0000" is refused: it would cut
 * a C string short ("k\u0000x" would read as "k").
 *
 * Errors: the first one is kept (kind and byte offset), the cursor jumps to
 * the end, and every call returns false (or -1) from then on. A scanner is
 * used by one thread; the functions are reentrant.
 */
#ifndef RL_WIRE_JSON_SCAN_H
#define RL_WIRE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects and arrays open at once, the root included. Our messages need 5
 * ({"requests":[{"requirements":[{...); the rest is for unknown fields. */
#define RL__JSON_MAX_DEPTH 64

typedef enum rl__json_error {
    RL__JSON_OK = 0,
    RL__JSON_SYNTAX,     /* not JSON: an unexpected byte, or the text ends early */
    RL__JSON_BAD_UTF8,   /* RFC 8259 requires UTF-8 */
    RL__JSON_CONTROL,    /* a raw control character (escape it in strings) */
    RL__JSON_NUL_ESCAPE, /* "\u0000" */
    RL__JSON_TOO_DEEP,   /* more than RL__JSON_MAX_DEPTH levels */
    RL__JSON_TRAILING,   /* something other than whitespace after the value */
} rl__json_error;

typedef struct rl__json_scan {
    char *cur;  /* next byte to read */
    char *end;  /* text + len: the sentinel NUL */
    char *text;
    unsigned depth; /* objects and arrays open */
    rl__json_error error;
    size_t error_at; /* byte offset of the first error */
} rl__json_scan;

/* A number, read exactly (no floating point): 1800, 1.8e3 and 1800.0 are the
 * same integer; 1.5, 1e-1 and 1e19 are not integral. */
typedef struct rl__json_number {
    uint64_t magnitude; /* |value|, when integral */
    bool negative;      /* written with a '-' ("-0" too) */
    bool integral;      /* an integer of magnitude below 10^19, held exactly */
} rl__json_number;

void rl__scan_init(rl__json_scan *s, char *text, size_t len);

static inline bool rl__scan_is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Skips whitespace and returns the next byte without consuming it: the
 * first byte of the next value or token, '\0' at the end of the text. */
static inline char rl__scan_peek(rl__json_scan *s) {
    while (rl__scan_is_space(*s->cur)) s->cur++;
    return *s->cur;
}

/* The next value must be a string: decodes it in place. *out points into the
 * text, NUL-terminated; *len excludes the NUL (the string holds none). */
bool rl__scan_string(rl__json_scan *s, char **out, size_t *len);

/* The next value must be a number. */
bool rl__scan_number(rl__json_scan *s, rl__json_number *out);

/* Skips the next value, whatever it is, checking it as strictly as the rest
 * (strings inside it are decoded in place too: nobody reads them). */
bool rl__scan_skip(rl__json_scan *s);

/* The next value must be an object (array): consumes its '{' ('['). */
bool rl__scan_object_open(rl__json_scan *s);
bool rl__scan_array_open(rl__json_scan *s);

/* Walks an open object, index counting the members read so far (0 first):
 * returns 1 with the next member's name decoded in place (the ':' consumed,
 * its value next), 0 once the closing '}' is consumed, -1 on an error.
 *
 *   for (size_t i = 0; (more = rl__scan_member(s, i, &name, &len)) > 0; i++)
 *       ... read or skip the value ...
 */
int rl__scan_member(rl__json_scan *s, size_t index, char **name, size_t *len);

/* Walks an open array the same way: 1 if element `index` follows (read or
 * skip it), 0 once the closing ']' is consumed, -1 on an error. */
int rl__scan_element(rl__json_scan *s, size_t index);

/* After the root value: only whitespace may remain. */
bool rl__scan_end(rl__json_scan *s);

/* Records an error at p (the first one wins) and stops the scanner. Returns
 * false. */
bool rl__scan_fail(rl__json_scan *s, rl__json_error error, const char *p);

/* The sentence for an error, e.g. "body is not valid JSON (error near byte
 * 5)"; `what` names the text ("body", "file"). */
void rl__scan_describe(rl__json_error error, size_t at, const char *what, char *detail,
                       size_t detail_size);

#endif
