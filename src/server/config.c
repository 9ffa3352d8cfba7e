/* config.c — defaults and the config.yaml loader (libyaml's document API).
 *
 * The document is walked two levels deep (section -> key -> scalar) through a
 * table per section, so adding a setting is one table line. Aliases are
 * resolved by libyaml to shared nodes, never expanded, so a hostile file
 * cannot make the walk explode.
 */
#include "server/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "core/preset_rule.h"
#include "server/backend_table.h"
#include "server/http/listen_addr.h"

#define CONFIG_FILE_MAX_BYTES (1024u * 1024u) /* a config is a few hundred bytes */

void rl_server_config_default(rl_server_config *config) {
    memset(config, 0, sizeof *config);
    snprintf(config->listen_addr, sizeof config->listen_addr, "%s", RL_CONFIG_DEFAULT_LISTEN_ADDR);
    snprintf(config->backend, sizeof config->backend, "%s", RL_CONFIG_DEFAULT_BACKEND);
    config->threads = 0;
    config->max_body_bytes = RL_CONFIG_DEFAULT_MAX_BODY_BYTES;
    config->max_batch = RL_CONFIG_DEFAULT_MAX_BATCH;
    config->max_connections = RL_CONFIG_DEFAULT_MAX_CONNECTIONS;
    config->idle_timeout_ms = RL_CONFIG_DEFAULT_IDLE_TIMEOUT_MS;
    config->request_timeout_ms = RL_CONFIG_DEFAULT_REQUEST_TIMEOUT_MS;
    snprintf(config->registry_path, sizeof config->registry_path, "%s",
             RL_CONFIG_DEFAULT_REGISTRY_PATH);
    config->max_limits = 0;
    rl_memory_options_default(&config->memory);
    config->memory.clock = NULL;
    config->journal.set = false;
    config->audit_dir.set = false;
    config->audit_retention_days = RL_AUDIT_DEFAULT_RETENTION_DAYS;
    config->access_log = RL_ACCESS_LOG_OFF;
    snprintf(config->access_log_path, sizeof config->access_log_path, "%s", RL_CONFIG_DEFAULT_ACCESS_LOG_PATH);
    config->metrics.enabled = true;
    config->metrics.require_token = false;
    config->metrics.max_limit_series = RL_CONFIG_DEFAULT_METRICS_MAX_LIMIT_SERIES;
    config->metrics.limits_refresh_ms = RL_CONFIG_DEFAULT_METRICS_LIMITS_REFRESH_MS;

    rl_server_redis_config *redis = &config->redis;
    snprintf(redis->address, sizeof redis->address, "%s", RL_CONFIG_DEFAULT_REDIS_ADDRESS);
    redis->password[0] = '\0';
    redis->db = 0;
    redis->connections = RL_CONFIG_DEFAULT_REDIS_CONNECTIONS;
    snprintf(redis->key_prefix, sizeof redis->key_prefix, "%s", RL_CONFIG_DEFAULT_REDIS_KEY_PREFIX);
    redis->connect_timeout_ms = RL_CONFIG_DEFAULT_REDIS_CONNECT_TIMEOUT_MS;
    redis->command_timeout_ms = RL_CONFIG_DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
    redis->lease_memory_ms = RL_CONFIG_DEFAULT_REDIS_LEASE_MEMORY_MS;
    redis->max_leases_per_batch = RL_CONFIG_DEFAULT_REDIS_MAX_LEASES_PER_BATCH;
    redis->flush_interval_us = RL_CONFIG_DEFAULT_REDIS_FLUSH_INTERVAL_US;
    redis->flushes_in_flight = RL_CONFIG_DEFAULT_REDIS_FLUSHES_IN_FLIGHT;
    redis->allow_eviction = false;
    redis->allotments = false;
}

bool rl_server_redis_address_parse(const char *address, char *host, size_t host_size,
                                   uint16_t *port, char *err, size_t err_size) {
    rl_listen_addr addr;
    char why[200];
    if (!rl_listen_addr_parse(address, &addr, why, sizeof why) || addr.host[0] == '\0' ||
        addr.port == 0 || strlen(addr.host) >= host_size) {
        snprintf(err, err_size,
                 "redis address \"%.80s\" must be HOST:PORT or [IPV6]:PORT with a port 1..65535 "
                 "(e.g. 127.0.0.1:6379)",
                 address != NULL ? address : "");
        return false;
    }
    snprintf(host, host_size, "%s", addr.host);
    *port = addr.port;
    return true;
}

bool rl_server_config_redis_options(const rl_server_config *config, char *host, size_t host_size,
                                    rl_redis_options *out, char *err, size_t err_size) {
    const rl_server_redis_config *redis = &config->redis;
    if (!rl_server_redis_address_parse(redis->address, host, host_size, &out->port, err, err_size))
        return false;
    out->host = host;
    out->password = redis->password[0] != '\0' ? redis->password : NULL;
    out->db = redis->db;
    out->key_prefix = redis->key_prefix;
    out->connections = redis->connections;
    out->connect_timeout_ms = redis->connect_timeout_ms;
    out->command_timeout_ms = redis->command_timeout_ms;
    out->lease_memory_ms = redis->lease_memory_ms;
    out->allow_eviction = redis->allow_eviction;
    out->audit_retention_days = config->audit_retention_days;
    return true;
}

/* The path set, NULL for "" (off), else name in the registry's directory. */
static const char *resolve_path(const rl_server_path *setting, const char *registry_path, const char *name,
                                char *out, size_t out_size) {
    if (setting->set) {
        if (setting->path[0] == '\0') return NULL;
        snprintf(out, out_size, "%s", setting->path);
        return out;
    }
    const char *slash = strrchr(registry_path, '/');
    int dir_len = slash != NULL ? (int)(slash - registry_path + 1) : 0; /* with its '/' */
    snprintf(out, out_size, "%.*s%s", dir_len, registry_path, name);
    return out;
}

void rl_server_config_memory_options(const rl_server_config *config, rl_server_memory_paths *paths,
                                     rl_memory_options *out) {
    *out = config->memory;
    out->journal_path = resolve_path(&config->journal, config->registry_path, RL_CONFIG_DEFAULT_JOURNAL_NAME,
                                     paths->journal, sizeof paths->journal);
    out->audit_dir = resolve_path(&config->audit_dir, config->registry_path, RL_CONFIG_DEFAULT_AUDIT_DIR_NAME,
                                  paths->audit_dir, sizeof paths->audit_dir);
    out->audit_retention_days = config->audit_retention_days;
}

bool rl_server_journal_fsync_parse(const char *text, rl_journal_fsync *out) {
    static const struct {
        const char *name;
        rl_journal_fsync mode;
    } modes[] = {{"always", RL_JOURNAL_FSYNC_ALWAYS}, {"everysec", RL_JOURNAL_FSYNC_EVERYSEC}, {"off", RL_JOURNAL_FSYNC_OFF}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(text, modes[i].name) != 0) continue;
        *out = modes[i].mode;
        return true;
    }
    return false;
}

uint32_t rl_server_config_thread_count(const rl_server_config *config) {
    if (config->threads > 0) return config->threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) return 1;
    if ((unsigned long)cores > RL_CONFIG_MAX_THREADS) return RL_CONFIG_MAX_THREADS;
    return (uint32_t)cores;
}

/* ---- errors ------------------------------------------------------------ */

typedef struct load_ctx {
    yaml_document_t *doc;
    const char *name; /* file name for messages */
    char *err;
    size_t err_size;
} load_ctx;

/* Writes "<name>:<line>: <message>" (line 0: no line) and returns false. */
static bool vfail_at(load_ctx *ctx, size_t line, const char *format, va_list args) {
    if (ctx->err == NULL || ctx->err_size == 0) return false;
    int prefix = line > 0 ? snprintf(ctx->err, ctx->err_size, "%s:%zu: ", ctx->name, line)
                          : snprintf(ctx->err, ctx->err_size, "%s: ", ctx->name);
    if (prefix < 0 || (size_t)prefix >= ctx->err_size) return false;
    vsnprintf(ctx->err + prefix, ctx->err_size - (size_t)prefix, format, args);
    return false;
}

static bool fail_at(load_ctx *ctx, size_t line, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vfail_at(ctx, line, format, args);
    va_end(args);
    return false;
}

/* Fails at the line of node (libyaml counts lines from 0). */
static bool failf(load_ctx *ctx, const yaml_node_t *node, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vfail_at(ctx, node != NULL ? (size_t)node->start_mark.line + 1 : 0, format, args);
    va_end(args);
    return false;
}

/* ---- scalars ------------------------------------------------------------ */

static bool is_null_scalar(const yaml_node_t *node) {
    if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;
    return len == 0 || (len == 1 && v[0] == '~') || (len == 4 && memcmp(v, "null", 4) == 0);
}

/* A plain scalar of decimal digits: a quoted "8" is a string in YAML, and
 * accepting "1e3" or "0x10" would surprise whoever reads the file. */
static bool scalar_to_u64(const yaml_node_t *node, uint64_t *out) {
    if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;
    if (len == 0 || len > 20) return false;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') return false;
        uint64_t digit = (uint64_t)(v[i] - '0');
        if (value > (UINT64_MAX - digit) / 10u) return false;
        value = value * 10u + digit;
    }
    *out = value;
    return true;
}

/* ---- sections ----------------------------------------------------------- */

/* FIELD_ORIGINS: a sequence of origins into the config's allowed_origins.
 * FIELD_PATH: a string that may be "" (off) into an rl_server_path.
 * FIELD_FSYNC: always | everysec | off into an rl_journal_fsync.
 * FIELD_TLS: the mapping server.tls (cert_file, key_file) into the config.
 * FIELD_ACCESS_LOG: off | text | json into an rl_access_log_format. */
typedef enum field_type {
    FIELD_STRING,
    FIELD_U32,
    FIELD_U64,
    FIELD_BOOL,
    FIELD_ORIGINS,
    FIELD_PATH,
    FIELD_FSYNC,
    FIELD_TLS,
    FIELD_ACCESS_LOG,
} field_type;

typedef struct field {
    const char *name;
    field_type type;
    void *target;      /* char[max + 1] (max 0: RL_CONFIG_STRING_MAX), uint32_t, uint64_t, bool, the
                          rl_server_config (origins), rl_server_path, rl_journal_fsync,
                          rl_access_log_format */
    uint64_t min, max; /* integers only */
    const char *hint;  /* what the value means, for the error message */
} field;

typedef struct section {
    const char *name;
    const field *fields; /* NULL: the section is accepted and ignored */
    size_t field_count;
} section;

/* A key prefix goes into every Redis key: printable ASCII without spaces. */
static bool key_prefix_is_valid(const char *prefix) {
    size_t len = strlen(prefix);
    if (len == 0 || len > RL_CONFIG_REDIS_KEY_PREFIX_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (prefix[i] <= ' ' || prefix[i] > '~') return false;
    return true;
}

/* A YAML sequence of origins (`[]` for none), each checked. */
static bool set_origins(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    rl_server_config *c = f->target;
    if (value->type != YAML_SEQUENCE_NODE)
        return failf(ctx, value, "'%s' must be a list of origins, e.g. [\"https://console.example.com\"]", f->name);
    c->allowed_origin_count = 0;
    for (yaml_node_item_t *item = value->data.sequence.items.start; item < value->data.sequence.items.top; item++) {
        const yaml_node_t *node = yaml_document_get_node(ctx->doc, *item);
        if (node == NULL || node->type != YAML_SCALAR_NODE)
            return failf(ctx, value, "'%s' must be a list of origins (strings)", f->name);
        if (c->allowed_origin_count == RL_CONFIG_MAX_ALLOWED_ORIGINS)
            return failf(ctx, node, "'%s' holds at most %u origins", f->name, RL_CONFIG_MAX_ALLOWED_ORIGINS);
        const char *text = (const char *)node->data.scalar.value;
        char why[200];
        if (node->data.scalar.length != strlen(text) || !rl_request_guard_origin_check(text, why, sizeof why))
            return failf(ctx, node, "'%s': %s", f->name,
                         node->data.scalar.length != strlen(text) ? "an origin holds a NUL byte" : why);
        snprintf(c->allowed_origins[c->allowed_origin_count++], RL_ORIGIN_MAX_LEN + 1, "%s", text);
    }
    return true;
}

bool rl_server_config_add_preset(rl_server_config *config, const char *name, char *err, size_t err_size) {
    if (rl_preset_find(name) == NULL) {
        rl__preset_unknown(name, err, err_size);
        return false;
    }
    if (config->preset_count == RL_CONFIG_MAX_PRESETS) {
        snprintf(err, err_size, "at most %u presets can be applied at start", RL_CONFIG_MAX_PRESETS);
        return false;
    }
    snprintf(config->presets[config->preset_count++], sizeof config->presets[0], "%s", name);
    return true;
}

/* presets: a YAML sequence of preset names (`[]` or nothing for none), each
 * one known. */
static bool set_presets(load_ctx *ctx, rl_server_config *c, const yaml_node_t *value) {
    c->preset_count = 0;
    if (is_null_scalar(value)) return true;
    if (value->type != YAML_SEQUENCE_NODE)
        return failf(ctx, value, "'presets' must be a list of preset names, e.g. [openai-tier-1]");
    for (yaml_node_item_t *item = value->data.sequence.items.start; item < value->data.sequence.items.top; item++) {
        const yaml_node_t *node = yaml_document_get_node(ctx->doc, *item);
        if (node == NULL || node->type != YAML_SCALAR_NODE)
            return failf(ctx, value, "'presets' must be a list of preset names (strings)");
        const char *text = (const char *)node->data.scalar.value;
        char why[RL_CONFIG_ERR_SIZE];
        if (node->data.scalar.length != strlen(text)) return failf(ctx, node, "a preset name holds a NUL byte");
        if (!rl_server_config_add_preset(c, text, why, sizeof why)) return failf(ctx, node, "'presets': %s", why);
    }
    return true;
}

/* A path that may be "": the quoted empty string turns its feature off. */
static bool set_path(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    rl_server_path *target = f->target;
    bool scalar = value->type == YAML_SCALAR_NODE;
    const char *v = scalar ? (const char *)value->data.scalar.value : "";
    size_t len = scalar ? value->data.scalar.length : 0;
    if (!scalar || len > RL_CONFIG_STRING_MAX - 1 || memchr(v, '\0', len) != NULL)
        return failf(ctx, value, "'%s' must be a path of at most %d bytes, or \"\" for none", f->name,
                     RL_CONFIG_STRING_MAX - 1);
    memcpy(target->path, v, len);
    target->path[len] = '\0';
    target->set = true;
    return true;
}

static bool set_fsync(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    const char *v = value->type == YAML_SCALAR_NODE ? (const char *)value->data.scalar.value : "";
    if (!rl_server_journal_fsync_parse(v, f->target))
        return failf(ctx, value, "'%s' must be always, everysec or off", f->name);
    return true;
}

static bool load_section(load_ctx *ctx, const section *s, const yaml_node_t *map);

/* server.tls: a mapping one level further down, read as a section. */
static bool set_tls(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    rl_server_config *c = f->target;
    if (value->type != YAML_MAPPING_NODE)
        return failf(ctx, value, "'tls' must be a mapping with cert_file and key_file (PEM files)");
    const field tls_fields[] = {
        {"cert_file", FIELD_STRING, c->tls_cert_file, 0, 0, ""},
        {"key_file", FIELD_STRING, c->tls_key_file, 0, 0, ""},
    };
    const section tls = {"server.tls", tls_fields, sizeof tls_fields / sizeof tls_fields[0]};
    return load_section(ctx, &tls, value);
}

static bool set_access_log(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    const char *v = value->type == YAML_SCALAR_NODE ? (const char *)value->data.scalar.value : "";
    if (!rl_access_log_format_parse(v, f->target)) return failf(ctx, value, "'%s' must be off, text or json", f->name);
    return true;
}

static bool set_field(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    if (is_null_scalar(value)) return failf(ctx, value, "'%s' needs a value", f->name);
    if (f->type == FIELD_TLS) return set_tls(ctx, f, value);
    if (f->type == FIELD_ORIGINS) return set_origins(ctx, f, value);
    if (f->type == FIELD_PATH) return set_path(ctx, f, value);
    if (f->type == FIELD_FSYNC) return set_fsync(ctx, f, value);
    if (f->type == FIELD_ACCESS_LOG) return set_access_log(ctx, f, value);
    if (f->type == FIELD_STRING) {
        if (value->type != YAML_SCALAR_NODE)
            return failf(ctx, value, "'%s' must be a string", f->name);
        size_t len = value->data.scalar.length;
        const char *v = (const char *)value->data.scalar.value;
        size_t max = f->max > 0 ? (size_t)f->max : RL_CONFIG_STRING_MAX - 1;
        if (len == 0 || len > max || memchr(v, '\0', len) != NULL)
            return failf(ctx, value, "'%s' must be a string of 1..%zu bytes", f->name, max);
        memcpy(f->target, v, len);
        ((char *)f->target)[len] = '\0';
        return true;
    }
    if (f->type == FIELD_BOOL) {
        /* YAML 1.2's two words only: "yes", "on" and "1" mean true in some
         * readers and not in others, so none of them is taken. */
        const char *v = value->type == YAML_SCALAR_NODE ? (const char *)value->data.scalar.value : "";
        bool is_true = strcmp(v, "true") == 0;
        if (!is_true && strcmp(v, "false") != 0) return failf(ctx, value, "'%s' must be true or false", f->name);
        *(bool *)f->target = is_true;
        return true;
    }
    uint64_t number;
    if (!scalar_to_u64(value, &number) || number < f->min || number > f->max)
        return failf(ctx, value, "'%s' must be an integer %llu..%llu (%s)", f->name,
                     (unsigned long long)f->min, (unsigned long long)f->max, f->hint);
    if (f->type == FIELD_U32)
        *(uint32_t *)f->target = (uint32_t)number;
    else
        *(uint64_t *)f->target = number;
    return true;
}

/* Extra checks with a line number, beyond the type and range of the table. */
static bool check_field(load_ctx *ctx, const field *f, const yaml_node_t *value) {
    char why[200];
    if (strcmp(f->name, "listen_addr") == 0) {
        rl_listen_addr addr;
        if (!rl_listen_addr_parse(f->target, &addr, why, sizeof why))
            return failf(ctx, value, "%s", why);
    } else if (strcmp(f->name, "backend") == 0 && rl_backend_kind_find(f->target) == NULL) {
        rl_backend_kind_unknown(f->target, why, sizeof why);
        return failf(ctx, value, "%s", why);
    } else if (strcmp(f->name, "address") == 0) {
        char host[RL_LISTEN_HOST_MAX_LEN + 1];
        uint16_t port;
        if (!rl_server_redis_address_parse(f->target, host, sizeof host, &port, why, sizeof why))
            return failf(ctx, value, "%s", why);
    } else if (strcmp(f->name, "key_prefix") == 0 && !key_prefix_is_valid(f->target)) {
        return failf(ctx, value, "'key_prefix' must be printable ASCII without spaces");
    }
    return true;
}

static bool load_section(load_ctx *ctx, const section *s, const yaml_node_t *map) {
    if (is_null_scalar(map)) return true; /* "memory:" with nothing under it */
    if (map->type != YAML_MAPPING_NODE)
        return failf(ctx, map, "section '%s' must be a mapping of settings", s->name);
    if (s->fields == NULL) return true;
    bool seen[16] = {false}; /* no section has more fields */
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        const yaml_node_t *key = yaml_document_get_node(ctx->doc, pair->key);
        const yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
        if (key == NULL || value == NULL) return failf(ctx, map, "malformed section '%s'", s->name);
        if (key->type != YAML_SCALAR_NODE)
            return failf(ctx, key, "keys in section '%s' must be plain names", s->name);
        const char *name = (const char *)key->data.scalar.value;
        size_t i = 0;
        while (i < s->field_count && strcmp(s->fields[i].name, name) != 0) i++;
        if (i == s->field_count)
            return failf(ctx, key, "unknown key '%.64s' in section '%s'", name, s->name);
        if (seen[i]) return failf(ctx, key, "duplicate key '%s' in section '%s'", name, s->name);
        seen[i] = true;
        if (!set_field(ctx, &s->fields[i], value) || !check_field(ctx, &s->fields[i], value))
            return false;
    }
    return true;
}

static bool load_document(load_ctx *ctx, rl_server_config *c) {
    const yaml_node_t *root = yaml_document_get_root_node(ctx->doc);
    if (root == NULL || is_null_scalar(root)) return true; /* an empty file: all defaults */
    if (root->type != YAML_MAPPING_NODE)
        return failf(ctx, root, "the top level must be a mapping of sections (server, registry, ...)");

    const field server_fields[] = {
        {"listen_addr", FIELD_STRING, c->listen_addr, 0, 0, ""},
        {"backend", FIELD_STRING, c->backend, 0, 0, ""},
        {"threads", FIELD_U32, &c->threads, 0, RL_CONFIG_MAX_THREADS, "0: one per core"},
        {"max_body_bytes", FIELD_U64, &c->max_body_bytes, RL_CONFIG_MIN_BODY_BYTES,
         RL_CONFIG_MAX_BODY_BYTES, "bytes"},
        {"max_batch", FIELD_U32, &c->max_batch, 1, RL_CONFIG_MAX_BATCH, "items per batch request"},
        {"max_connections", FIELD_U32, &c->max_connections, 1, RL_CONFIG_MAX_MAX_CONNECTIONS,
         "open client connections"},
        {"idle_timeout_ms", FIELD_U32, &c->idle_timeout_ms, RL_CONFIG_MIN_TIMEOUT_MS,
         RL_CONFIG_MAX_IDLE_TIMEOUT_MS, "milliseconds a connection may wait between requests"},
        {"request_timeout_ms", FIELD_U32, &c->request_timeout_ms, RL_CONFIG_MIN_TIMEOUT_MS,
         RL_CONFIG_MAX_REQUEST_TIMEOUT_MS, "milliseconds for a request to arrive"},
        {"allowed_origins", FIELD_ORIGINS, c, 0, 0, ""},
        {"tls", FIELD_TLS, c, 0, 0, ""},
    };
    const field admin_fields[] = {
        {"tokens_file", FIELD_STRING, c->admin_tokens_file, 0, 0, ""},
    };
    const field data_fields[] = {
        {"tokens_file", FIELD_STRING, c->data_tokens_file, 0, 0, ""},
    };
    const field registry_fields[] = {
        {"path", FIELD_STRING, c->registry_path, 0, 0, ""},
        {"max_limits", FIELD_U64, &c->max_limits, 0, RL_CONFIG_MAX_MAX_LIMITS, "0: default"},
    };
    const field memory_fields[] = {
        {"sweep_interval_ms", FIELD_U32, &c->memory.sweep_interval_ms, 0,
         RL_CONFIG_MAX_SWEEP_INTERVAL_MS, "0: no sweeper thread"},
        {"lease_memory_ms", FIELD_U32, &c->memory.lease_memory_ms, 0, RL_CONFIG_MAX_LEASE_MEMORY_MS,
         "milliseconds"},
        {"max_leases", FIELD_U64, &c->memory.max_leases, 0, RL_CONFIG_MAX_MAX_LEASES, "0: default"},
        {"journal_path", FIELD_PATH, &c->journal, 0, 0, ""},
        {"journal_fsync", FIELD_FSYNC, &c->memory.journal_fsync, 0, 0, ""},
        {"journal_compact_bytes", FIELD_U64, &c->memory.journal_compact_bytes, 0, UINT64_C(1) << 40,
         "bytes, 0: 64 MiB"},
    };
    const field audit_fields[] = {
        {"dir", FIELD_PATH, &c->audit_dir, 0, 0, ""},
        {"retention_days", FIELD_U32, &c->audit_retention_days, 1, RL_AUDIT_MAX_RETENTION_DAYS, "days"},
    };
    rl_server_redis_config *r = &c->redis;
    const field redis_fields[] = {
        {"address", FIELD_STRING, r->address, 0, 0, ""},
        {"password", FIELD_STRING, r->password, 0, 0, ""},
        {"db", FIELD_U32, &r->db, 0, RL_CONFIG_MAX_REDIS_DB, "SELECT index"},
        {"connections", FIELD_U32, &r->connections, 1, RL_CONFIG_MAX_REDIS_CONNECTIONS,
         "connections to Redis"},
        {"key_prefix", FIELD_STRING, r->key_prefix, 0, RL_CONFIG_REDIS_KEY_PREFIX_MAX, ""},
        {"connect_timeout_ms", FIELD_U32, &r->connect_timeout_ms, 1, RL_CONFIG_MAX_REDIS_TIMEOUT_MS,
         "milliseconds"},
        {"command_timeout_ms", FIELD_U32, &r->command_timeout_ms, 1, RL_CONFIG_MAX_REDIS_TIMEOUT_MS,
         "milliseconds"},
        {"lease_memory_ms", FIELD_U32, &r->lease_memory_ms, 0, RL_CONFIG_MAX_LEASE_MEMORY_MS,
         "milliseconds"},
        {"max_leases_per_batch", FIELD_U32, &r->max_leases_per_batch, 1,
         RL_CONFIG_MAX_REDIS_LEASES_PER_BATCH, "1: no batching"},
        {"flush_interval_us", FIELD_U32, &r->flush_interval_us, 0,
         RL_CONFIG_MAX_REDIS_FLUSH_INTERVAL_US, "microseconds"},
        {"flushes_in_flight", FIELD_U32, &r->flushes_in_flight, 1, RL_CONFIG_MAX_REDIS_FLUSHES_IN_FLIGHT,
         "script calls at once"},
        {"allow_eviction", FIELD_BOOL, &r->allow_eviction, 0, 0, ""},
        {"allotments", FIELD_BOOL, &r->allotments, 0, 0, ""},
    };
    const field log_fields[] = {
        {"access", FIELD_ACCESS_LOG, &c->access_log, 0, 0, ""},
        {"access_path", FIELD_STRING, c->access_log_path, 0, 0, ""},
    };
    rl_server_metrics_config *m = &c->metrics;
    const field metrics_fields[] = {
        {"enabled", FIELD_BOOL, &m->enabled, 0, 0, ""},
        {"require_token", FIELD_BOOL, &m->require_token, 0, 0, ""},
        {"max_limit_series", FIELD_U32, &m->max_limit_series, 0, RL_CONFIG_MAX_METRICS_LIMIT_SERIES,
         "limits given gauges, 0: none"},
        {"limits_refresh_ms", FIELD_U32, &m->limits_refresh_ms, RL_CONFIG_MIN_METRICS_LIMITS_REFRESH_MS,
         RL_CONFIG_MAX_METRICS_LIMITS_REFRESH_MS, "milliseconds between reads of the limits"},
    };
#define FIELDS(array) array, sizeof array / sizeof array[0]
    const section sections[] = {
        {"server", FIELDS(server_fields)},
        {"registry", FIELDS(registry_fields)},
        {"memory", FIELDS(memory_fields)},
        {"audit", FIELDS(audit_fields)},
        {"tigerbeetle", NULL, 0},
        {"redis", FIELDS(redis_fields)},
        {"admin", FIELDS(admin_fields)},
        {"data", FIELDS(data_fields)},
        {"metrics", FIELDS(metrics_fields)},
        {"log", FIELDS(log_fields)},
    };
#undef FIELDS
    const size_t section_count = sizeof sections / sizeof sections[0];
    bool seen[sizeof sections / sizeof sections[0]] = {false}, seen_presets = false;

    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        const yaml_node_t *key = yaml_document_get_node(ctx->doc, pair->key);
        const yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
        if (key == NULL || value == NULL) return failf(ctx, root, "malformed document");
        if (key->type != YAML_SCALAR_NODE) return failf(ctx, key, "section names must be plain names");
        const char *name = (const char *)key->data.scalar.value;
        if (strcmp(name, "presets") == 0) { /* a list, not a section of settings */
            if (seen_presets) return failf(ctx, key, "duplicate section 'presets'");
            seen_presets = true;
            if (!set_presets(ctx, c, value)) return false;
            continue;
        }
        size_t i = 0;
        while (i < section_count && strcmp(sections[i].name, name) != 0) i++;
        if (i == section_count)
            return failf(ctx, key,
                         "unknown section '%.64s' (known: server, registry, memory, audit, tigerbeetle, redis, "
                         "admin, data, metrics, log, presets)",
                         name);
        if (seen[i]) return failf(ctx, key, "duplicate section '%s'", name);
        seen[i] = true;
        if (!load_section(ctx, &sections[i], value)) return false;
    }
    return true;
}

bool rl_server_config_load_string(rl_server_config *config, const char *text, size_t len,
                                  const char *name, char *err, size_t err_size) {
    load_ctx ctx = {NULL, name != NULL ? name : "config", err, err_size};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return failf(&ctx, NULL, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    yaml_document_t doc;
    bool ok = false;
    if (!yaml_parser_load(&parser, &doc)) {
        fail_at(&ctx, (size_t)parser.problem_mark.line + 1, "invalid YAML: %s%s%s",
                parser.problem != NULL ? parser.problem : "parse error",
                parser.context != NULL ? " " : "", parser.context != NULL ? parser.context : "");
        yaml_parser_delete(&parser);
        return false;
    }
    ctx.doc = &doc;
    ok = load_document(&ctx, config);
    yaml_document_delete(&doc);

    if (ok) {
        /* A second document would be silently ignored: refuse it. */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            ok = fail_at(&ctx, (size_t)parser.problem_mark.line + 1, "invalid YAML: %s",
                         parser.problem != NULL ? parser.problem : "parse error");
        } else {
            if (yaml_document_get_root_node(&extra) != NULL)
                ok = failf(&ctx, NULL, "more than one YAML document");
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    return ok;
}

bool rl_server_config_load_file(rl_server_config *config, const char *path, char *err,
                                size_t err_size) {
    load_ctx ctx = {NULL, path, err, err_size};
    FILE *file = fopen(path, "rb");
    if (file == NULL) return failf(&ctx, NULL, "cannot open: %s", strerror(errno));
    char *text = malloc(CONFIG_FILE_MAX_BYTES + 1);
    if (text == NULL) {
        fclose(file);
        return failf(&ctx, NULL, "out of memory");
    }
    size_t len = fread(text, 1, CONFIG_FILE_MAX_BYTES + 1, file);
    bool read_error = ferror(file) != 0;
    fclose(file);
    bool ok;
    if (read_error)
        ok = failf(&ctx, NULL, "cannot read");
    else if (len > CONFIG_FILE_MAX_BYTES)
        ok = failf(&ctx, NULL, "larger than %u bytes", CONFIG_FILE_MAX_BYTES);
    else
        ok = rl_server_config_load_string(config, text, len, path, err, err_size);
    free(text);
    return ok;
}

/* An access log appended to the registry, its log or the journal would
 * corrupt them. */
static bool access_log_path_is_apart(const rl_server_config *config, const rl_memory_options *memory,
                                     const char *registry_log, char *err, size_t err_size) {
    const char *path = config->access_log_path;
    if (config->access_log == RL_ACCESS_LOG_OFF || strcmp(path, "-") == 0) return true;
    const char *clash = strcmp(path, config->registry_path) == 0 ? "the registry file"
                        : strcmp(path, registry_log) == 0       ? "the registry's log"
                        : memory->journal_path != NULL && strcmp(path, memory->journal_path) == 0 ? "the journal"
                        : memory->audit_dir != NULL && strcmp(path, memory->audit_dir) == 0       ? "the audit directory"
                                                                                                   : NULL;
    if (clash == NULL) return true;
    snprintf(err, err_size, "log.access_path \"%.200s\" is %s: give the access log a file of its own", path, clash);
    return false;
}

bool rl_server_config_validate(const rl_server_config *config, char *err, size_t err_size) {
    rl_listen_addr addr;
    if (!rl_listen_addr_parse(config->listen_addr, &addr, err, err_size)) return false;
    if (rl_backend_kind_find(config->backend) == NULL) {
        rl_backend_kind_unknown(config->backend, err, err_size);
        return false;
    }
    /* Checked whichever the backend, so that a typo in --redis is not
     * silently carried until someone switches backends. */
    char host[RL_LISTEN_HOST_MAX_LEN + 1];
    uint16_t port;
    if (!rl_server_redis_address_parse(config->redis.address, host, sizeof host, &port, err,
                                       err_size))
        return false;
    if (config->threads > RL_CONFIG_MAX_THREADS) {
        snprintf(err, err_size, "threads must be 0..%u (0: one per core)", RL_CONFIG_MAX_THREADS);
        return false;
    }
    if (config->max_body_bytes < RL_CONFIG_MIN_BODY_BYTES ||
        config->max_body_bytes > RL_CONFIG_MAX_BODY_BYTES) {
        snprintf(err, err_size, "max_body_bytes must be %u..%u", RL_CONFIG_MIN_BODY_BYTES,
                 RL_CONFIG_MAX_BODY_BYTES);
        return false;
    }
    if (config->max_batch < 1 || config->max_batch > RL_CONFIG_MAX_BATCH) {
        snprintf(err, err_size, "max_batch must be 1..%u", RL_CONFIG_MAX_BATCH);
        return false;
    }
    if (config->max_connections < 1 || config->max_connections > RL_CONFIG_MAX_MAX_CONNECTIONS) {
        snprintf(err, err_size, "max_connections must be 1..%u", RL_CONFIG_MAX_MAX_CONNECTIONS);
        return false;
    }
    if (config->idle_timeout_ms < RL_CONFIG_MIN_TIMEOUT_MS ||
        config->idle_timeout_ms > RL_CONFIG_MAX_IDLE_TIMEOUT_MS) {
        snprintf(err, err_size, "idle_timeout_ms must be %u..%u", RL_CONFIG_MIN_TIMEOUT_MS,
                 RL_CONFIG_MAX_IDLE_TIMEOUT_MS);
        return false;
    }
    if (config->request_timeout_ms < RL_CONFIG_MIN_TIMEOUT_MS ||
        config->request_timeout_ms > RL_CONFIG_MAX_REQUEST_TIMEOUT_MS) {
        snprintf(err, err_size, "request_timeout_ms must be %u..%u", RL_CONFIG_MIN_TIMEOUT_MS,
                 RL_CONFIG_MAX_REQUEST_TIMEOUT_MS);
        return false;
    }
    if (config->registry_path[0] == '\0') {
        snprintf(err, err_size, "the registry path is empty");
        return false;
    }
    if ((config->tls_cert_file[0] == '\0') != (config->tls_key_file[0] == '\0')) {
        snprintf(err, err_size, "server.tls needs both cert_file and key_file (or neither: plain HTTP)");
        return false;
    }
    if (config->metrics.require_token && config->admin_tokens_file[0] == '\0' &&
        config->data_tokens_file[0] == '\0') {
        snprintf(err, err_size,
                 "metrics.require_token needs admin.tokens_file or data.tokens_file: no token could be accepted");
        return false;
    }
    for (uint32_t i = 0; i < config->preset_count; i++) {
        if (rl_preset_find(config->presets[i]) != NULL) continue;
        rl__preset_unknown(config->presets[i], err, err_size);
        return false;
    }
    if (config->audit_retention_days < 1 || config->audit_retention_days > RL_AUDIT_MAX_RETENTION_DAYS) {
        snprintf(err, err_size, "audit.retention_days must be 1..%u", RL_AUDIT_MAX_RETENTION_DAYS);
        return false;
    }
    /* Two stores in one file would destroy each other. */
    rl_server_memory_paths paths;
    rl_memory_options memory;
    rl_server_config_memory_options(config, &paths, &memory);
    char registry_log[sizeof config->registry_path + sizeof ".log"]; /* ratelimiter/registry.h */
    snprintf(registry_log, sizeof registry_log, "%s.log", config->registry_path);
    const char *clash = NULL, *path = NULL;
    if (memory.journal_path != NULL && strcmp(memory.journal_path, config->registry_path) == 0)
        clash = "the journal is the registry file", path = memory.journal_path;
    else if (memory.audit_dir != NULL && strcmp(memory.audit_dir, config->registry_path) == 0)
        clash = "the audit directory is the registry file", path = memory.audit_dir;
    else if (memory.journal_path != NULL && strcmp(memory.journal_path, registry_log) == 0)
        clash = "the journal is the registry's log", path = memory.journal_path;
    else if (memory.audit_dir != NULL && strcmp(memory.audit_dir, registry_log) == 0)
        clash = "the audit directory is the registry's log", path = memory.audit_dir;
    else if (memory.journal_path != NULL && memory.audit_dir != NULL &&
             strcmp(memory.journal_path, memory.audit_dir) == 0)
        clash = "the journal is the audit directory", path = memory.journal_path;
    if (clash == NULL) return access_log_path_is_apart(config, &memory, registry_log, err, err_size);
    snprintf(err, err_size,
             "%s (\"%.200s\"): give memory.journal_path (--journal) and audit.dir (--audit-dir) paths of "
             "their own",
             clash, path);
    return false;
}
