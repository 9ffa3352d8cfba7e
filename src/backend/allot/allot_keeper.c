/* allot_keeper.c — the keeper of a daemon's allotments (allotted_backend.h,
 * docs/allotments.md): one thread that, every tick, looks at each key's
 * demand and what its mirror holds, decides what to ask of Redis
 * (allot_policy.h), sends it all in one allot.lua call, and applies the
 * answers to the mirrors (memory_local.h). Nothing here runs on a request's
 * path: a lease that finds no room is forwarded, never kept waiting.
 *
 * The one rule that keeps the fleet from over-admitting is kept here: a
 * mirror may admit at most what Redis counts for the allotment, and only
 * until an instant such that whatever it admits expires before Redis stops
 * counting the allotment (its end plus the window, from the answer, taken
 * from when the call was sent: the earliest Redis can have counted from).
 * Every change that lowers what a mirror may admit is made before the call
 * that lowers what Redis counts; every raise after the answer.
 *
 * Its state (the key table) is the keeper thread's alone; the inbox is
 * shared with the lease path under inbox_lock.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/allot/allot_policy.h"
#include "backend/allot/allotted_backend.h"
#include "backend/redis/redis_allot.h"

/* A held or synchronous key is looked at in Redis at least this often
 * (learning its share and definition, telling what it holds live), and
 * twice as often while what is left of the limit is within reach of the
 * fleet's demand. */
#define PROBE_MS 500u
#define PROBE_NEAR_MS 250u
#define NEAR_SHARES 16u /* "within reach": a share under this many times what is wanted */
#define IDLE_PROBE_MS 1000u    /* a key without allotments (a budget, an unknown key) this often */
/* A key Redis does not define: an optional requirement on it is skipped by
 * the local decisions for this long after the look that saw it undefined
 * (memory_local.h), so that a definition made meanwhile (by another
 * daemon) is met here at most this late. */
#define ABSENT_MS IDLE_PROBE_MS
#define LARGEST_WINDOW_MS 5000u /* the largest lease amount is remembered for one to two of these */
#define FORGET_AFTER_MS 30000u /* a key holding nothing and asked nothing for this long leaves the table */
#define RETURN_LIVE_MAX 256u   /* entries a return keeps of what is live, at most */
/* An allotment that had room while the leases that named its key went to
 * Redis all the same (another key of theirs had none), for this many steps
 * with such demand and none admitted here, is of no use: given back, and
 * not carved again for QUIET_MS, so that its room is not held while Redis
 * denies others for want of it. */
#define USELESS_STEPS 4u
#define QUIET_MS 1000u
#define RELAY_READ 256u  /* relayed Completes read at a time */
#define RELAY_EVERY_MS 100u /* how often they are read while anything is held */
#define RELAY_READS 8u   /* reads a step at most */

typedef enum key_mode {
    MODE_NONE,    /* holds nothing; carves on demand */
    MODE_HELD,    /* holds an allotment and admits from it */
    MODE_SYNC,    /* near exhaustion: decided synchronously, what it holds given back as it frees */
    MODE_DRAIN,   /* idle: what it holds given back as it frees */
    MODE_KIND,    /* a kind without allotments (a budget) */
    MODE_UNKNOWN, /* Redis has no such limit */
} key_mode;

typedef enum op_kind { OP_NONE, OP_CARVE, OP_DRAIN } op_kind;

typedef struct key_state {
    char key[RL_KEY_MAX_LEN + 1];
    key_mode mode;
    uint64_t generation;      /* the record's, as last answered */
    uint64_t generation_sent; /* of the call in doubt */
    bool in_doubt;            /* the last call failed: it may or may not have been applied */
    uint64_t version;         /* of the definition the mirror has (0: none yet) */
    uint64_t amount;          /* what Redis counts for this daemon, as last answered */
    uint64_t admit_until_ms;
    uint64_t share;
    uint64_t demand_seen, admitted_seen;
    uint64_t demand_step, admitted_step; /* this step's */
    uint32_t useless_steps;
    uint64_t quiet_until_ms;
    uint64_t rate_per_s;
    uint64_t last_demand_ms;
    uint64_t largest_now, largest_before, largest_since_ms;
    uint64_t last_op_ms;
    bool deleted; /* Redis may have deleted it: looked at this step, whatever the mode */
    op_kind op; /* this step's */
} key_state;

/* What one read of relayed Completes fills: RELAY_READ of each. */
typedef struct relay_buffers {
    rl__relayed relayed[RELAY_READ];
    rl_complete_request requests[RELAY_READ];
    rl_status statuses[RELAY_READ];
    bool forwarded[RELAY_READ];
    rl__local_spend spends[RELAY_READ * RL_MAX_REQUIREMENTS];
} relay_buffers;

struct allot_keeper {
    GHashTable *keys; /* key -> key_state, the keeper thread's */
    _Atomic bool recheck; /* rl__allot_keeper_recheck: every key due for a look */
    /* Completes relayed by other daemons (redis_allot.h): read from after
     * relay_id while this daemon holds anything ("" until known). */
    char relay_id[64];
    bool holding;
    uint64_t relay_read_ms;
    relay_buffers *relay; /* made at the first read, kept: about 2 MB, read every RELAY_EVERY_MS */
    uint64_t last_step_ms;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
};

static uint64_t now_ms(const allotted_backend *backend) { return backend->clock->monotonic_ms(backend->clock); }

/* ---- the inbox ---- */

void rl__allot_want_key(allotted_backend *backend, const char *key, uint64_t amount) {
    pthread_mutex_lock(&backend->inbox_lock);
    GHashTable *inbox = backend->inbox;
    uint64_t *largest = inbox != NULL ? g_hash_table_lookup(inbox, key) : NULL;
    if (largest != NULL) {
        if (amount > *largest) *largest = amount;
    } else if (inbox != NULL && g_hash_table_size(inbox) < RL__ALLOT_INBOX_MAX) {
        largest = g_new(uint64_t, 1);
        *largest = amount;
        g_hash_table_insert(inbox, g_strdup(key), largest);
    }
    pthread_mutex_unlock(&backend->inbox_lock);
}

void rl__allot_key_deleted(void *context, const char *key) {
    allotted_backend *backend = context;
    pthread_mutex_lock(&backend->inbox_lock);
    GHashTable *deleted = backend->deleted;
    if (deleted != NULL && g_hash_table_size(deleted) < RL__ALLOT_INBOX_MAX)
        g_hash_table_add(deleted, g_strdup(key));
    pthread_mutex_unlock(&backend->inbox_lock);
    rl__allot_keeper_recheck(backend);
}

/* key's state, made (holding nothing, asked nothing yet) if it has none. */
static key_state *state_of(allot_keeper *keeper, const char *key, uint64_t now) {
    key_state *s = g_hash_table_lookup(keeper->keys, key);
    if (s == NULL) {
        s = g_new0(key_state, 1);
        snprintf(s->key, sizeof s->key, "%s", key);
        s->mode = MODE_NONE;
        s->largest_since_ms = now;
        g_hash_table_insert(keeper->keys, s->key, s);
    }
    return s;
}

static void take_inbox(allotted_backend *backend, allot_keeper *keeper, uint64_t now) {
    pthread_mutex_lock(&backend->inbox_lock);
    GHashTable *taken = backend->inbox, *deleted = backend->deleted;
    backend->inbox = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    backend->deleted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    pthread_mutex_unlock(&backend->inbox_lock);
    GHashTableIter it;
    gpointer key, largest;
    g_hash_table_iter_init(&it, taken);
    while (g_hash_table_iter_next(&it, &key, &largest)) {
        key_state *s = state_of(keeper, key, now);
        s->last_demand_ms = now; /* a lease asked for it just now */
        if (*(uint64_t *)largest > s->largest_now) s->largest_now = *(uint64_t *)largest;
    }
    g_hash_table_destroy(taken);
    /* A key deleted may have a mirror the keeper forgot the state of (idle). */
    g_hash_table_iter_init(&it, deleted);
    while (g_hash_table_iter_next(&it, &key, NULL)) state_of(keeper, key, now)->deleted = true;
    g_hash_table_destroy(deleted);
}

/* ---- deciding what to ask ---- */

typedef struct plan {
    rl__allot_op *ops;
    key_state **states;
    size_t count;
} plan;

static uint64_t min_room_of(const key_state *s) {
    uint64_t largest = s->largest_now > s->largest_before ? s->largest_now : s->largest_before;
    return rl__allot_min_room(largest);
}

/* Reads key's demand from its mirror into s; returns what the mirror holds
 * (state->used etc.), or false without a mirror. */
static bool observe(allotted_backend *backend, key_state *s, uint64_t now, uint64_t elapsed_ms,
                    rl__local_state *state) {
    bool mirrored = rl__memory_local_state(backend->local, s->key, state);
    uint64_t demand = 0;
    s->admitted_step = 0;
    if (mirrored) {
        demand = state->demand_total - s->demand_seen;
        s->demand_seen = state->demand_total;
        s->admitted_step = state->admitted_total - s->admitted_seen;
        s->admitted_seen = state->admitted_total;
        if (state->largest_amount > s->largest_now) s->largest_now = state->largest_amount;
    } else {
        memset(state, 0, sizeof *state);
    }
    if (now - s->largest_since_ms >= LARGEST_WINDOW_MS) {
        s->largest_before = s->largest_now;
        s->largest_now = 0;
        s->largest_since_ms = now;
    }
    s->rate_per_s = rl__allot_rate_per_s(s->rate_per_s, demand, elapsed_ms);
    s->demand_step = demand;
    if (demand > 0) s->last_demand_ms = now;
    return mirrored;
}

/* What this step asks for s (s->op), from its mode, its demand and what
 * its mirror holds (mirrored: it has one). A drain lowers what the mirror
 * may admit first. */
static void choose(allotted_backend *backend, key_state *s, const rl__local_state *state, bool mirrored,
                   uint64_t now, rl__allot_op *op) {
    const rl_allotment_options *o = &backend->options;
    bool recent = now - s->last_demand_ms < o->idle_ms;
    uint64_t want = rl__allot_want(state->used, s->rate_per_s, o->horizon_ms, min_room_of(s));
    uint64_t probe_ms = s->share / NEAR_SHARES > want ? PROBE_MS : PROBE_NEAR_MS;
    bool probe_due = now - s->last_op_ms >= probe_ms;
    bool quiet = now < s->quiet_until_ms;
    s->op = OP_NONE;
    switch (s->mode) {
    case MODE_NONE:
        if (recent && !quiet) s->op = OP_CARVE;
        break;
    case MODE_HELD: {
        bool had_room = state->capacity > state->used && state->capacity - state->used >= min_room_of(s) / 2;
        if (s->admitted_step > 0) s->useless_steps = 0;
        else if (s->demand_step > 0 && had_room) s->useless_steps++;
        if (!recent || s->useless_steps >= USELESS_STEPS) {
            if (s->useless_steps >= USELESS_STEPS) s->quiet_until_ms = now + QUIET_MS;
            s->useless_steps = 0;
            s->mode = MODE_DRAIN;
            s->op = OP_DRAIN;
            break;
        }
        uint64_t ends_in_ms = s->admit_until_ms > now ? s->admit_until_ms - now : 0;
        if (probe_due || s->in_doubt || rl__allot_needs_carve(state->capacity, state->used, want, ends_in_ms, o->duration_ms))
            s->op = OP_CARVE;
        break;
    }
    case MODE_SYNC:
    case MODE_DRAIN:
        if (s->mode == MODE_DRAIN && recent && !quiet) {
            s->mode = MODE_NONE;
            s->op = OP_CARVE;
        } else if (s->amount > state->used || s->in_doubt || (recent && probe_due)) {
            s->op = OP_DRAIN; /* give back what freed; in SYNC, also a look at what is left */
        } else if (s->amount == 0 && !recent) {
            s->mode = MODE_NONE;
        }
        break;
    case MODE_KIND:
    case MODE_UNKNOWN:
        if (recent && now - s->last_op_ms >= IDLE_PROBE_MS) s->op = OP_DRAIN; /* asks nothing: a look */
        break;
    }
    /* Redis may have deleted it: a look now (a held key carves: the probe
     * is due), whose answer drops the mirror if the limit is gone. */
    if (s->op == OP_NONE && s->deleted) s->op = OP_DRAIN;
    if (s->op == OP_NONE) return;
    uint64_t generation = s->in_doubt ? s->generation_sent : s->generation + 1;
    s->generation_sent = generation;
    *op = (rl__allot_op){.key = s->key, .give_back = false, .generation = generation, .known_version = s->version,
                         .mirrored = mirrored, .incarnation = state->incarnation, .least = min_room_of(s),
                         .live_now = state->used, .live_entries = state->entries};
    if (s->op == OP_DRAIN) {
        op->floor = rl__memory_local_shrink(backend->local, s->key, 0, true);
        return;
    }
    op->want = want;
    /* A smaller allotment: the mirror first, so that Redis never counts
     * less than it may hold. */
    op->floor = op->want < state->capacity ? rl__memory_local_shrink(backend->local, s->key, op->want, false)
                                           : state->capacity;
    op->duration_ms = o->duration_ms;
}

/* ---- applying the answers ---- */

static void apply_definition(allotted_backend *backend, key_state *s, const rl__allot_result *r) {
    if (!r->has_definition) return;
    rl_status status = rl__memory_local_define(backend->local, &r->definition, r->incarnation);
    if (status == RL_OK) s->version = r->version;
    else if (status != RL_LIMIT_IN_USE)
        fprintf(stderr, "ratelimiterd: allotments: cannot mirror %s: %s\n", s->key, rl_status_name(status));
}

/* The limit s mirrored is gone from Redis (deleted, perhaps defined again
 * since: another incarnation), and its allotments with it: the mirror goes
 * with what it holds, so that nothing is admitted from it and the leases
 * decided from it spend nothing more on the key; and so does what s knew of
 * it. Returns whether there was a mirror. */
static bool forget_mirror(allotted_backend *backend, key_state *s) {
    s->mode = MODE_NONE;
    s->amount = 0;
    s->admit_until_ms = 0;
    s->version = 0;
    s->useless_steps = 0;
    s->demand_seen = s->admitted_seen = 0; /* a new mirror counts from 0 */
    return rl__memory_local_forget(backend->local, s->key);
}

static void apply(allotted_backend *backend, key_state *s, const rl__allot_result *r, uint64_t sent_ms) {
    s->in_doubt = false;
    s->deleted = false; /* Redis has said what the key is now */
    s->generation = r->generation;
    s->last_op_ms = sent_ms;
    if (r->status == RL__ALLOT_INCARNATION) {
        /* Deleted and defined again: a new limit, mirrored anew from its
         * definition, that nothing of the old one's counts in; it is
         * carved at the next step like any key with demand. */
        (void)forget_mirror(backend, s);
        apply_definition(backend, s, r);
        return;
    }
    apply_definition(backend, s, r);
    rl__local_state state;
    bool mirrored = rl__memory_local_state(backend->local, s->key, &state);
    if (r->status == RL__ALLOT_UNKNOWN) {
        /* Deleted (or never defined); a key defined again is mirrored anew
         * from its definition. */
        (void)forget_mirror(backend, s);
        s->mode = MODE_UNKNOWN;
        /* undefined: an optional requirement on it is skipped here for a
         * while, unless a template would make its limit on first use (Redis
         * decides those leases, making it) */
        if (!mirrored && !rl__redis_made_from_template(backend->redis, s->key))
            rl__memory_local_absent(backend->local, s->key, sent_ms + ABSENT_MS);
        return;
    }
    if (r->status == RL__ALLOT_KIND) {
        s->mode = MODE_KIND;
        s->amount = r->amount;
        s->admit_until_ms = 0;
        if (mirrored) rl__memory_local_allow(backend->local, s->key, 0, 0);
        return;
    }
    if (r->status == RL__ALLOT_GENERATION) {
        /* Out of step: go on from the record; never admit more than it says. */
        s->amount = r->amount;
        if (mirrored && state.capacity > r->amount)
            rl__memory_local_allow(backend->local, s->key, r->amount, s->admit_until_ms);
        return;
    }
    s->amount = r->amount;
    s->share = r->share;
    if (!mirrored) return; /* a definition that could not be mirrored: nothing is admitted here */
    uint64_t min_room = min_room_of(s);
    if (s->op == OP_DRAIN) {
        rl__memory_local_allow(backend->local, s->key, state.capacity < r->amount ? state.capacity : r->amount,
                               sent_ms);
        s->admit_until_ms = 0;
        if (s->mode == MODE_SYNC && rl__allot_leaves_sync(r->share, min_room)) s->mode = MODE_NONE;
        else if (s->mode == MODE_KIND || s->mode == MODE_UNKNOWN) s->mode = MODE_NONE;
        else if (s->mode == MODE_DRAIN && r->amount == 0) s->mode = MODE_NONE;
        return;
    }
    /* A carve: admit up to what Redis counts, until whatever is admitted
     * expires before Redis stops counting it. */
    uint64_t admit_until = 0;
    if (r->amount > 0 && r->counted_for_ms >= state.lifetime_ms) {
        uint64_t left_ms = r->counted_for_ms - state.lifetime_ms;
        admit_until = sent_ms + (r->ends_in_ms < left_ms ? r->ends_in_ms : left_ms);
    }
    if (rl__allot_goes_sync(r->share, min_room)) {
        /* Near exhaustion: decided synchronously from now on; what it
         * holds goes back as it frees (the next steps drain it). */
        s->mode = MODE_SYNC;
        rl__memory_local_allow(backend->local, s->key, r->amount, sent_ms);
        rl__memory_local_shrink(backend->local, s->key, 0, true);
        s->admit_until_ms = 0;
        return;
    }
    rl__memory_local_allow(backend->local, s->key, r->amount, admit_until);
    s->admit_until_ms = admit_until;
    s->mode = r->amount > 0 ? MODE_HELD : MODE_NONE;
}

/* ---- Completes that reached another daemon ---- */

/* Applies the Completes other daemons relayed (complete.lua) to the leases
 * decided here: holds released and reservations reconciled at once, their
 * spends settled in Redis like any local Complete's. */
static void take_relayed(allotted_backend *backend, allot_keeper *keeper, uint64_t now, bool now_anyway) {
    if (keeper->relay_id[0] == '\0' && rl__redis_relay_tail(backend->redis, keeper->relay_id) != RL_OK) return;
    if (!keeper->holding || (!now_anyway && now - keeper->relay_read_ms < RELAY_EVERY_MS)) return;
    keeper->relay_read_ms = now;
    /* Kept from read to read: allocated anew each time, ~2 MB a read went
     * to the kernel and back ten times a second. */
    if (keeper->relay == NULL && (keeper->relay = malloc(sizeof *keeper->relay)) == NULL) return;
    relay_buffers *b = keeper->relay;
    for (unsigned reads = 0; reads < RELAY_READS; reads++) {
        long n = rl__redis_relay_read(backend->redis, keeper->relay_id, b->relayed, RELAY_READ);
        if (n <= 0) break;
        for (long i = 0; i < n; i++)
            b->requests[i] =
                (rl_complete_request){b->relayed[i].lease_id, NULL, b->relayed[i].actuals, b->relayed[i].actual_count};
        size_t spent =
            rl__memory_local_complete(backend->local, b->requests, (size_t)n, b->statuses, b->forwarded, b->spends);
        if (spent > 0) rl__allot_settle(backend, b->spends, spent);
        if ((size_t)n < RELAY_READ) break;
    }
}

/* ---- the step ---- */

void rl__allot_keeper_step(allotted_backend *backend) {
    allot_keeper *keeper = backend->keeper;
    uint64_t now = now_ms(backend);
    uint64_t elapsed_ms = now > keeper->last_step_ms ? now - keeper->last_step_ms : 0;
    keeper->last_step_ms = now;
    take_inbox(backend, keeper, now);
    bool recheck = atomic_exchange(&keeper->recheck, false);
    take_relayed(backend, keeper, now, recheck);
    rl__allot_settle_retry(backend);

    size_t capacity = g_hash_table_size(keeper->keys);
    plan p = {calloc(capacity + 1, sizeof *p.ops), calloc(capacity + 1, sizeof *p.states), 0};
    if (p.ops == NULL || p.states == NULL) {
        free(p.ops);
        free(p.states);
        return;
    }
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, keeper->keys);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        key_state *s = value;
        rl__local_state state;
        if (recheck) s->last_op_ms = 0;
        bool mirrored = observe(backend, s, now, elapsed_ms, &state);
        choose(backend, s, &state, mirrored, now, &p.ops[p.count]);
        if (s->op != OP_NONE) {
            p.states[p.count++] = s;
        } else if (s->amount == 0 && !s->in_doubt && !s->deleted && s->mode != MODE_HELD &&
                   now - s->last_demand_ms >= FORGET_AFTER_MS) {
            rl__memory_local_unwant(backend->local, s->key); /* a lease that names it brings it back */
            g_hash_table_iter_remove(&it);
        }
    }
    if (p.count > 0) {
        rl__allot_result *results = calloc(p.count, sizeof *results);
        uint64_t sent_ms = now_ms(backend);
        rl_status status =
            results != NULL ? rl__redis_allot(backend->redis, backend->daemon_id, p.ops, p.count, results) : RL_NO_MEMORY;
        for (size_t i = 0; i < p.count; i++) {
            if (status == RL_OK) apply(backend, p.states[i], &results[i], sent_ms);
            else p.states[i]->in_doubt = true; /* sent again with the same generation */
        }
        free(results);
    }
    uint64_t until = 0, held = 0, held_amount = 0;
    keeper->holding = false;
    g_hash_table_iter_init(&it, keeper->keys);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        const key_state *s = value;
        if (s->admit_until_ms > until) until = s->admit_until_ms;
        if (s->amount > 0 || s->in_doubt) keeper->holding = true;
        if (s->amount > 0) {
            held++;
            held_amount += s->amount;
        }
    }
    atomic_store(&backend->admit_until_ms, until);
    atomic_store_explicit(&backend->allotments_held, held, memory_order_relaxed);
    atomic_store_explicit(&backend->allotment_amount_held, held_amount, memory_order_relaxed);
    free(p.ops);
    free(p.states);
}

void rl__allot_keeper_recheck(allotted_backend *backend) { atomic_store(&backend->keeper->recheck, true); }

/* ---- life ---- */

static void *keeper_main(void *arg) {
    allotted_backend *backend = arg;
    allot_keeper *keeper = backend->keeper;
    pthread_mutex_lock(&keeper->lock);
    while (!keeper->stopping) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        uint64_t ns = (uint64_t)deadline.tv_nsec + (uint64_t)backend->options.tick_ms * 1000000u;
        deadline.tv_sec += (time_t)(ns / 1000000000u);
        deadline.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&keeper->wake, &keeper->lock, &deadline);
        if (keeper->stopping) break;
        pthread_mutex_unlock(&keeper->lock);
        rl__allot_keeper_step(backend);
        pthread_mutex_lock(&keeper->lock);
    }
    pthread_mutex_unlock(&keeper->lock);
    return NULL;
}

rl_status rl__allot_keeper_start(allotted_backend *backend) {
    allot_keeper *keeper = calloc(1, sizeof *keeper);
    if (keeper == NULL) return RL_NO_MEMORY;
    keeper->keys = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    keeper->last_step_ms = now_ms(backend);
    pthread_mutex_init(&keeper->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&keeper->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_lock(&backend->inbox_lock);
    backend->inbox = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    backend->deleted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    pthread_mutex_unlock(&backend->inbox_lock);
    backend->keeper = keeper;
    if (backend->options.tick_ms > 0) {
        if (pthread_create(&keeper->thread, NULL, keeper_main, backend) != 0) return RL_NO_MEMORY;
        keeper->running = true;
    }
    return RL_OK;
}

/* Gives back every allotment in one call: each mirror stops admitting
 * first, and what it holds live is kept in Redis as entries of their own
 * (their Completes will not come here any more). */
static void give_everything_back(allotted_backend *backend, allot_keeper *keeper) {
    size_t capacity = g_hash_table_size(keeper->keys);
    rl__allot_op *ops = calloc(capacity + 1, sizeof *ops);
    rl__allot_live *live = calloc((capacity + 1) * RETURN_LIVE_MAX, sizeof *live);
    uint64_t *remaining = calloc(RETURN_LIVE_MAX, sizeof *remaining), *amounts = calloc(RETURN_LIVE_MAX, sizeof *amounts);
    size_t count = 0;
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, keeper->keys);
    while (ops != NULL && live != NULL && remaining != NULL && amounts != NULL &&
           g_hash_table_iter_next(&it, NULL, &value)) {
        key_state *s = value;
        if (s->amount == 0 && !s->in_doubt) continue;
        (void)rl__memory_local_shrink(backend->local, s->key, 0, true);
        rl__local_state state = {0};
        bool mirrored = rl__memory_local_state(backend->local, s->key, &state);
        rl__allot_live *mine = live + count * RETURN_LIVE_MAX;
        size_t n = rl__memory_local_live(backend->local, s->key, remaining, amounts, RETURN_LIVE_MAX);
        for (size_t i = 0; i < n; i++) mine[i] = (rl__allot_live){remaining[i], amounts[i]};
        /* any later generation returns, whether the call in doubt was applied or not */
        uint64_t generation = (s->in_doubt ? s->generation_sent : s->generation) + 1;
        ops[count++] = (rl__allot_op){.key = s->key, .give_back = true, .generation = generation,
                                      .known_version = s->version, .mirrored = mirrored,
                                      .incarnation = state.incarnation, .live = mine, .live_count = n};
    }
    if (count > 0) {
        rl__allot_result *results = calloc(count, sizeof *results);
        if (results != NULL && rl__redis_allot(backend->redis, backend->daemon_id, ops, count, results) != RL_OK)
            fprintf(stderr, "ratelimiterd: allotments: Redis did not take them back: they end by themselves\n");
        free(results);
    }
    free(ops);
    free(live);
    free(remaining);
    free(amounts);
}

void rl__allot_keeper_stop(allotted_backend *backend) {
    allot_keeper *keeper = backend->keeper;
    if (keeper->running) {
        pthread_mutex_lock(&keeper->lock);
        keeper->stopping = true;
        pthread_cond_signal(&keeper->wake);
        pthread_mutex_unlock(&keeper->lock);
        pthread_join(keeper->thread, NULL);
    }
    give_everything_back(backend, keeper);
    g_hash_table_destroy(keeper->keys);
    pthread_mutex_lock(&backend->inbox_lock);
    g_hash_table_destroy(backend->inbox);
    g_hash_table_destroy(backend->deleted);
    backend->inbox = backend->deleted = NULL;
    pthread_mutex_unlock(&backend->inbox_lock);
    pthread_cond_destroy(&keeper->wake);
    pthread_mutex_destroy(&keeper->lock);
    free(keeper->relay);
    free(keeper);
    backend->keeper = NULL;
}
