/* cmd_admin.c — rlctl list, get, put, delete, health: the admin API of api.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "ratelimiter/types.h"
#include "wire/json_scan.h"

/* Commands parse their options with getopt_long from argv[0] = their name;
 * the main resets getopt (optind = 0) before calling one. */

static bool wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
    return false;
}

int rlctl_usage_error(const char *usage, const char *fmt, const char *arg) {
    fputs("rlctl: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return RLCTL_EXIT_USAGE;
}

/* A number of a JSON object at a dotted path, or NULL. */
static const cJSON *at(const cJSON *node, const char *a, const char *b) {
    node = cJSON_GetObjectItemCaseSensitive(node, a);
    return b != NULL ? cJSON_GetObjectItemCaseSensitive(node, b) : node;
}

static void cell_u64(char *out, size_t size, const cJSON *number) {
    if (cJSON_IsNumber(number))
        snprintf(out, size, "%.0f", number->valuedouble);
    else
        snprintf(out, size, "-");
}

/* ---- list ---------------------------------------------------------------- */

static const char list_usage[] =
    "usage: rlctl [global options] list [--json]\n"
    "  Every limit with its live usage: key, kind, capacity, used, available, status.\n"
    "  --json   print the server's JSON as it came\n";

static void print_table(const cJSON *limits) {
    int key_width = 3;
    const cJSON *info;
    cJSON_ArrayForEach(info, limits) {
        const cJSON *key = at(info, "definition", "key");
        if (cJSON_IsString(key) && (int)strlen(key->valuestring) > key_width)
            key_width = (int)strlen(key->valuestring);
    }
    printf("%-*s  %-11s  %16s  %16s  %16s  %s\n", key_width, "KEY", "KIND", "CAPACITY", "USED", "AVAILABLE",
           "STATUS");
    cJSON_ArrayForEach(info, limits) {
        const cJSON *key = at(info, "definition", "key"), *kind = at(info, "definition", "kind");
        const cJSON *status = at(info, "status", NULL);
        const cJSON *capacity = at(info, "usage", "capacity");
        if (capacity == NULL) capacity = at(info, "definition", "capacity");
        char cap[32], used[32], avail[32];
        cell_u64(cap, sizeof cap, capacity);
        cell_u64(used, sizeof used, at(info, "usage", "used"));
        cell_u64(avail, sizeof avail, at(info, "usage", "available"));
        printf("%-*s  %-11s  %16s  %16s  %16s  %s\n", key_width, cJSON_IsString(key) ? key->valuestring : "?",
               cJSON_IsString(kind) ? kind->valuestring : "?", cap, used, avail,
               cJSON_IsString(status) ? status->valuestring : "?");
    }
}

int rlctl_cmd_list(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "+jh", options, NULL)) != -1) {
        if (c == 'j') json = true;
        else if (c == 'h') return fputs(list_usage, stdout), RLCTL_EXIT_OK;
        else return fputs(list_usage, stderr), RLCTL_EXIT_USAGE;
    }
    if (optind < argc) return rlctl_usage_error(list_usage, "list: unexpected argument \"%s\"", argv[optind]);

    rlctl_response r;
    int code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "GET", "/v1/admin/limits", NULL, &r) != 200) {
        code = rlctl_report_failure("GET /v1/admin/limits", &r);
    } else if (json) {
        printf("%s\n", r.body);
    } else {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *limits = at(root, "limits", NULL);
        if (!cJSON_IsArray(limits)) {
            fprintf(stderr, "rlctl: GET /v1/admin/limits: the answer has no \"limits\" array\n");
            code = RLCTL_EXIT_UNAVAILABLE;
        } else {
            print_table(limits);
        }
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}

/* method /v1/admin/limits/{key} (the key percent-encoded) into *r: RLCTL_EXIT_OK
 * for a 200, else the exit code after saying on stderr what went wrong (a
 * 404: no limit has the key). command names the command in what it says. */
static int limit_call(const rlctl_global *global, const char *method, const char *command, const char *key,
                      rlctl_response *r) {
    char path[32 + 3 * RL_KEY_MAX_LEN], escaped[3 * RL_KEY_MAX_LEN + 1];
    rlctl_path_escape(key, escaped, sizeof escaped);
    snprintf(path, sizeof path, "/v1/admin/limits/%s", escaped);
    if (rlctl_http(global, method, path, NULL, r) == 200) return RLCTL_EXIT_OK;
    if (r->status == 404) {
        fprintf(stderr, "rlctl: %s: no limit has the key \"%s\"\n", command, key);
        return RLCTL_EXIT_REJECTED;
    }
    char what[64 + RL_KEY_MAX_LEN];
    snprintf(what, sizeof what, "%s \"%s\"", command, key);
    return rlctl_report_failure(what, r);
}

/* ---- get ----------------------------------------------------------------- */

static const char get_usage[] =
    "usage: rlctl [global options] get [--json] KEY\n"
    "  One limit: its definition, status and live usage, one field a line.\n"
    "  --json   print the server's JSON as it came\n"
    "  Exit 3 if no limit has this key.\n";

/* Prints every leaf of node as "path  value", depth first. */
static void print_fields(const cJSON *node, const char *prefix) {
    const cJSON *item;
    cJSON_ArrayForEach(item, node) {
        char path[128];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", item->string);
        if (cJSON_IsObject(item)) {
            print_fields(item, path);
        } else if (cJSON_IsString(item)) {
            printf("%-32s %s\n", path, item->valuestring);
        } else if (cJSON_IsNumber(item)) {
            printf("%-32s %.0f\n", path, item->valuedouble);
        } else {
            char *text = cJSON_PrintUnformatted(item);
            printf("%-32s %s\n", path, text != NULL ? text : "?");
            free(text);
        }
    }
}

int rlctl_cmd_get(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "+jh", options, NULL)) != -1) {
        if (c == 'j') json = true;
        else if (c == 'h') return fputs(get_usage, stdout), RLCTL_EXIT_OK;
        else return fputs(get_usage, stderr), RLCTL_EXIT_USAGE;
    }
    if (optind != argc - 1) return rlctl_usage_error(get_usage, "get: %s", "exactly one KEY is needed");
    const char *key = argv[optind];
    if (strlen(key) > RL_KEY_MAX_LEN) return rlctl_usage_error(get_usage, "get: the key is longer than %s bytes", "256");

    rlctl_response r;
    int code = limit_call(global, "GET", "get", key, &r);
    if (code == RLCTL_EXIT_OK && json) {
        printf("%s\n", r.body);
    } else if (code == RLCTL_EXIT_OK) {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *limit = at(root, "limit", NULL);
        if (cJSON_IsObject(limit)) {
            print_fields(limit, "");
        } else {
            fprintf(stderr, "rlctl: get: the answer has no \"limit\" object\n");
            code = RLCTL_EXIT_UNAVAILABLE;
        }
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}

/* ---- delete -------------------------------------------------------------- */

static const char delete_usage[] =
    "usage: rlctl [global options] delete KEY\n"
    "       rlctl [global options] delete --template PATTERN\n"
    "  Deletes a limit (DELETE /v1/admin/limits/KEY): its open reservations and\n"
    "  holds are dropped, nothing is charged; a reserve naming KEY is then refused\n"
    "  as an unknown key until it is defined again. Prints \"KEY deleted\".\n"
    "  Exit 3 if no limit has this key.\n";

int rlctl_cmd_delete(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"template", no_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {0}};
    bool template_ = false;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        if (c == 'h') return fputs(delete_usage, stdout), RLCTL_EXIT_OK;
        if (c == 't') template_ = true;
        else return fputs(delete_usage, stderr), RLCTL_EXIT_USAGE;
    }
    if (optind != argc - 1)
        return rlctl_usage_error(delete_usage, "delete: %s", template_ ? "exactly one PATTERN is needed" : "exactly one KEY is needed");
    const char *key = argv[optind];
    if (strlen(key) > RL_KEY_MAX_LEN)
        return rlctl_usage_error(delete_usage, "delete: the key is longer than %s bytes", "256");

    rlctl_response r;
    int code;
    if (template_) {
        char path[32 + 3 * RL_KEY_MAX_LEN], escaped[3 * RL_KEY_MAX_LEN + 1];
        rlctl_path_escape(key, escaped, sizeof escaped);
        snprintf(path, sizeof path, "/v1/admin/templates/%s", escaped);
        code = RLCTL_EXIT_OK;
        if (rlctl_http(global, "DELETE", path, NULL, &r) != 200) {
            char what[64 + RL_KEY_MAX_LEN];
            snprintf(what, sizeof what, "delete --template \"%s\"", key);
            code = rlctl_report_failure(what, &r);
        }
    } else {
        code = limit_call(global, "DELETE", "delete", key, &r);
    }
    if (code == RLCTL_EXIT_OK) printf("%s deleted\n", key);
    rlctl_response_free(&r);
    return code;
}

/* ---- put ----------------------------------------------------------------- */

static const char put_usage[] =
    "usage: rlctl [global options] put --key K|--pattern P --kind rolling|concurrency|budget --capacity N\n"
    "                                  [--window-seconds N] [--timeout-seconds N] [--unit U]\n"
    "                                  [--description D] [--overage debt|deny]\n"
    "                                  [--period hour|day|week|month] [--timezone ZONE]\n"
    "       rlctl [global options] put --file FILE\n"
    "  Defines a limit or changes it (PUT /v1/admin/limits). A rolling limit needs\n"
    "  --window-seconds, a concurrency limit --timeout-seconds, a budget --period and\n"
    "  --timeout-seconds (--timezone: an IANA name, UTC by default). A lower capacity\n"
    "  than now makes the limit \"decreasing\" until its usage fits.\n"
    "  --pattern P   a template instead (PUT /v1/admin/templates): keys no limit defines\n"
    "                that P matches, such as tenant:{tenant}:llm:daily_tokens, are limits\n"
    "                of this definition, made on first use (quote the braces in a shell)\n"
    "  --file FILE   a definition object, or an array of them, in api.md's JSON (\"-\" is\n"
    "                stdin); they are sent one by one, stopping at the first error\n"
    "  Prints \"KEY STATUS\" for each limit put.\n";

/* JSON of a flat object, with integral numbers written as integers (cJSON
 * would write 1e+15), so that large capacities go out exactly. */
static char *object_text(const cJSON *object) {
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    if (out == NULL) return NULL;
    out[len++] = '{';
    const cJSON *item;
    cJSON_ArrayForEach(item, object) {
        cJSON *name = cJSON_CreateString(item->string);
        char *name_text = cJSON_PrintUnformatted(name), *value_text;
        cJSON_Delete(name);
        double v = item->valuedouble;
        if (cJSON_IsNumber(item) && v >= 0 && v <= 1e19 && (double)(uint64_t)v == v) {
            value_text = malloc(32);
            if (value_text != NULL) snprintf(value_text, 32, "%llu", (unsigned long long)v);
        } else {
            value_text = cJSON_PrintUnformatted(item);
        }
        size_t need = name_text && value_text ? len + strlen(name_text) + strlen(value_text) + 4 : 0;
        char *grown = need > cap ? realloc(out, cap = need * 2) : out;
        if (need == 0 || grown == NULL) {
            free(name_text);
            free(value_text);
            free(out);
            return NULL;
        }
        out = grown;
        len += (size_t)sprintf(out + len, "%s%s:%s", len > 1 ? "," : "", name_text, value_text);
        free(name_text);
        free(value_text);
    }
    out[len++] = '}';
    out[len] = '\0';
    return out;
}

/* PUTs one definition (body, its JSON) to path; prints "KEY STATUS" when
 * it was taken (a template's answer has no status: "PATTERN ok"). */
static int put_to(const rlctl_global *global, const char *path, const char *body, const char *key,
                  const char *where) {
    rlctl_response r;
    int code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "PUT", path, body, &r) != 200) {
        char what[96 + RL_KEY_MAX_LEN];
        snprintf(what, sizeof what, "put %s\"%s\"", where, key);
        code = rlctl_report_failure(what, &r);
    } else {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *status = at(root, "status", NULL);
        printf("%s %s\n", key, cJSON_IsString(status) ? status->valuestring : "ok");
        cJSON_Delete(root);
    }
    rlctl_response_free(&r);
    return code;
}

static int put_one(const rlctl_global *global, const char *body, const char *key, const char *where) {
    return put_to(global, "/v1/admin/limits", body, key, where);
}

/* The whole of path ("-": stdin), NUL-terminated, its length in *len. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 4096;
    *len = 0;
    char *text = malloc(cap);
    size_t n;
    while (text != NULL && (n = fread(text + *len, 1, cap - *len - 1, f)) > 0) {
        *len += n;
        if (*len + 1 == cap) {
            char *grown = realloc(text, cap *= 2);
            if (grown == NULL) free(text);
            text = grown;
        }
    }
    if (text != NULL) text[*len] = '\0';
    if (f != stdin) fclose(f);
    return text;
}

/* PUTs the object the scanner is at (over scratch, a copy of text) as text
 * writes it, so that the daemon judges every member, and reads its numbers
 * exactly: parsed into doubles and printed again here, 9007199254740993
 * would reach it as 2^53 and be taken. */
static int put_object(const rlctl_global *global, const char *text, rl__json_scan *s,
                      const char *where) {
    size_t start = (size_t)(s->cur - s->text); /* the scanner is at the '{' */
    const char *key = "(no key)";
    bool json = rl__scan_object_open(s);
    char *name, *value;
    size_t len;
    int more = -1;
    for (size_t i = 0; json && (more = rl__scan_member(s, i, &name, &len)) > 0; i++) {
        if (strcmp(name, "key") == 0 && rl__scan_peek(s) == '"') {
            json = rl__scan_string(s, &value, &len);
            key = value;
        } else {
            json = rl__scan_skip(s);
        }
    }
    if (!json || more < 0) { /* cannot be: the whole file was scanned before */
        fprintf(stderr, "rlctl: put: a definition is not JSON\n");
        return RLCTL_EXIT_USAGE;
    }
    char *body = strndup(text + start, (size_t)(s->cur - s->text) - start);
    if (body == NULL) {
        fprintf(stderr, "rlctl: put: out of memory\n");
        return RLCTL_EXIT_UNAVAILABLE;
    }
    int code = put_one(global, body, key, where);
    free(body);
    return code;
}

/* The objects of the text: one, or an array of them put in order up to the
 * first that fails. scratch is a copy of text for the scanner. */
static int put_objects(const rlctl_global *global, const char *path, const char *text,
                       char *scratch, size_t len) {
    rl__json_scan s;
    rl__scan_init(&s, scratch, len);
    char c = rl__scan_peek(&s);
    if (c == '{') return put_object(global, text, &s, "");
    if (c != '[' || !rl__scan_array_open(&s)) {
        fprintf(stderr, "rlctl: put: \"%s\" holds neither a definition object nor an array of them\n", path);
        return RLCTL_EXIT_USAGE;
    }
    int code = RLCTL_EXIT_OK;
    for (size_t i = 0; code == RLCTL_EXIT_OK && rl__scan_element(&s, i) > 0; i++) {
        char where[48];
        snprintf(where, sizeof where, "[%zu] ", i);
        if (rl__scan_peek(&s) != '{') {
            fprintf(stderr, "rlctl: put: item %zu of \"%s\" is not an object\n", i, path);
            code = RLCTL_EXIT_USAGE;
        } else {
            code = put_object(global, text, &s, where);
        }
    }
    return code;
}

static int put_file(const rlctl_global *global, const char *path) {
    size_t len = 0;
    char *text = read_all(path, &len);
    if (text == NULL) {
        fprintf(stderr, "rlctl: put: cannot read \"%s\": %m\n", path);
        return RLCTL_EXIT_USAGE;
    }
    /* The scanner decodes strings in place: it reads a copy, once to check
     * the whole file before anything is put, then again to put. */
    char *scratch = malloc(len + 1);
    int code = RLCTL_EXIT_UNAVAILABLE;
    if (scratch == NULL) {
        fprintf(stderr, "rlctl: put: out of memory\n");
    } else {
        memcpy(scratch, text, len + 1);
        rl__json_scan s;
        rl__scan_init(&s, scratch, len);
        if (!rl__scan_skip(&s) || !rl__scan_end(&s)) {
            fprintf(stderr, "rlctl: put: \"%s\" is not JSON (at byte %zu)\n", path, s.error_at);
            code = RLCTL_EXIT_USAGE;
        } else {
            memcpy(scratch, text, len + 1);
            code = put_objects(global, path, text, scratch, len);
        }
    }
    free(scratch);
    free(text);
    return code;
}

int rlctl_cmd_put(const rlctl_global *global, int argc, char **argv) {
    enum { O_KEY = 256, O_KIND, O_CAPACITY, O_WINDOW, O_TIMEOUT, O_UNIT, O_DESCRIPTION, O_OVERAGE, O_PERIOD,
           O_TIMEZONE, O_PATTERN, O_FILE };
    static const struct option options[] = {
        {"key", required_argument, NULL, O_KEY},
        {"kind", required_argument, NULL, O_KIND},
        {"capacity", required_argument, NULL, O_CAPACITY},
        {"window-seconds", required_argument, NULL, O_WINDOW},
        {"timeout-seconds", required_argument, NULL, O_TIMEOUT},
        {"unit", required_argument, NULL, O_UNIT},
        {"description", required_argument, NULL, O_DESCRIPTION},
        {"overage", required_argument, NULL, O_OVERAGE},
        {"period", required_argument, NULL, O_PERIOD},
        {"timezone", required_argument, NULL, O_TIMEZONE},
        {"pattern", required_argument, NULL, O_PATTERN},
        {"file", required_argument, NULL, O_FILE},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *file = NULL;
    const char *text[O_FILE - O_KEY] = {0};
    bool any_flag = false;
    int c;
    while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
        if (c == 'h') return fputs(put_usage, stdout), RLCTL_EXIT_OK;
        if (c == O_FILE) file = optarg;
        else if (c >= O_KEY && c < O_FILE) text[c - O_KEY] = optarg, any_flag = true;
        else return fputs(put_usage, stderr), RLCTL_EXIT_USAGE;
    }
    if (optind < argc) return rlctl_usage_error(put_usage, "put: unexpected argument \"%s\"", argv[optind]);
    if (file != NULL && any_flag) return rlctl_usage_error(put_usage, "put: %s", "--file goes alone, without other flags");
    if (file != NULL) return put_file(global, file);

    const char *pattern = text[O_PATTERN - O_KEY];
    if ((text[O_KEY - O_KEY] == NULL) == (pattern == NULL))
        return rlctl_usage_error(put_usage, "put: %s", "one of --key and --pattern is needed (or --file)");
    if (text[O_KIND - O_KEY] == NULL || text[O_CAPACITY - O_KEY] == NULL)
        return rlctl_usage_error(put_usage, "put: %s", "--kind and --capacity are needed (or --file)");
    rl_kind kind;
    rl_overage overage;
    if (!rl_kind_parse(text[O_KIND - O_KEY], &kind))
        return rlctl_usage_error(put_usage, "put: --kind \"%s\" is not rolling, concurrency or budget", text[O_KIND - O_KEY]);
    rl_period period;
    if (text[O_PERIOD - O_KEY] != NULL && !rl_period_parse(text[O_PERIOD - O_KEY], &period))
        return rlctl_usage_error(put_usage, "put: --period \"%s\" is not hour, day, week or month", text[O_PERIOD - O_KEY]);
    if (text[O_OVERAGE - O_KEY] != NULL && !rl_overage_parse(text[O_OVERAGE - O_KEY], &overage))
        return rlctl_usage_error(put_usage, "put: --overage \"%s\" is neither debt nor deny", text[O_OVERAGE - O_KEY]);

    cJSON *def = cJSON_CreateObject();
    if (pattern != NULL) cJSON_AddStringToObject(def, "pattern", pattern);
    else cJSON_AddStringToObject(def, "key", text[O_KEY - O_KEY]);
    cJSON_AddStringToObject(def, "kind", text[O_KIND - O_KEY]);
    static const struct { int option; const char *field, *flag; } numbers[] = {
        {O_CAPACITY, "capacity", "--capacity"},
        {O_WINDOW, "window_seconds", "--window-seconds"},
        {O_TIMEOUT, "timeout_seconds", "--timeout-seconds"},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        const char *value = text[numbers[i].option - O_KEY];
        uint64_t n;
        if (value == NULL) continue;
        if (!rlctl_parse_u64(value, RL_AMOUNT_MAX, &n)) {
            cJSON_Delete(def);
            fprintf(stderr, "rlctl: put: %s \"%s\" is not an integer 0..%llu\n%s", numbers[i].flag, value,
                    (unsigned long long)RL_AMOUNT_MAX, put_usage);
            return RLCTL_EXIT_USAGE;
        }
        cJSON_AddNumberToObject(def, numbers[i].field, (double)n);
    }
    if (text[O_UNIT - O_KEY] != NULL) cJSON_AddStringToObject(def, "unit", text[O_UNIT - O_KEY]);
    if (text[O_DESCRIPTION - O_KEY] != NULL)
        cJSON_AddStringToObject(def, "description", text[O_DESCRIPTION - O_KEY]);
    if (text[O_OVERAGE - O_KEY] != NULL) cJSON_AddStringToObject(def, "overage", text[O_OVERAGE - O_KEY]);
    /* The daemon says what is wrong with a zone (or a period on another kind). */
    if (text[O_PERIOD - O_KEY] != NULL) cJSON_AddStringToObject(def, "period", text[O_PERIOD - O_KEY]);
    if (text[O_TIMEZONE - O_KEY] != NULL) cJSON_AddStringToObject(def, "timezone", text[O_TIMEZONE - O_KEY]);
    char *body = object_text(def);
    cJSON_Delete(def);
    if (body == NULL) {
        fprintf(stderr, "rlctl: put: out of memory\n");
        return RLCTL_EXIT_UNAVAILABLE;
    }
    int code = pattern != NULL ? put_to(global, "/v1/admin/templates", body, pattern, "template ")
                               : put_one(global, body, text[O_KEY - O_KEY], "");
    free(body);
    return code;
}

/* ---- health -------------------------------------------------------------- */

static const char health_usage[] =
    "usage: rlctl [global options] health\n"
    "  GET /healthz: prints the daemon's answer; exit 0 if it is up, 4 if not.\n";

int rlctl_cmd_health(const rlctl_global *global, int argc, char **argv) {
    if (wants_help(argc, argv)) return fputs(health_usage, stdout), RLCTL_EXIT_OK;
    if (argc > 1) return rlctl_usage_error(health_usage, "health: unexpected argument \"%s\"", argv[1]);
    rlctl_response r;
    int code = RLCTL_EXIT_OK;
    if (rlctl_http(global, "GET", "/healthz", NULL, &r) != 200) {
        code = rlctl_report_failure("GET /healthz", &r);
        if (code == RLCTL_EXIT_REJECTED) code = RLCTL_EXIT_UNAVAILABLE; /* not healthy, whatever it says */
    } else {
        printf("%s\n", r.body);
    }
    rlctl_response_free(&r);
    return code;
}
