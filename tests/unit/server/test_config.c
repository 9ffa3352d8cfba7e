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
    assert_int_equal(config.idle_timeout_ms, 60000);
    assert_int_equal(config.request_timeout_ms, 10000);
    assert_int_equal(config.memory.sweep_interval_ms, RL_MEMORY_DEFAULT_SWEEP_INTERVAL_MS);
    assert_null(config.memory.clock);
    assert_string_equal(config.redis.address, "127.0.0.1:6379");
    assert_string_equal(config.redis.password, "");
    assert_int_equal(config.redis.db, 0);
    assert_int_equal(config.redis.connections, 4);
    assert_string_equal(config.redis.key_prefix, "rl:");
    assert_int_equal(config.redis.connect_timeout_ms, 200);
    assert_int_equal(config.redis.command_timeout_ms, 500);
    assert_int_equal(config.redis.lease_memory_ms, 600000);
    assert_int_equal(config.redis.max_leases_per_batch, RL_CONFIG_DEFAULT_REDIS_MAX_LEASES_PER_BATCH);
    assert_int_equal(config.redis.flush_interval_us, 200);
    assert_int_equal(config.redis.flushes_in_flight, 2);
    assert_false(config.redis.allow_eviction);
    assert_int_equal(config.allowed_origin_count, 0);
    assert_false(config.journal.set);
    assert_false(config.audit_dir.set);
    assert_int_equal(config.memory.journal_fsync, RL_JOURNAL_FSYNC_EVERYSEC);
    assert_int_equal(config.audit_retention_days, RL_AUDIT_DEFAULT_RETENTION_DAYS);
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    assert_true(rl_server_config_thread_count(&config) >= 1);
    /* Beside the default registry: ./data/journal, ./data/audit. */
    rl_server_memory_paths paths;
    rl_memory_options memory;
    rl_server_config_memory_options(&config, &paths, &memory);
    assert_string_equal(memory.journal_path, "./data/journal");
    assert_string_equal(memory.audit_dir, "./data/audit");
    assert_int_equal(memory.journal_fsync, RL_JOURNAL_FSYNC_EVERYSEC);
    assert_int_equal(memory.audit_retention_days, 62);
    assert_int_equal(memory.sweep_interval_ms, RL_MEMORY_DEFAULT_SWEEP_INTERVAL_MS);
    assert_null(memory.clock);
}

/* memory.journal_path and audit.dir: set, off (""), or beside whatever
 * registry.path is, so that daemons with registries of their own keep
 * journals and audit logs of their own. */
static void test_journal_and_audit(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    rl_server_memory_paths paths;
    rl_memory_options memory;
    assert_true(load(&config,
                     "memory:\n  journal_path: /var/lib/rl/j\n  journal_fsync: everysec\n"
                     "audit:\n  dir: \"/var/log/rl audit\"\n  retention_days: 400\n",
                     err, sizeof err));
    rl_server_config_memory_options(&config, &paths, &memory);
    assert_string_equal(memory.journal_path, "/var/lib/rl/j");
    assert_string_equal(memory.audit_dir, "/var/log/rl audit");
    assert_int_equal(memory.journal_fsync, RL_JOURNAL_FSYNC_EVERYSEC);
    assert_int_equal(memory.audit_retention_days, 400);
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    rl_redis_options redis;
    rl_redis_options_default(&redis);
    char host[256];
    assert_true(rl_server_config_redis_options(&config, host, sizeof host, &redis, err, sizeof err));
    assert_int_equal(redis.audit_retention_days, 400);

    /* "" turns each off; the other keeps its default. */
    assert_true(load(&config, "memory:\n  journal_path: \"\"\n  journal_fsync: \"off\"\n", err, sizeof err));
    rl_server_config_memory_options(&config, &paths, &memory);
    assert_null(memory.journal_path);
    assert_int_equal(memory.journal_fsync, RL_JOURNAL_FSYNC_OFF);
    assert_string_equal(memory.audit_dir, "./data/audit");
    assert_true(load(&config, "audit:\n  dir: ''\n", err, sizeof err));
    rl_server_config_memory_options(&config, &paths, &memory);
    assert_null(memory.audit_dir);
    assert_string_equal(memory.journal_path, "./data/journal");

    /* Beside the registry, wherever it is. */
    static const struct {
        const char *registry, *journal, *audit;
    } beside[] = {
        {"/tmp/rl_x/limits.json", "/tmp/rl_x/journal", "/tmp/rl_x/audit"},
        {"limits.json", "journal", "audit"},
        {"/limits.json", "/journal", "/audit"},
        {"a//b/", "a//b/journal", "a//b/audit"},
    };
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        char yaml[128];
        snprintf(yaml, sizeof yaml, "registry:\n  path: \"%s\"\n", beside[i].registry);
        assert_true(load(&config, yaml, err, sizeof err));
        rl_server_config_memory_options(&config, &paths, &memory);
        assert_string_equal(memory.journal_path, beside[i].journal);
        assert_string_equal(memory.audit_dir, beside[i].audit);
    }
    /* The longest registry path still has room for a name beside it. */
    rl_server_config_default(&config);
    memset(config.registry_path, 'r', sizeof config.registry_path - 1);
    config.registry_path[sizeof config.registry_path - 1] = '\0';
    config.registry_path[10] = '/';
    rl_server_config_memory_options(&config, &paths, &memory);
    assert_int_equal(strlen(memory.journal_path), 11 + strlen("journal"));

    expect_error("memory:\n  journal_fsync: sometimes\n", "config.yaml:2:",
                 "'journal_fsync' must be always, everysec or off");
    expect_error("memory:\n  journal_fsync: [always]\n", "'journal_fsync' must be", NULL);
    expect_error("memory:\n  journal_path: [a]\n", "config.yaml:2:", "'journal_path' must be a path");
    expect_error("memory:\n  journal_path:\n", "'journal_path' needs a value", NULL);
    expect_error("audit:\n  dir: {a: 1}\n", "'dir' must be a path", NULL);
    expect_error("audit:\n  retention_days: 0\n", "config.yaml:2:", "'retention_days' must be an integer 1..3660");
    expect_error("audit:\n  retention_days: 3661\n", "'retention_days' must be", NULL);
    expect_error("audit:\n  keep: 1\n", "unknown key 'keep' in section 'audit'", NULL);
    expect_error("audit:\n  dir: a\n  dir: b\n", "duplicate key 'dir'", NULL);
    assert_true(load(&config, "audit:\n  retention_days: 1\n", err, sizeof err));
    assert_true(load(&config, "audit:\n  retention_days: 3660\n", err, sizeof err));

    rl_journal_fsync mode;
    assert_true(rl_server_journal_fsync_parse("always", &mode) && mode == RL_JOURNAL_FSYNC_ALWAYS);
    assert_true(rl_server_journal_fsync_parse("everysec", &mode) && mode == RL_JOURNAL_FSYNC_EVERYSEC);
    assert_true(rl_server_journal_fsync_parse("off", &mode) && mode == RL_JOURNAL_FSYNC_OFF);
    assert_false(rl_server_journal_fsync_parse("Always", &mode));
    assert_false(rl_server_journal_fsync_parse("", &mode));
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
                       "  idle_timeout_ms: 1500\n"
                       "  request_timeout_ms: 250\n"
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
    assert_int_equal(config.idle_timeout_ms, 1500);
    assert_int_equal(config.request_timeout_ms, 250);
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
    /* examples/config.yaml's shape, with the memory backend (tigerbeetle is not built). */
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
                       "  flush_interval_micros: 200\n";
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, yaml, err, sizeof err));
    assert_string_equal(config.listen_addr, ":8080");
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    /* Unquoted, ":8080" is a plain scalar in YAML too. */
    assert_true(load(&config, "server:\n  listen_addr: :8081\n", err, sizeof err));
    assert_string_equal(config.listen_addr, ":8081");
}

static void test_redis_section(void **state) {
    (void)state;
    const char *yaml = "server:\n"
                       "  backend: redis\n"
                       "redis:\n"
                       "  address: \"10.0.0.5:6380\"\n"
                       "  password: \"s3cret\"\n"
                       "  db: 2\n"
                       "  connections: 8\n"
                       "  key_prefix: \"prod:rl:\"\n"
                       "  connect_timeout_ms: 100\n"
                       "  command_timeout_ms: 250\n"
                       "  lease_memory_ms: 60000\n"
                       "  max_leases_per_batch: 512\n"
                       "  flush_interval_us: 100\n"
                       "  flushes_in_flight: 3\n"
                       "  allow_eviction: true\n";
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    if (!load(&config, yaml, err, sizeof err)) fail_msg("%s", err);
    assert_string_equal(config.backend, "redis");
    assert_string_equal(config.redis.address, "10.0.0.5:6380");
    assert_string_equal(config.redis.password, "s3cret");
    assert_int_equal(config.redis.db, 2);
    assert_int_equal(config.redis.connections, 8);
    assert_string_equal(config.redis.key_prefix, "prod:rl:");
    assert_int_equal(config.redis.connect_timeout_ms, 100);
    assert_int_equal(config.redis.command_timeout_ms, 250);
    assert_int_equal(config.redis.lease_memory_ms, 60000);
    assert_int_equal(config.redis.max_leases_per_batch, 512);
    assert_int_equal(config.redis.flush_interval_us, 100);
    assert_int_equal(config.redis.flushes_in_flight, 3);
    assert_true(config.redis.allow_eviction);
    assert_true(rl_server_config_validate(&config, err, sizeof err));

    /* To the backend's options: the host split off, strings borrowed. */
    rl_redis_options options;
    memset(&options, 0, sizeof options);
    options.clock = NULL;
    char host[64];
    assert_true(rl_server_config_redis_options(&config, host, sizeof host, &options, err, sizeof err));
    assert_string_equal(options.host, "10.0.0.5");
    assert_int_equal(options.port, 6380);
    assert_string_equal(options.password, "s3cret");
    assert_int_equal(options.db, 2);
    assert_int_equal(options.connections, 8);
    assert_string_equal(options.key_prefix, "prod:rl:");
    assert_int_equal(options.connect_timeout_ms, 100);
    assert_int_equal(options.command_timeout_ms, 250);
    assert_int_equal(options.lease_memory_ms, 60000);
    assert_true(options.allow_eviction);

    /* No password: no AUTH. IPv6 and host names. */
    assert_true(load(&config, "redis:\n  address: \"[::1]:6379\"\n", err, sizeof err));
    assert_true(rl_server_config_redis_options(&config, host, sizeof host, &options, err, sizeof err));
    assert_null(options.password);
    assert_string_equal(options.host, "::1");
    assert_true(load(&config, "redis:\n  address: redis.internal:7000\n", err, sizeof err));
    assert_true(rl_server_config_redis_options(&config, host, sizeof host, &options, err, sizeof err));
    assert_string_equal(options.host, "redis.internal");
    assert_int_equal(options.port, 7000);
    /* An empty section keeps the defaults; batching off is max_leases_per_batch 1. */
    assert_true(load(&config, "redis:\n", err, sizeof err));
    assert_string_equal(config.redis.address, "127.0.0.1:6379");
    assert_true(load(&config, "redis:\n  max_leases_per_batch: 1\n  flush_interval_us: 0\n", err,
                     sizeof err));
    assert_int_equal(config.redis.max_leases_per_batch, 1);
    assert_int_equal(config.redis.flush_interval_us, 0);
}

static void test_allowed_origins(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config,
                     "server:\n  allowed_origins:\n    - https://console.example.com\n    - \"http://localhost:3000\"\n"
                     "    - http://[::1]:8081\n",
                     err, sizeof err));
    assert_int_equal(config.allowed_origin_count, 3);
    assert_string_equal(config.allowed_origins[0], "https://console.example.com");
    assert_string_equal(config.allowed_origins[1], "http://localhost:3000");
    assert_string_equal(config.allowed_origins[2], "http://[::1]:8081");
    assert_true(load(&config, "server:\n  allowed_origins: []\n", err, sizeof err));
    assert_int_equal(config.allowed_origin_count, 0);
    expect_error("server:\n  allowed_origins: https://a.example\n", "config.yaml:2:",
                 "'allowed_origins' must be a list of origins");
    expect_error("server:\n  allowed_origins: [\"*\"]\n", "config.yaml:2:", "must start with http:// or https://");
    expect_error("server:\n  allowed_origins:\n    - https://a.example/\n", "config.yaml:3:", "no trailing slash");
    expect_error("server:\n  allowed_origins: [\"https://a.example/app\"]\n", "no path", NULL);
    expect_error("server:\n  allowed_origins: [\"null\"]\n", "is not an origin", NULL);
    expect_error("server:\n  allowed_origins: [\"https://a.example:99999999\"]\n", "is not an origin", NULL);
    expect_error("server:\n  allowed_origins: [[\"https://a.example\"]]\n", "must be a list of origins (strings)",
                 NULL);
    static char many[4096];
    int at = sprintf(many, "server:\n  allowed_origins:\n");
    for (int i = 0; i <= RL_CONFIG_MAX_ALLOWED_ORIGINS; i++) at += sprintf(many + at, "    - https://a%d.example\n", i);
    expect_error(many, "holds at most 32 origins", NULL);
}

static void test_redis_errors(void **state) {
    (void)state;
    expect_error("redis:\n  url: redis://127.0.0.1:6379\n", "config.yaml:2:",
                 "unknown key 'url' in section 'redis'");
    expect_error("redis:\n  db: 1\n  address: \"127.0.0.1\"\n", "config.yaml:3:",
                 "redis address \"127.0.0.1\" must be HOST:PORT");
    expect_error("redis:\n  address: \":6379\"\n", "config.yaml:2:", "redis address");
    expect_error("redis:\n  address: \"127.0.0.1:0\"\n", "port 1..65535", NULL);
    expect_error("redis:\n  address: \"127.0.0.1:70000\"\n", "redis address", NULL);
    expect_error("redis:\n  address: \"a b:1\"\n", "redis address", NULL);
    expect_error("redis:\n  connections: 0\n", "config.yaml:2:", "'connections' must be an integer 1..256");
    expect_error("redis:\n  connections: 257\n", "'connections'", NULL);
    expect_error("redis:\n  db: -1\n", "'db' must be an integer", NULL);
    expect_error("redis:\n  connect_timeout_ms: 0\n", "'connect_timeout_ms' must be an integer 1..", NULL);
    expect_error("redis:\n  command_timeout_ms: 60001\n", "'command_timeout_ms'", NULL);
    expect_error("redis:\n  max_leases_per_batch: 0\n", "'max_leases_per_batch' must be an integer 1..",
                 NULL);
    expect_error("redis:\n  flush_interval_us: 1000001\n", "'flush_interval_us'", NULL);
    expect_error("redis:\n  flushes_in_flight: 0\n", "'flushes_in_flight' must be an integer 1..64", NULL);
    expect_error("redis:\n  allow_eviction: yes\n", "config.yaml:2:", "'allow_eviction' must be true or false");
    expect_error("redis:\n  allow_eviction: 1\n", "'allow_eviction' must be true or false", NULL);
    expect_error("redis:\n  key_prefix: \"a b\"\n", "config.yaml:2:", "'key_prefix' must be printable");
    expect_error("redis:\n  key_prefix: "
                 "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"\n",
                 "'key_prefix' must be a string of 1..64 bytes", NULL);
    expect_error("redis:\n  password: \"\"\n", "'password' must be a string of 1..", NULL);
    expect_error("redis:\n  password:\n", "'password' needs a value", NULL);
    expect_error("redis:\n  db: 1\n  db: 2\n", "config.yaml:3:", "duplicate key 'db'");
    expect_error("redis: [a]\n", "section 'redis' must be a mapping", NULL);
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
    expect_error("server:\n  idle_timeout_ms: 9\n", "config.yaml:2:",
                 "'idle_timeout_ms' must be an integer 10..3600000");
    expect_error("server:\n  idle_timeout_ms: 3600001\n", "'idle_timeout_ms' must be an integer", NULL);
    expect_error("server:\n  request_timeout_ms: 0\n", "config.yaml:2:",
                 "'request_timeout_ms' must be an integer 10..600000");
    expect_error("server:\n  request_timeout_ms: 600001\n", "'request_timeout_ms' must be", NULL);
    expect_error("server:\n  request_timeout_ms: \"500\"\n", "'request_timeout_ms' must be", NULL);
    expect_error("memory:\n  sweep_interval_ms: 99999999\n", "'sweep_interval_ms'", NULL);
    /* Edges are fine. */
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, "server:\n  threads: 256\n  max_batch: 1\n  max_body_bytes: 256\n", err,
                     sizeof err));
    assert_true(load(&config,
                     "server:\n  idle_timeout_ms: 10\n  request_timeout_ms: 600000\n", err,
                     sizeof err));
    assert_true(load(&config,
                     "server:\n  idle_timeout_ms: 3600000\n  request_timeout_ms: 10\n", err,
                     sizeof err));
    assert_true(load(&config, "memory:\n  sweep_interval_ms: 0\n", err, sizeof err));
    assert_int_equal(config.memory.sweep_interval_ms, 0);
}

static void test_bad_values(void **state) {
    (void)state;
    expect_error("server:\n  backend: tigerbeetle\n", "config.yaml:2:",
                 "backend \"tigerbeetle\" is not available in this build (use \"memory\" or \"redis\")");
    expect_error("server:\n  backend: Redis\n", "not available", NULL);
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

    /* Its commented redis section, uncommented, loads too. */
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    static char text[16384];
    size_t len = 0;
    bool in_redis = false;
    char line[512];
    while (fgets(line, sizeof line, file) != NULL) {
        const char *keep = line;
        if (strncmp(line, "# redis:", 8) == 0) in_redis = true;
        if (in_redis && strncmp(line, "# ", 2) == 0) keep = line + 2;
        else if (in_redis) in_redis = false;
        size_t n = strlen(keep);
        assert_true(len + n < sizeof text);
        memcpy(text + len, keep, n);
        len += n;
    }
    fclose(file);
    text[len] = '\0';
    assert_non_null(strstr(text, "\nredis:\n  address: "));
    rl_server_config_default(&config);
    if (!rl_server_config_load_string(&config, text, len, "uncommented", err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(config.redis.address, "127.0.0.1:6379");
    assert_int_equal(config.redis.flush_interval_us, 200);
}

/* The registry's log (limits.json.log) is a store too: no other may share it. */
static void test_registry_log_clash(void **state) {
    (void)state;
    rl_server_config config;
    char err[512];
    rl_server_config_default(&config);
    config.journal.set = true;
    snprintf(config.journal.path, sizeof config.journal.path, "./data/limits.json.log");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "the journal is the registry's log (\"./data/limits.json.log\")"));
    rl_server_config_default(&config);
    config.audit_dir.set = true;
    snprintf(config.audit_dir.path, sizeof config.audit_dir.path, "./data/limits.json.log");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "the audit directory is the registry's log"));
    rl_server_config_default(&config);
    config.journal.set = true;
    snprintf(config.journal.path, sizeof config.journal.path, "./data/limits.json.log2");
    assert_true(rl_server_config_validate(&config, err, sizeof err));
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
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    snprintf(config.backend, sizeof config.backend, "tigerbeetle");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "not available"));
    /* --redis is checked even with the memory backend: a typo must not wait. */
    rl_server_config_default(&config);
    snprintf(config.redis.address, sizeof config.redis.address, "localhost");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "redis address \"localhost\""));
    snprintf(config.redis.address, sizeof config.redis.address, "localhost:6390");
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    rl_server_config_default(&config);
    config.threads = 1000;
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    rl_server_config_default(&config);
    config.idle_timeout_ms = 0;
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "idle_timeout_ms must be 10..3600000"));
    rl_server_config_default(&config);
    config.request_timeout_ms = RL_CONFIG_MAX_REQUEST_TIMEOUT_MS + 1;
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "request_timeout_ms must be 10..600000"));
    rl_server_config_default(&config);
    config.registry_path[0] = '\0';
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    /* Stores that would share one file, and a retention out of range. */
    rl_server_config_default(&config);
    config.journal.set = true;
    snprintf(config.journal.path, sizeof config.journal.path, "%s", config.registry_path);
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "the journal is the registry file (\"./data/limits.json\")"));
    rl_server_config_default(&config);
    config.audit_dir.set = true;
    snprintf(config.audit_dir.path, sizeof config.audit_dir.path, "./data/journal");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "the journal is the audit directory (\"./data/journal\")"));
    config.journal.set = true;
    config.journal.path[0] = '\0'; /* no journal: no clash */
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    rl_server_config_default(&config);
    config.audit_dir.set = true;
    snprintf(config.audit_dir.path, sizeof config.audit_dir.path, "./data/limits.json");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "the audit directory is the registry file"));
    rl_server_config_default(&config);
    config.audit_retention_days = 0;
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "audit.retention_days must be 1..3660"));
}

/* presets: a list of known preset names, in order; --preset adds after it
 * (rl_server_config_add_preset), and validate checks names set otherwise. */
/* log: the access log's format and where it goes. */
static void test_access_log(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    rl_server_config_default(&config);
    assert_int_equal(config.access_log, RL_ACCESS_LOG_OFF);
    assert_string_equal(config.access_log_path, "-");
    assert_true(load(&config, "log:\n  access: json\n  access_path: /var/log/rl/access.log\n", err, sizeof err));
    assert_int_equal(config.access_log, RL_ACCESS_LOG_JSON);
    assert_string_equal(config.access_log_path, "/var/log/rl/access.log");
    assert_true(rl_server_config_validate(&config, err, sizeof err));
    assert_true(load(&config, "log:\n  access: text\n", err, sizeof err));
    assert_int_equal(config.access_log, RL_ACCESS_LOG_TEXT);
    assert_string_equal(config.access_log_path, "-");
    assert_true(load(&config, "log:\n  access: off\n  access_path: \"-\"\n", err, sizeof err));
    assert_int_equal(config.access_log, RL_ACCESS_LOG_OFF);

    expect_error("log:\n  access: yes\n", "config.yaml:2:", "'access' must be off, text or json");
    expect_error("log:\n  access: JSON\n", "'access' must be off, text or json", NULL);
    expect_error("log:\n  access: [json]\n", "'access' must be off, text or json", NULL);
    expect_error("log:\n  access:\n", "'access' needs a value", NULL);
    expect_error("log:\n  access_path: \"\"\n", "config.yaml:2:", "'access_path' must be a string of 1..");
    expect_error("log:\n  access_file: x\n", "unknown key 'access_file' in section 'log'", NULL);
    expect_error("log:\n  access: json\n  access: text\n", "duplicate key 'access' in section 'log'", NULL);

    /* Appended to a store, it would corrupt it; off, the path is not used. */
    const char *stores[] = {"./data/limits.json", "./data/limits.json.log", "./data/journal", "./data/audit"};
    for (size_t i = 0; i < sizeof stores / sizeof stores[0]; i++) {
        rl_server_config_default(&config);
        config.access_log = RL_ACCESS_LOG_TEXT;
        snprintf(config.access_log_path, sizeof config.access_log_path, "%s", stores[i]);
        assert_false(rl_server_config_validate(&config, err, sizeof err));
        assert_non_null(strstr(err, "log.access_path"));
        assert_non_null(strstr(err, "give the access log a file of its own"));
        config.access_log = RL_ACCESS_LOG_OFF;
        assert_true(rl_server_config_validate(&config, err, sizeof err));
    }
}

static void test_presets(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config, "presets: [openai-tier-1, anthropic-tier-2]\n", err, sizeof err));
    assert_int_equal(config.preset_count, 2);
    assert_string_equal(config.presets[0], "openai-tier-1");
    assert_string_equal(config.presets[1], "anthropic-tier-2");
    assert_true(rl_server_config_add_preset(&config, "gemini-free", err, sizeof err));
    assert_int_equal(config.preset_count, 3);
    assert_string_equal(config.presets[2], "gemini-free");
    if (!rl_server_config_validate(&config, err, sizeof err)) fail_msg("%s", err);
    assert_true(load(&config, "server:\n  threads: 1\npresets:\n  - local\n  - gemini-tier-3\n", err, sizeof err));
    assert_int_equal(config.preset_count, 2);
    assert_string_equal(config.presets[1], "gemini-tier-3");
    assert_true(load(&config, "presets: []\n", err, sizeof err));
    assert_int_equal(config.preset_count, 0);
    assert_true(load(&config, "presets:\n", err, sizeof err));
    assert_int_equal(config.preset_count, 0);

    expect_error("presets:\n  - openai-tier-1\n  - openai-tier-9\n", "config.yaml:3:",
                 "'presets': no preset named \"openai-tier-9\"; the presets are: anthropic-tier-1, ");
    expect_error("presets: openai-tier-1\n", "config.yaml:1:", "'presets' must be a list of preset names");
    expect_error("presets: [[openai-tier-1]]\n", "'presets' must be a list of preset names (strings)", NULL);
    expect_error("presets: {a: 1}\n", "'presets' must be a list", NULL);
    expect_error("presets: []\npresets: [local]\n", "config.yaml:2:", "duplicate section 'presets'");
    char many[2048] = "presets: [local";
    for (int i = 0; i < RL_CONFIG_MAX_PRESETS; i++) strcat(many, ", local");
    strcat(many, "]\n");
    expect_error(many, "at most 32 presets", NULL);
    expect_error("presetz: []\n", "unknown section 'presetz'", "presets)");

    /* A flag's name no preset has; a name set by other means, checked. */
    rl_server_config_default(&config);
    assert_false(rl_server_config_add_preset(&config, "openai-tier-0", err, sizeof err));
    assert_non_null(strstr(err, "no preset named \"openai-tier-0\"; the presets are:"));
    assert_int_equal(config.preset_count, 0);
    config.journal.set = true; /* no journal: nothing else to complain about */
    config.journal.path[0] = '\0';
    snprintf(config.presets[config.preset_count++], sizeof config.presets[0], "nope");
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "no preset named \"nope\""));
    for (uint32_t i = config.preset_count = 0; i < RL_CONFIG_MAX_PRESETS; i++)
        assert_true(rl_server_config_add_preset(&config, "local", err, sizeof err));
    assert_false(rl_server_config_add_preset(&config, "local", err, sizeof err));
    assert_non_null(strstr(err, "at most 32 presets"));
}

/* server.tls, admin, data and metrics (server/auth/auth.h). */
static void test_tokens_and_tls(void **state) {
    (void)state;
    rl_server_config config;
    char err[RL_CONFIG_ERR_SIZE];
    rl_server_config_default(&config);
    assert_string_equal(config.tls_cert_file, "");
    assert_string_equal(config.admin_tokens_file, "");
    assert_false(config.metrics.require_token);
    assert_true(load(&config,
                     "server:\n  tls:\n    cert_file: /etc/rl/cert.pem\n    key_file: /etc/rl/key.pem\n"
                     "admin:\n  tokens_file: /etc/rl/admin.tokens\n"
                     "data:\n  tokens_file: /etc/rl/data.tokens\n"
                     "metrics:\n  require_token: true\n",
                     err, sizeof err));
    assert_string_equal(config.tls_cert_file, "/etc/rl/cert.pem");
    assert_string_equal(config.tls_key_file, "/etc/rl/key.pem");
    assert_string_equal(config.admin_tokens_file, "/etc/rl/admin.tokens");
    assert_string_equal(config.data_tokens_file, "/etc/rl/data.tokens");
    assert_true(config.metrics.require_token);
    assert_true(rl_server_config_validate(&config, err, sizeof err));

    expect_error("server:\n  tls:\n    cert: x.pem\n", "config.yaml:3:", "unknown key 'cert' in section 'server.tls'");
    expect_error("server:\n  tls: x.pem\n", "config.yaml:2:", "'tls' must be a mapping");
    expect_error("server:\n  tls:\n    key_file: a\n    key_file: b\n", "config.yaml:4:", "duplicate key 'key_file'");
    expect_error("admin:\n  tokens_file: \"\"\n", "config.yaml:2:", "'tokens_file' must be a string");
    expect_error("admin:\n  tokens: a\n", "config.yaml:2:", "unknown key 'tokens' in section 'admin'");
    expect_error("metrics:\n  require_token: yes\n", "config.yaml:2:", "'require_token' must be true or false");

    /* Half a TLS pair, or a token required that no file could give. */
    assert_true(load(&config, "server:\n  tls:\n    cert_file: c.pem\n", err, sizeof err));
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "server.tls needs both cert_file and key_file"));
    assert_true(load(&config, "metrics:\n  require_token: true\n", err, sizeof err));
    assert_false(rl_server_config_validate(&config, err, sizeof err));
    assert_non_null(strstr(err, "metrics.require_token needs admin.tokens_file or data.tokens_file"));
    assert_true(load(&config, "metrics:\n  require_token: true\ndata:\n  tokens_file: d\n", err, sizeof err));
    assert_true(rl_server_config_validate(&config, err, sizeof err));
}

/* The metrics section: on by default; each setting read, each bad value a
 * message naming the file, the line and the key. */
static void test_metrics_section(void **state) {
    (void)state;
    rl_server_config config;
    rl_server_config_default(&config);
    assert_true(config.metrics.enabled);
    assert_false(config.metrics.require_token);
    assert_int_equal(config.metrics.max_limit_series, RL_CONFIG_DEFAULT_METRICS_MAX_LIMIT_SERIES);
    assert_int_equal(config.metrics.limits_refresh_ms, RL_CONFIG_DEFAULT_METRICS_LIMITS_REFRESH_MS);
    char err[RL_CONFIG_ERR_SIZE];
    assert_true(load(&config,
                     "metrics:\n  enabled: false\n  require_token: true\n  max_limit_series: 0\n"
                     "  limits_refresh_ms: 250\n",
                     err, sizeof err));
    assert_false(config.metrics.enabled);
    assert_true(config.metrics.require_token);
    assert_int_equal(config.metrics.max_limit_series, 0);
    assert_int_equal(config.metrics.limits_refresh_ms, 250);
    assert_true(load(&config, "metrics:\n  max_limit_series: 100000\n  limits_refresh_ms: 3600000\n", err, sizeof err));

    expect_error("metrics:\n  enabled: 1\n", "config.yaml:2:", "'enabled' must be true or false");
    expect_error("metrics:\n  require_token: maybe\n", "config.yaml:2:", "'require_token' must be true or false");
    expect_error("metrics:\n  max_limit_series: 100001\n", "config.yaml:2:",
                 "'max_limit_series' must be an integer 0..100000");
    expect_error("metrics:\n  max_limit_series: -1\n", "'max_limit_series' must be an integer", NULL);
    expect_error("metrics:\n  limits_refresh_ms: 99\n", "config.yaml:2:",
                 "'limits_refresh_ms' must be an integer 100..3600000");
    expect_error("metrics:\n  limits_refresh_ms: 3600001\n", "'limits_refresh_ms'", NULL);
    expect_error("metrics:\n  path: /m\n", "config.yaml:2:", "unknown key 'path' in section 'metrics'");
    expect_error("metrics:\n  enabled: true\n  enabled: false\n", "config.yaml:3:", "duplicate key 'enabled'");
    expect_error("metrics: on\n", "section 'metrics' must be a mapping", NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_and_tls),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_empty_file_keeps_defaults),
        cmocka_unit_test(test_journal_and_audit),
        cmocka_unit_test(test_every_setting),
        cmocka_unit_test(test_spec_example_shape),
        cmocka_unit_test(test_redis_section),
        cmocka_unit_test(test_redis_errors),
        cmocka_unit_test(test_unknown_key_names_key_and_line),
        cmocka_unit_test(test_unknown_section),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_invalid_yaml),
        cmocka_unit_test(test_allowed_origins),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_example_config),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_registry_log_clash),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_access_log),
        cmocka_unit_test(test_metrics_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
