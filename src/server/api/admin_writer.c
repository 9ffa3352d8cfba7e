/* admin_writer.c — see admin_writer.h. */
#include "server/api/admin_writer.h"

#include <pthread.h>
#include <stdlib.h>

struct rl_admin_writer {
    rl_admin_group_fn group_fn;
    void *context;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    rl_admin_job *head, *tail; /* in submit order */
    bool stopping;
    pthread_t thread;
    rl_service_put *scratch; /* one group's puts, RL_ADMIN_WRITER_MAX_GROUP of them */
};

void rl_admin_writer_put_limits(void *service, rl_service_put *puts, size_t count) {
    rl_service_put_limits(service, puts, count);
}

/* How many changes job holds: its puts, or its one put. */
static size_t changes_of(const rl_admin_job *job) { return job->puts != NULL ? job->count : 1; }

/* Takes whole jobs off the queue, in order, up to RL_ADMIN_WRITER_MAX_GROUP
 * changes in all; *count is how many changes. The caller holds the mutex. */
static rl_admin_job *take_group(rl_admin_writer *writer, size_t *count) {
    rl_admin_job *first = writer->head, *last = NULL;
    size_t n = 0;
    for (rl_admin_job *job = first; job != NULL && n + changes_of(job) <= RL_ADMIN_WRITER_MAX_GROUP;
         job = job->next) {
        last = job;
        n += changes_of(job);
    }
    if (last != NULL) {
        writer->head = last->next;
        if (writer->head == NULL) writer->tail = NULL;
        last->next = NULL;
    }
    *count = n;
    return first;
}

static void *writer_main(void *arg) {
    rl_admin_writer *writer = arg;
    pthread_mutex_lock(&writer->mutex);
    for (;;) {
        while (writer->head == NULL && !writer->stopping) pthread_cond_wait(&writer->wake, &writer->mutex);
        if (writer->head == NULL) break; /* stopping, and nothing left: drained */
        size_t count;
        rl_admin_job *group = take_group(writer, &count);
        pthread_mutex_unlock(&writer->mutex);
        size_t i = 0;
        for (rl_admin_job *job = group; job != NULL; job = job->next) {
            if (job->puts == NULL) writer->scratch[i++] = job->put;
            else for (size_t k = 0; k < job->count; k++) writer->scratch[i++] = job->puts[k];
        }
        writer->group_fn(writer->context, writer->scratch, count);
        i = 0;
        for (rl_admin_job *job = group, *next; job != NULL; job = next) {
            next = job->next; /* done may free the job */
            if (job->puts == NULL) job->put = writer->scratch[i++];
            else for (size_t k = 0; k < job->count; k++) job->puts[k] = writer->scratch[i++];
            job->done(job);
        }
        pthread_mutex_lock(&writer->mutex);
    }
    pthread_mutex_unlock(&writer->mutex);
    return NULL;
}

rl_admin_writer *rl_admin_writer_start(rl_admin_group_fn group_fn, void *context) {
    rl_admin_writer *writer = calloc(1, sizeof *writer);
    if (writer == NULL) return NULL;
    writer->scratch = malloc(RL_ADMIN_WRITER_MAX_GROUP * sizeof *writer->scratch);
    writer->group_fn = group_fn;
    writer->context = context;
    pthread_mutex_init(&writer->mutex, NULL);
    pthread_cond_init(&writer->wake, NULL);
    if (writer->scratch == NULL || pthread_create(&writer->thread, NULL, writer_main, writer) != 0) {
        pthread_cond_destroy(&writer->wake);
        pthread_mutex_destroy(&writer->mutex);
        free(writer->scratch);
        free(writer);
        return NULL;
    }
    return writer;
}

bool rl_admin_writer_submit(rl_admin_writer *writer, rl_admin_job *job) {
    if (job->puts != NULL && (job->count == 0 || job->count > RL_ADMIN_WRITER_MAX_GROUP)) return false;
    pthread_mutex_lock(&writer->mutex);
    bool taken = !writer->stopping;
    if (taken) {
        job->next = NULL;
        if (writer->tail != NULL)
            writer->tail->next = job;
        else
            writer->head = job;
        writer->tail = job;
        pthread_cond_signal(&writer->wake);
    }
    pthread_mutex_unlock(&writer->mutex);
    return taken;
}

void rl_admin_writer_stop(rl_admin_writer *writer) {
    if (writer == NULL) return;
    pthread_mutex_lock(&writer->mutex);
    writer->stopping = true;
    pthread_cond_signal(&writer->wake);
    pthread_mutex_unlock(&writer->mutex);
    pthread_join(writer->thread, NULL);
    pthread_cond_destroy(&writer->wake);
    pthread_mutex_destroy(&writer->mutex);
    free(writer->scratch);
    free(writer);
}
