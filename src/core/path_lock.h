/* core/path_lock.h — private: one process at a time on a data file or
 * directory (the registry, the memory backend's journal, the audit log).
 *
 * Two writers of one file interleave their records and each believes its
 * own view of usage, so the second is refused with a sentence naming the
 * first one's PID. The lock is an exclusive flock(2) on a lock file beside
 * the data ("<path>.lock", or "<dir>/<name>.lock" for a directory) that is
 * never renamed: the journal and limits.json are replaced by rename, and a
 * lock on the file itself would stay with the old inode. The kernel
 * releases it when the holder dies, kill -9 included, so a lock file left
 * behind holds nothing; its content (the holder's PID) is for the message
 * alone. flock locks belong to an open file description: a second opening
 * in the same process is refused too (two limiters on one journal).
 *
 * Threading: none of its own; acquire and release from one thread. The
 * descriptor is close-on-exec; a forked child (a journal compaction)
 * shares the lock and never releases it.
 */
#ifndef RL_CORE_PATH_LOCK_H
#define RL_CORE_PATH_LOCK_H

#include <stddef.h>

#include "ratelimiter/status.h"

typedef struct rl__path_lock rl__path_lock;

/* Takes the lock at lock_path (made, with its directory, if missing) for
 * data_path, which the sentences name, and writes this process's PID into
 * it. RL_OK and *out, the caller's to release; RL_IO_ERROR with a sentence
 * in err when another process (or another opening in this one) holds it,
 * naming that PID, or when the file system refuses; RL_NO_MEMORY. Never
 * waits. */
rl_status rl__path_lock_acquire(const char *lock_path, const char *data_path, rl__path_lock **out, char *err,
                                size_t err_size);

/* lock_path for a file: "<path>.lock", malloc'd; NULL without memory. */
char *rl__path_lock_beside(const char *path);

/* Releases the lock and frees it (the file stays). NULL is allowed. */
void rl__path_lock_release(rl__path_lock *lock);

#endif
