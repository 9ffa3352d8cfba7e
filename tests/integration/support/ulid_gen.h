/* support/ulid_gen.h — fresh ULID lease ids for the integration tests:
 * 48 bits of Unix milliseconds, then 80 random bits, Crockford base32.
 * Thread-safe (getrandom). */
#ifndef RL_TEST_ULID_GEN_H
#define RL_TEST_ULID_GEN_H

/* Writes 26 characters and a NUL into out; returns out. */
char *rl_test_ulid_new(char out[27]);

#endif
