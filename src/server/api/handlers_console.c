/* handlers_console.c — GET /console and GET /console/{file}: the web
 * console's files (console_files.h), built into the daemon. /console and
 * /console/ are its page (index.html); a name no file has is a 404 like any
 * unknown path. GET / sends a browser opened on the daemon's address to
 * /console. The files hold no data: the page reads everything through
 * the API (limits, audit, denials), as any client does, so whatever guards
 * the API guards what the console shows and changes.
 */
#include <string.h>

#include "server/api/console_files.h"
#include "server/api/endpoints.h"
#include "server/api/respond.h"

#define CONSOLE_PATH "/console"

static const rl_console_file *file_named(const char *name, size_t len) {
    for (size_t i = 0; i < rl_console_file_count; i++) {
        const rl_console_file *file = &rl_console_files[i];
        if (strlen(file->name) == len && memcmp(file->name, name, len) == 0) return file;
    }
    return NULL;
}

void rl__console_file(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                      rl_http_response *res) {
    (void)route;
    /* The router gave "/console" exactly or a path under "/console/". */
    const char *name = req->path + sizeof CONSOLE_PATH - 1;
    size_t len = req->path_len - (sizeof CONSOLE_PATH - 1);
    if (len > 0) {
        name++; /* the '/' */
        len--;
    }
    const rl_console_file *file = len == 0 ? file_named("index.html", 10) : file_named(name, len);
    if (file == NULL) {
        rl_respond_no_route(ctx, res, req, "the console has no file of that name (its page is /console)");
        return;
    }
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append(buf, file->data, file->size);
    res->status = 200;
    res->body = buf;
    res->content_type = file->content_type;
    res->browser_page = true;
}

void rl__console_redirect(rl_handler_ctx *ctx, const rl_api_route *route, const rl_http_request *req,
                          rl_http_response *res) {
    (void)route;
    (void)req;
    /* A browser follows Location and never shows the body; curl does show
     * it, so it says where the console is in the API's own shape. */
    rl_buf *buf = &ctx->body;
    rl__buf_reset(buf);
    rl__buf_append_str(buf, "{\"detail\":\"the web console is at " CONSOLE_PATH "\"}");
    res->status = 302;
    res->location = CONSOLE_PATH;
    res->body = buf;
}
