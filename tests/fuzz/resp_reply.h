/* resp_reply.h — what the harnesses of Redis's answers share: RESP bytes
 * read into a redisReply by hiredis's own reader, as the daemon gets them. */
#ifndef RL_FUZZ_RESP_REPLY_H
#define RL_FUZZ_RESP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

/* hiredis 0.14 allocates an array's elements as its header declares, before
 * they arrive: a header of more elements than the input has bytes is no
 * answer Redis could give, and would only measure the allocator. Every '*'
 * is judged, not only those after "\r\n": hiredis skips the two bytes that
 * close a bulk string without reading them, so "$1\r\naXY*400000000\r\n"
 * is a header too. */
static inline bool plausible_arrays(const char *resp, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (resp[i] != '*') continue;
        unsigned long long n = 0;
        for (size_t j = i + 1; j < len && resp[j] >= '0' && resp[j] <= '9' && n <= len; j++)
            n = n * 10 + (unsigned)(resp[j] - '0');
        if (n > len) return false;
    }
    return true;
}

static inline redisReply *read_reply(const char *resp, size_t len) {
    if (!plausible_arrays(resp, len)) return NULL;
    redisReader *reader = redisReaderCreate();
    if (reader == NULL) abort();
    void *reply = NULL;
    if (redisReaderFeed(reader, resp, len) != REDIS_OK || redisReaderGetReply(reader, &reply) != REDIS_OK)
        reply = NULL;
    redisReaderFree(reader);
    return reply;
}

#endif
