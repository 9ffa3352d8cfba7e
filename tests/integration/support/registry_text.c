/* registry_text.c — see registry_text.h. */
#include "registry_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimiter/registry.h"
#include "support/registry_copy.h"
#include "wire/buf.h"
#include "wire/wire.h"

char *rl_test_registry_text(const char *path, char *err, unsigned long err_size) {
    rl_test_registry_copy copy;
    char *text = NULL;
    bool found = false;
    if (rl_test_registry_copy_open(&copy, path, &found, err, err_size) && found) {
        rl_registry *registry = copy.registry;
        rl_limit_def *defs = NULL;
        size_t count = 0;
        if (rl_registry_list(registry, &defs, &count) == RL_OK) {
            rl_buf buf;
            rl__buf_init(&buf);
            rl__buf_append_str(&buf, "[\n");
            for (size_t i = 0; i < count; i++) {
                rl__buf_append_str(&buf, "  ");
                rl__wire_encode_limit_def(&buf, &defs[i]);
                rl__buf_append_str(&buf, i + 1 < count ? ",\n" : "\n");
            }
            rl__buf_append_str(&buf, "]\n");
            text = buf.failed ? NULL : strdup(buf.data);
            rl__buf_free(&buf);
        }
        free(defs);
    }
    rl_test_registry_copy_close(&copy);
    return text;
}
