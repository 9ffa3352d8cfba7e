/* audit_id.c — see audit_id.h. */
#include "core/audit_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "core/error_text.h"
#include "core/regular_file.h"
#include "ratelimiter/types.h"
#include "ratelimiter/ulid.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

static bool write_id(int fd, void *context) {
    char line[RL_ULID_TEXT_SIZE + 1];
    snprintf(line, sizeof line, "%s\n", (const char *)context);
    return rl__write_all(fd, line, strlen(line)) == 0;
}

rl_status rl__audit_id_load(const char *dir, uint64_t *hi, uint64_t *lo, bool *made, char *err, size_t err_size) {
    *made = false;
    char *path = NULL;
    if (asprintf(&path, "%s/" RL__AUDIT_ID_NAME, dir) < 0) return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", dir);
    char *data = NULL;
    size_t len = 0;
    bool missing = false;
    rl_status status = rl__read_whole_file(path, 4096, &data, &len, &missing, err, err_size);
    if (status == RL_OK && !missing) {
        size_t text_len = len > 0 && data[len - 1] == '\n' ? len - 1 : len;
        if (text_len != RL_ULID_LEN || !rl_ulid_decode(data, text_len, hi, lo))
            status = fail(RL_IO_ERROR, err, err_size,
                          "%s: not an audit log id (one ULID); the file is left as it is: restore it, or move it "
                          "away to give the log a new id (a journal of the old one is then reported as not this "
                          "log's)",
                          path);
    } else if (status == RL_OK) {
        char text[RL_ULID_TEXT_SIZE];
        bool replaced = false;
        if (rl_ulid_new(text) == NULL) {
            status = fail(RL_IO_ERROR, err, err_size, "%s: cannot make a ULID", path);
        } else {
            status = rl__atomic_file_replace(path, write_id, text, &replaced, err, err_size);
            if (status == RL_OK && !rl_ulid_decode(text, RL_ULID_LEN, hi, lo))
                status = fail(RL_IO_ERROR, err, err_size, "%s: cannot make a ULID", path);
            *made = status == RL_OK;
        }
    }
    free(data);
    free(path);
    return status;
}
