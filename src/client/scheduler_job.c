/* scheduler_job.c — a submitted job's own copy, and its one result report.
 *
 * Submit copies every string so that the caller may free its own at once, and
 * builds the requirements once: a job whose keys cannot be built is refused
 * at submit rather than failing later on a worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/scheduler_internal.h"

static const char *const outcome_names[RL_JOB_OUTCOME_COUNT] = {
    "done", "execute_failed", "rejected", "gave_up", "not_run",
};

const char *rl_job_outcome_name(rl_job_outcome outcome) {
    if ((unsigned)outcome >= RL_JOB_OUTCOME_COUNT) return "unknown";
    return outcome_names[outcome];
}

/* Copies src (NULL is "") into dst[size]; false if it does not fit. */
static bool copy_text(char *dst, size_t size, const char *src) {
    if (src == NULL) src = "";
    size_t len = strlen(src);
    if (len >= size) return false;
    memcpy(dst, src, len + 1);
    return true;
}

static rl_sched_job *refuse(rl_sched_job *job, rl_status *status, char *err, size_t err_size, const char *why) {
    rl__sched_job_free(job);
    *status = RL_INVALID_REQUEST;
    if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", why);
    return NULL;
}

rl_sched_job *rl__sched_job_new(const rl_job *job, rl_status *status, char *err, size_t err_size) {
    if (job == NULL || job->execute == NULL) return refuse(NULL, status, err, err_size, "job has no execute callback");
    rl_sched_job *copy = calloc(1, sizeof *copy);
    if (copy == NULL) {
        *status = RL_NO_MEMORY;
        if (err != NULL && err_size > 0) snprintf(err, err_size, "out of memory");
        return NULL;
    }
    if (!copy_text(copy->job_id, sizeof copy->job_id, job->job_id)) {
        return refuse(copy, status, err, err_size, "job_id is longer than RL_JOB_ID_MAX_LEN");
    }
    if (!copy_text(copy->provider, sizeof copy->provider, job->call.provider) ||
        !copy_text(copy->model, sizeof copy->model, job->call.model) ||
        !copy_text(copy->tenant_id, sizeof copy->tenant_id, job->call.tenant_id)) {
        return refuse(copy, status, err, err_size, "provider, model or tenant_id is too long for a key");
    }
    if (job->call.prompt != NULL) {
        copy->prompt = strdup(job->call.prompt);
        if (copy->prompt == NULL) {
            rl__sched_job_free(copy);
            *status = RL_NO_MEMORY;
            if (err != NULL && err_size > 0) snprintf(err, err_size, "out of memory");
            return NULL;
        }
    }
    copy->call = job->call;
    copy->call.provider = copy->provider;
    copy->call.model = copy->model;
    copy->call.tenant_id = job->call.tenant_id == NULL ? NULL : copy->tenant_id;
    copy->call.prompt = copy->prompt;
    if (!rl_llm_requirements_build(&copy->call, &copy->requirements)) {
        return refuse(copy, status, err, err_size,
                      "the call's requirements cannot be built (key parts, or a token bound of 0 or above 2^53)");
    }
    copy->max_attempts = job->max_attempts;
    copy->execute = job->execute;
    copy->on_result = job->on_result;
    copy->user_data = job->user_data;
    copy->last_status = RL_OK;
    *status = RL_OK;
    return copy;
}

void rl__sched_job_free(rl_sched_job *job) {
    if (job == NULL) return;
    free(job->prompt);
    free(job);
}

void rl__sched_job_report(const rl_sched_job *job, rl_job_outcome outcome, const rl_execute_result *execute,
                          rl_status complete_status) {
    if (job->on_result == NULL) return;
    rl_job_report report;
    memset(&report, 0, sizeof report);
    report.job_id = job->job_id;
    report.outcome = outcome;
    report.attempts = job->attempts;
    report.denials = job->denials;
    report.errors = job->errors;
    report.status = job->last_status;
    report.status_key = job->last_status_key[0] != '\0' ? job->last_status_key : NULL;
    report.lease_id = job->lease_id;
    if (execute != NULL) report.execute = *execute;
    report.complete_status = complete_status;
    job->on_result(job->user_data, &report);
}
