/* core/call_wait.h — private: when the caller of the current backend call
 * began to wait.
 *
 * A backend that talks to a store bounds a caller's whole wait by one
 * deadline, whatever retries happen inside (redis: connect_timeout_ms +
 * command_timeout_ms). The wait may begin before the backend is called: a
 * lease queued in the submitter first waits for a flusher, and that flusher
 * may be busy with a store that stopped answering. The backend vtable has no
 * room for a deadline, so whoever calls a backend on behalf of callers that
 * have been waiting (a batch lane's flusher) says here when the oldest of
 * them began; the backend reads it at the start of its operation. 0 means
 * "now": a caller that calls the backend directly sets nothing.
 *
 * Thread-local: set and read on the same thread, around one call.
 */
#ifndef RL_CORE_CALL_WAIT_H
#define RL_CORE_CALL_WAIT_H

#include <stdint.h>

/* CLOCK_MONOTONIC milliseconds at which the current call's oldest caller
 * began to wait, or 0 when none was set. */
uint64_t rl__call_wait_since_ms(void);

/* Sets it for the calls this thread makes until it is set again (0 clears). */
void rl__call_wait_since_set(uint64_t since_ms);

#endif
