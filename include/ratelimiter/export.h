/* ratelimiter/export.h — RL_API marks the library's public functions.
 *
 * libratelimiter.so is built with hidden visibility: it exports what is
 * declared RL_API in these headers and nothing else, so that its insides
 * (the wire codec, the backends' parts, the client's machinery) can change
 * without breaking a program linked against it. tests/install checks that
 * the library's export list and these declarations are the same.
 */
#ifndef RATELIMITER_EXPORT_H
#define RATELIMITER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RL_API __attribute__((visibility("default")))
#else
#define RL_API
#endif

#endif
