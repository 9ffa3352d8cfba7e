/* llm_workload.c — an LLM workload over two providers through libratelimiter.
 *
 * Jobs for two (provider, model) pairs go to one Scheduler. "bigcloud" has
 * room; "tinycloud" has a tiny tokens-per-minute limit, so most of its jobs
 * are denied and wait. The point: the saturated provider does not hold the
 * other one up (no head-of-line blocking). Each simulated call sleeps a few
 * ms and reports the tokens it used; at the end the program prints the
 * throughput per provider. bigcloud has every limit the LLM helper knows
 * (rpm, tpm, concurrency, rpd); tinycloud only an rpm and its tpm: a model
 * needs only the limits it has, but its rpm is required, so that a misspelt
 * model is refused rather than unlimited.
 *
 *   llm_workload [--seconds N] [--jobs N] [--url http://127.0.0.1:8080]
 *   llm_workload --write-limits FILE
 *
 * It runs until bigcloud's N jobs are done (at most --seconds, default 10).
 *
 * Without --url the limiter is in-process (the memory backend, limits from a
 * file this program writes). With --url it talks to a ratelimiterd, which must
 * know the limits first:
 *   llm_workload --write-limits /tmp/l.json && rlctl put --file /tmp/l.json
 *
 * Build against an installed library:
 *   cc llm_workload.c $(pkg-config --cflags --libs ratelimiter) -o llm_workload
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, nanosleep, clock_gettime */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ratelimiter/limiter.h>
#include <ratelimiter/scheduler.h>

static const char *const providers[2] = {"bigcloud", "tinycloud"};
static const char *const model = "model-1";

/* What finished, per provider (index into providers). */
static atomic_ulong done[2], not_run[2], failed[2];
static struct timespec start;

static long long since_start_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - start.tv_sec) * 1000000 + (now.tv_nsec - start.tv_nsec) / 1000;
}

/* The "model call": a few ms, and it used about half the tokens reserved. */
static rl_execute_result call_model(void *user_data, const rl_job_attempt *attempt) {
    (void)user_data;
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    return (rl_execute_result){.succeeded = true, .actual_tokens_known = true,
                               .actual_tokens = attempt->token_upper_bound / 2};
}

static void on_result(void *user_data, const rl_job_report *report) {
    int p = (int)(intptr_t)user_data; /* the provider's index, given at submit */
    if (report->outcome == RL_JOB_DONE) done[p]++;
    else if (report->outcome == RL_JOB_NOT_RUN) not_run[p]++;
    else failed[p]++;
}

/* The limits of both providers, in the registry's format (limits.json). */
static int write_limits(const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs("[\n", f);
    fprintf(f, " {\"key\":\"global:llm:%s:%s:rpm\",\"kind\":\"rolling\",\"capacity\":100000,\"window_seconds\":60},\n",
            providers[0], model);
    fprintf(f, " {\"key\":\"global:llm:%s:%s:tpm\",\"kind\":\"rolling\",\"capacity\":10000000,\"window_seconds\":60},\n",
            providers[0], model);
    fprintf(f, " {\"key\":\"global:llm:%s:%s:concurrency\",\"kind\":\"concurrency\",\"capacity\":8,"
               "\"timeout_seconds\":60},\n", providers[0], model);
    fprintf(f, " {\"key\":\"global:llm:%s:%s:rpd\",\"kind\":\"rolling\",\"capacity\":1000000,\"window_seconds\":86400},\n",
            providers[0], model);
    /* tinycloud: ~5 calls a minute by its tpm, and an rpm that never binds */
    fprintf(f, " {\"key\":\"global:llm:%s:%s:rpm\",\"kind\":\"rolling\",\"capacity\":100000,\"window_seconds\":60},\n",
            providers[1], model);
    fprintf(f, " {\"key\":\"global:llm:%s:%s:tpm\",\"kind\":\"rolling\",\"capacity\":3000,\"window_seconds\":60}\n",
            providers[1], model);
    fputs("]\n", f);
    return fclose(f);
}

int main(int argc, char **argv) {
    const char *url = NULL, *limits_out = NULL;
    double seconds = 10;
    int jobs = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0) url = argv[i + 1];
        else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--jobs") == 0) jobs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--write-limits") == 0) limits_out = argv[i + 1];
    }
    if (limits_out != NULL) return write_limits(limits_out) == 0 ? 0 : 1;

    /* 1. A limiter: in-process on a limits file, or a daemon. */
    rl_limiter *limiter = NULL;
    char err[RL_LIMITER_ERR_SIZE] = "";
    rl_status status;
    if (url == NULL) {
        char limits_path[] = "/tmp/llm_workload_limits_XXXXXX";
        int fd = mkstemp(limits_path);
        if (fd < 0 || close(fd) != 0 || write_limits(limits_path) != 0) {
            perror("llm_workload: limits file");
            return 1;
        }
        status = rl_limiter_local_open(limits_path, NULL, &limiter, err);
        remove(limits_path); /* read once, at open */
    } else {
        rl_http_limiter_options options;
        rl_http_limiter_options_default(&options);
        options.base_url = url;
        status = rl_limiter_http_open(&options, &limiter, err);
    }
    if (status != RL_OK) {
        fprintf(stderr, "llm_workload: no limiter: %s\n", err);
        return 1;
    }

    /* 2. A scheduler with a few workers over it. */
    rl_scheduler_options options;
    rl_scheduler_options_default(&options);
    options.worker_count = 4;
    rl_scheduler *scheduler = NULL;
    if (rl_scheduler_create(limiter, &options, &scheduler, err) != RL_OK) {
        fprintf(stderr, "llm_workload: no scheduler: %s\n", err);
        return 1;
    }

    /* 3. Jobs for both providers, interleaved: ~100 prompt bytes + 500 output tokens each. */
    static const char prompt[] = "Summarise the following ticket in two sentences, for a support engineer "
                                 "who has not seen it before.";
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < jobs; i++) {
        for (int p = 0; p < 2; p++) {
            rl_job job = {
                .call = {.provider = providers[p], .model = model, .prompt = prompt, .max_output_tokens = 500},
                .execute = call_model,
                .on_result = on_result,
                .user_data = (void *)(intptr_t)p,
            };
            if (rl_scheduler_submit(scheduler, &job, err) != RL_OK) fprintf(stderr, "submit: %s\n", err);
        }
    }

    /* 4. Run until bigcloud's jobs are all done (or --seconds), then stop:
     *    jobs still waiting (tinycloud's) are reported not run. */
    while (done[0] + failed[0] < (unsigned long)jobs && since_start_us() < (long long)(seconds * 1e6))
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    rl_scheduler_stats stats;
    rl_scheduler_shutdown(scheduler, 0, &stats);
    double elapsed = (double)since_start_us() / 1e6;

    printf("%-10s %8s %8s %8s %10s\n", "provider", "done", "waiting", "failed", "calls/s");
    for (int p = 0; p < 2; p++)
        printf("%-10s %8lu %8lu %8lu %10.1f\n", providers[p], (unsigned long)done[p], (unsigned long)not_run[p],
               (unsigned long)failed[p], (double)done[p] / elapsed);
    printf("%llu reserve attempts, %llu denied, in %.2f s\n", (unsigned long long)stats.attempts,
           (unsigned long long)stats.denials, elapsed);

    if (url != NULL && failed[0] + failed[1] > 0)
        printf("jobs failed: does %s know the limits? llm_workload --write-limits F && rlctl put --file F\n", url);
    rl_scheduler_destroy(scheduler);
    rl_limiter_destroy(limiter);
    return done[0] > 0 ? 0 : 1;
}
