/* bench_wire_decode.c — the request decoders of wire.h: decode + free of the
 * bodies the HTTP benchmarks send (bench/http/reserve.lua's ~300-byte
 * 4-requirement reserve, a 256-lease batch of them, and the complete bodies
 * of the same shape), on one thread, as fast as it goes. Prints ns per
 * message and ns per lease, best and median of a few rounds.
 *
 *   build/bench_wire_decode [seconds_per_round=0.5] [rounds=5]
 *
 * Decoding needs no clock and no backend, so the numbers are the decoder's
 * alone: copy of the body, parse, validation, the message's one allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/wire.h"

#define RESERVE_BODY                                                                               \
    "{\"lease_id\":\"01JBENCH0PREF0000000000001\",\"job_id\":\"01JBENCHJOB0000000000000000\","    \
    "\"requirements\":[{\"key\":\"global:llm:openai:gpt-4o:rpm\",\"amount\":1},"                  \
    "{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"amount\":1800},"                                 \
    "{\"key\":\"global:llm:openai:gpt-4o:concurrency\",\"amount\":1},"                            \
    "{\"key\":\"tenant:tenant_a:llm:daily_tokens\",\"amount\":1800}]}"
#define COMPLETE_BODY                                                                              \
    "{\"lease_id\":\"01JBENCH0PREF0000000000001\",\"job_id\":\"01JBENCHJOB0000000000000000\","    \
    "\"actuals\":[{\"key\":\"global:llm:openai:gpt-4o:tpm\",\"actual_amount\":740},"              \
    "{\"key\":\"tenant:tenant_a:llm:daily_tokens\",\"actual_amount\":740}]}"
#define BATCH 256

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* {"requests":[item,item,...]} with BATCH copies, malloc'd. */
static char *batch_of(const char *item, size_t *len) {
    size_t item_len = strlen(item);
    char *out = malloc(32 + BATCH * (item_len + 1));
    if (out == NULL) abort();
    size_t at = (size_t)sprintf(out, "{\"requests\":[");
    for (size_t i = 0; i < BATCH; i++) {
        if (i > 0) out[at++] = ',';
        memcpy(out + at, item, item_len);
        at += item_len;
    }
    at += (size_t)sprintf(out + at, "]}");
    *len = at;
    return out;
}

typedef enum kind { RESERVE, RESERVE_BATCH, COMPLETE, COMPLETE_BATCH } kind;

/* One decode + free; returns the leases decoded (0 on a decoding failure). */
static size_t decode_once(kind k, const char *body, size_t len) {
    char detail[RL_WIRE_DETAIL_SIZE];
    size_t count = 0;
    if (k == RESERVE || k == RESERVE_BATCH) {
        rl_wire_reserves msg;
        rl_status status = k == RESERVE ? rl__wire_decode_reserve(body, len, &msg, detail)
                                        : rl__wire_decode_reserve_batch(body, len, BATCH, &msg, detail);
        if (status == RL_OK) count = msg.count;
        rl__wire_reserves_free(&msg);
    } else {
        rl_wire_completes msg;
        rl_status status = k == COMPLETE ? rl__wire_decode_complete(body, len, &msg, detail)
                                         : rl__wire_decode_complete_batch(body, len, BATCH, &msg, detail);
        if (status == RL_OK) count = msg.count;
        rl__wire_completes_free(&msg);
    }
    if (count == 0) {
        fprintf(stderr, "bench_wire_decode: body refused: %s\n", detail);
        exit(1);
    }
    return count;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(const char *name, kind k, const char *body, size_t len, double seconds, int rounds) {
    double per_message[16];
    size_t leases = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t start = now_ns(), deadline = start + (uint64_t)(seconds * 1e9);
        uint64_t messages = 0, now = start;
        while (now < deadline) {
            for (int i = 0; i < 64; i++) leases = decode_once(k, body, len);
            messages += 64;
            now = now_ns();
        }
        per_message[r] = (double)(now - start) / (double)messages;
    }
    qsort(per_message, (size_t)rounds, sizeof per_message[0], compare_double);
    double best = per_message[0], median = per_message[rounds / 2];
    printf("%-16s %6zu bytes %4zu leases  ns/message best %9.0f median %9.0f  "
           "ns/lease best %6.0f median %6.0f  (%.0fk leases/s)\n",
           name, len, leases, best, median, best / (double)leases, median / (double)leases,
           1e6 / (median / (double)leases));
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (rounds < 1) rounds = 1;
    if (rounds > 16) rounds = 16;
    size_t batch_len = 0, complete_batch_len = 0;
    char *batch = batch_of(RESERVE_BODY, &batch_len);
    char *complete_batch = batch_of(COMPLETE_BODY, &complete_batch_len);
    run("reserve", RESERVE, RESERVE_BODY, strlen(RESERVE_BODY), seconds, rounds);
    run("reserve batch", RESERVE_BATCH, batch, batch_len, seconds, rounds);
    run("complete", COMPLETE, COMPLETE_BODY, strlen(COMPLETE_BODY), seconds, rounds);
    run("complete batch", COMPLETE_BATCH, complete_batch, complete_batch_len, seconds, rounds);
    free(batch);
    free(complete_batch);
    return 0;
}
