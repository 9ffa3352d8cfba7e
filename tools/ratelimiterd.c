/* ratelimiterd — the rate limiter daemon: config, service, HTTP server, wait
 * for SIGINT/SIGTERM (SIGHUP: the tokens files are read again and the access
 * log reopened, for logrotate), clean
 * exit. Everything else lives in src/server.
 *
 * Exit status: 0 after a clean stop, 1 if start-up fails (bad config,
 * unreadable or corrupt registry, address in use, Redis unreachable), 2 for
 * bad arguments; SIGINT or SIGTERM before it listens ends it by that signal.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/auth/auth.h"
#include "server/config.h"
#include "server/http/http_server.h"
#include "server/observe/observe.h"
#include "server/service.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: ratelimiterd [options]\n"
            "  -c, --config PATH        YAML config (examples/config.yaml); the flags below override it\n"
            "      --listen HOST:PORT   address to serve (default %s; \":PORT\" = every\n"
            "                           interface; port 0 = any free port)\n"
            "      --backend NAME       limit store: memory (default) or redis (many daemons\n"
            "                           share one Redis: distributed mode)\n"
            "      --redis HOST:PORT    the Redis of --backend redis (default %s)\n"
            "      --allotments         with --backend redis: decide leases locally from capacity\n"
            "                           Redis sets aside for this daemon (docs/allotments.md)\n"
            "      --registry PATH      limits.json (default %s; a missing file starts empty)\n"
            "      --threads N          event loops, 0 = one per core (default)\n"
            "  memory backend: usage that survives restarts, and the audit log of spend\n"
            "      --journal PATH       the journal (default: \"" RL_CONFIG_DEFAULT_JOURNAL_NAME "\" beside the registry)\n"
            "      --no-journal         keep usage in memory only: a restart forgets it\n"
            "      --journal-fsync MODE everysec (default: synced once a second), always (before each answer), off\n"
            "      --audit-dir PATH     the audit log (default: \"" RL_CONFIG_DEFAULT_AUDIT_DIR_NAME "\" beside the registry)\n"
            "      --no-audit           keep no audit log (GET /v1/admin/audit then answers no entries)\n"
            "      --preset NAME        apply a provider preset at start (repeatable, after the\n"
            "                           config's presets:); explicit limits win over it\n"
            "  signals: SIGINT, SIGTERM stop cleanly; SIGHUP reads admin.tokens_file and\n"
            "           data.tokens_file again (a broken file keeps its previous tokens)\n"
            "  -h, --help               this text\n"
            "  -V, --version            the version\n",
            RL_CONFIG_DEFAULT_LISTEN_ADDR, RL_CONFIG_DEFAULT_REDIS_ADDRESS,
            RL_CONFIG_DEFAULT_REGISTRY_PATH);
}

typedef struct overrides {
    const char *config_path;
    const char *listen_addr;
    const char *backend;
    const char *redis_address;
    const char *registry_path;
    const char *threads;
    const char *journal_path;
    const char *journal_fsync;
    const char *audit_dir;
    bool no_journal;
    bool no_audit;
    bool allotments;
    const char *presets[RL_CONFIG_MAX_PRESETS + 1]; /* --preset, in order; one more is refused */
    size_t preset_count;
} overrides;

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, overrides *o) {
    enum {
        OPT_LISTEN = 256,
        OPT_BACKEND,
        OPT_REDIS,
        OPT_REGISTRY,
        OPT_THREADS,
        OPT_JOURNAL,
        OPT_NO_JOURNAL,
        OPT_JOURNAL_FSYNC,
        OPT_AUDIT_DIR,
        OPT_NO_AUDIT,
        OPT_ALLOTMENTS,
        OPT_PRESET,
    };
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},   {"listen", required_argument, NULL, OPT_LISTEN},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"redis", required_argument, NULL, OPT_REDIS},
        {"registry", required_argument, NULL, OPT_REGISTRY},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"journal", required_argument, NULL, OPT_JOURNAL},
        {"no-journal", no_argument, NULL, OPT_NO_JOURNAL},
        {"journal-fsync", required_argument, NULL, OPT_JOURNAL_FSYNC},
        {"audit-dir", required_argument, NULL, OPT_AUDIT_DIR},
        {"no-audit", no_argument, NULL, OPT_NO_AUDIT},
        {"allotments", no_argument, NULL, OPT_ALLOTMENTS},
        {"preset", required_argument, NULL, OPT_PRESET},
        {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "c:hV", options, NULL)) != -1) {
        switch (c) {
        case 'c': o->config_path = optarg; break;
        case OPT_LISTEN: o->listen_addr = optarg; break;
        case OPT_BACKEND: o->backend = optarg; break;
        case OPT_REDIS: o->redis_address = optarg; break;
        case OPT_REGISTRY: o->registry_path = optarg; break;
        case OPT_THREADS: o->threads = optarg; break;
        case OPT_JOURNAL: o->journal_path = optarg; break;
        case OPT_NO_JOURNAL: o->no_journal = true; break;
        case OPT_JOURNAL_FSYNC: o->journal_fsync = optarg; break;
        case OPT_AUDIT_DIR: o->audit_dir = optarg; break;
        case OPT_NO_AUDIT: o->no_audit = true; break;
        case OPT_ALLOTMENTS: o->allotments = true; break;
        case OPT_PRESET:
            if (o->preset_count == RL_CONFIG_MAX_PRESETS) {
                fprintf(stderr, "ratelimiterd: at most %u --preset flags\n", RL_CONFIG_MAX_PRESETS);
                return 2;
            }
            o->presets[o->preset_count++] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("ratelimiterd %s\n", RL_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ratelimiterd: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if ((o->journal_path != NULL && o->no_journal) || (o->audit_dir != NULL && o->no_audit)) {
        fprintf(stderr, "ratelimiterd: %s\n", o->no_journal && o->journal_path != NULL
                                                  ? "--journal and --no-journal contradict each other"
                                                  : "--audit-dir and --no-audit contradict each other");
        return 2;
    }
    return -1;
}

static bool copy_string(char *dst, size_t dst_size, const char *src, const char *what) {
    size_t len = strlen(src);
    if (len == 0 || len >= dst_size) {
        fprintf(stderr, "ratelimiterd: %s must be 1..%zu bytes\n", what, dst_size - 1);
        return false;
    }
    memcpy(dst, src, len + 1);
    return true;
}

/* Returns -1 to go on, else the exit status. */
static int apply_overrides(rl_server_config *config, const overrides *o) {
    if (o->listen_addr && !copy_string(config->listen_addr, sizeof config->listen_addr,
                                       o->listen_addr, "--listen"))
        return 2;
    if (o->backend && !copy_string(config->backend, sizeof config->backend, o->backend, "--backend"))
        return 2;
    /* --redis only says where Redis is; --backend (or the file) selects it. */
    if (o->redis_address && !copy_string(config->redis.address, sizeof config->redis.address,
                                         o->redis_address, "--redis"))
        return 2;
    if (o->registry_path && !copy_string(config->registry_path, sizeof config->registry_path,
                                         o->registry_path, "--registry"))
        return 2;
    /* A path flag or its --no- form: set, as a path or as "" (off). */
    if (o->journal_path && !copy_string(config->journal.path, sizeof config->journal.path, o->journal_path,
                                        "--journal"))
        return 2;
    if (o->audit_dir && !copy_string(config->audit_dir.path, sizeof config->audit_dir.path, o->audit_dir,
                                     "--audit-dir"))
        return 2;
    if (o->allotments) config->redis.allotments = true;
    if (o->no_journal) config->journal.path[0] = '\0';
    if (o->no_audit) config->audit_dir.path[0] = '\0';
    config->journal.set |= o->journal_path != NULL || o->no_journal;
    config->audit_dir.set |= o->audit_dir != NULL || o->no_audit;
    for (size_t i = 0; i < o->preset_count; i++) {
        char why[RL_CONFIG_ERR_SIZE];
        if (!rl_server_config_add_preset(config, o->presets[i], why, sizeof why)) {
            fprintf(stderr, "ratelimiterd: --preset: %s\n", why);
            return 1; /* a name no preset has stops start-up */
        }
    }
    if (o->journal_fsync && !rl_server_journal_fsync_parse(o->journal_fsync, &config->memory.journal_fsync)) {
        fprintf(stderr, "ratelimiterd: --journal-fsync must be always, everysec or off\n");
        return 2;
    }
    if (o->threads) {
        char *end = NULL;
        unsigned long n = strtoul(o->threads, &end, 10);
        if (o->threads[0] < '0' || o->threads[0] > '9' || *end != '\0' || n > RL_CONFIG_MAX_THREADS) {
            fprintf(stderr, "ratelimiterd: --threads must be 0..%u (0: one per core)\n",
                    RL_CONFIG_MAX_THREADS);
            return 2;
        }
        config->threads = (uint32_t)n;
    }
    return -1;
}

/* Start-up can wait (for Redis, a slow disk) with the stop signals blocked:
 * they must be blocked before the first thread starts, since every thread
 * inherits the mask and sigwait in main takes them only if no thread
 * lets them through. Until main waits for them, this thread does, so that
 * SIGINT or SIGTERM still stops the daemon then: at once, by the signal
 * itself, as before the mask (nothing has been answered yet, so nothing
 * acknowledged can be lost). */
static void *startup_stop_main(void *arg) {
    const sigset_t *stop_signals = arg;
    int signal_number = 0;
    while (sigwait(stop_signals, &signal_number) != 0) {
    }
    /* Taken: from here nothing may cancel the stop. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    fprintf(stderr, "ratelimiterd: %s received during start-up, stopping\n",
            signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    sigset_t just_this;
    sigemptyset(&just_this);
    sigaddset(&just_this, signal_number);
    signal(signal_number, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &just_this, NULL);
    raise(signal_number);
    _exit(1); /* not reached: the signal's default action ends the process */
}

int main(int argc, char **argv) {
    overrides o = {0};
    int exit_status = parse_args(argc, argv, &o);
    if (exit_status >= 0) return exit_status;

    rl_server_config config;
    rl_server_config_default(&config);
    char err[RL_CONFIG_ERR_SIZE];
    if (o.config_path != NULL && !rl_server_config_load_file(&config, o.config_path, err, sizeof err)) {
        fprintf(stderr, "ratelimiterd: %s\n", err);
        return 1;
    }
    exit_status = apply_overrides(&config, &o);
    if (exit_status >= 0) return exit_status;
    if (!rl_server_config_validate(&config, err, sizeof err)) {
        fprintf(stderr, "ratelimiterd: %s\n", err);
        return 1;
    }

    /* Every thread started from here on (backend sweeper, event loops)
     * inherits this mask, so the signals come to sigwait below only. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP); /* not a stop: handled in the wait below */
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    sigset_t startup_stop_signals = stop_signals;
    sigdelset(&startup_stop_signals, SIGHUP); /* a SIGHUP waits for the loop below */
    pthread_t startup_stop;
    if (pthread_create(&startup_stop, NULL, startup_stop_main, &startup_stop_signals) != 0) {
        fprintf(stderr, "ratelimiterd: cannot start: cannot start a thread\n");
        return 1;
    }

    /* Before anything is opened: a bad tokens file stops start-up here. */
    rl_auth_options auth_options = {
        .admin_tokens_file = config.admin_tokens_file,
        .data_tokens_file = config.data_tokens_file,
        .metrics_require_token = config.metrics.require_token,
    };
    rl_auth *auth = NULL;
    if (!rl_auth_create(&auth_options, &auth, err, sizeof err)) {
        fprintf(stderr, "ratelimiterd: cannot start: %s\n", err);
        return 1;
    }

    rl_service_options service_options = {
        .backend_name = config.backend,
        .registry_path = config.registry_path,
        .max_limits = (size_t)config.max_limits,
    };
    rl_server_memory_paths memory_paths; /* the journal's and the audit log's, until the service is open */
    rl_server_config_memory_options(&config, &memory_paths, &service_options.memory);
    service_options.submitter.max_leases = config.redis.max_leases_per_batch;
    service_options.submitter.flush_interval_us = config.redis.flush_interval_us;
    service_options.submitter.flushes_in_flight = config.redis.flushes_in_flight;
    service_options.allotments = config.redis.allotments;
    rl_allotment_options_default(&service_options.allotment);
    char redis_host[RL_CONFIG_STRING_MAX];
    rl_redis_options_default(&service_options.redis);
    if (!rl_server_config_redis_options(&config, redis_host, sizeof redis_host,
                                        &service_options.redis, err, sizeof err)) {
        fprintf(stderr, "ratelimiterd: %s\n", err); /* validated above: cannot happen */
        return 1;
    }
    rl_service *service = NULL;
    if (rl_service_open(&service_options, &service, err, sizeof err) != RL_OK) {
        /* err names the registry file (and the place in it) when that is the cause. */
        fprintf(stderr, "ratelimiterd: cannot start: %s\n", err);
        rl_auth_destroy(auth);
        return 1;
    }

    /* The presets go on top of the registry the service brought into the
     * backend: what they make yields to what the operator defined. */
    if (config.preset_count > 0) {
        const char *names[RL_CONFIG_MAX_PRESETS];
        for (uint32_t i = 0; i < config.preset_count; i++) names[i] = config.presets[i];
        char report[2048];
        if (rl_service_apply_presets(service, names, config.preset_count, report, sizeof report) != RL_OK) {
            fprintf(stderr, "ratelimiterd: cannot start: cannot apply the presets: %s\n", report);
            rl_service_close(service);
            rl_auth_destroy(auth);
            return 1;
        }
        fprintf(stderr, "ratelimiterd: %s\n", report);
    }

    uint32_t threads = rl_server_config_thread_count(&config);
    /* Whoever watches the answers (server/observe/): made before the
     * server, gone after it. */
    rl_observe watchers = {0};
    watchers.denials = rl_denial_ring_create(threads);
    if (watchers.denials == NULL) {
        fprintf(stderr, "ratelimiterd: cannot start: out of memory for the recent denials\n");
        rl_service_close(service);
        rl_auth_destroy(auth);
        return 1;
    }
    if (config.metrics.enabled) {
        rl_metrics_options metrics_options = {
            .loops = threads,
            .max_limit_series = config.metrics.max_limit_series,
            .limits_refresh_ms = config.metrics.limits_refresh_ms,
        };
        watchers.metrics = rl_metrics_create(&metrics_options, service);
        if (watchers.metrics == NULL) {
            fprintf(stderr, "ratelimiterd: cannot start: out of memory for the metrics\n");
            rl_denial_ring_destroy(watchers.denials);
            rl_service_close(service);
            rl_auth_destroy(auth);
            return 1;
        }
    }
    if (config.access_log != RL_ACCESS_LOG_OFF) {
        rl_access_log_options access_log = {config.access_log, config.access_log_path, threads};
        if (!rl_access_log_open(&access_log, &watchers.access_log, err, sizeof err)) {
            fprintf(stderr, "ratelimiterd: cannot start: %s\n", err);
            rl_metrics_destroy(watchers.metrics);
            rl_denial_ring_destroy(watchers.denials);
            rl_service_close(service);
            rl_auth_destroy(auth);
            return 1;
        }
    }
    const char *origins[RL_CONFIG_MAX_ALLOWED_ORIGINS];
    for (uint32_t i = 0; i < config.allowed_origin_count; i++) origins[i] = config.allowed_origins[i];
    rl_http_server_options http_options = {
        .listen_addr = config.listen_addr,
        .threads = threads,
        .max_body_bytes = config.max_body_bytes,
        .max_batch = config.max_batch,
        .max_connections = config.max_connections,
        .idle_timeout_ms = config.idle_timeout_ms,
        .request_timeout_ms = config.request_timeout_ms,
        .allowed_origins = origins,
        .allowed_origin_count = config.allowed_origin_count,
        .auth = rl_auth_enabled(auth) ? auth : NULL,
        .tls_cert_file = config.tls_cert_file[0] != '\0' ? config.tls_cert_file : NULL,
        .tls_key_file = config.tls_key_file[0] != '\0' ? config.tls_key_file : NULL,
        .observer = rl_observe_http_observer(&watchers),
        .denials = watchers.denials,
    };
    if (watchers.metrics != NULL) http_options.metrics = (rl_metrics_page){rl_metrics_page_write, watchers.metrics};
    rl_http_server *server = NULL;
    bool created = rl_http_server_create(&http_options, service, &server, err, sizeof err);
    if (created && watchers.metrics != NULL) {
        rl_metrics_set_server(watchers.metrics, server);
        rl_metrics_set_access_log(watchers.metrics, watchers.access_log);
        created = rl_metrics_start(watchers.metrics, err, sizeof err);
    }
    if (!created || !rl_http_server_start(server, err, sizeof err)) {
        fprintf(stderr, "ratelimiterd: %s\n", err);
        rl_http_server_destroy(server);
        rl_denial_ring_destroy(watchers.denials);
        rl_access_log_close(watchers.access_log);
        rl_metrics_destroy(watchers.metrics);
        rl_service_close(service);
        rl_auth_destroy(auth);
        return 1;
    }
    /* Started: the stop signals are the wait's below from here (one that
     * comes meanwhile waits for it), before anyone reads "listening". */
    pthread_cancel(startup_stop);
    pthread_join(startup_stop, NULL);
    /* Said before the "listening" line, which tests and scripts wait for:
     * whoever reads that line has these too. */
    if (http_options.tls_cert_file != NULL)
        fprintf(stderr, "ratelimiterd: HTTPS only, certificate %s\n", http_options.tls_cert_file);
    if (rl_http_server_is_loopback_only(server))
        fprintf(stderr, "ratelimiterd: the web console is at %s://%s/console\n",
                http_options.tls_cert_file != NULL ? "https" : "http", rl_http_server_address(server));
    else
        fprintf(stderr,
                "ratelimiterd: the web console is at /console (its form changes limits once the address it is "
                "opened at is in server.allowed_origins)\n");
    bool admin_open = !rl_auth_guards_admin(auth), data_open = !rl_auth_guards_data(auth);
    if (!rl_http_server_is_loopback_only(server) && (admin_open || data_open))
        fprintf(stderr,
                "ratelimiterd: warning: %s is reachable from other machines with no authentication (%s not set): "
                "anyone who reaches it can %s (set it, firewall the port, or listen on 127.0.0.1)\n",
                rl_http_server_address(server),
                admin_open && data_open ? "admin.tokens_file and data.tokens_file are"
                : admin_open            ? "admin.tokens_file is"
                                        : "data.tokens_file is",
                admin_open && data_open ? "reserve and change limits" : admin_open ? "change limits" : "reserve");
    /* Tests and scripts parse this line for the port: keep its form. */
    fprintf(stderr, "ratelimiterd listening on %s (backend %s, %zu limits, %u threads)\n",
            rl_http_server_address(server), rl_service_backend_name(service),
            rl_service_limit_count(service), threads);

    int signal_number = 0;
    for (;;) {
        if (sigwait(&stop_signals, &signal_number) != 0) continue;
        if (signal_number != SIGHUP) break;
        rl_auth_reload(auth, stderr);
        rl_access_log_reopen(watchers.access_log);
    }
    fprintf(stderr, "ratelimiterd: %s received, stopping\n",
            signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    rl_http_server_destroy(server);
    rl_denial_ring_destroy(watchers.denials);
    rl_access_log_close(watchers.access_log);
    rl_metrics_destroy(watchers.metrics); /* its collector reads the service */
    rl_service_close(service);
    rl_auth_destroy(auth);
    return 0;
}
