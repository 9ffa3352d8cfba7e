/* server/api/console_files.h — the web console's files (console/ in the
 * source tree), built into the daemon by CMakeLists.txt as constant arrays
 * (generated/console_files.c): nothing is read from disk at run time and
 * nothing is fetched from elsewhere. Constant: any thread.
 */
#ifndef RL_SERVER_CONSOLE_FILES_H
#define RL_SERVER_CONSOLE_FILES_H

#include <stddef.h>

typedef struct rl_console_file {
    const char *name;         /* "index.html": the file's name in console/ */
    const char *content_type; /* from its extension, e.g. "text/css; charset=utf-8" */
    const char *data;         /* its bytes (NUL after them) */
    size_t size;
} rl_console_file;

extern const rl_console_file rl_console_files[];
extern const size_t rl_console_file_count;

#endif
