/* fuzz_config.c — config.yaml text into rl_server_config_load_string over the
 * defaults, then rl_server_config_validate (and the redis options the daemon
 * derives from a valid config).
 *
 * Loading must never crash, leak (libyaml's documents and parser are freed
 * on every path) or print; it returns false with "<name>:<line>: ..." in err,
 * or true with every string of the config NUL-terminated in its array.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "server/config.h"

static void check_strings(const rl_server_config *config) {
    FUZZ_CHECK_TEXT(config->listen_addr);
    FUZZ_CHECK_TEXT(config->backend);
    FUZZ_CHECK_TEXT(config->registry_path);
    FUZZ_CHECK_TEXT(config->redis.address);
    FUZZ_CHECK_TEXT(config->redis.password);
    FUZZ_CHECK_TEXT(config->redis.key_prefix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_copy(data, size);
    rl_server_config config;
    rl_server_config_default(&config);
    char err[RL_CONFIG_ERR_SIZE];
    err[0] = '\0';
    bool loaded = rl_server_config_load_string(&config, text, size, "fuzz.yaml", err, sizeof err);
    free(text);
    FUZZ_CHECK_TEXT(err);
    if (!loaded) {
        FUZZ_CHECK(strncmp(err, "fuzz.yaml:", strlen("fuzz.yaml:")) == 0);
        return 0;
    }
    check_strings(&config);

    err[0] = '\0';
    if (!rl_server_config_validate(&config, err, sizeof err)) {
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK_TEXT(err);
        return 0;
    }
    FUZZ_CHECK(rl_server_config_thread_count(&config) >= 1);
    char host[RL_CONFIG_STRING_MAX];
    rl_redis_options options;
    rl_redis_options_default(&options);
    FUZZ_CHECK(rl_server_config_redis_options(&config, host, sizeof host, &options, err,
                                              sizeof err));
    FUZZ_CHECK(options.host == host && options.port >= 1);
    return 0;
}
