/* cmd_lease.c — rlctl reserve and complete, by hand, through the library's
 * HTTP limiter (the same code path as an application's: same validation,
 * same retries of a transport failure with the same lease id). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ratelimiter/limiter.h"
#include "ratelimiter/ulid.h"
#include "wire/wire.h"

typedef struct key_amounts {
    char keys[RL_MAX_REQUIREMENTS][RL_KEY_MAX_LEN + 1];
    uint64_t amounts[RL_MAX_REQUIREMENTS];
    bool optional[RL_MAX_REQUIREMENTS]; /* reserve's --optional */
    size_t count;
} key_amounts;

/* Adds "KEY=AMOUNT"; false (said on stderr) if it is malformed or too many. */
static bool add_key_amount(key_amounts *list, const char *text, uint64_t min, const char *command) {
    char err[512];
    if (list->count == RL_MAX_REQUIREMENTS) {
        fprintf(stderr, "rlctl: %s: at most %d KEY=AMOUNT\n", command, RL_MAX_REQUIREMENTS);
        return false;
    }
    if (!rlctl_parse_key_amount(text, min, list->keys[list->count], sizeof list->keys[0],
                                &list->amounts[list->count], err, sizeof err)) {
        fprintf(stderr, "rlctl: %s: %s\n", command, err);
        return false;
    }
    list->count++;
    return true;
}

/* ---- reserve ------------------------------------------------------------- */

static const char reserve_usage[] =
    "usage: rlctl [global options] reserve [--lease-id ULID] [--job-id J] [--dry-run]\n"
    "                                      --req KEY=AMOUNT [--req ...] [--optional KEY=AMOUNT ...]\n"
    "  Reserves every KEY=AMOUNT together or nothing (POST /v1/reserve). KEY=AMOUNT may\n"
    "  also follow the options. A requirement given with --optional is skipped if its KEY\n"
    "  has no definition (a defined one is reserved as any other). With --dry-run nothing\n"
    "  is reserved or remembered: the answer is the one a reserve would get now. Without\n"
    "  --lease-id a new ULID is made. Prints one line of JSON: lease_id, allowed,\n"
    "  retry_after_ms, reserved_at_unix_ms, error (and dry_run: true for a dry run).\n"
    "  Exit 0 allowed, 1 denied (retry after retry_after_ms with a NEW lease id; also a\n"
    "  decreasing limit or an amount above capacity), 3 unknown key or invalid request,\n"
    "  4 no answer (retry with the SAME lease id); a dry run exits as its reserve would.\n";


/* {"lease_id":..} and then the daemon's own answer (wire.h): every field,
 * denied_by and a conflict's detail included, escaped as JSON. */
static void print_reserve_result(const char *lease_id, const rl_reserve_result *result, bool dry_run) {
    rl_buf buf;
    rl__buf_init(&buf);
    rl__wire_encode_reserve_result(&buf, result, dry_run);
    printf("{\"lease_id\":\"%s\",%s\n", lease_id, buf.failed || buf.len < 2 ? "}" : buf.data + 1);
    rl__buf_free(&buf);
}

int rlctl_cmd_reserve(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"lease-id", required_argument, NULL, 'l'},
                                            {"job-id", required_argument, NULL, 'j'},
                                            {"req", required_argument, NULL, 'r'},
                                            {"optional", required_argument, NULL, 'o'},
                                            {"dry-run", no_argument, NULL, 'n'},
                                            {"help", no_argument, NULL, 'h'},
                                            {0}};
    static key_amounts reqs;
    const char *lease_arg = NULL, *job_id = NULL;
    bool dry_run = false;
    memset(&reqs, 0, sizeof reqs);
    int c;
    while ((c = getopt_long(argc, argv, "l:j:r:o:nh", options, NULL)) != -1) {
        if (c == 'h') return fputs(reserve_usage, stdout), RLCTL_EXIT_OK;
        if (c == 'l') lease_arg = optarg;
        else if (c == 'j') job_id = optarg;
        else if (c == 'n') dry_run = true;
        else if (c == 'r' || c == 'o') {
            if (!add_key_amount(&reqs, optarg, 1, "reserve")) return RLCTL_EXIT_USAGE;
            reqs.optional[reqs.count - 1] = c == 'o';
        } else return fputs(reserve_usage, stderr), RLCTL_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (!add_key_amount(&reqs, argv[i], 1, "reserve")) return RLCTL_EXIT_USAGE;
    if (reqs.count == 0) {
        fprintf(stderr, "rlctl: reserve: at least one --req (or --optional) KEY=AMOUNT is needed\n%s", reserve_usage);
        return RLCTL_EXIT_USAGE;
    }
    char lease_id[RL_ULID_TEXT_SIZE];
    if (lease_arg == NULL) {
        if (rl_ulid_new(lease_id) == NULL) {
            fprintf(stderr, "rlctl: reserve: the system gave no randomness for a lease id\n");
            return RLCTL_EXIT_UNAVAILABLE;
        }
    } else if (!rl_ulid_is_valid(lease_arg, strlen(lease_arg))) {
        fprintf(stderr, "rlctl: reserve: --lease-id \"%s\" is not a ULID (26 characters of Crockford base32)\n",
                lease_arg);
        return RLCTL_EXIT_USAGE;
    } else {
        snprintf(lease_id, sizeof lease_id, "%s", lease_arg);
    }

    rl_requirement requirements[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < reqs.count; i++)
        requirements[i] = (rl_requirement){reqs.keys[i], reqs.amounts[i], reqs.optional[i]};
    rl_reserve_request request = {lease_id, job_id, requirements, reqs.count, dry_run};
    char err[RL_LIMITER_ERR_SIZE] = "";
    if (!rl_reserve_request_check(&request, err)) {
        fprintf(stderr, "rlctl: reserve: %s\n", err);
        return RLCTL_EXIT_USAGE;
    }
    rl_limiter *limiter = NULL;
    if (rlctl_open_limiter(global, &limiter) != RL_OK) return RLCTL_EXIT_UNAVAILABLE;
    rl_reserve_result result = {0};
    rl_status call = rl_limiter_reserve(limiter, &request, &result);
    int code;
    if (call != RL_OK) {
        char what[64];
        snprintf(what, sizeof what, "reserve%s %s", dry_run ? " --dry-run" : "", lease_id);
        code = rlctl_call_failed(what, call);
    } else {
        /* a dry run's denial is one a reserve would get: said so */
        const char *denied = dry_run ? "dry run: would be denied" : "denied";
        const char *wire = rl_status_wire(result.status);
        const char *key = result.status_key != NULL ? result.status_key : "";
        print_reserve_result(lease_id, &result, dry_run);
        const rl_denial *d = &result.denied_by;
        char why[160 + RL_KEY_MAX_LEN] = "";
        if (d->key != NULL)
            snprintf(why, sizeof why, " by \"%s\" (%s: requested %llu, available %llu of capacity %llu)", d->key,
                     rl_denial_reason_name(d->reason), (unsigned long long)d->requested,
                     (unsigned long long)d->available, (unsigned long long)d->capacity);
        if (result.allowed) {
            code = RLCTL_EXIT_OK;
        } else if (result.status == RL_OK) {
            fprintf(stderr, "rlctl: reserve %s: %s%s, retry after %llu ms with a new lease id\n", lease_id, denied, why,
                    (unsigned long long)result.retry_after_ms);
            code = RLCTL_EXIT_DENIED;
        } else if (result.status == RL_LIMIT_DECREASING || result.status == RL_EXCEEDS_CAPACITY) {
            fprintf(stderr, "rlctl: reserve %s: %s%s: %s \"%s\"%s\n", lease_id, denied, why, wire, key,
                    result.status == RL_EXCEEDS_CAPACITY ? " (the amount is above its capacity: retrying cannot help)"
                                                         : " (the limit is being decreased)");
            code = RLCTL_EXIT_DENIED;
        } else if (result.status == RL_LEASE_ID_CONFLICT) {
            fprintf(stderr, "rlctl: reserve %s: %s: %s\n", lease_id, wire, RL_WIRE_LEASE_ID_CONFLICT_DETAIL);
            code = RLCTL_EXIT_REJECTED;
        } else if (result.status == RL_UNKNOWN_LIMIT_KEY || result.status == RL_INVALID_REQUEST) {
            fprintf(stderr, "rlctl: reserve %s: %s%s%s\n", lease_id, wire, key[0] ? " " : "", key);
            code = RLCTL_EXIT_REJECTED;
        } else {
            fprintf(stderr, "rlctl: reserve %s: %s\n", lease_id, wire);
            code = RLCTL_EXIT_UNAVAILABLE;
        }
    }
    rl_limiter_destroy(limiter);
    return code;
}

/* ---- complete ------------------------------------------------------------ */

static const char complete_usage[] =
    "usage: rlctl [global options] complete --lease-id ULID [--job-id J] [--actual KEY=AMOUNT ...]\n"
    "  Completes a lease (POST /v1/complete): concurrency is released, each rolling\n"
    "  reservation given as --actual shrinks to AMOUNT (0 allowed); without --actual the\n"
    "  usage is unknown and the reservations stay as reserved. KEY=AMOUNT may also follow\n"
    "  the options. Idempotent: completing an unknown or completed lease is ok.\n";

int rlctl_cmd_complete(const rlctl_global *global, int argc, char **argv) {
    static const struct option options[] = {{"lease-id", required_argument, NULL, 'l'},
                                            {"job-id", required_argument, NULL, 'j'},
                                            {"actual", required_argument, NULL, 'a'},
                                            {"help", no_argument, NULL, 'h'},
                                            {0}};
    static key_amounts actuals_in;
    const char *lease_id = NULL, *job_id = NULL;
    memset(&actuals_in, 0, sizeof actuals_in);
    int c;
    while ((c = getopt_long(argc, argv, "l:j:a:h", options, NULL)) != -1) {
        if (c == 'h') return fputs(complete_usage, stdout), RLCTL_EXIT_OK;
        if (c == 'l') lease_id = optarg;
        else if (c == 'j') job_id = optarg;
        else if (c == 'a') { if (!add_key_amount(&actuals_in, optarg, 0, "complete")) return RLCTL_EXIT_USAGE; }
        else return fputs(complete_usage, stderr), RLCTL_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (!add_key_amount(&actuals_in, argv[i], 0, "complete")) return RLCTL_EXIT_USAGE;
    if (lease_id == NULL) {
        fprintf(stderr, "rlctl: complete: --lease-id is needed\n%s", complete_usage);
        return RLCTL_EXIT_USAGE;
    }
    rl_actual actuals[RL_MAX_REQUIREMENTS];
    for (size_t i = 0; i < actuals_in.count; i++) actuals[i] = (rl_actual){actuals_in.keys[i], actuals_in.amounts[i]};
    rl_complete_request request = {lease_id, job_id, actuals, actuals_in.count};
    char err[RL_LIMITER_ERR_SIZE] = "";
    if (!rl_complete_request_check(&request, err)) {
        fprintf(stderr, "rlctl: complete: %s\n", err);
        return RLCTL_EXIT_USAGE;
    }
    rl_limiter *limiter = NULL;
    if (rlctl_open_limiter(global, &limiter) != RL_OK) return RLCTL_EXIT_UNAVAILABLE;
    rl_status status = rl_limiter_complete(limiter, &request);
    int code = RLCTL_EXIT_OK;
    char what[64];
    snprintf(what, sizeof what, "complete %s", lease_id);
    if (status == RL_OK)
        printf("{\"lease_id\":\"%s\",\"ok\":true,\"error\":\"\"}\n", lease_id);
    else
        code = rlctl_call_failed(what, status);
    rl_limiter_destroy(limiter);
    return code;
}
