/* server/api/admin_writer.h — admin puts and deletes done off the event
 * loops, many at once.
 *
 * An admin change (a PUT or DELETE of a limit or a template, a preset's
 * puts) waits for an fdatasync of the registry's log and, on the memory
 * backend, of its journal, and now and then for a compaction of the
 * registry (about 0.1 s at 100,000 limits). Done on an event loop it would
 * stall every reserve and complete of that loop meanwhile. So the loop only decodes and checks
 * the body (or the key), hands the change to this writer and goes on; the
 * writer thread takes every change waiting, does them in submit order as
 * one group (the group function: rl_service_put_limits in the daemon, one
 * registry write for each run of puts) and only then tells each change,
 * through its `done`, which hands it back to its loop for the answer. An
 * answer is therefore sent only once the change is durable, and a flood of
 * puts costs one sync per group, not one per put.
 *
 * Threading: submit from any thread; `done` runs on the writer thread, one
 * job after another, after the group function returned. stop drains: every
 * job submitted before it is done (its `done` called) before stop returns;
 * a submit after stop began is refused. Jobs are the caller's memory, which
 * must live until their `done`.
 */
#ifndef RL_SERVER_ADMIN_WRITER_H
#define RL_SERVER_ADMIN_WRITER_H

#include <stdbool.h>
#include <stddef.h>

#include "server/service.h"

/* The most changes done as one group: bounds what one group holds up. */
#define RL_ADMIN_WRITER_MAX_GROUP 1024u

typedef struct rl_admin_job rl_admin_job;
struct rl_admin_job {
    rl_service_put put; /* in: put.def and put.op (a put or a delete); out: the rest, when done is called */
    /* Or, when puts is not NULL, count changes (1..RL_ADMIN_WRITER_MAX_GROUP,
     * the caller's memory; put is then unused) done together, in order, in
     * one group, never split between two: a preset's apply, one registry
     * write. */
    rl_service_put *puts;
    size_t count;
    void (*done)(rl_admin_job *job);
    void *context;      /* the caller's */
    rl_admin_job *next; /* the writer's */
};

/* Does puts[0..count) (count >= 1, puts and deletes) in order, filling
 * each one's answer. */
typedef void (*rl_admin_group_fn)(void *context, rl_service_put *puts, size_t count);

typedef struct rl_admin_writer rl_admin_writer;

/* Starts the writer thread. NULL if out of memory or no thread. */
rl_admin_writer *rl_admin_writer_start(rl_admin_group_fn group_fn, void *context);

/* Queues job. false (job untouched, done never called) once stopping, or
 * for a job of more than RL_ADMIN_WRITER_MAX_GROUP changes. */
bool rl_admin_writer_submit(rl_admin_writer *writer, rl_admin_job *job);

/* Does what is queued, stops the thread and frees the writer. NULL is allowed. */
void rl_admin_writer_stop(rl_admin_writer *writer);

/* The group function of the daemon: context is the rl_service. */
void rl_admin_writer_put_limits(void *service, rl_service_put *puts, size_t count);

#endif
