/* server/http/error_filter.h — JSON bodies for the errors h2o answers by itself.
 *
 * h2o refuses some requests before any handler runs (413 for a body above
 * max_request_entity_size, 417, a bad chunked body) with a text/plain body.
 * Clients of this API parse every answer as JSON, so this filter rewrites
 * such an answer to {"error":"invalid_request"} and a newline, with
 * Content-Type application/json, keeping its status. Answers of our
 * handlers (already JSON) pass untouched.
 */
#ifndef RL_SERVER_ERROR_FILTER_H
#define RL_SERVER_ERROR_FILTER_H

#include <h2o.h>

/* Registers the filter on pathconf. Call at configuration time, before any
 * context is created; the filter lives as long as the h2o configuration. */
void rl_error_filter_register(h2o_pathconf_t *pathconf);

#endif
