/* cmd_audit.c — rlctl audit: a page of the audit log of spend (GET
 * /v1/admin/audit) through the library's http limiter (rl_limiter_audit:
 * the same query checks, retries and strict reading as an application's),
 * one entry a line for a person, or the page's JSON for a script. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "ratelimiter/keys.h"
#include "wire/wire.h"

static const char audit_usage[] =
    "usage: rlctl [global options] audit [--since UNIX_MS] [--limit N] [--json] KEY\n"
    "  What was charged to KEY, oldest first (GET /v1/admin/audit): one line per entry\n"
    "  with its time (UTC), lease, job, what was reserved -> the actual charged, a\n"
    "  budget's period start, and \"expired\" for a reservation refunded by its timeout;\n"
    "  then \"next_since_unix_ms T\": pass --since T for the entries after these.\n"
    "  --since UNIX_MS   entries at or after this time (default 0: the oldest kept)\n"
    "  --limit N         at most N entries, 1..1000 (default 100)\n"
    "  --json            print the page as the daemon's JSON\n";

/* "2026-11-25T09:15:27.123Z" (out holds 32 bytes), or "-" for 0 (a rolling
 * limit's period start). */
static void format_utc(uint64_t unix_ms, char out[32]) {
    if (unix_ms == 0) {
        snprintf(out, 32, "-");
        return;
    }
    time_t seconds = (time_t)(unix_ms / 1000u);
    struct tm tm;
    if (gmtime_r(&seconds, &tm) == NULL || strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(out, 32, "%llu", (unsigned long long)unix_ms);
        return;
    }
    size_t len = strlen(out);
    snprintf(out + len, 32 - len, ".%03uZ", (unsigned)(unix_ms % 1000u));
}

static void print_entry(const rl_audit_entry *e) {
    char at[32], period[32];
    format_utc(e->at_unix_ms, at);
    format_utc(e->period_start_unix_ms, period);
    printf("%s  lease %s  job %s  reserved %llu -> actual %llu  period %s%s\n", at, e->lease_id,
           e->job_id[0] != '\0' ? e->job_id : "-", (unsigned long long)e->reserved, (unsigned long long)e->actual,
           period, e->expired ? "  expired" : "");
}

static void print_json(const rl_audit_page *page) {
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_audit_page(&buf, page);
    printf("%s\n", buf.failed ? "{}" : buf.data);
    rl__buf_free(&buf);
}

int rlctl_cmd_audit(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"since", required_argument, NULL, 's'},
                                            {"limit", required_argument, NULL, 'n'},
                                            {"json", no_argument, NULL, 'j'},
                                            {"help", no_argument, NULL, 'h'},
                                            {0}};
    uint64_t since_unix_ms = 0, limit = 100;
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "s:n:jh", options, NULL)) != -1) {
        if (c == 'h') return fputs(audit_usage, stdout), RLCTL_EXIT_OK;
        if (c == 'j') json = true;
        else if (c == 's') {
            if (!rlctl_parse_u64(optarg, RL_AMOUNT_MAX, &since_unix_ms))
                return rlctl_usage_error(audit_usage,
                                         "audit: --since \"%s\" must be Unix milliseconds 0..9007199254740992", optarg);
        } else if (c == 'n') {
            if (!rlctl_parse_u64(optarg, RL_AUDIT_QUERY_MAX, &limit) || limit == 0)
                return rlctl_usage_error(audit_usage, "audit: --limit \"%s\" must be an integer 1..1000", optarg);
        } else {
            return fputs(audit_usage, stderr), RLCTL_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) return rlctl_usage_error(audit_usage, "audit: %s", "exactly one KEY is needed");
    const char *key = argv[optind];
    if (!rl_key_is_valid(key, strlen(key)))
        return rlctl_usage_error(audit_usage,
                                 "audit: \"%s\" is not a limit key (1..256 printable ASCII characters without spaces)",
                                 key);

    rl_audit_query query = {key, since_unix_ms, (uint32_t)limit};
    rl_audit_page page = {calloc(query.limit, sizeof *page.entries), 0, 0};
    rl_limiter *limiter = NULL;
    if (page.entries == NULL || rlctl_open_limiter(global, &limiter) != RL_OK) {
        if (page.entries == NULL) fprintf(stderr, "rlctl: audit: out of memory\n");
        free(page.entries);
        return RLCTL_EXIT_UNAVAILABLE;
    }
    rl_status status = rl_limiter_audit(limiter, &query, &page);
    int code = RLCTL_EXIT_OK;
    if (status != RL_OK) {
        char what[32 + RL_KEY_MAX_LEN];
        snprintf(what, sizeof what, "audit \"%s\"", key);
        code = rlctl_call_failed(what, status);
    } else if (json) {
        print_json(&page);
    } else {
        for (size_t i = 0; i < page.count; i++) print_entry(&page.entries[i]);
        printf("next_since_unix_ms %llu\n", (unsigned long long)page.next_since_unix_ms);
    }
    rl_limiter_destroy(limiter);
    free(page.entries);
    return code;
}
