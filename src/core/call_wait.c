/* call_wait.c — see call_wait.h. */
#include "core/call_wait.h"

static _Thread_local uint64_t wait_since_ms;

uint64_t rl__call_wait_since_ms(void) { return wait_since_ms; }

void rl__call_wait_since_set(uint64_t since_ms) { wait_since_ms = since_ms; }
