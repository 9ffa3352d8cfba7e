/* core/error_text.h — writing a human sentence into a caller's error buffer.
 * Private to the library. */
#ifndef RL_CORE_ERROR_TEXT_H
#define RL_CORE_ERROR_TEXT_H

#include <stddef.h>

/* printf into err (err_size bytes, always NUL-terminated); err may be NULL or
 * err_size 0, then nothing is written. Thread-safe. */
void rl__error_text(char *err, size_t err_size, const char *format, ...) __attribute__((format(printf, 3, 4)));

#endif
