/* core/audit_id.h — private: the identity of an audit log directory.
 *
 * The memory backend's journal numbers the audit entries it makes, and a
 * crash between the two writes leaves the log one group ahead of the
 * journal; only then may entries of the log be dropped at start. To tell
 * that from a journal that is not this log's (new, moved, restored, or
 * another daemon's), the log has an id the journal records: a ULID in the
 * file RL__AUDIT_ID_NAME of the directory, made at the log's first open
 * and never changed.
 *
 * Threading: none; the caller opens the log from one thread.
 */
#ifndef RL_CORE_AUDIT_ID_H
#define RL_CORE_AUDIT_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/status.h"

#define RL__AUDIT_ID_NAME "audit.id"

/* The log id of the audit log in dir, as a ULID's value: read from its id
 * file, or made and written durably (atomic_file.h) when there is none
 * (*made true). RL_OK; RL_IO_ERROR when the file holds anything but one
 * ULID (err names it; it is left as it is) or the file system fails;
 * RL_NO_MEMORY. */
rl_status rl__audit_id_load(const char *dir, uint64_t *hi, uint64_t *lo, bool *made, char *err, size_t err_size);

#endif
