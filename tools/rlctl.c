/* rlctl — the command line of ratelimiterd: the admin API (list, get, put,
 * delete, templates, health, audit, presets) and reserve/complete by hand. A thin main over src/cli. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    rlctl_command_fn run;
    const char *summary;
} commands[] = {
    {"list", rlctl_cmd_list, "every limit with its usage, as a table (--json: raw)"},
    {"get", rlctl_cmd_get, "one limit: definition, status, usage"},
    {"put", rlctl_cmd_put, "define or change a limit, from flags or --file defs.json"},
    {"delete", rlctl_cmd_delete, "delete a limit (its open reservations are dropped), or --template one"},
    {"templates", rlctl_cmd_templates, "every limit template (put --pattern makes one)"},
    {"reserve", rlctl_cmd_reserve, "reserve KEY=AMOUNT... under a lease id (made if not given)"},
    {"complete", rlctl_cmd_complete, "complete a lease with its actual amounts"},
    {"audit", rlctl_cmd_audit, "what was charged to a key: the audit log of spend"},
    {"presets", rlctl_cmd_presets, "the built-in provider presets (NAME: one, with its limits)"},
    {"preset", rlctl_cmd_preset, "preset apply NAME: apply a provider preset (your own limits win)"},
    {"health", rlctl_cmd_health, "is the daemon up?"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out,
            "usage: rlctl [--url URL] [--timeout-ms N] [--token-file PATH] [--cacert PEM] COMMAND [options]\n"
            "             [arguments]\n"
            "       rlctl COMMAND --help\n"
            "\n"
            "global options:\n"
            "  --url URL         the daemon (default " RLCTL_DEFAULT_URL ")\n"
            "  --timeout-ms N    give up on the daemon after N ms (default %u)\n"
            "  --token-file PATH send the token in PATH (its first line that is not empty or a\n"
            "                    # comment) as Authorization: Bearer, for a daemon with\n"
            "                    admin.tokens_file / data.tokens_file (env RLCTL_TOKEN_FILE)\n"
            "  --token TOKEN     the same with the token itself (env RLCTL_TOKEN; other users\n"
            "                    of the machine can read a command line: prefer a file)\n"
            "  --cacert PEM      check an https:// daemon's certificate against PEM's\n"
            "                    authorities, e.g. its self-signed certificate (env RLCTL_CACERT)\n"
            "  -h, --help        this text\n"
            "  -V, --version     the version\n"
            "\n"
            "commands:\n",
            RLCTL_DEFAULT_TIMEOUT_MS);
    for (size_t i = 0; i < COMMAND_COUNT; i++) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\n"
            "exit codes:\n"
            "  0  ok (reserve: allowed)\n"
            "  1  reserve denied (retry later with a new lease id)\n"
            "  2  usage error (bad option, argument or file)\n"
            "  3  the server refused: invalid_request (its detail is shown), not found, unknown key,\n"
            "     unauthorized (no token), forbidden (a token it does not take)\n"
            "  4  unreachable, timed out, or backend error\n");
}

/* The token and the CA file from the flags, else the environment: a flag
 * wins over its variable, and --token over RLCTL_TOKEN_FILE. Returns -1 to
 * go on, else the exit status. */
static int resolve_credentials(rlctl_global *global, const char *token_file) {
    static char token[RLCTL_TOKEN_MAX_LEN + 1];
    const char *env_token = getenv("RLCTL_TOKEN"), *env_token_file = getenv("RLCTL_TOKEN_FILE");
    if (global->token != NULL && token_file != NULL) {
        fprintf(stderr, "rlctl: --token and --token-file contradict each other: give one\n");
        return RLCTL_EXIT_USAGE;
    }
    if (global->token == NULL && token_file == NULL) {
        if (env_token != NULL && env_token[0] != '\0') global->token = env_token;
        else if (env_token_file != NULL && env_token_file[0] != '\0') token_file = env_token_file;
    }
    if (token_file != NULL) {
        char err[RLCTL_TOKEN_MAX_LEN + 256];
        if (!rlctl_read_token_file(token_file, token, sizeof token, err, sizeof err)) {
            fprintf(stderr, "rlctl: token file %s\n", err);
            return RLCTL_EXIT_USAGE;
        }
        global->token = token;
    } else if (global->token != NULL && !rlctl_token_is_valid(global->token, strlen(global->token))) {
        fprintf(stderr, "rlctl: the token must be 1..%d printable characters without spaces\n", RLCTL_TOKEN_MAX_LEN);
        return RLCTL_EXIT_USAGE;
    }
    if (global->cacert == NULL) {
        const char *env_cacert = getenv("RLCTL_CACERT");
        if (env_cacert != NULL && env_cacert[0] != '\0') global->cacert = env_cacert;
    }
    return -1;
}

int main(int argc, char **argv) {
    static const struct option options[] = {{"url", required_argument, NULL, 'u'},
                                            {"timeout-ms", required_argument, NULL, 't'},
                                            {"token", required_argument, NULL, 'k'},
                                            {"token-file", required_argument, NULL, 'f'},
                                            {"cacert", required_argument, NULL, 'a'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"version", no_argument, NULL, 'V'},
                                            {0}};
    rlctl_global global = {RLCTL_DEFAULT_URL, RLCTL_DEFAULT_TIMEOUT_MS, NULL, NULL};
    const char *token_file = NULL;
    int c;
    uint64_t n;
    while ((c = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (c) {
        case 'u': global.url = optarg; break;
        case 't':
            if (!rlctl_parse_u64(optarg, 3600000, &n) || n == 0) {
                fprintf(stderr, "rlctl: --timeout-ms \"%s\" must be an integer 1..3600000\n", optarg);
                return RLCTL_EXIT_USAGE;
            }
            global.timeout_ms = (uint32_t)n;
            break;
        case 'k': global.token = optarg; break;
        case 'f': token_file = optarg; break;
        case 'a': global.cacert = optarg; break;
        case 'h': usage(stdout); return RLCTL_EXIT_OK;
        case 'V': printf("rlctl %s\n", RL_VERSION); return RLCTL_EXIT_OK;
        default: usage(stderr); return RLCTL_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "rlctl: a COMMAND is needed\n");
        usage(stderr);
        return RLCTL_EXIT_USAGE;
    }
    int first = optind; /* the command's argv[0] */
    const char *name = argv[first];
    if (strcmp(name, "help") == 0) {
        if (first + 1 >= argc) return usage(stdout), RLCTL_EXIT_OK;
        /* "rlctl help put" is "rlctl put --help". */
        static char help_flag[] = "--help";
        name = argv[first] = argv[first + 1];
        argv[first + 1] = help_flag;
        argc = first + 2;
    }
    size_t url_len = strlen(global.url);
    if (url_len == 0 || (strncmp(global.url, "http://", 7) != 0 && strncmp(global.url, "https://", 8) != 0)) {
        fprintf(stderr, "rlctl: --url \"%s\" must start with http:// or https://\n", global.url);
        return RLCTL_EXIT_USAGE;
    }
    static char url[2048];
    if (url_len >= sizeof url) {
        fprintf(stderr, "rlctl: --url is too long\n");
        return RLCTL_EXIT_USAGE;
    }
    memcpy(url, global.url, url_len + 1);
    int credentials = resolve_credentials(&global, token_file);
    if (credentials >= 0) return credentials;
    while (url_len > 0 && url[url_len - 1] == '/') url[--url_len] = '\0'; /* paths start with '/' */
    global.url = url;

    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(name, commands[i].name) != 0) continue;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            fprintf(stderr, "rlctl: libcurl did not start\n");
            return RLCTL_EXIT_UNAVAILABLE;
        }
        optind = 0; /* the command parses argv[optind..] afresh */
        int code = commands[i].run(&global, argc - first, argv + first);
        curl_global_cleanup();
        return code;
    }
    fprintf(stderr, "rlctl: unknown command \"%s\" (rlctl --help lists them)\n", name);
    return RLCTL_EXIT_USAGE;
}
