/* fuzz_reserve_answer.c — any body a daemon (or whatever answers in its
 * place) may send back to a reserve, into the HTTP limiter's decoders
 * (wire.h: rl__wire_decode_reserve_answer and the batch one, 3 results).
 *
 * Input: the body. Checked: a body either decodes or is refused; a decoded
 * answer is coherent (an allowed one has no denied_by, a denied_by has a key
 * and a known reason) and survives the daemon's own encoder: encoding what
 * was read (a dry run's "dry_run" too) and reading it again gives the same
 * answer.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "wire/wire.h"

/* The body as the decoders take it: writable, NUL after the end. */
static char *terminated(const uint8_t *data, size_t size) {
    char *body = malloc(size + 1);
    if (body == NULL) abort();
    memcpy(body, data, size);
    body[size] = '\0';
    return body;
}

static void check_answer(const rl_wire_reserve_answer *a) {
    if (a->allowed) FUZZ_CHECK(a->denied_by.key == NULL);
    if (!a->allowed) FUZZ_CHECK(a->reserved_at_unix_ms == 0);
    if (a->denied_by.key != NULL) {
        FUZZ_CHECK(a->denied_by.key[0] != '\0');
        FUZZ_CHECK(a->denied_by.reason >= RL_DENIAL_CAPACITY && a->denied_by.reason <= RL_DENIAL_EXCEEDS_CAPACITY);
    }
    /* What was read, encoded by the daemon's encoder, reads back the same. */
    rl_reserve_result r = {a->allowed, a->retry_after_ms, a->reserved_at_unix_ms, a->status, a->status_key, a->denied_by};
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_reserve_result(&buf, &r, a->dry_run);
    FUZZ_CHECK(!buf.failed);
    rl_wire_reserve_answer again;
    FUZZ_CHECK(rl__wire_decode_reserve_answer(buf.data, buf.len, &again) == RL_OK);
    FUZZ_CHECK(again.allowed == a->allowed && again.retry_after_ms == a->retry_after_ms);
    FUZZ_CHECK(again.reserved_at_unix_ms == a->reserved_at_unix_ms);
    FUZZ_CHECK(again.dry_run == a->dry_run);
    FUZZ_CHECK(fuzz_same_string(again.denied_by.key, a->denied_by.key));
    if (a->denied_by.key != NULL) {
        FUZZ_CHECK(again.denied_by.reason == a->denied_by.reason);
        FUZZ_CHECK(again.denied_by.requested == a->denied_by.requested);
        FUZZ_CHECK(again.denied_by.available == a->denied_by.available);
        FUZZ_CHECK(again.denied_by.capacity == a->denied_by.capacity);
        FUZZ_CHECK(again.denied_by.period_end_unix_ms == a->denied_by.period_end_unix_ms);
    }
    rl__buf_free(&buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *body = terminated(data, size);
    rl_wire_reserve_answer one;
    if (rl__wire_decode_reserve_answer(body, size, &one) == RL_OK) check_answer(&one);
    free(body);

    body = terminated(data, size);
    rl_wire_reserve_answer three[3];
    if (rl__wire_decode_reserve_batch_answer(body, size, three, 3) == RL_OK)
        for (size_t i = 0; i < 3; i++) check_answer(&three[i]);
    free(body);
    return 0;
}
