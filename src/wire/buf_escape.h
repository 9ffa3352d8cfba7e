/* wire/buf_escape.h — private: JSON string escaping without the quotes, for
 * encoders that build one string literal from several parts. */
#ifndef RL_WIRE_BUF_ESCAPE_H
#define RL_WIRE_BUF_ESCAPE_H

#include "wire/buf.h"

/* Appends text escaped as the inside of a JSON string literal. */
void rl__buf_append_json_escaped(rl_buf *buf, const char *text, size_t len);

#endif
