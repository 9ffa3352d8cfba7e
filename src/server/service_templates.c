/* service_templates.c — what both modes of the service say about templates
 * (service_internal.h). */
#include <stdio.h>
#include <string.h>

#include "server/service_internal.h"

/* A template's change of kind refused while a limit made from it holds
 * something: its pattern, whole. */
#define IN_USE_SENTENCE                                                                                     \
    "a limit made from template \"%s\" holds reservations: the template's kind can change only once none " \
    "of the limits made from it holds anything; or put the new template under another pattern"
_Static_assert(sizeof IN_USE_SENTENCE + RL_KEY_MAX_LEN <= RL_SERVICE_ERR_SIZE, "the sentence fits whole in a change's err");

void rl__service_template_refused(rl_service *service, rl_service_put *put, rl_status status) {
    put->status = status;
    if (status == RL_LIMIT_IN_USE) {
        snprintf(put->err, sizeof put->err, IN_USE_SENTENCE, put->def.key);
    } else if (status == RL_INVALID_REQUEST) {
        snprintf(put->err, sizeof put->err, "the %s backend cannot take this template (%s)", service->backend_name,
                 service->backend->ops->put_template == NULL ? "it has no templates" : "too many, or its kind");
    } else if (status != RL_UNKNOWN_LIMIT_KEY) {
        snprintf(put->err, sizeof put->err, "the %s backend refused the template: %s", service->backend_name,
                 rl_status_name(status));
        put->status = status == RL_NO_MEMORY || status == RL_IO_ERROR ? status : RL_BACKEND_ERROR;
    }
}

rl_status rl__service_get_made(rl_service *service, const rl__template_set *templates, const char *key,
                               rl_service_limit *out) {
    const rl__template *template_ = rl__template_set_match(templates, key, strlen(key));
    if (template_ == NULL) return RL_UNKNOWN_LIMIT_KEY;
    rl__template_instance_def(template_, key, &out->def);
    snprintf(out->template_pattern, sizeof out->template_pattern, "%s", template_->pattern.text);
    return rl__service_read_usage(service, &out->def, &out->usage);
}
