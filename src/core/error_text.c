/* error_text.c — see error_text.h. */
#include "core/error_text.h"

#include <stdarg.h>
#include <stdio.h>

void rl__error_text(char *err, size_t err_size, const char *format, ...) {
    if (err == NULL || err_size == 0) return;
    va_list args;
    va_start(args, format);
    vsnprintf(err, err_size, format, args);
    va_end(args);
}
