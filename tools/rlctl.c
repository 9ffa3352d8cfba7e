/* rlctl — the command line of ratelimiterd: the admin API (list, get, put,
 * delete, templates, health, audit, presets) and reserve/complete by hand. A thin main over src/cli. */
#include <getopt.h>
#include <stdio.h>
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
            "usage: rlctl [--url URL] [--timeout-ms N] COMMAND [options] [arguments]\n"
            "       rlctl COMMAND --help\n"
            "\n"
            "global options:\n"
            "  --url URL         the daemon (default " RLCTL_DEFAULT_URL ")\n"
            "  --timeout-ms N    give up on the daemon after N ms (default %u)\n"
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
            "  3  the server refused: invalid_request (its detail is shown), not found, unknown key\n"
            "  4  unreachable, timed out, or backend error\n");
}

int main(int argc, char **argv) {
    static const struct option options[] = {{"url", required_argument, NULL, 'u'},
                                            {"timeout-ms", required_argument, NULL, 't'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"version", no_argument, NULL, 'V'},
                                            {0}};
    rlctl_global global = {RLCTL_DEFAULT_URL, RLCTL_DEFAULT_TIMEOUT_MS};
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
