/* memory_journal.c — the memory backend's usage on disk: the records each
 * change writes, the replay that rebuilds the state at start, the snapshot
 * that compacts the journal, and the audit log of spend (see journal.h and
 * journal_record.h for what is written when).
 *
 * A replay runs the same rules as the live backend on the recorded times,
 * mapped onto this run's monotonic clock: a definition goes through the
 * same apply, a Complete through the same complete; a lease comes back as
 * it was decided, with every entry's recorded expiry. Budgets time out
 * only through EXPIRE records while replaying; once it is done, a sweep
 * refunds what fell due while the daemon was down, and those refunds are
 * journaled and audited like any other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/memory/memory_backend.h"
#include "core/ulid_text.h"

/* ---- time ---- */

/* This run's monotonic time of a recorded Unix time (0 if before it). */
static uint64_t mono_of(const memory_backend *backend, uint64_t unix_ms) {
    int64_t mono = (int64_t)unix_ms + backend->replay_offset_ms;
    return mono > 0 ? (uint64_t)mono : 0;
}

/* The Unix time of this run's monotonic at_ms, seen at now. */
static uint64_t unix_of(uint64_t at_ms, uint64_t now_ms, uint64_t now_unix_ms) {
    return at_ms >= now_ms ? now_unix_ms + (at_ms - now_ms)
                           : (now_unix_ms > now_ms - at_ms ? now_unix_ms - (now_ms - at_ms) : 0);
}

/* ---- records of changes (under lock) ---- */

/* src into out (size bytes), cut to fit: snprintf's "%s" without its
 * format parsing, on the answer path. */
static void copy_text(char *out, size_t size, const char *src) {
    size_t len = strnlen(src, size - 1);
    memcpy(out, src, len);
    out[len] = '\0';
}

bool rl__mem_journal_define(memory_backend *backend, const rl_limit_def *def, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_DEFINE;
    record->define.at_unix_ms = now_unix_ms;
    record->define.def = *def;
    return rl__journal_add(backend->journal, record);
}

bool rl__mem_journal_template(memory_backend *backend, const rl_limit_def *def, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_TEMPLATE;
    record->define.at_unix_ms = now_unix_ms;
    record->define.def = *def;
    return rl__journal_add(backend->journal, record);
}

bool rl__mem_journal_untemplate(memory_backend *backend, const char *pattern, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_UNTEMPLATE;
    record->deleted.at_unix_ms = now_unix_ms;
    copy_text(record->deleted.key, sizeof record->deleted.key, pattern);
    return rl__journal_add(backend->journal, record);
}

bool rl__mem_journal_delete(memory_backend *backend, const char *key, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_DELETE;
    record->deleted.at_unix_ms = now_unix_ms;
    copy_text(record->deleted.key, sizeof record->deleted.key, key);
    return rl__journal_add(backend->journal, record);
}

/* The record of lease as it stands (a snapshot: live or not) or as it was
 * just decided. */
static void lease_record(const memory_backend *backend, const rl_mem_lease *lease, uint64_t now_ms,
                         uint64_t now_unix_ms, rl__jrec_lease *out) {
    out->id_hi = lease->id_hi;
    out->id_lo = lease->id_lo;
    out->at_unix_ms = lease->at_unix_ms;
    out->fingerprint = lease->fingerprint;
    out->allowed = lease->allowed;
    out->completed = lease->completed;
    out->status = lease->status;
    copy_text(out->status_key, sizeof out->status_key, lease->status_limit != NULL ? lease->status_limit->def.key : "");
    out->retry_after_ms = lease->retry_after_ms;
    out->denied_available = lease->allowed ? 0 : lease->denied_available;
    out->denied_capacity = lease->allowed ? 0 : lease->denied_capacity;
    out->denied_period_end_unix_ms = lease->allowed ? 0 : lease->denied_period_end_unix_ms;
    copy_text(out->job_id, sizeof out->job_id, lease->job_id != NULL ? lease->job_id : "");
    out->entry_count = lease->entry_count;
    /* Forgotten when its last entry is over, plus the lease memory (as
     * reserve_one computed it). */
    uint64_t last_ms = 0;
    for (uint16_t i = 0; i < lease->entry_count; i++) {
        const rl_mem_entry *entry = &lease->entries[i];
        rl__jrec_entry *e = &out->entries[i];
        if (entry->expiry.at_ms > last_ms) last_ms = entry->expiry.at_ms;
        bool live = entry->limit != NULL && rl_mem_entry_is_live(entry);
        /* A released entry keeps its key for its place: the lease's own (an
         * entry of a removed limit names it: the replay finds none, or a
         * new limit of that key, which it holds nothing of). */
        copy_text(e->key, sizeof e->key, entry->limit != NULL ? entry->limit->def.key : "-");
        e->kind = entry->kind;
        e->live = live;
        e->amount = live ? rl_mem_entry_amount(entry) : 0;
        e->expires_at_unix_ms = unix_of(entry->expiry.at_ms, now_ms, now_unix_ms);
        e->period_start_unix_ms = entry->kind == RL_KIND_BUDGET ? entry->period_start_unix_ms : 0;
    }
    uint64_t decided_ms = now_ms - (now_unix_ms > lease->at_unix_ms ? now_unix_ms - lease->at_unix_ms : 0);
    if (lease->entry_count == 0 || last_ms < decided_ms) last_ms = decided_ms;
    out->forget_at_unix_ms = unix_of(last_ms, now_ms, now_unix_ms) + backend->lease_memory_ms;
}

bool rl__mem_journal_lease(memory_backend *backend, const rl_mem_lease *lease, uint64_t now_ms, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_LEASE;
    lease_record(backend, lease, now_ms, now_unix_ms, &record->lease);
    return rl__journal_add(backend->journal, record);
}

bool rl__mem_journal_complete(memory_backend *backend, const rl_mem_lease *lease,
                              const rl_complete_request *request, uint64_t now_unix_ms) {
    if (backend->journal == NULL) return true;
    rl__jrec *record = &backend->scratch_record;
    record->type = RL__JREC_COMPLETE;
    rl__jrec_complete *c = &record->complete;
    c->id_hi = lease->id_hi;
    c->id_lo = lease->id_lo;
    c->at_unix_ms = now_unix_ms;
    c->audit_seq_after = backend->audit_seq;
    c->actual_count = (uint16_t)request->actual_count;
    for (size_t i = 0; i < request->actual_count; i++) {
        copy_text(c->keys[i], sizeof c->keys[i], request->actuals[i].key);
        c->amounts[i] = request->actuals[i].actual_amount;
    }
    return rl__journal_add(backend->journal, record);
}

/* ---- the audit log ---- */

static bool keep_replay_audit(memory_backend *backend, uint64_t seq, const rl_audit_entry *entry) {
    if (backend->replay_audit_count == backend->replay_audit_capacity) {
        size_t capacity = backend->replay_audit_capacity ? backend->replay_audit_capacity * 2 : 64;
        rl__journal_audit *bigger = realloc(backend->replay_audit, capacity * sizeof *bigger);
        if (bigger == NULL) return false;
        backend->replay_audit = bigger;
        backend->replay_audit_capacity = capacity;
    }
    backend->replay_audit[backend->replay_audit_count].seq = seq;
    backend->replay_audit[backend->replay_audit_count].entry = *entry;
    backend->replay_audit_count++;
    return true;
}

void rl__mem_audit(memory_backend *backend, const rl_mem_lease *lease, const rl_mem_entry *entry, const char *key,
                   uint64_t reserved, uint64_t actual, bool expired, uint64_t now_unix_ms) {
    if (backend->audit == NULL) return;
    rl_audit_entry audit;
    if (now_unix_ms < backend->audit_at_unix_ms) now_unix_ms = backend->audit_at_unix_ms;
    backend->audit_at_unix_ms = now_unix_ms;
    uint64_t seq = ++backend->audit_seq;
    audit.at_unix_ms = now_unix_ms;
    rl__ulid_text(lease->id_hi, lease->id_lo, audit.lease_id);
    copy_text(audit.job_id, sizeof audit.job_id, lease->job_id != NULL ? lease->job_id : "");
    copy_text(audit.key, sizeof audit.key, key);
    audit.reserved = reserved;
    audit.actual = expired ? 0 : actual;
    audit.period_start_unix_ms = entry->kind == RL_KIND_BUDGET ? entry->period_start_unix_ms : 0;
    audit.expired = expired;
    if (backend->journal != NULL) {
        /* Out of memory: the entry is lost, the spend is still counted
         * (failing the Complete would not bring it back). */
        if (!rl__journal_add_audit(backend->journal, seq, &audit))
            fprintf(stderr, "ratelimiterd: out of memory: audit entry %llu lost\n", (unsigned long long)seq);
    } else if (backend->observer.replaying) {
        if (!keep_replay_audit(backend, seq, &audit))
            fprintf(stderr, "ratelimiterd: out of memory: audit entry %llu lost\n", (unsigned long long)seq);
    }
}

/* A budget reservation refunded by its timeout: its audit entry, then its
 * EXPIRE record (the replay refunds it through that record alone). */
static void budget_timed_out(rl_mem_observer *observer, rl_mem_entry *entry) {
    memory_backend *backend = (memory_backend *)((char *)observer - offsetof(memory_backend, observer));
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    const rl_mem_lease *lease = rl_mem_entry_lease(entry);
    rl__mem_audit(backend, lease, entry, entry->limit->def.key, entry->amount, 0, true, now_unix_ms);
    if (backend->journal == NULL) return;
    rl__jrec *record = &backend->scratch_record; /* no other record is being written meanwhile */
    record->type = RL__JREC_EXPIRE;
    record->expire = (rl__jrec_expire){lease->id_hi, lease->id_lo, backend->audit_at_unix_ms, entry->index,
                                       backend->audit_seq};
    if (!rl__journal_add(backend->journal, record))
        fprintf(stderr, "ratelimiterd: out of memory: a budget refund is not journaled\n");
}

static bool write_audit(void *context, const rl__journal_audit *entries, size_t count, bool opens_group, bool sync,
                        char *err, size_t err_size) {
    memory_backend *backend = context;
    for (size_t i = 0; i < count; i++) {
        if (rl__audit_log_append(backend->audit, entries[i].seq, &entries[i].entry, opens_group && i == 0) != RL_OK) {
            snprintf(err, err_size, "the audit log is out of memory");
            return false;
        }
    }
    return rl__audit_log_flush(backend->audit, sync, err, err_size) == RL_OK;
}

static size_t audit_sync_handles(void *context, int *fds, size_t max) {
    memory_backend *backend = context;
    return rl__audit_log_sync_handles(backend->audit, fds, max);
}

/* Retention: the parts past it are taken out of the log as its writer
 * (the journal's writer lock, which answers wait on), and deleted after. */
static void tick(void *context) {
    memory_backend *backend = context;
    if (backend->audit == NULL) return;
    char *paths[RL__AUDIT_EXPIRE_BATCH];
    rl__journal_writer_lock(backend->journal);
    size_t taken = rl__audit_log_expire_take(backend->audit, backend->clock->unix_ms(backend->clock), paths,
                                             RL__AUDIT_EXPIRE_BATCH);
    rl__journal_writer_unlock(backend->journal);
    rl__audit_log_delete_parts(paths, taken);
}

/* ---- replay (single-threaded, before the backend is handed out) ---- */

typedef struct replay {
    memory_backend *backend;
    rl__jrec record; /* the one being replayed */
    uint64_t records;  /* replayed so far */
    bool in_snapshot;  /* between a snapshot's two marks (snapshot() below) */
    char why[RL_KEY_MAX_LEN + 128];
} replay;

/* Keeps, of the audit entries the replay made from first on, those the
 * audit log does not have. */
static void keep_missing_audit(memory_backend *backend, size_t first) {
    size_t kept = first;
    for (size_t i = first; i < backend->replay_audit_count; i++)
        if (backend->replay_audit[i].seq > backend->audit_on_disk) backend->replay_audit[kept++] = backend->replay_audit[i];
    backend->replay_audit_count = kept;
}

/* Moves the replay's clock to a record's time (never back). */
static uint64_t replay_at(memory_backend *backend, uint64_t unix_ms) {
    uint64_t mono = mono_of(backend, unix_ms);
    if (mono > backend->replay_now_ms) backend->replay_now_ms = mono;
    return backend->replay_now_ms;
}

static bool replay_define(replay *r, const rl__jrec_define *d) {
    if (!rl_limit_def_validate(&d->def, r->why, sizeof r->why)) return false;
    rl_limit_status status;
    rl_status applied =
        rl__mem_apply_locked(r->backend, &d->def, replay_at(r->backend, d->at_unix_ms), d->at_unix_ms, &status);
    /* limit_in_use was the answer then too: nothing changed. */
    if (applied == RL_OK || applied == RL_LIMIT_IN_USE) return true;
    snprintf(r->why, sizeof r->why, "the definition of %s cannot be applied again", d->def.key);
    return false;
}

static bool replay_lease(replay *r, const rl__jrec_lease *l) {
    memory_backend *backend = r->backend;
    uint64_t now_ms = replay_at(backend, l->at_unix_ms);
    uint64_t forget_ms = mono_of(backend, l->forget_at_unix_ms);
    if (rl__mem_lease_find(&backend->leases, l->id_hi, l->id_lo) != NULL) return true; /* a snapshot's, again */
    rl_mem_lease *lease = rl__mem_lease_add(&backend->leases, l->id_hi, l->id_lo, l->entry_count, now_ms,
                                            forget_ms > now_ms ? forget_ms - now_ms : 0);
    if (lease == NULL) {
        snprintf(r->why, sizeof r->why, "out of memory");
        return false;
    }
    lease->allowed = l->allowed;
    lease->completed = l->completed;
    lease->status = l->status;
    /* The limit that denied it; one deleted since is kept, removed, for
     * its key (a retry still gets the first outcome, denied_by and all). */
    rl_mem_limit *status_limit = NULL;
    if (l->status_key[0] != '\0') {
        status_limit = rl__mem_limit_table_find(&backend->limits, l->status_key);
        if (status_limit == NULL) status_limit = rl__mem_limit_table_add_removed(&backend->limits, l->status_key);
        if (status_limit == NULL) {
            snprintf(r->why, sizeof r->why, "out of memory");
            return false;
        }
        status_limit->holders++;
    }
    lease->status_limit = status_limit;
    lease->retry_after_ms = l->retry_after_ms;
    lease->at_unix_ms = l->at_unix_ms;
    if (l->allowed) {
        lease->reserved_at_unix_ms = l->at_unix_ms;
    } else {
        lease->denied_available = l->denied_available;
        lease->denied_capacity = l->denied_capacity;
        lease->denied_period_end_unix_ms = l->denied_period_end_unix_ms;
    }
    lease->fingerprint = l->fingerprint;
    lease->job_id = l->job_id[0] != '\0' ? strdup(l->job_id) : NULL;
    for (uint16_t i = 0; i < l->entry_count; i++) {
        const rl__jrec_entry *e = &l->entries[i];
        rl_mem_entry *entry = &lease->entries[i];
        entry->kind = e->kind;
        entry->expiry.at_ms = mono_of(backend, e->expires_at_unix_ms);
        /* A key no definition names may name a limit made from a template
         * (replayed before this lease). */
        rl_mem_limit *limit = e->live ? rl__mem_limit_of(backend, e->key) : NULL;
        /* A limit that changed kind since holds none of these (a kind
         * changes only while a limit holds nothing). */
        if (!e->live || limit == NULL || limit->def.kind != e->kind) continue;
        /* A decided lease meets its limits as the reserve did; a
         * snapshot's comes back into counters already as they were at the
         * cut, which the leases still to come fill: until the last, a
         * limit looks emptier than it was, and expiring it (a pending
         * decrease taking effect) or reading a made one (idle: its totals
         * reset) would act on that. */
        if (!r->in_snapshot) {
            rl__mem_limit_expire(limit, now_ms, l->at_unix_ms);
            rl__mem_made_read(limit);
        }
        if (!rl__mem_limit_reserve_room(limit)) {
            snprintf(r->why, sizeof r->why, "out of memory");
            return false;
        }
        rl__mem_limit_restore(limit, entry, e->amount, entry->expiry.at_ms, e->period_start_unix_ms);
    }
    return true;
}

static bool replay_complete(replay *r, const rl__jrec_complete *c) {
    memory_backend *backend = r->backend;
    rl_actual actuals[RL_MAX_REQUIREMENTS];
    for (uint16_t i = 0; i < c->actual_count; i++) actuals[i] = (rl_actual){c->keys[i], c->amounts[i]};
    char lease_id[RL_ULID_TEXT_SIZE];
    rl__ulid_text(c->id_hi, c->id_lo, lease_id);
    rl_complete_request request = {lease_id, NULL, actuals, c->actual_count};
    size_t first = backend->replay_audit_count;
    uint64_t at_unix_ms = c->at_unix_ms;
    rl__mem_complete_one(backend, &request, replay_at(backend, c->at_unix_ms), &at_unix_ms);
    /* Its audit entries get the numbers they had (the last is the
     * record's); only those the audit log lacks are kept. */
    size_t made = backend->replay_audit_count - first;
    backend->audit_seq = c->audit_seq_after;
    for (size_t i = 0; i < made; i++) backend->replay_audit[first + i].seq = c->audit_seq_after - (made - 1 - i);
    keep_missing_audit(backend, first);
    return true;
}

static bool replay_expire(replay *r, const rl__jrec_expire *e) {
    memory_backend *backend = r->backend;
    (void)replay_at(backend, e->at_unix_ms);
    rl_mem_lease *lease = rl__mem_lease_find(&backend->leases, e->id_hi, e->id_lo);
    if (lease != NULL && e->entry_index < lease->entry_count) {
        rl_mem_entry *entry = &lease->entries[e->entry_index];
        if (entry->kind == RL_KIND_BUDGET && entry->limit != NULL && rl_mem_entry_is_live(entry)) {
            size_t first = backend->replay_audit_count;
            backend->audit_seq = e->audit_seq - 1;
            rl__mem_audit(backend, lease, entry, entry->limit->def.key, entry->amount, 0, true, e->at_unix_ms);
            keep_missing_audit(backend, first);
            rl__mem_limit_release(entry);
        }
    }
    if (e->audit_seq > backend->audit_seq) backend->audit_seq = e->audit_seq;
    return true;
}

/* The same removal as the live delete: the limit and what it held go, the
 * leases that held it keep it removed until they are forgotten. */
static bool replay_delete(replay *r, const rl__jrec_delete *d) {
    (void)replay_at(r->backend, d->at_unix_ms);
    (void)rl__mem_delete_locked(r->backend, d->key); /* absent: nothing to do */
    return true;
}

/* A template put or deleted, through the same rules (its made limits too). */
static bool replay_template(replay *r, const rl__jrec_define *d) {
    uint64_t now_ms = replay_at(r->backend, d->at_unix_ms);
    rl_status status = rl__mem_put_template_locked(r->backend, &d->def, now_ms, d->at_unix_ms, r->why, sizeof r->why);
    /* limit_in_use was the answer then too: nothing changed. */
    return status == RL_OK || status == RL_LIMIT_IN_USE;
}

static bool replay_untemplate(replay *r, const rl__jrec_delete *d) {
    (void)replay_at(r->backend, d->at_unix_ms);
    (void)rl__mem_delete_template_locked(r->backend, d->key, d->at_unix_ms); /* absent: nothing to do */
    return true;
}

static bool replay_limit(replay *r, const rl__jrec_limit *l) {
    /* A snapshot's limit made from a template has no DEFINE: made again. */
    rl_mem_limit *limit = rl__mem_limit_of(r->backend, l->key);
    if (limit == NULL || limit->reservations.live + limit->holds.count > 0) {
        snprintf(r->why, sizeof r->why, "the counters of %s come before its definition or after its leases", l->key);
        return false;
    }
    limit->capacity_enforced = l->capacity_enforced;
    limit->pending_decrease_to = l->pending_decrease_to;
    limit->debt_total = l->debt_total;
    limit->overage_denied_total = l->overage_denied_total;
    if (limit->def.kind == RL_KIND_BUDGET) {
        limit->committed = l->committed;
        limit->period_start_unix_ms = l->period_start_unix_ms;
        limit->period_end_unix_ms = l->period_end_unix_ms;
    }
    limit->used = limit->committed;
    return true;
}

static bool replay_record(const unsigned char *data, size_t len, uint64_t offset, void *context) {
    (void)offset;
    replay *r = context;
    rl__jrec *record = &r->record;
    if (!rl__jrec_decode(data, len, record, r->why, sizeof r->why)) return false;
    r->records++;
    switch (record->type) {
    case RL__JREC_DEFINE: return replay_define(r, &record->define);
    case RL__JREC_LEASE: return replay_lease(r, &record->lease);
    case RL__JREC_COMPLETE: return replay_complete(r, &record->complete);
    case RL__JREC_EXPIRE: return replay_expire(r, &record->expire);
    case RL__JREC_LIMIT: return replay_limit(r, &record->limit);
    case RL__JREC_DELETE: return replay_delete(r, &record->deleted);
    case RL__JREC_TEMPLATE: return replay_template(r, &record->define);
    case RL__JREC_UNTEMPLATE: return replay_untemplate(r, &record->deleted);
    case RL__JREC_CURSOR:
        /* The second record of the file opens a snapshot's state, the next
         * CURSOR closes it (snapshot() below). */
        if (r->records == 2) r->in_snapshot = true;
        else if (r->records > 2) r->in_snapshot = false;
        r->backend->audit_seq = record->cursor.audit_seq;
        r->backend->audit_at_unix_ms = record->cursor.audit_at_unix_ms;
        return true;
    case RL__JREC_AUDIT_LINK:
        /* The numbers from here on are that log's: what the replay made
         * before was another's, or none's. */
        r->backend->audit_seq = record->cursor.audit_seq;
        r->backend->audit_at_unix_ms = record->cursor.audit_at_unix_ms;
        r->backend->journal_linked = true;
        r->backend->journal_log_hi = record->cursor.log_id_hi;
        r->backend->journal_log_lo = record->cursor.log_id_lo;
        r->backend->replay_audit_count = 0;
        return true;
    }
    return false;
}

/* ---- snapshot (in the compaction's child: a copy of the state, no locks) ---- */

/* A CURSOR record: the snapshot's first without an audit log, and its two
 * marks. The state at the cut lies between the marks, the second record of
 * the file and the one after the last lease; the records since the cut
 * follow. The replay restores what lies between as it was, without acting
 * on the limits as the leases come back (replay_lease). A mark carries the
 * audit sequence and time the first record set: a replay that knows
 * nothing of marks (an earlier version) sets them again, and nothing
 * else. */
static bool add_cursor(const memory_backend *backend, rl__journal *journal, rl__jrec *record) {
    record->type = RL__JREC_CURSOR;
    record->cursor = (rl__jrec_cursor){backend->audit_seq, backend->audit_at_unix_ms, 0, 0};
    return rl__journal_snapshot_add(journal, record);
}

static int by_decision_time(const void *a, const void *b) {
    const rl_mem_lease *x = *(const rl_mem_lease *const *)a, *y = *(const rl_mem_lease *const *)b;
    return x->at_unix_ms < y->at_unix_ms ? -1 : x->at_unix_ms > y->at_unix_ms;
}

static void lock_backend(void *context) { pthread_mutex_lock(&((memory_backend *)context)->lock); }
static void unlock_backend(void *context) { pthread_mutex_unlock(&((memory_backend *)context)->lock); }

/* What snapshot() below writes, counted (the backend's lock held); a limit
 * made from a template as one record, not two: counts, not a walk. */
static uint64_t live_records(void *context) {
    memory_backend *backend = context;
    size_t templates = backend->templates != NULL ? rl__template_set_count(backend->templates) : 0;
    return 1 + templates + backend->limits.count + backend->leases.count;
}

static bool snapshot(void *context, rl__journal *journal) {
    memory_backend *backend = context;
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    rl_mem_lease **leases = malloc((backend->leases.count + 1) * sizeof *leases);
    bool ok = leases != NULL;
    rl__jrec *record = ok ? malloc(sizeof *record) : NULL;
    ok = ok && record != NULL;
    if (ok) {
        if (backend->audit != NULL) {
            rl__mem_audit_link_record(backend, record);
            ok = rl__journal_snapshot_add(journal, record);
        } else {
            ok = add_cursor(backend, journal, record);
        }
        ok = ok && add_cursor(backend, journal, record); /* the first mark */
    }
    /* The templates first: the limits made from them come back through them. */
    size_t templates = backend->templates != NULL ? rl__template_set_count(backend->templates) : 0;
    for (size_t i = 0; ok && i < templates; i++) {
        record->type = RL__JREC_TEMPLATE;
        record->define.at_unix_ms = now_unix_ms;
        record->define.def = rl__template_set_at(backend->templates, i)->def;
        ok = rl__journal_snapshot_add(journal, record);
    }
    RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) {
        if (!ok) break;
        /* Made from a template and idle: what it counted is gone at the
         * next read or sweep (rl__mem_made_read); named again after the
         * replay, it is made again, empty, as it would be now. Any other
         * made limit holds something of the leases that follow. */
        if (limit->template_pattern != NULL && rl_mem_limit_is_idle(limit)) continue;
        if (limit->own != NULL) { /* a definition of its own (a made limit comes back through its template) */
            record->type = RL__JREC_DEFINE;
            record->define.at_unix_ms = now_unix_ms;
            record->define.def = *limit->own;
            ok = rl__journal_snapshot_add(journal, record);
        }
        record->type = RL__JREC_LIMIT;
        rl__jrec_limit *l = &record->limit;
        copy_text(l->key, sizeof l->key, limit->def.key);
        l->capacity_enforced = limit->capacity_enforced;
        l->pending_decrease_to = limit->pending_decrease_to;
        l->debt_total = limit->debt_total;
        l->overage_denied_total = limit->overage_denied_total;
        l->committed = limit->committed;
        l->period_start_unix_ms = limit->period_start_unix_ms;
        l->period_end_unix_ms = limit->period_end_unix_ms;
        ok = ok && rl__journal_snapshot_add(journal, record);
    }
    size_t count = 0;
    if (ok) {
        const rl_mem_lease_table *table = &backend->leases;
        for (uint64_t i = 0; i <= table->mask; i++)
            if (table->slots[i].lease != NULL) leases[count++] = table->slots[i].lease;
        /* In decision order, so that each limit's reservations come back in
         * the order of their expiries. */
        qsort(leases, count, sizeof *leases, by_decision_time);
    }
    for (size_t i = 0; ok && i < count; i++) {
        record->type = RL__JREC_LEASE;
        lease_record(backend, leases[i], now_ms, now_unix_ms, &record->lease);
        ok = rl__journal_snapshot_add(journal, record);
    }
    ok = ok && add_cursor(backend, journal, record); /* the second mark */
    free(record);
    free(leases);
    return ok;
}

/* ---- life ---- */

rl_status rl__mem_journal_open(memory_backend *backend, const rl_memory_options *options, char *err, size_t err_size) {
    if (options->journal_path == NULL && options->audit_dir == NULL) return RL_OK;
    uint64_t now_ms = backend->clock->monotonic_ms(backend->clock);
    uint64_t now_unix_ms = backend->clock->unix_ms(backend->clock);
    rl_status status = RL_OK;
    if (options->audit_dir != NULL) {
        uint32_t days = options->audit_retention_days != 0 ? options->audit_retention_days
                                                           : RL_AUDIT_DEFAULT_RETENTION_DAYS;
        status = rl__audit_log_open(options->audit_dir, days, now_unix_ms, &backend->audit, err, err_size);
        if (status != RL_OK) return status;
        backend->audit_on_disk = rl__audit_log_last_seq(backend->audit);
    }
    backend->replay_offset_ms = (int64_t)now_ms - (int64_t)now_unix_ms;
    backend->observer.budget_timed_out = budget_timed_out;
    backend->limits.observer = &backend->observer;
    backend->observer.replaying = true;
    replay *r = calloc(1, sizeof *r);
    if (r == NULL) return RL_NO_MEMORY;
    r->backend = backend;
    status = rl__journal_open(options->journal_path, options->journal_fsync, options->journal_compact_bytes,
                              replay_record, r, &backend->journal, err, err_size);
    backend->observer.replaying = false;
    if (status != RL_OK && r->why[0] != '\0' && err_size > 0) {
        size_t used = strlen(err);
        snprintf(err + used, err_size - used, " (%s)", r->why);
    }
    free(r);
    if (status != RL_OK) return status;
    /* The audit log and the journal tied together; the entries the replay
     * made again that the log lost go in now. */
    bool link = false;
    status = rl__mem_audit_link(backend, options->journal_path, options->audit_dir, &link, err, err_size);
    if (status != RL_OK) return status;
    if (backend->audit != NULL) {
        for (size_t i = 0; i < backend->replay_audit_count; i++) {
            const rl__journal_audit *a = &backend->replay_audit[i];
            if (a->seq > backend->audit_on_disk && a->seq <= backend->audit_seq &&
                !rl__journal_add_audit(backend->journal, a->seq, &a->entry))
                return RL_NO_MEMORY;
        }
    }
    free(backend->replay_audit);
    backend->replay_audit = NULL;
    backend->replay_audit_count = backend->replay_audit_capacity = 0;
    rl__journal_owner owner = {backend->audit != NULL ? write_audit : NULL,
                               lock_backend,
                               unlock_backend,
                               snapshot,
                               backend->audit != NULL ? audit_sync_handles : NULL,
                               live_records,
                               tick,
                               backend};
    status = rl__journal_start(backend->journal, &owner, err, err_size);
    if (status != RL_OK) return status;
    /* Refunds of what fell due while nobody was running, journaled now,
     * after the link to the audit log when the journal needs one. */
    pthread_mutex_lock(&backend->lock);
    if (link) {
        rl__mem_audit_link_record(backend, &backend->scratch_record);
        if (!rl__journal_add(backend->journal, &backend->scratch_record)) {
            pthread_mutex_unlock(&backend->lock);
            return RL_NO_MEMORY;
        }
    }
    RL_MEM_FOR_EACH_LIMIT(&backend->limits, limit) rl__mem_limit_expire(limit, now_ms, now_unix_ms);
    uint64_t ticket = rl__journal_ticket(backend->journal);
    pthread_mutex_unlock(&backend->lock);
    if (!rl__journal_wait_durable(backend->journal, ticket)) {
        (void)rl__journal_failing(backend->journal, err, err_size);
        return RL_IO_ERROR;
    }
    return RL_OK;
}

void rl__mem_journal_close(memory_backend *backend) {
    rl__journal_close(backend->journal);
    backend->journal = NULL;
    if (backend->audit != NULL) {
        char err[256];
        if (rl__audit_log_flush(backend->audit, true, err, sizeof err) != RL_OK)
            fprintf(stderr, "ratelimiterd: %s\n", err);
        rl__audit_log_close(backend->audit);
        backend->audit = NULL;
    }
    free(backend->replay_audit);
    backend->replay_audit = NULL;
}
