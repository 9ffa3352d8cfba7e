/* test_config.c — config.yaml loading: defaults, every setting, and every
 * kind of mistake named with its line and key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/config.h"

static bool load(rl_server_config *config, const char *yaml, char *err, size_t err_size) {
    rl_server_config_default(config);
    err[0] = '\0';
    return rl_server_config_load_string(config, yaml, strlen(yaml), "config.yaml", err, err_size);
}

/* The file fails to load and the message contains every fragment given. */
static void expect_error(const char *yaml, const char *fragment1, const char *fragment2) {
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    bool ok = load(&config, yaml, err, sizeof err);
    if (ok) fail_msg("loaded but should not: %s", yaml);
    if (strstr(err, fragment1) == NULL) fail_msg("\"%s\" not in \"%s\"", fragment1, err);
    if (fragment2 != NULL && strstr(err, fragment2) == NULL)
        fail_msg("\"%s\" not in \"%s\"", fragment2, err);
}

static void test_defaults(void **state) {
    (void)state;
    rl_server_config config;
    rl_server_config_default(&config);
    assert_string_equal(config.listen_addr, "127.0.0.1:8080");
    assert_string_equal(config.backend, "memory");
    assert_string_equal(config.registry_path, "./data/limits.json");
    assert_int_equal(config.threads, 0);
    assert_int_equal(config.max_body_bytes, 1048576);
    assert_int_equal(config.max_batch, 256);
    assert_int_equal(config.max_limits, 0);
    assert_int_equal(config.max_connections, 10000);
    assert_int_equal(config.memory.sweep_interval_ms, RL_MEMORY_DEFAULT_SWEEP_INTERVAL_MS);
    assert_null(config.memory.clock);
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    assert_true(rl_server_config_thread_count(&config) >= 1);
}

static void test_empty_file_keeps_defaults(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, "", err, sizeof err));
    assert_string_equal(config.listen_addr, "127.0.0.1:8080");
    assert_true(load(&config, "# only a comment\n", err, sizeof err));
    assert_true(load(&config, "server:\nregistry:\n", err, sizeof err));
    assert_string_equal(config.registry_path, "./data/limits.json");
}

static void test_every_setting(void **state) {
    (void)state;
    const char *yaml = "server:\n"
                       "  listen_addr: \"0.0.0.0:9090\"\n"
                       "  backend: memory\n"
                       "  threads: 3\n"
                       "  max_body_bytes: 65536\n"
                       "  max_batch: 100\n"
                       "  max_connections: 500\n"
                       "registry:\n"
                       "  path: /var/lib/rl/limits.json\n"
                       "  max_limits: 5000\n"
                       "memory:\n"
                       "  sweep_interval_ms: 250\n"
                       "  lease_memory_ms: 30000\n"
                       "  max_leases: 1000\n";
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, yaml, err, sizeof err));
    assert_string_equal(config.listen_addr, "0.0.0.0:9090");
    assert_string_equal(config.backend, "memory");
    assert_int_equal(config.threads, 3);
    assert_int_equal(config.max_body_bytes, 65536);
    assert_int_equal(config.max_batch, 100);
    assert_int_equal(config.max_connections, 500);
    assert_string_equal(config.registry_path, "/var/lib/rl/limits.json");
    assert_int_equal(config.max_limits, 5000);
    assert_int_equal(config.memory.sweep_interval_ms, 250);
    assert_int_equal(config.memory.lease_memory_ms, 30000);
    assert_int_equal(config.memory.max_leases, 1000);
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    assert_int_equal(rl_server_config_thread_count(&config), 3);
}

static void test_spec_example_shape(void **state) {
    (void)state;
    /* spec §11.2, with the memory backend (tigerbeetle is not built). */
    const char *yaml = "server:\n"
                       "  listen_addr: \":8080\"\n"
                       "  backend: \"memory\" # or tigerbeetle\n"
                       "\n"
                       "registry:\n"
                       "  path: \"./data/limits.json\"\n"
                       "\n"
                       "tigerbeetle:\n"
                       "  cluster_id: \"0\"\n"
                       "  addresses: [\"127.0.0.1:3000\"]\n"
                       "  sessions: 8\n"
                       "  max_batch_events: 8000\n"
                       "  flush_interval_micros: 200\n"
                       "redis:\n"
                       "  url: redis://127.0.0.1:6379\n";
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, yaml, err, sizeof err));
    assert_string_equal(config.listen_addr, ":8080");
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    /* Unquoted, ":8080" is a plain scalar in YAML too. */
    assert_true(load(&config, "server:\n  listen_addr: :8081\n", err, sizeof err));
    assert_string_equal(config.listen_addr, ":8081");
}

static void test_unknown_key_names_key_and_line(void **state) {
    (void)state;
    expect_error("server:\n  listen_addr: \"127.0.0.1:1\"\n  thread: 4\n", "config.yaml:3:",
                 "unknown key 'thread' in section 'server'");
    expect_error("registry:\n  paht: x\n", "config.yaml:2:", "'paht'");
    expect_error("memory:\n  sweep_ms: 5\n", "config.yaml:2:", "'sweep_ms'");
}

static void test_unknown_section(void **state) {
    (void)state;
    expect_error("servre:\n  threads: 1\n", "config.yaml:1:", "unknown section 'servre'");
}

static void test_wrong_types(void **state) {
    (void)state;
    expect_error("server:\n  threads: four\n", "config.yaml:2:", "'threads' must be an integer 0..256");
    expect_error("server:\n  threads: \"4\"\n", "config.yaml:2:", "'threads' must be an integer");
    expect_error("server:\n  threads: -1\n", "'threads' must be an integer", NULL);
    expect_error("server:\n  threads: 2.5\n", "'threads' must be an integer", NULL);
    expect_error("server:\n  threads: [1, 2]\n", "'threads' must be an integer", NULL);
    expect_error("server:\n  listen_addr: [a]\n", "'listen_addr' must be a string", NULL);
    expect_error("server:\n  listen_addr: {a: 1}\n", "'listen_addr' must be a string", NULL);
    expect_error("registry:\n  path: \"\"\n", "'path' must be a string of 1..", NULL);
    expect_error("registry:\n  path:\n", "'path' needs a value", NULL);
    expect_error("server: 5\n", "section 'server' must be a mapping", NULL);
    expect_error("- server\n", "top level must be a mapping", NULL);
    expect_error("server:\n  max_batch: 99999999999999999999999\n", "'max_batch' must be an integer",
                 NULL);
}

static void test_ranges(void **state) {
    (void)state;
    expect_error("server:\n  threads: 257\n", "0..256", NULL);
    expect_error("server:\n  max_body_bytes: 10\n", "'max_body_bytes' must be an integer 256..", NULL);
    expect_error("server:\n  max_batch: 0\n", "'max_batch' must be an integer 1..", NULL);
    expect_error("server:\n  max_connections: 0\n", "'max_connections' must be an integer 1..", NULL);
    expect_error("memory:\n  sweep_interval_ms: 99999999\n", "'sweep_interval_ms'", NULL);
    /* Edges are fine. */
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, "server:\n  threads: 256\n  max_batch: 1\n  max_body_bytes: 256\n", err,
                     sizeof err));
    assert_true(load(&config, "memory:\n  sweep_interval_ms: 0\n", err, sizeof err));
    assert_int_equal(config.memory.sweep_interval_ms, 0);
}

static void test_bad_values(void **state) {
    (void)state;
    expect_error("server:\n  backend: redis\n", "config.yaml:2:", "backend \"redis\" is not available");
    expect_error("server:\n  backend: tigerbeetle\n", "not available", NULL);
    expect_error("server:\n  listen_addr: \"127.0.0.1\"\n", "config.yaml:2:", "listen address");
    expect_error("server:\n  listen_addr: \"127.0.0.1:99999\"\n", "port 0..65535", NULL);
}

static void test_duplicates(void **state) {
    (void)state;
    expect_error("server:\n  threads: 1\n  threads: 2\n", "config.yaml:3:", "duplicate key 'threads'");
    expect_error("server:\n  threads: 1\nserver:\n  threads: 2\n", "duplicate section 'server'", NULL);
}

static void test_invalid_yaml(void **state) {
    (void)state;
    expect_error("server:\n  threads: 1\n   max_batch: [\n", "config.yaml:", "invalid YAML");
    expect_error("server: {threads: 1\n", "invalid YAML", NULL);
    expect_error("server:\n  threads: 1\n---\nserver:\n  threads: 2\n", "more than one YAML document",
                 NULL);
}

static void test_file(void **state) {
    (void)state;
    char dir[] = "/tmp/rl_test_config_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("server:\n  max_batch: 7\n  bogus: 1\n", f);
    fclose(f);

    rl_server_config config;
    rl_server_config_default(&config);
    char err[RL_CONFIG_ERR_SIZE];
    assert_false(rl_server_config_load_file(&config, path, err, sizeof err));
    char expected[300];
    snprintf(expected, sizeof expected, "%s:3: unknown key 'bogus'", path);
    assert_non_null(strstr(err, expected));

    f = fopen(path, "w");
    fputs("server:\n  max_batch: 7\n", f);
    fclose(f);
    rl_server_config_default(&config);
    assert_true(rl_server_config_load_file(&config, path, err, sizeof err));
    assert_int_equal(config.max_batch, 7);
    unlink(path);

    assert_false(rl_server_config_load_file(&config, path, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));
    rmdir(dir);
}

/* The example shipped in examples/ loads and validates as is. */
static void test_example_config(void **state) {
    (void)state;
    /* __FILE__ is .../tests/unit/server/test_config.c: the source root is above. */
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *tests = strstr(path, "tests/unit/server/test_config.c");
    if (tests == NULL) skip();
    snprintf(tests, sizeof path - (size_t)(tests - path), "examples/config.yaml");
    rl_server_config config;
    rl_server_config_default(&config);
    char err[RL_CONFIG_ERR_SIZE];
    if (!rl_server_config_load_file(&config, path, err, sizeof err)) fail_msg("%s", err);
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    assert_string_equal(config.backend, "memory");
}

static void test_validate(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    rl_server_config_default(&config);
    snprintf(config.listen_addr, sizeof config.listen_addr, "nonsense");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "listen address"));
    rl_server_config_default(&config);
    snprintf(config.backend, sizeof config.backend, "redis");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    rl_server_config_default(&config);
    config.threads = 1000;
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    rl_server_config_default(&config);
    config.registry_path[0] = '\0';
    assert_false(rl_server_config_validate(&config, err, sizeof err));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_empty_file_keeps_defaults),
        cmocka_unit_test(test_every_setting),
        cmocka_unit_test(test_spec_example_shape),
        cmocka_unit_test(test_unknown_key_names_key_and_line),
        cmocka_unit_test(test_unknown_section),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_invalid_yaml),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_example_config),
        cmocka_unit_test(test_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
