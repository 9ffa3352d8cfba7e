/* cmd_preset.c — rlctl presets and rlctl preset apply: the daemon's built-in
 * provider presets (GET /v1/admin/presets) and applying one (PUT
 * /v1/admin/presets/{name}/apply), api.md "Provider presets". */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "ratelimiter/presets.h"

static const char *text_of(const cJSON *object, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsString(item) ? item->valuestring : "?";
}

static double number_of(const cJSON *object, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsNumber(item) ? item->valuedouble : 0;
}

/* Reads the options of a command that takes --json and --help: -1 to go
 * on, else the exit code (help printed, or a bad option). */
static int json_options(int argc, char **argv, const char *optstring, const char *usage, bool *json) {
    static const struct option options[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    int c;
    *json = false;
    while ((c = getopt_long(argc, argv, optstring, options, NULL)) != -1) {
        if (c == 'j') *json = true;
        else if (c == 'h') return fputs(usage, stdout), RLCTL_EXIT_OK;
        else return fputs(usage, stderr), RLCTL_EXIT_USAGE;
    }
    return -1;
}

/* ---- presets ------------------------------------------------------------- */

static const char presets_usage[] =
    "usage: rlctl [global options] presets [--json] [NAME]\n"
    "  The daemon's built-in provider presets: name, provider, tier, the date of their\n"
    "  figures and how many limits each makes. With NAME, that preset: where its\n"
    "  figures come from, how it maps the provider's counting, and its limits.\n"
    "  Figures are as the provider published them on that date: check yours.\n"
    "  --json   print the server's JSON (with NAME: that preset's object)\n"
    "  Exit 3 if no preset has that name.\n";

static void print_presets(const cJSON *presets) {
    printf("%-18s  %-10s  %-7s  %-10s  %s\n", "NAME", "PROVIDER", "TIER", "AS OF", "LIMITS");
    const cJSON *preset;
    cJSON_ArrayForEach(preset, presets) {
        printf("%-18s  %-10s  %-7s  %-10s  %d\n", text_of(preset, "name"), text_of(preset, "provider"),
               text_of(preset, "tier"), text_of(preset, "as_of"),
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(preset, "limits")));
    }
}

static void print_preset(const cJSON *preset) {
    static const char *const fields[] = {"name", "provider", "tier", "as_of", "source", "note"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        printf("%-9s %s\n", fields[i], text_of(preset, fields[i]));
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(preset, "limits"), *def;
    if (cJSON_GetArraySize(limits) == 0) return;
    int key_width = 3;
    cJSON_ArrayForEach(def, limits) {
        int len = (int)strlen(text_of(def, "key"));
        if (len > key_width) key_width = len;
    }
    printf("\n%-*s  %12s  %14s  %s\n", key_width, "KEY", "CAPACITY", "WINDOW_SECONDS", "UNIT");
    cJSON_ArrayForEach(def, limits) {
        printf("%-*s  %12.0f  %14.0f  %s\n", key_width, text_of(def, "key"), number_of(def, "capacity"),
               number_of(def, "window_seconds"), text_of(def, "unit"));
    }
}

int rlctl_cmd_presets(const rlctl_global *global, int argc, char **argv) {
    bool json;
    int code = json_options(argc, argv, "+jh", presets_usage, &json);
    if (code >= 0) return code;
    if (argc - optind > 1) return rlctl_usage_error(presets_usage, "presets: unexpected argument \"%s\"", argv[optind + 1]);
    const char *name = optind < argc ? argv[optind] : NULL;

    rlctl_response r;
    code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "GET", "/v1/admin/presets", NULL, &r) != 200) {
        code = rlctl_report_failure("GET /v1/admin/presets", &r);
    } else if (json && name == NULL) {
        printf("%s\n", r.body);
    } else {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *presets = cJSON_GetObjectItemCaseSensitive(root, "presets"), *found = NULL, *preset;
        cJSON_ArrayForEach(preset, presets) {
            if (name != NULL && strcmp(text_of(preset, "name"), name) == 0) found = preset;
        }
        if (!cJSON_IsArray(presets)) {
            fprintf(stderr, "rlctl: GET /v1/admin/presets: the answer has no \"presets\" array\n");
            code = RLCTL_EXIT_UNAVAILABLE;
        } else if (name == NULL) {
            print_presets(presets);
        } else if (found == NULL) {
            fprintf(stderr, "rlctl: presets: no preset named \"%s\" (rlctl presets lists them)\n", name);
            code = RLCTL_EXIT_REJECTED;
        } else if (json) {
            char *text = cJSON_PrintUnformatted(found);
            printf("%s\n", text != NULL ? text : "{}");
            free(text);
        } else {
            print_preset(found);
        }
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}

/* ---- preset apply --------------------------------------------------------- */

static const char preset_usage[] =
    "usage: rlctl [global options] preset apply [--json] NAME\n"
    "  Applies a provider preset (PUT /v1/admin/presets/NAME/apply). For each of its\n"
    "  limits: a key without a definition is defined, a key a preset defined takes\n"
    "  this preset's definition, a key you defined yourself keeps yours. Prints\n"
    "  \"KEY RESULT\" for each: defined, updated, unchanged, kept, or refused with why\n"
    "  (a lower capacity than usage allows adds \"decreasing\").\n"
    "  --json   print the server's JSON as it came\n"
    "  Exit 3 if no preset has that name, or a limit was refused.\n";

int rlctl_cmd_preset(const rlctl_global *global, int argc, char **argv) {
    bool json;
    /* Options before or after "apply NAME": getopt moves the words last. */
    int code = json_options(argc, argv, "jh", preset_usage, &json);
    if (code >= 0) return code;
    if (optind >= argc || strcmp(argv[optind], "apply") != 0)
        return rlctl_usage_error(preset_usage, "preset: %s", "the subcommand is apply (rlctl presets lists the presets)");
    if (argc - optind != 2) return rlctl_usage_error(preset_usage, "preset apply: %s", "exactly one NAME is needed");
    optind++;
    const char *name = argv[optind];
    if (strlen(name) > RL_PRESET_NAME_MAX_LEN || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name))
        return rlctl_usage_error(preset_usage, "preset apply: \"%s\" is not a preset name (rlctl presets lists them)", name);

    char path[64 + RL_PRESET_NAME_MAX_LEN];
    snprintf(path, sizeof path, "/v1/admin/presets/%s/apply", name);
    rlctl_response r;
    code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "PUT", path, NULL, &r) != 200) {
        char what[64 + RL_PRESET_NAME_MAX_LEN];
        snprintf(what, sizeof what, "preset apply %s", name);
        code = rlctl_report_failure(what, &r);
    } else {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *limits = cJSON_GetObjectItemCaseSensitive(root, "limits"), *limit;
        if (json) printf("%s\n", r.body);
        cJSON_ArrayForEach(limit, limits) {
            const char *result = text_of(limit, "result"), *status = text_of(limit, "status");
            if (strcmp(result, "refused") == 0) {
                code = RLCTL_EXIT_REJECTED;
                fprintf(stderr, "rlctl: preset apply %s: %s refused: %s: %s\n", name, text_of(limit, "key"),
                        text_of(limit, "error"), text_of(limit, "detail"));
            }
            if (!json)
                printf("%s %s%s%s\n", text_of(limit, "key"), result, strcmp(status, "decreasing") == 0 ? " " : "",
                       strcmp(status, "decreasing") == 0 ? status : "");
        }
        if (!cJSON_IsArray(limits)) {
            fprintf(stderr, "rlctl: preset apply %s: the answer has no \"limits\" array\n", name);
            code = RLCTL_EXIT_UNAVAILABLE;
        }
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}
