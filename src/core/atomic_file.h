/* core/atomic_file.h — private: a file replaced whole or not at all, and
 * what it takes to be sure the bytes are on disk (reading one back:
 * regular_file.h).
 *
 * The discipline limits.json has always had, for every file that must
 * survive a crash (the registry, the memory backend's journal snapshot):
 * write "<path>.tmp" (creating missing directories), fsync it, open the
 * directory, rename over path, fsync the directory. A crash at any moment
 * leaves either the old file or the new one, never a mix; a failure before
 * the rename leaves the old file and no tmp.
 *
 * Threading: none of its own; two writers of one path must be serialised by
 * their caller.
 */
#ifndef RL_CORE_ATOMIC_FILE_H
#define RL_CORE_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/status.h"

/* Writes the new content into fd (the tmp file, empty); false on failure,
 * with errno set. */
typedef bool (*rl__atomic_write_fn)(int fd, void *context);

/* Replaces path as above. *replaced says whether the rename happened: past
 * it only the directory's fsync can still fail (RL_IO_ERROR, and the new
 * content may not survive a crash). RL_OK, RL_IO_ERROR or RL_NO_MEMORY, with
 * a sentence naming the file in err. */
rl_status rl__atomic_file_replace(const char *path, rl__atomic_write_fn write, void *context, bool *replaced,
                                  char *err, size_t err_size);

/* The second half of a replace, for a tmp file someone else wrote and
 * synced: renames tmp_path over path and fsyncs the directory, with the
 * same outcomes (*replaced says whether the rename happened; before it the
 * tmp file is removed). */
rl_status rl__atomic_file_rename(const char *tmp_path, const char *path, bool *replaced, char *err,
                                 size_t err_size);

/* The same without the directory's fsync, for a caller that syncs the
 * directory later itself (a journal synced once a second): until then a
 * crash may leave the old file in place. */
rl_status rl__atomic_file_rename_unsynced(const char *tmp_path, const char *path, bool *replaced, char *err,
                                          size_t err_size);

/* write(2) until all of data is written (EINTR retried); 0, or -1 with errno. */
int rl__write_all(int fd, const void *data, size_t len);

/* The directory part of path ("." for a bare name), malloc'd; mkdir -p of a
 * directory (0755), 0 or -1 with errno. */
char *rl__directory_of(const char *path);
int rl__make_directories(const char *dir);

#endif
