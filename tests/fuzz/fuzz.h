/* fuzz.h — what every harness of tests/fuzz shares: an invariant check that
 * libFuzzer reports as a crash (with the input saved), and helpers for the
 * checks the decoder harnesses have in common. */
#ifndef RL_FUZZ_H
#define RL_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* abort() is what libFuzzer (and ASan's handler) turns into a saved crash. */
#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* A fixed-size message buffer holds a NUL-terminated sentence. */
#define FUZZ_CHECK_TEXT(buffer) FUZZ_CHECK(memchr((buffer), '\0', sizeof(buffer)) != NULL)

/* Both NULL, or both strings and equal. */
static inline int fuzz_same_string(const char *a, const char *b) {
    if (a == NULL || b == NULL) return a == b;
    return strcmp(a, b) == 0;
}

/* A refusal's sentence for a JSON detail, taken as is: NUL-terminated in
 * its size bytes, not empty, printable ASCII. */
#define FUZZ_CHECK_SENTENCE(detail, size)                                                \
    do {                                                                                 \
        FUZZ_CHECK(memchr((detail), '\0', (size)) != NULL);                              \
        FUZZ_CHECK((detail)[0] != '\0');                                                 \
        for (const char *c_ = (detail); *c_ != '\0'; c_++) FUZZ_CHECK(*c_ >= ' ' && *c_ < 0x7f); \
    } while (0)

/* data[0..size) in a heap block of exactly size bytes (1 if empty), which
 * the caller frees: decoders must neither read past the end nor keep
 * pointers into the body, and ASan sees both. */
static inline char *fuzz_copy(const unsigned char *data, size_t size) {
    char *copy = malloc(size > 0 ? size : 1);
    if (copy == NULL) abort();
    if (size > 0) memcpy(copy, data, size);
    return copy;
}

#endif
