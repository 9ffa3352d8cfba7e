/* server/config.h — the daemon's settings: defaults, config.yaml
 * (examples/config.yaml, docs/operations.md).
 *
 *   server:   listen_addr, backend, threads, max_body_bytes, max_batch,
 *             max_connections, idle_timeout_ms, request_timeout_ms,
 *             allowed_origins (a list: the web origins whose pages may call
 *             the API, request_guard.h; none by default),
 *             tls: cert_file, key_file (PEM; both set: HTTPS only)
 *   registry: path, max_limits
 *   memory:   sweep_interval_ms, lease_memory_ms, max_leases,
 *             journal_path (usage that survives a restart: default
 *             "journal" beside registry.path, so ./data/journal; "" keeps
 *             usage in memory only), journal_fsync (everysec, the
 *             default: written before each answer, synced once a second;
 *             always: synced before each answer, one fdatasync for all the
 *             answers ready; off), journal_compact_bytes (the journal is
 *             rewritten as a snapshot past this size and twice its last
 *             snapshot; 0: 64 MiB)
 *   audit:    dir (the memory backend's audit log of spend, one file a day:
 *             default "audit" beside registry.path, so ./data/audit; ""
 *             keeps none; the redis backend keeps its log in Redis and does
 *             not read it), retention_days (1..3660, default 62; both
 *             backends)
 *   redis:    address, password, db, connections, key_prefix,
 *             connect_timeout_ms, command_timeout_ms, lease_memory_ms,
 *             max_leases_per_batch, flush_interval_us, flushes_in_flight
 *             (the submitter's: how many leases go into one script call,
 *             how long the first lease of a batch may wait for company, how
 *             many script calls may be out at once), allow_eviction (accept a
 *             Redis whose maxmemory-policy may evict keys: ratelimiter/redis.h),
 *             allotments (decide leases locally from allotments: redis.h)
 *   log:      access (off | text | json: one line per answered request,
 *             server/observe/access_log.h; default off), access_path ("-":
 *             the daemon's stdout, the default; else a file, appended to and
 *             opened anew on SIGHUP for logrotate)
 *   tigerbeetle: accepted and ignored (Redis is the shared store: a lease's
 *             rules run as one script there, which TigerBeetle cannot hold)
 *   admin:    tokens_file (bearer tokens the admin API requires: auth.h)
 *   data:     tokens_file (bearer tokens reserve and complete require)
 *   metrics:  enabled (GET /metrics), require_token (it needs a token
 *             of either tokens file), max_limit_series (limits given
 *             gauges, in key order), limits_refresh_ms (how often they are
 *             read, off the event loops)
 *   presets:  a list of provider preset names (ratelimiter/presets.h),
 *             applied at start in order, after the registry is opened and
 *             brought into the backend; --preset NAME adds one after them
 *
 * Overload bounds (server; http_server.h and conn_guard.h say how): at most
 * max_connections open connections (past it a newcomer replaces an idle
 * one, or is reset at once if none is idle); idle_timeout_ms between
 * requests; request_timeout_ms for a request to arrive once begun (slow-
 * loris) and for its answer to be read; max_body_bytes a body (413). The
 * request line and headers are bounded by libh2o, not here: 417792 bytes
 * and 100 headers, fixed when it was compiled (400 past them). Memory for
 * requests being read stays under about max_connections x (max_body_bytes
 * + 0.5 MiB): with the defaults ~15 GiB at worst, so a small machine wants
 * smaller values.
 *
 * Paths beside the registry follow registry.path (and --registry): each
 * daemon with a registry of its own gets a journal and an audit directory
 * of its own. Flags: --journal PATH, --no-journal, --journal-fsync MODE,
 * --audit-dir PATH, --no-audit (ratelimiterd --help).
 *
 * A key this file does not know inside a known section, a value of the wrong
 * type or out of range, a duplicate key or an unknown section is an error
 * that names the file, the line and the key: a typo must not silently fall
 * back to a default. Command-line flags override the file (ratelimiterd.c).
 *
 * Not thread-safe: the config is filled once at start-up, then read-only.
 */
#ifndef RL_SERVER_CONFIG_H
#define RL_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ratelimiter/memory.h"
#include "ratelimiter/presets.h"
#include "ratelimiter/redis.h"
#include "server/http/request_guard.h"
#include "server/observe/access_log_line.h"

#define RL_CONFIG_DEFAULT_LISTEN_ADDR "127.0.0.1:8080"
#define RL_CONFIG_DEFAULT_BACKEND "memory"
#define RL_CONFIG_DEFAULT_REGISTRY_PATH "./data/limits.json"
#define RL_CONFIG_DEFAULT_MAX_BODY_BYTES (1024u * 1024u)
#define RL_CONFIG_DEFAULT_MAX_BATCH 256u
#define RL_CONFIG_DEFAULT_MAX_CONNECTIONS 10000u
#define RL_CONFIG_DEFAULT_IDLE_TIMEOUT_MS 60000u
#define RL_CONFIG_DEFAULT_REQUEST_TIMEOUT_MS 10000u
#define RL_CONFIG_DEFAULT_JOURNAL_NAME "journal" /* beside the registry file */
#define RL_CONFIG_DEFAULT_AUDIT_DIR_NAME "audit" /* beside the registry file */
#define RL_CONFIG_DEFAULT_ACCESS_LOG_PATH "-"    /* stdout */

/* The redis section's defaults (rl_redis_options_default's, plus the
 * submitter's). */
#define RL_CONFIG_DEFAULT_REDIS_ADDRESS "127.0.0.1:6379"
#define RL_CONFIG_DEFAULT_REDIS_KEY_PREFIX "rl:"
#define RL_CONFIG_DEFAULT_REDIS_CONNECTIONS 4u
#define RL_CONFIG_DEFAULT_REDIS_CONNECT_TIMEOUT_MS 200u
#define RL_CONFIG_DEFAULT_REDIS_COMMAND_TIMEOUT_MS 500u
#define RL_CONFIG_DEFAULT_REDIS_LEASE_MEMORY_MS 600000u
#define RL_CONFIG_DEFAULT_REDIS_MAX_LEASES_PER_BATCH 1024u
#define RL_CONFIG_DEFAULT_REDIS_FLUSH_INTERVAL_US 200u
#define RL_CONFIG_DEFAULT_REDIS_FLUSHES_IN_FLIGHT 2u

/* Bounds: every size, count and connection is bounded, so that no input can exhaust memory. */
#define RL_CONFIG_MAX_THREADS 256u
#define RL_CONFIG_MIN_BODY_BYTES 256u                   /* a reserve needs ~300 bytes */
#define RL_CONFIG_MAX_BODY_BYTES (1024u * 1024u * 1024u) /* 1 GiB */
#define RL_CONFIG_MAX_BATCH 65536u
#define RL_CONFIG_MAX_MAX_CONNECTIONS 1000000u
#define RL_CONFIG_MIN_TIMEOUT_MS 10u             /* the guard sweeps at most every 10 ms */
#define RL_CONFIG_MAX_IDLE_TIMEOUT_MS 3600000u   /* an hour */
#define RL_CONFIG_MAX_REQUEST_TIMEOUT_MS 600000u /* ten minutes */
#define RL_CONFIG_MAX_SWEEP_INTERVAL_MS 3600000u
#define RL_CONFIG_MAX_LEASE_MEMORY_MS (7u * 24u * 3600u * 1000u)
#define RL_CONFIG_MAX_MAX_LEASES UINT64_C(1000000000)
#define RL_CONFIG_MAX_MAX_LIMITS UINT64_C(10000000)
#define RL_CONFIG_MAX_REDIS_DB 65535u
#define RL_CONFIG_MAX_REDIS_CONNECTIONS 256u
#define RL_CONFIG_MAX_REDIS_TIMEOUT_MS 60000u
#define RL_CONFIG_MAX_REDIS_LEASES_PER_BATCH 16384u
#define RL_CONFIG_MAX_REDIS_FLUSH_INTERVAL_US 1000000u
#define RL_CONFIG_MAX_REDIS_FLUSHES_IN_FLIGHT 64u
#define RL_CONFIG_REDIS_KEY_PREFIX_MAX 64 /* bytes, printable ASCII without spaces */

/* The metrics section (GET /metrics, server/observe/metrics.h). */
#define RL_CONFIG_DEFAULT_METRICS_MAX_LIMIT_SERIES 1000u
#define RL_CONFIG_MAX_METRICS_LIMIT_SERIES 100000u
#define RL_CONFIG_DEFAULT_METRICS_LIMITS_REFRESH_MS 1000u
#define RL_CONFIG_MIN_METRICS_LIMITS_REFRESH_MS 100u
#define RL_CONFIG_MAX_METRICS_LIMITS_REFRESH_MS 3600000u

#define RL_CONFIG_STRING_MAX 1024 /* listen_addr, backend, paths */
#define RL_CONFIG_MAX_ALLOWED_ORIGINS 32
#define RL_CONFIG_MAX_PRESETS 32 /* presets: and --preset together */
#define RL_CONFIG_ERR_SIZE 512

/* A file or directory whose default is a name beside the registry file
 * (memory.journal_path, audit.dir). */
typedef struct rl_server_path {
    char path[RL_CONFIG_STRING_MAX]; /* when set; "" turns the feature off */
    bool set;                        /* false: the default name beside the registry */
} rl_server_path;

/* The redis section. Strings are "" when unset (password: no AUTH). */
typedef struct rl_server_redis_config {
    char address[RL_CONFIG_STRING_MAX]; /* "HOST:PORT" or "[IPV6]:PORT", port 1..65535 */
    char password[RL_CONFIG_STRING_MAX];
    uint32_t db;
    uint32_t connections;
    char key_prefix[RL_CONFIG_REDIS_KEY_PREFIX_MAX + 1];
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms;
    uint32_t lease_memory_ms;
    /* Used by the submitter (micro-batching), not by the backend: the most leases
     * in one script call (1: no batching, for comparison), and how long the
     * first queued lease waits for more before the batch is sent, and how
     * many batches (of reserves; as many of completes) may be in Redis's
     * hands at once. */
    uint32_t max_leases_per_batch;
    uint32_t flush_interval_us;
    uint32_t flushes_in_flight;
    bool allow_eviction;
    /* Decide leases locally from allotments of capacity carved from Redis
     * (ratelimiter/redis.h, docs/allotments.md). */
    bool allotments;
} rl_server_redis_config;

/* The metrics section. */
typedef struct rl_server_metrics_config {
    bool enabled;       /* serve GET /metrics (false: 404, nothing counted) */
    bool require_token; /* /metrics needs a token of either tokens file (server/auth/auth.h) */
    uint32_t max_limit_series;  /* limits given gauges, in key order (0: none) */
    uint32_t limits_refresh_ms; /* how often the limits' gauges are read */
} rl_server_metrics_config;

typedef struct rl_server_config {
    char listen_addr[RL_CONFIG_STRING_MAX];
    char backend[RL_CONFIG_STRING_MAX];
    uint32_t threads;        /* 0: one event loop per online core */
    uint64_t max_body_bytes; /* larger request bodies get 413 */
    uint32_t max_batch;      /* items per batch request */
    uint32_t max_connections; /* open client connections, all loops together */
    uint32_t idle_timeout_ms;    /* a connection between requests is closed after this */
    uint32_t request_timeout_ms; /* a request must arrive, and its answer be taken, within this */
    /* Origins as rl_request_guard_origin_check accepts them. */
    char allowed_origins[RL_CONFIG_MAX_ALLOWED_ORIGINS][RL_ORIGIN_MAX_LEN + 1];
    uint32_t allowed_origin_count;
    /* server.tls: PEM certificate chain and private key, both "" for plain
     * HTTP. */
    char tls_cert_file[RL_CONFIG_STRING_MAX];
    char tls_key_file[RL_CONFIG_STRING_MAX];
    /* Bearer tokens (server/auth/auth.h): "" leaves the paths open. */
    char admin_tokens_file[RL_CONFIG_STRING_MAX];
    char data_tokens_file[RL_CONFIG_STRING_MAX];

    char registry_path[RL_CONFIG_STRING_MAX];
    uint64_t max_limits; /* 0: the registry's default */

    /* clock is always NULL (system clock) here, journal_fsync is
     * memory.journal_fsync, and the two paths are NULL: see
     * rl_server_config_memory_options. */
    rl_memory_options memory;
    rl_server_path journal;        /* memory.journal_path */
    rl_server_path audit_dir;      /* audit.dir */
    uint32_t audit_retention_days; /* audit.retention_days, 1..RL_AUDIT_MAX_RETENTION_DAYS */
    rl_server_redis_config redis;
    rl_server_metrics_config metrics;

    /* log.access and log.access_path: "-" for stdout, else a file. */
    rl_access_log_format access_log;
    char access_log_path[RL_CONFIG_STRING_MAX];

    /* Provider presets applied at start, in order: known names only
     * (rl_preset_find). */
    char presets[RL_CONFIG_MAX_PRESETS][RL_PRESET_NAME_MAX_LEN + 1];
    uint32_t preset_count;
} rl_server_config;

/* Where rl_server_config_memory_options puts the resolved paths: a name
 * beside a registry path of up to RL_CONFIG_STRING_MAX - 1 bytes fits. */
typedef struct rl_server_memory_paths {
    char journal[RL_CONFIG_STRING_MAX + 16];
    char audit_dir[RL_CONFIG_STRING_MAX + 16];
} rl_server_memory_paths;

/* Fills config with the defaults above and rl_memory_options_default. */
void rl_server_config_default(rl_server_config *config);

/* Reads the YAML file at path over the values already in config (so that
 * defaults stay for what the file does not set). On error returns false, err
 * (err_size bytes) says "<path>:<line>: <what>", and config may be partly
 * overwritten: the caller must not use it. */
bool rl_server_config_load_file(rl_server_config *config, const char *path, char *err,
                                size_t err_size);

/* The same from text[0..len); name stands for the file name in messages. */
bool rl_server_config_load_string(rl_server_config *config, const char *text, size_t len,
                                  const char *name, char *err, size_t err_size);

/* Adds a preset name to config->presets (--preset). False with err (a
 * sentence listing the presets) for a name no preset has, or past
 * RL_CONFIG_MAX_PRESETS. */
bool rl_server_config_add_preset(rl_server_config *config, const char *name, char *err, size_t err_size);

/* Checks the values that flags can also set (listen address syntax, backend
 * name, thread count, redis address, the journal and the audit directory
 * apart from the registry file and each other, preset names): call after
 * applying flags; TLS files both or neither, metrics.require_token only
 * with a tokens file. False with err on error. */
bool rl_server_config_validate(const rl_server_config *config, char *err, size_t err_size);

/* Parses a redis address ("HOST:PORT", "[IPV6]:PORT"; a host is required
 * and the port is 1..65535) into host (host_size bytes) and *port. False
 * with a sentence in err otherwise. Pure. */
bool rl_server_redis_address_parse(const char *address, char *host, size_t host_size,
                                   uint16_t *port, char *err, size_t err_size);

/* Sets the fields of *out that the redis section holds, and
 * audit_retention_days (call
 * rl_redis_options_default(out) first for the others); host (host_size
 * bytes) receives the host, and out's strings point into it and into
 * config, which must outlive out. False with err if the address is invalid. */
bool rl_server_config_redis_options(const rl_server_config *config, char *host, size_t host_size,
                                    rl_redis_options *out, char *err, size_t err_size);

/* config->memory with the journal and the audit log resolved: the path
 * set, NULL when set to "" (off), else the default name beside the
 * registry file ("./data/limits.json" -> "./data/journal"; a bare
 * "limits.json" -> "journal"); audit_retention_days from the audit
 * section. out's strings point into paths, which must outlive out. Pure. */
void rl_server_config_memory_options(const rl_server_config *config, rl_server_memory_paths *paths,
                                     rl_memory_options *out);

/* "always", "everysec", "off" (memory.journal_fsync, --journal-fsync).
 * False for anything else. Pure. */
bool rl_server_journal_fsync_parse(const char *text, rl_journal_fsync *out);

/* The event loops to run: config->threads, or the online cores if 0. */
uint32_t rl_server_config_thread_count(const rl_server_config *config);

#endif
