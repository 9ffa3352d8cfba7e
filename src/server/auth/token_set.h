/* server/auth/token_set.h — a set of bearer tokens, read from a tokens file
 * (admin.tokens_file, data.tokens_file), and the one question asked of it:
 * is this token one of them?
 *
 * The file: one token per line; a line that is empty (spaces aside) or
 * starts with '#' is skipped; spaces and tabs around a token, and a '\r'
 * before the '\n', are dropped. A token is RL_TOKEN_MIN_LEN..RL_TOKEN_MAX_LEN
 * bytes of RFC 6750's b64token alphabet (letters, digits, - . _ ~ + /, then
 * '=' only at the end): what `openssl rand -hex 32` or `-base64 32` prints,
 * and what can travel in an Authorization header as it is. A file with no
 * token, a line that is not a token, the same token twice, more than
 * RL_TOKEN_SET_MAX tokens or more than RL_TOKEN_FILE_MAX_BYTES is refused,
 * with the file and the line in the message.
 *
 * Only each token's SHA-256 is kept. A check hashes the token presented and
 * compares its digest with every digest of the set, each with
 * CRYPTO_memcmp, without stopping at a match: how long a check takes
 * depends on the length of what was presented and on how many tokens the
 * set holds, never on how much of a token was right.
 *
 * A set is immutable once parsed: any thread may check it at once; free it
 * when no thread does any more (token_store.h says when).
 */
#ifndef RL_SERVER_TOKEN_SET_H
#define RL_SERVER_TOKEN_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RL_TOKEN_MIN_LEN 16 /* `openssl rand -hex 8`: shorter ones are guessable */
#define RL_TOKEN_MAX_LEN 512
#define RL_TOKEN_SET_MAX 1024
#define RL_TOKEN_FILE_MAX_BYTES (1024u * 1024u)
#define RL_TOKEN_DIGEST_BYTES 32 /* SHA-256 */

typedef struct rl_token_set rl_token_set;

/* Parses text[0..len) (name stands for the file in messages). On success
 * *out is a new set (owned by the caller: rl_token_set_free). On failure
 * returns false, *out is NULL and err (err_size bytes) says
 * "<name>:<line>: <what>" (line 0 left out: the file as a whole), never
 * quoting a token. Thread-safe. */
bool rl_token_set_parse(const char *text, size_t len, const char *name, rl_token_set **out, char *err,
                        size_t err_size);

/* Reads and parses the file at path, as above ("<path>: cannot open: ..."
 * when it cannot be read). Only a regular file is read (core/regular_file.h):
 * a FIFO or a device is refused at once, never waited on, so that neither
 * start-up nor a SIGHUP can hang on one. Thread-safe; blocks on the disk:
 * never on an event loop. */
bool rl_token_set_load_file(const char *path, rl_token_set **out, char *err, size_t err_size);

/* How many tokens the set holds (>= 1). */
size_t rl_token_set_count(const rl_token_set *set);

/* The SHA-256 of token[0..len), for rl_token_set_has_digest. A token
 * longer than RL_TOKEN_MAX_LEN is hashed too (it matches nothing). Pure. */
void rl_token_digest(const char *token, size_t len, uint8_t digest[RL_TOKEN_DIGEST_BYTES]);

/* Whether a token with this digest is in set, in constant time (above).
 * set NULL: false. Thread-safe. */
bool rl_token_set_has_digest(const rl_token_set *set, const uint8_t digest[RL_TOKEN_DIGEST_BYTES]);

void rl_token_set_free(rl_token_set *set);

#endif
