/* core/regular_file.h — private: the one way a file someone names is opened
 * and read: the config file, the tokens files, the TLS certificate and key,
 * the registry and its log, the journal, the audit log's parts.
 *
 * open(2) of a FIFO waits until something opens its other end, a read of
 * one waits for what may never be written, and a device may never answer:
 * a daemon given one at start would never get past it, nor past a SIGHUP
 * that reads it again. So the file is opened with O_NONBLOCK (a FIFO opens
 * at once, with no writer), then fstat'd, and anything but a regular file
 * is refused with a sentence that says what it is. On a regular file
 * O_NONBLOCK changes nothing: its descriptor reads as any other.
 *
 * Threading: none of its own; any thread. Blocks only on the disk.
 */
#ifndef RL_CORE_REGULAR_FILE_H
#define RL_CORE_REGULAR_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "ratelimiter/status.h"

/* Opens path for reading (close-on-exec, never a controlling terminal):
 * the descriptor, with its fstat in *st. -1 otherwise, with a sentence in
 * err ("<path>: cannot open: <why>", "<path>: is a FIFO, not a regular
 * file: ...") and errno set: ENOENT for a missing file, EINVAL for one that
 * is not regular. */
int rl__regular_file_open(const char *path, struct stat *st, char *err, size_t err_size);

/* Reads the whole regular file at path into *data, malloc'd, with a NUL
 * after its *len bytes (a scanner's sentinel). More than max_bytes is
 * refused ("<path>: larger than N bytes"). A missing file sets *missing and
 * is no error when missing is not NULL; with NULL it is one. RL_OK,
 * RL_IO_ERROR or RL_NO_MEMORY, with the sentence in err. A buffer given
 * up while reading (the file grew) is zeroed first: a tokens file's
 * secrets are not left in freed memory. */
rl_status rl__read_whole_file(const char *path, size_t max_bytes, char **data, size_t *len, bool *missing,
                              char *err, size_t err_size);

#endif
