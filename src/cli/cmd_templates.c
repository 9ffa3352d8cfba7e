/* cmd_templates.c — rlctl templates: the limit templates of the daemon
 * (GET /v1/admin/templates). put --pattern and delete --template, in
 * cmd_admin.c, change them. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"

static const char templates_usage[] =
    "usage: rlctl [global options] templates [--json]\n"
    "  Every template, one a line: PATTERN KIND CAPACITY per WINDOW (or TIMEOUT) UNIT.\n"
    "  A key no limit defines that a PATTERN matches is a limit of its definition.\n"
    "  --json   print the server's JSON as it came\n";

/* One template as a line. */
static void print_template(const cJSON *t) {
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(t, "pattern");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(t, "kind");
    const cJSON *capacity = cJSON_GetObjectItemCaseSensitive(t, "capacity");
    const cJSON *window = cJSON_GetObjectItemCaseSensitive(t, "window_seconds");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(t, "timeout_seconds");
    const cJSON *period = cJSON_GetObjectItemCaseSensitive(t, "period");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(t, "unit");
    const char *kind_text = cJSON_IsString(kind) ? kind->valuestring : "?";
    printf("%s  %s  %.0f", cJSON_IsString(pattern) ? pattern->valuestring : "?", kind_text,
           cJSON_IsNumber(capacity) ? capacity->valuedouble : 0.0);
    if (cJSON_IsString(unit) && unit->valuestring[0] != '\0') printf(" %s", unit->valuestring);
    if (strcmp(kind_text, "rolling") == 0 && cJSON_IsNumber(window))
        printf(" per %.0f s", window->valuedouble);
    else if (strcmp(kind_text, "budget") == 0 && cJSON_IsString(period))
        printf(" per %s", period->valuestring);
    else if (cJSON_IsNumber(timeout))
        printf(" held up to %.0f s", timeout->valuedouble);
    printf("\n");
}

int rlctl_cmd_templates(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "+jh", options, NULL)) != -1) {
        if (c == 'j') json = true;
        else if (c == 'h') return fputs(templates_usage, stdout), RLCTL_EXIT_OK;
        else return fputs(templates_usage, stderr), RLCTL_EXIT_USAGE;
    }
    if (optind < argc) return rlctl_usage_error(templates_usage, "templates: unexpected argument \"%s\"", argv[optind]);
    rlctl_response r;
    int code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "GET", "/v1/admin/templates", NULL, &r) != 200) {
        code = rlctl_report_failure("GET /v1/admin/templates", &r);
    } else if (json) {
        printf("%s\n", r.body);
    } else {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *templates = cJSON_GetObjectItemCaseSensitive(root, "templates");
        if (!cJSON_IsArray(templates)) {
            fprintf(stderr, "rlctl: GET /v1/admin/templates: the answer has no \"templates\" array\n");
            code = RLCTL_EXIT_UNAVAILABLE;
        } else {
            const cJSON *t;
            cJSON_ArrayForEach(t, templates) print_template(t);
        }
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}
