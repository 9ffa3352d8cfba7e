/* budget_periods.c — see budget_periods.h. A GLib hash table of key ->
 * budget under one mutex: lookups are per requirement of a reserve, and
 * take the lock only while some budget is known. */
#include "backend/redis/budget_periods.h"

#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/calendar.h"

typedef struct budget {
    rl_period period;
    rl__calendar *calendar;
    rl_budget_bounds bounds; /* valid while computed and the instant asked about lies in its middle period */
    bool computed;
} budget;

struct rl_budget_periods {
    pthread_mutex_t lock;
    GHashTable *by_key; /* char * -> budget *, both owned */
    atomic_size_t count;
};

static void budget_free(gpointer data) {
    budget *b = data;
    rl__calendar_close(b->calendar);
    free(b);
}

rl_budget_periods *rl__budget_periods_create(void) {
    rl_budget_periods *periods = calloc(1, sizeof *periods);
    if (periods == NULL) return NULL;
    periods->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, budget_free);
    pthread_mutex_init(&periods->lock, NULL);
    return periods;
}

void rl__budget_periods_destroy(rl_budget_periods *periods) {
    if (periods == NULL) return;
    g_hash_table_destroy(periods->by_key);
    pthread_mutex_destroy(&periods->lock);
    free(periods);
}

static void cal_name(const rl_limit_def *def, char out[RL_BUDGET_CAL_SIZE]) {
    snprintf(out, RL_BUDGET_CAL_SIZE, "%s %s", rl_period_name(def->period), def->timezone);
}

/* The periods around unix_ms: the one before, the one holding it, the next. */
static bool bounds_around(const rl__calendar *calendar, rl_period period, uint64_t unix_ms, rl_budget_bounds *out) {
    uint64_t start, end, before_start, before_end, next_start, next_end;
    if (!rl__calendar_period_of(calendar, period, unix_ms, &start, &end) || start == 0 ||
        !rl__calendar_period_of(calendar, period, start - 1, &before_start, &before_end) ||
        !rl__calendar_period_of(calendar, period, end, &next_start, &next_end))
        return false;
    out->at_unix_ms[0] = before_start;
    out->at_unix_ms[1] = start;
    out->at_unix_ms[2] = end;
    out->at_unix_ms[3] = next_end;
    return true;
}

bool rl__budget_periods_learn(rl_budget_periods *periods, const rl_limit_def *def) {
    char cal[RL_BUDGET_CAL_SIZE];
    if (def->kind == RL_KIND_BUDGET) cal_name(def, cal);
    pthread_mutex_lock(&periods->lock);
    budget *known = g_hash_table_lookup(periods->by_key, def->key);
    bool same = known != NULL && def->kind == RL_KIND_BUDGET && strcmp(known->bounds.cal, cal) == 0;
    bool ok = true;
    if (!same) {
        g_hash_table_remove(periods->by_key, def->key);
        if (def->kind == RL_KIND_BUDGET) {
            budget *b = calloc(1, sizeof *b);
            char err[160];
            ok = b != NULL && rl__calendar_open(def->timezone, &b->calendar, err, sizeof err) == RL_OK;
            if (ok) {
                b->period = def->period;
                memcpy(b->bounds.cal, cal, sizeof cal);
                g_hash_table_insert(periods->by_key, g_strdup(def->key), b);
            } else {
                free(b);
            }
        }
        atomic_store(&periods->count, g_hash_table_size(periods->by_key));
    }
    pthread_mutex_unlock(&periods->lock);
    return ok;
}

void rl__budget_periods_forget(rl_budget_periods *periods, const char *key) {
    pthread_mutex_lock(&periods->lock);
    g_hash_table_remove(periods->by_key, key);
    atomic_store(&periods->count, g_hash_table_size(periods->by_key));
    pthread_mutex_unlock(&periods->lock);
}

bool rl__budget_periods_any(rl_budget_periods *periods) { return atomic_load(&periods->count) > 0; }

bool rl__budget_periods_bounds(rl_budget_periods *periods, const char *key, uint64_t unix_ms,
                               rl_budget_bounds *out) {
    if (!rl__budget_periods_any(periods)) return false;
    pthread_mutex_lock(&periods->lock);
    budget *b = g_hash_table_lookup(periods->by_key, key);
    bool found = b != NULL;
    if (found && (!b->computed || unix_ms < b->bounds.at_unix_ms[1] || unix_ms >= b->bounds.at_unix_ms[2]))
        b->computed = bounds_around(b->calendar, b->period, unix_ms, &b->bounds);
    found = found && b->computed;
    if (found) *out = b->bounds;
    pthread_mutex_unlock(&periods->lock);
    return found;
}

rl_status rl__budget_bounds_of_def(const rl_limit_def *def, uint64_t unix_ms, rl_budget_bounds *out) {
    rl__calendar *calendar = NULL;
    char err[160];
    rl_status status = rl__calendar_open(def->timezone, &calendar, err, sizeof err);
    if (status != RL_OK) return status;
    cal_name(def, out->cal);
    if (!bounds_around(calendar, def->period, unix_ms, out)) status = RL_INVALID_REQUEST;
    rl__calendar_close(calendar);
    return status;
}
